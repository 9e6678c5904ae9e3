package authz

import (
	"strings"
	"testing"
)

func ctxOf(kv ...string) Context {
	c := Context{}
	for i := 0; i+1 < len(kv); i += 2 {
		k := strings.ToLower(kv[i])
		c[k] = append(c[k], kv[i+1])
	}
	return c
}

type evalCase struct {
	name    string
	who     Principal
	action  Action
	key     string // "" = bucket-level
	ctx     Context
	want    DecisionEffect
	wantWhy string // substring of the reason
}

const alice, bob = "alice", "bob"

func runPolicyCases(t *testing.T, doc string, cases []evalCase) {
	t.Helper()
	pol, err := ParseBucketPolicy([]byte(doc), "bk")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	acl, _ := CannedACL("private", Owner{ID: alice}, Owner{ID: alice})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := c.ctx
			if ctx == nil {
				ctx = Context{}
			}
			in := &Input{
				Request:   Request{Principal: c.who, Action: c.action, Resource: Resource{Bucket: "bk", Key: c.key}, Context: ctx},
				Owner:     alice,
				BucketACL: &acl,
				ObjectACL: &acl,
				Policy:    pol,
			}
			d := Evaluate(in)
			if d.Effect != c.want || !strings.Contains(d.Reason, c.wantWhy) {
				t.Fatalf("got %s (%s), want %s (%q)", d.Effect, d.Reason, c.want, c.wantWhy)
			}
		})
	}
}

var bobP = Principal{ID: bob}
var aliceP = Principal{ID: alice}

// The examples below follow AWS's "Examples of Amazon S3 bucket policies".
func TestPolicyPublicRead(t *testing.T) {
	runPolicyCases(t, `{"Version":"2012-10-17","Statement":[{"Sid":"PublicRead","Effect":"Allow",
		"Principal":"*","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":["arn:aws:s3:::bk/*"]}]}`,
		[]evalCase{
			{"anon get", Anonymous, S3GetObject, "k", nil, Allowed, `"PublicRead"`},
			{"anon put", Anonymous, S3PutObject, "k", nil, ImplicitDeny, ""},
			{"anon list", Anonymous, S3ListBucket, "", nil, ImplicitDeny, ""},
			{"bob get", bobP, S3GetObject, "k", nil, Allowed, "PublicRead"},
			{"owner put via ACL", aliceP, S3PutObject, "k", nil, Allowed, "ACL grant FULL_CONTROL"},
		})
}

func TestPolicySourceIPDeny(t *testing.T) {
	runPolicyCases(t, `{"Version":"2012-10-17","Id":"S3PolicyId1","Statement":[{"Sid":"IPAllow","Effect":"Deny",
		"Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::bk","arn:aws:s3:::bk/*"],
		"Condition":{"NotIpAddress":{"aws:SourceIp":["192.0.2.0/24","2001:DB8:1234:5678::/64"]}}}]}`,
		[]evalCase{
			{"owner outside", aliceP, S3GetObject, "k", ctxOf("aws:SourceIp", "203.0.113.1"), ExplicitDeny, "IPAllow"},
			{"owner inside", aliceP, S3GetObject, "k", ctxOf("aws:SourceIp", "192.0.2.7"), Allowed, "ACL"},
			{"owner inside v6", aliceP, S3ListBucket, "", ctxOf("aws:SourceIp", "2001:db8:1234:5678::9"), Allowed, "ACL"},
			{"owner policy mgmt outside", aliceP, S3PutBucketPolicy, "", ctxOf("aws:SourceIp", "203.0.113.1"), Allowed, "manages its policy"},
			{"admin outside", Principal{ID: "root", Admin: true}, S3GetObject, "k", ctxOf("aws:SourceIp", "203.0.113.1"), ExplicitDeny, "IPAllow"},
			{"no ip key", aliceP, S3GetObject, "k", nil, ExplicitDeny, "IPAllow"},
		})
}

func TestPolicySecureTransport(t *testing.T) {
	runPolicyCases(t, `{"Version":"2012-10-17","Statement":[
		{"Sid":"AllowBob","Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bob"},"Action":"s3:*","Resource":"arn:aws:s3:::bk/*"},
		{"Sid":"HTTPSOnly","Effect":"Deny","Principal":{"AWS":"*"},"Action":"s3:*","Resource":["arn:aws:s3:::bk","arn:aws:s3:::bk/*"],
		 "Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}`,
		[]evalCase{
			{"http", bobP, S3PutObject, "k", ctxOf("aws:SecureTransport", "false"), ExplicitDeny, "HTTPSOnly"},
			{"https", bobP, S3PutObject, "k", ctxOf("aws:SecureTransport", "true"), Allowed, "AllowBob"},
			{"bob bucket-level not granted", bobP, S3ListBucket, "", ctxOf("aws:SecureTransport", "true"), ImplicitDeny, ""},
		})
}

func TestPolicyReferer(t *testing.T) {
	runPolicyCases(t, `{"Version":"2012-10-17","Statement":[{"Sid":"Ref","Effect":"Allow","Principal":"*",
		"Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":"arn:aws:s3:::bk/*",
		"Condition":{"StringLike":{"aws:Referer":["http://www.example.com/*","http://example.com/*"]}}}]}`,
		[]evalCase{
			{"match", Anonymous, S3GetObject, "k", ctxOf("aws:Referer", "http://example.com/page"), Allowed, "Ref"},
			{"other", Anonymous, S3GetObject, "k", ctxOf("aws:Referer", "http://evil.com/"), ImplicitDeny, ""},
			{"missing", Anonymous, S3GetObject, "k", nil, ImplicitDeny, ""},
		})
}

func TestPolicyListPrefixAndMaxKeys(t *testing.T) {
	runPolicyCases(t, `{"Version":"2012-10-17","Statement":[
		{"Sid":"ListHome","Effect":"Allow","Principal":{"AWS":["bob"]},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::bk",
		 "Condition":{"StringEquals":{"s3:prefix":["","home/"],"s3:delimiter":["/"]}}},
		{"Sid":"ListOwn","Effect":"Allow","Principal":{"AWS":["bob"]},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::bk",
		 "Condition":{"StringLike":{"s3:prefix":["home/${aws:username}/*"]},"NumericLessThanEquals":{"s3:max-keys":"10"}}},
		{"Sid":"OwnHome","Effect":"Allow","Principal":{"AWS":"bob"},"Action":["s3:GetObject","s3:PutObject"],
		 "Resource":"arn:aws:s3:::bk/home/${aws:username}/*"}]}`,
		[]evalCase{
			{"root", bobP, S3ListBucket, "", ctxOf("s3:prefix", "", "s3:delimiter", "/"), Allowed, "ListHome"},
			{"root no delim", bobP, S3ListBucket, "", ctxOf("s3:prefix", ""), ImplicitDeny, ""},
			{"own", bobP, S3ListBucket, "", ctxOf("s3:prefix", "home/bob/x", "aws:username", "bob", "s3:max-keys", "5"), Allowed, "ListOwn"},
			{"own too many", bobP, S3ListBucket, "", ctxOf("s3:prefix", "home/bob/x", "aws:username", "bob", "s3:max-keys", "1000"), ImplicitDeny, ""},
			{"other home", bobP, S3ListBucket, "", ctxOf("s3:prefix", "home/carol/", "aws:username", "bob", "s3:max-keys", "5"), ImplicitDeny, ""},
			{"put own", bobP, S3PutObject, "home/bob/f", ctxOf("aws:username", "bob"), Allowed, "OwnHome"},
			{"put other", bobP, S3PutObject, "home/carol/f", ctxOf("aws:username", "bob"), ImplicitDeny, ""},
			{"no username var", bobP, S3PutObject, "home/bob/f", nil, ImplicitDeny, ""},
		})
}

func TestPolicyNullAndIfExists(t *testing.T) {
	runPolicyCases(t, `{"Version":"2012-10-17","Statement":[
		{"Sid":"Writers","Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::bk/*"},
		{"Sid":"DenyUnencrypted","Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::bk/*",
		 "Condition":{"Null":{"s3:x-amz-server-side-encryption":"true"}}},
		{"Sid":"DenyWrongAlg","Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::bk/*",
		 "Condition":{"StringNotEqualsIfExists":{"s3:x-amz-server-side-encryption":"AES256"}}}]}`,
		[]evalCase{
			{"none", bobP, S3PutObject, "k", nil, ExplicitDeny, "DenyUnencrypted"},
			{"aes", bobP, S3PutObject, "k", ctxOf("s3:x-amz-server-side-encryption", "AES256"), Allowed, "Writers"},
			{"kms", bobP, S3PutObject, "k", ctxOf("s3:x-amz-server-side-encryption", "aws:kms"), ExplicitDeny, "DenyWrongAlg"},
		})
}

func TestPolicySetOperators(t *testing.T) {
	runPolicyCases(t, `{"Version":"2012-10-17","Statement":[
		{"Sid":"TagKeys","Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::bk/*",
		 "Condition":{"ForAllValues:StringLike":{"s3:RequestObjectTagKeys":["Department","Proj*"]},
		              "ForAnyValue:StringEquals":{"s3:RequestObjectTagKeys":"Department"}}},
		{"Sid":"DenyAnyTmp","Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::bk/*",
		 "Condition":{"ForAnyValue:StringEquals":{"s3:RequestObjectTagKeys":["tmp"]}}}]}`,
		[]evalCase{
			{"ok", bobP, S3PutObject, "k", ctxOf("s3:RequestObjectTagKeys", "Department", "s3:RequestObjectTagKeys", "Project"), Allowed, "TagKeys"},
			{"extra key", bobP, S3PutObject, "k", ctxOf("s3:RequestObjectTagKeys", "Department", "s3:RequestObjectTagKeys", "Owner"), ImplicitDeny, ""},
			{"no department", bobP, S3PutObject, "k", ctxOf("s3:RequestObjectTagKeys", "Project"), ImplicitDeny, ""},
			{"tmp", bobP, S3PutObject, "k", ctxOf("s3:RequestObjectTagKeys", "Department", "s3:RequestObjectTagKeys", "tmp"), ExplicitDeny, "DenyAnyTmp"},
			{"no tags", bobP, S3PutObject, "k", nil, ImplicitDeny, ""},
		})
}

func TestPolicyDatesAndNotPrincipal(t *testing.T) {
	runPolicyCases(t, `{"Version":"2012-10-17","Statement":[
		{"Sid":"Window","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bk/*",
		 "Condition":{"DateGreaterThan":{"aws:CurrentTime":"2026-01-01T00:00:00Z"},"DateLessThan":{"aws:CurrentTime":"2027-01-01T00:00:00Z"}}},
		{"Sid":"OnlyAlice","Effect":"Deny","NotPrincipal":{"AWS":"arn:aws:iam::alice:root"},"Action":"s3:DeleteObject","Resource":"arn:aws:s3:::bk/*"}]}`,
		[]evalCase{
			{"in window", bobP, S3GetObject, "k", ctxOf("aws:CurrentTime", "2026-06-01T12:00:00Z"), Allowed, "Window"},
			{"after", bobP, S3GetObject, "k", ctxOf("aws:CurrentTime", "2027-06-01T12:00:00Z"), ImplicitDeny, ""},
			{"bob delete", bobP, S3DeleteObject, "k", nil, ExplicitDeny, "OnlyAlice"},
			{"anon delete", Anonymous, S3DeleteObject, "k", nil, ExplicitDeny, "OnlyAlice"},
			{"alice delete", aliceP, S3DeleteObject, "k", nil, Allowed, "ACL"},
		})
}

func TestPolicyNotActionNotResource(t *testing.T) {
	runPolicyCases(t, `{"Statement":[
		{"Sid":"AllButDelete","Effect":"Allow","Principal":{"CanonicalUser":"bob"},"NotAction":["s3:Delete*","s3:Put*Acl"],"Resource":"arn:aws:s3:::bk/*"},
		{"Sid":"NotSecret","Effect":"Deny","Principal":"*","Action":"s3:GetObject","NotResource":"arn:aws:s3:::bk/public/*"}]}`,
		[]evalCase{
			{"put", bobP, S3PutObject, "public/a", nil, Allowed, "AllButDelete"},
			{"delete", bobP, S3DeleteObject, "public/a", nil, ImplicitDeny, ""},
			{"putacl", bobP, S3PutObjectAcl, "public/a", nil, ImplicitDeny, ""},
			{"get public", bobP, S3GetObject, "public/a", nil, Allowed, "AllButDelete"},
			{"get secret", bobP, S3GetObject, "private/a", nil, ExplicitDeny, "NotSecret"},
		})
}

func TestParsePolicyErrors(t *testing.T) {
	ok := `"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bk/*"`
	cases := []struct{ doc, reason string }{
		{`not json`, "first byte must be '{'"},
		{`{"Statement":[{` + ok + `}],"Extra":1}`, "Unknown field Extra"},
		{`{"Version":"2010-01-01","Statement":[{` + ok + `}]}`, "valid version"},
		{`{"Version":"2012-10-17"}`, "Missing required field Statement"},
		{`{"Statement":[]}`, "Statement is empty"},
		{`{"Statement":[{"Effect":"Maybe","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bk/*"}]}`, "Invalid effect"},
		{`{"Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::bk/*"}]}`, "Missing required field Principal"},
		{`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:Frobnicate","Resource":"arn:aws:s3:::bk/*"}]}`, "invalid action"},
		{`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"ec2:RunInstances","Resource":"arn:aws:s3:::bk/*"}]}`, "invalid action"},
		{`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::other/*"}]}`, "invalid resource"},
		{`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"bk/*"}]}`, "invalid resource"},
		{`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bk"}]}`, "Action does not apply"},
		{`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bk/*"}]}`, "Action does not apply"},
		{`{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:s3:::x"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bk/*"}]}`, "Invalid principal"},
		{`{"Statement":[{"Effect":"Allow","Principal":"alice","Action":"s3:GetObject","Resource":"arn:aws:s3:::bk/*"}]}`, "Invalid principal"},
		{`{"Statement":[{"Effect":"Allow","NotPrincipal":{"AWS":"arn:aws:iam:::user/bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bk/*"}]}`, "only supported with Effect Deny"},
		{`{"Statement":[{` + ok + `,"Condition":{"StringSorta":{"aws:Referer":"x"}}}]}`, "Invalid Condition type : StringSorta"},
		{`{"Statement":[{` + ok + `,"Condition":{"NumericLessThan":{"s3:max-keys":"ten"}}}]}`, "Invalid value"},
		{`{"Statement":[{` + ok + `,"Condition":{"IpAddress":{"aws:SourceIp":"300.1.1.1/8"}}}]}`, "Invalid value"},
		{`{"Statement":[{` + ok + `,"Condition":{"Bool":{"aws:SecureTransport":"yes"}}}]}`, "Invalid value"},
		{`{"Statement":[{` + ok + `,"Condition":{"DateLessThan":{"aws:CurrentTime":"tomorrow"}}}]}`, "Invalid value"},
		{`{"Statement":[{` + ok + `,"Condition":{"StringEquals":{"foo":"x"}}}]}`, "invalid condition key"},
		{`{"Statement":[{` + ok + `,"Condition":{"NullIfExists":{"s3:prefix":"true"}}}]}`, "Invalid Condition type"},
		{`{"Statement":[{"Sid":"a",` + ok + `},{"Sid":"a",` + ok + `}]}`, "must be unique"},
		{`{"Statement":[{` + ok + `,"Action":"s3:PutObject","NotAction":"s3:GetObject"}]}`, "both Action and NotAction"},
		{`{"Statement":[{` + ok + `,"Bogus":1}]}`, "Unknown field Bogus"},
		{"{" + strings.Repeat(" ", MaxBucketPolicySize) + "}", "less than 20 KB"},
	}
	for _, c := range cases {
		_, err := ParseBucketPolicy([]byte(c.doc), "bk")
		var m *MalformedPolicyError
		if err == nil || !IsMalformedPolicy(err) {
			t.Errorf("%.80s: got %v, want MalformedPolicy", c.doc, err)
			continue
		}
		m = err.(*MalformedPolicyError)
		if !strings.Contains(m.Reason, c.reason) {
			t.Errorf("%.80s: reason %q, want %q", c.doc, m.Reason, c.reason)
		}
	}
}

func TestPolicyIsPublic(t *testing.T) {
	cases := []struct {
		cond   string
		public bool
	}{
		{``, true},
		{`,"Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`, false},
		{`,"Condition":{"IpAddress":{"aws:SourceIp":"0.0.0.0/0"}}`, true},
		{`,"Condition":{"StringLike":{"aws:Referer":"http://x/*"}}`, true},
		{`,"Condition":{"StringEquals":{"aws:SourceAccount":"1234"}}`, false},
		{`,"Condition":{"StringNotEquals":{"aws:SourceAccount":"1234"}}`, true},
	}
	for _, c := range cases {
		doc := `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bk/*"` + c.cond + `}]}`
		p, err := ParseBucketPolicy([]byte(doc), "bk")
		if err != nil {
			t.Fatal(err)
		}
		if p.IsPublic() != c.public {
			t.Errorf("%s: public=%v", c.cond, !c.public)
		}
	}
	p, _ := ParseBucketPolicy([]byte(`{"Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bk/*"}]}`), "bk")
	if p.IsPublic() {
		t.Error("named principal is not public")
	}
}

func TestActionNames(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range AllActions() {
		n := a.String()
		if n == "" || n == "invalid" || seen[n] {
			t.Fatalf("action %d has bad or duplicate name %q", a, n)
		}
		seen[n] = true
		if b, ok := ActionByName(strings.ToUpper(n)); !ok || b != a {
			t.Fatalf("ActionByName(%q) = %v", n, b)
		}
	}
}

func TestWildMatch(t *testing.T) {
	cases := []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"a*", "abc", true}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"*b*", "abc", true}, {"a*c*e", "abcde", true}, {"a*c*e", "abcd", false},
		{"arn:aws:s3:::bk/*", "arn:aws:s3:::bk/x/y", true}, {"arn:aws:s3:::bk/*", "arn:aws:s3:::bk", false},
		{strings.Repeat("*a", 50) + "b", strings.Repeat("a", 200), false},
	}
	for _, c := range cases {
		if got := wildMatch(c.p, c.s); got != c.want {
			t.Errorf("wildMatch(%q, %q) = %v", c.p, c.s, got)
		}
	}
}

func TestPolicyNeeds(t *testing.T) {
	p, err := ParseBucketPolicy([]byte(`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject",
	 "Resource":"arn:aws:s3:::bk/${aws:username}/*","Condition":{"StringLike":{"aws:Referer":"${aws:PrincipalType}*"},"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}]}`), "bk")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"aws:username", "aws:referer", "aws:principaltype", "aws:sourceip"} {
		if !p.Needs(k) {
			t.Errorf("Needs(%s) = false", k)
		}
	}
	if p.Needs("aws:currenttime") || (*Policy)(nil).Needs("aws:sourceip") {
		t.Error("Needs reports an unused key")
	}
}
