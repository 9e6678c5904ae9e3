package authz

import (
	"fmt"
	"strings"
	"testing"
)

// benchPolicy is 20 statements with conditions, none of which matches the
// benchmark request before the last, so every statement is evaluated.
func benchPolicy(tb testing.TB) *Policy {
	var sts []string
	for i := 0; i < 19; i++ {
		sts = append(sts, fmt.Sprintf(`{"Sid":"s%d","Effect":"Allow","Principal":{"AWS":["arn:aws:iam:::user/u%d","u%d-b"]},
		 "Action":["s3:GetObject","s3:PutObject","s3:List*"],"Resource":["arn:aws:s3:::bk/team%d/*","arn:aws:s3:::bk"],
		 "Condition":{"IpAddress":{"aws:SourceIp":["10.%d.0.0/16"]},"StringLike":{"s3:prefix":["team%d/*"]},
		              "Bool":{"aws:SecureTransport":"true"},"NumericLessThanEquals":{"s3:max-keys":"1000"}}}`, i, i, i, i, i, i))
	}
	sts = append(sts, `{"Sid":"Deny","Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bk/*",
	 "Condition":{"NotIpAddress":{"aws:SourceIp":["127.0.0.0/8","10.0.0.0/8"]}}}`)
	p, err := ParseBucketPolicy([]byte(`{"Version":"2012-10-17","Statement":[`+strings.Join(sts, ",")+`]}`), "bk")
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func benchInput(p *Policy) *Input {
	acl, _ := CannedACL("private", Owner{ID: "alice"}, Owner{ID: "alice"})
	return &Input{
		Request: Request{Principal: Principal{ID: "alice"}, Action: S3PutObject,
			Resource: Resource{Bucket: "bk", Key: "some/object/key"},
			Context:  Context{"aws:sourceip": {"127.0.0.1"}, "aws:securetransport": {"false"}}},
		Owner: "alice", BucketACL: &acl, ObjectACL: &acl, Policy: p,
	}
}

func BenchmarkEvaluate20Statements(b *testing.B) {
	in := benchInput(benchPolicy(b))
	b.ReportAllocs()
	for b.Loop() {
		if d := Evaluate(in); !d.Allowed() {
			b.Fatal(d)
		}
	}
}

func BenchmarkEvaluateNoPolicy(b *testing.B) {
	in := benchInput(nil)
	b.ReportAllocs()
	for b.Loop() {
		if d := Evaluate(in); !d.Allowed() {
			b.Fatal(d)
		}
	}
}

func BenchmarkParseBucketPolicy20(b *testing.B) {
	p := benchPolicy(b)
	_ = p
	b.ReportAllocs()
	for b.Loop() {
		benchPolicy(b)
	}
}

// roleSessionInput is a PUT by a role session with a 10-statement
// identity policy (nine that miss, the last allowing), a session policy,
// and a 5-statement bucket policy on the account's bucket.
func roleSessionInput(tb testing.TB) *Input {
	const acct = "RGW12345678901234567"
	var sts []string
	for i := 0; i < 9; i++ {
		sts = append(sts, fmt.Sprintf(`{"Sid":"t%d","Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],
		 "Resource":["arn:aws:s3:::team%d-data/*","arn:aws:s3:::bk/team%d/*"],"Condition":{"IpAddress":{"aws:SourceIp":"10.%d.0.0/16"}}}`, i, i, i, i))
	}
	sts = append(sts, `{"Sid":"bench","Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::bk/*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}`)
	ip, err := ParseIdentityPolicy([]byte(`{"Version":"2012-10-17","Statement":[` + strings.Join(sts, ",") + `]}`))
	if err != nil {
		tb.Fatal(err)
	}
	sp, err := ParseSessionPolicy([]byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}`))
	if err != nil {
		tb.Fatal(err)
	}
	bp, err := ParseBucketPolicy([]byte(`{"Version":"2012-10-17","Statement":[
	 {"Sid":"u0","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::`+acct+`:user/u0"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bk/*"},
	 {"Sid":"u1","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::`+acct+`:user/u1"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bk/*"},
	 {"Sid":"u2","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::`+acct+`:user/u2"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bk/*"},
	 {"Sid":"role","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::`+acct+`:role/bench"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::bk"},
	 {"Sid":"local","Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bk/*","Condition":{"NotIpAddress":{"aws:SourceIp":"127.0.0.0/8"}}}]}`), "bk")
	if err != nil {
		tb.Fatal(err)
	}
	acl, _ := CannedACL("private", Owner{ID: acct}, Owner{ID: acct})
	p := Principal{ID: "AROAXXXXXXXXXXXXXXXXX:s", Account: acct, Name: "bench", Path: "/",
		Identity: &IdentityPolicies{Policies: []NamedPolicy{{Name: "bench", Policy: ip}}},
		Session:  &Session{RoleID: "AROAXXXXXXXXXXXXXXXXX", RoleName: "bench", RolePath: "/", Name: "s", Policy: sp}}
	return &Input{
		Request: Request{Principal: p, Action: S3PutObject, Resource: Resource{Bucket: "bk", Key: "some/object/key"},
			Context: Context{"aws:sourceip": {"127.0.0.1"}, "aws:securetransport": {"false"}}},
		Owner: acct, BucketACL: &acl, Policy: bp,
	}
}

func BenchmarkEvaluateRoleSession(b *testing.B) {
	in := roleSessionInput(b)
	b.ReportAllocs()
	for b.Loop() {
		if d := Evaluate(in); !d.Allowed() {
			b.Fatal(d)
		}
	}
}

func BenchmarkEvaluateAccountRoot(b *testing.B) {
	in := roleSessionInput(b)
	in.Principal = Principal{ID: "root", Account: in.Owner, Root: true}
	b.ReportAllocs()
	for b.Loop() {
		if d := Evaluate(in); !d.Allowed() {
			b.Fatal(d)
		}
	}
}
