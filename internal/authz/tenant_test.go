package authz

import (
	"testing"
)

func TestTenantARNs(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{UserARN("bob"), "arn:aws:iam:::user/bob"},
		{UserARN("t1$bob"), "arn:aws:iam::t1:user/bob"},
		{BucketARN("bk"), "arn:aws:s3:::bk"},
		{BucketARN("t1/bk"), "arn:aws:s3::t1:bk"},
		{Resource{Bucket: "t1/bk", Key: "a/b"}.ARN(S3GetObject), "arn:aws:s3::t1:bk/a/b"},
		{Principal{ID: "t1$bob"}.ARN(), "arn:aws:iam::t1:user/bob"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestTenantBucketPolicy: a tenant's bucket policy names its resources in
// its own tenant (a bare "arn:aws:s3:::bk" is the tenant's bk, as RGW
// binds it), may not name another tenant's, and names another tenant's
// user by "arn:aws:iam::<tenant>:user/<uid>", never a same-named user
// elsewhere.
func TestTenantBucketPolicy(t *testing.T) {
	grant := func(res, who string) string {
		return `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"` + who + `"},"Action":"s3:GetObject","Resource":"` + res + `"}]}`
	}
	for _, res := range []string{"arn:aws:s3:::bk/*", "arn:aws:s3::t1:bk/*", "arn:aws:s3::*:bk/*"} {
		if _, err := ParseBucketPolicy([]byte(grant(res, "*")), "t1/bk"); err != nil {
			t.Errorf("%s on t1/bk: %v", res, err)
		}
	}
	for _, res := range []string{"arn:aws:s3::t2:bk/*", "arn:aws:s3:::other/*"} {
		if _, err := ParseBucketPolicy([]byte(grant(res, "*")), "t1/bk"); err == nil {
			t.Errorf("%s on t1/bk: accepted", res)
		}
	}
	if _, err := ParseBucketPolicy([]byte(grant("arn:aws:s3::t1:bk/*", "*")), "bk"); err == nil {
		t.Errorf("a tenant's resource in an untenanted bucket's policy: accepted")
	}

	p, err := ParseBucketPolicy([]byte(grant("arn:aws:s3:::bk/*", "arn:aws:iam::t2:user/bob")), "t1/bk")
	if err != nil {
		t.Fatal(err)
	}
	eval := func(p *Policy, owner, who, bucket string) DecisionEffect {
		in := Input{Owner: owner, Policy: p, Request: Request{Principal: Principal{ID: who}, Action: S3GetObject,
			Resource: Resource{Bucket: bucket, Key: "k"}, Context: Context{}}}
		return Evaluate(&in).Effect
	}
	for _, tc := range []struct {
		who  string
		want DecisionEffect
	}{{"t2$bob", Allowed}, {"bob", ImplicitDeny}, {"t3$bob", ImplicitDeny}, {"t1$bob", ImplicitDeny}} {
		if got := eval(p, "t1$alice", tc.who, "t1/bk"); got != tc.want {
			t.Errorf("%s GetObject t1/bk: %v, want %v", tc.who, got, tc.want)
		}
	}
	// The untenanted bk's policy grants nothing on t1's bk, and the other
	// way round: the ARNs differ.
	pu, err := ParseBucketPolicy([]byte(grant("arn:aws:s3:::bk/*", "*")), "bk")
	if err != nil {
		t.Fatal(err)
	}
	if got := eval(pu, "t1$alice", "t2$bob", "t1/bk"); got != ImplicitDeny {
		t.Errorf("untenanted policy on t1/bk: %v", got)
	}
	if got := eval(p, "alice", "t2$bob", "bk"); got != ImplicitDeny {
		t.Errorf("t1's policy on untenanted bk: %v", got)
	}
}

// TestTenantIdentityPolicy: a tenant user's identity policy naming
// "arn:aws:s3:::*" means its own tenant's buckets (InTenant), and binding
// never changes the shared compiled policy.
func TestTenantIdentityPolicy(t *testing.T) {
	p, err := ParseIdentityPolicy([]byte(`{"Statement":[{"Effect":"Deny","Action":"s3:*","Resource":["arn:aws:s3:::*","arn:aws:s3::t9:x/*"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	bound := p.InTenant("t1")
	if bound == p {
		t.Fatal("InTenant returned the policy unchanged")
	}
	if got := p.Statements[0].resources[0]; got != "arn:aws:s3:::*" {
		t.Errorf("shared policy changed: %q", got)
	}
	if got := bound.Statements[0].resources; got[0] != "arn:aws:s3::t1:*" || got[1] != "arn:aws:s3::t9:x/*" {
		t.Errorf("bound resources %q", got)
	}
	if p.InTenant("") != p {
		t.Error("binding to the empty tenant copied the policy")
	}
	deny := func(bucket string) DecisionEffect {
		in := Input{Owner: "t1$u", Request: Request{Principal: Principal{ID: "t1$u", Identity: &IdentityPolicies{
			Policies: []NamedPolicy{{Name: "d", Policy: bound}}}}, Action: S3GetObject,
			Resource: Resource{Bucket: bucket, Key: "k"}, Context: Context{}}}
		return Evaluate(&in).Effect
	}
	if got := deny("t1/bk"); got != ExplicitDeny {
		t.Errorf("own tenant's bucket: %v, want ExplicitDeny", got)
	}
	if got := deny("bk"); got == ExplicitDeny {
		t.Errorf("untenanted bucket: denied by a policy bound to t1")
	}
}
