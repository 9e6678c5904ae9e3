package authz

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzParseBucketPolicy: the parser never panics, errors are always
// MalformedPolicy, and a parsed policy evaluates without panicking (cf.
// minio's parse_dos_test: hostile wildcards and nesting).
func FuzzParseBucketPolicy(f *testing.F) {
	f.Add(`{"Version":"2012-10-17","Statement":[{"Sid":"a","Effect":"Allow","Principal":"*","Action":"s3:Get*","Resource":"arn:aws:s3:::bk/*","Condition":{"ForAnyValue:StringLike":{"s3:prefix":["a*"]}}}]}`)
	f.Add(`{"Statement":{"Effect":"Deny","NotPrincipal":{"AWS":["arn:aws:iam:::user/x"]},"NotAction":"s3:*","NotResource":"arn:aws:s3:::bk","Condition":{"NumericLessThanIfExists":{"s3:max-keys":10},"IpAddress":{"aws:SourceIp":["10.0.0.0/8","::1"]},"DateLessThan":{"aws:CurrentTime":"2030-01-01T00:00:00Z"},"Null":{"s3:x":true}}}}`)
	f.Add(`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bk/` + strings.Repeat("*a", 40) + `"}]}`)
	f.Add(`[[[[[[[[[[`)
	ctx := Context{"s3:prefix": {"abc"}, "aws:sourceip": {"10.1.2.3"}, "aws:currenttime": {"2026-01-01T00:00:00Z"}, "s3:max-keys": {"5"}}
	f.Fuzz(func(t *testing.T, doc string) {
		p, err := ParseBucketPolicy([]byte(doc), "bk")
		if err != nil {
			if !IsMalformedPolicy(err) {
				t.Fatalf("error %T %v is not MalformedPolicy", err, err)
			}
			return
		}
		for _, a := range []Action{S3GetObject, S3ListBucket, S3PutObject} {
			Evaluate(&Input{Request: Request{Principal: Principal{ID: "x"}, Action: a,
				Resource: Resource{Bucket: "bk", Key: strings.Repeat("a", 100)}, Context: ctx}, Policy: p, Owner: "o"})
		}
		p.IsPublic()
	})
}

// FuzzParseACLXML: ParseACLXML never panics, and what it accepts renders
// and re-parses to the same grants.
func FuzzParseACLXML(f *testing.F) {
	f.Add(`<AccessControlPolicy><Owner><ID>o</ID></Owner><AccessControlList><Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID>u</ID></Grantee><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>`)
	f.Add(`<AccessControlPolicy><AccessControlList><Grant><Grantee xsi:type="Group"><URI>http://acs.amazonaws.com/groups/global/AllUsers</URI></Grantee><Permission>FULL_CONTROL</Permission></Grant></AccessControlList></AccessControlPolicy>`)
	f.Fuzz(func(t *testing.T, body string) {
		owner := Owner{ID: "o"}
		acl, err := ParseACLXML([]byte(body), owner)
		if err != nil {
			return
		}
		out, err := acl.AppendXML(nil)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseACLXML(out, owner)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", out, err)
		}
		if len(again.Grants) != len(acl.Grants) {
			t.Fatalf("grants %d != %d", len(again.Grants), len(acl.Grants))
		}
		for i := range acl.Grants {
			if again.Grants[i] != acl.Grants[i] {
				t.Fatalf("grant %d: %+v != %+v", i, again.Grants[i], acl.Grants[i])
			}
		}
	})
}

// FuzzParseGrantHeaders: never panics; accepted grants are well formed.
func FuzzParseGrantHeaders(f *testing.F) {
	f.Add(`id="a", emailAddress="x@y", uri="http://acs.amazonaws.com/groups/s3/LogDelivery"`)
	f.Add(`id="a,b"`)
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{}
		h["X-Amz-Grant-Read"] = []string{v}
		gs, err := ParseGrantHeaders(h)
		if err != nil {
			return
		}
		for _, g := range gs {
			if g.Permission != PermRead || (g.Grantee.ID == "" && g.Grantee.Email == "" && g.Grantee.URI == "") {
				t.Fatalf("bad grant %+v", g)
			}
		}
	})
}
