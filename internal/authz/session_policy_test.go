package authz

import "testing"

// TestUnionSessionPolicies: a session's inline and managed session
// policies count as one set: an Allow in one passes, a Deny in one denies,
// and the role's policies still bound the session.
func TestUnionSessionPolicies(t *testing.T) {
	parse := func(doc string) *Policy {
		p, err := ParseSessionPolicy([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	putOnly := parse(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:PutObject","Resource":"*"}]}`)
	noSecret := parse(`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"s3:GetObject","Resource":"arn:aws:s3:::bk/secret"}]}`)
	read, _ := ManagedPolicy("arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess")
	role := parse(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::bk/*"}]}`)
	sess := &Session{RoleID: "AROAX", RoleName: "r", RolePath: "/", Name: "s", Policy: UnionPolicies(putOnly, read, noSecret)}
	p := Principal{ID: "AROAX:s", Account: "RGW00000000000000001", Name: "r", Path: "/",
		Identity: &IdentityPolicies{Policies: []NamedPolicy{{Name: "rw", Policy: role}}}, Session: sess}
	for _, tc := range []struct {
		a    Action
		key  string
		want bool
	}{
		{S3PutObject, "a", true},       // inline session policy
		{S3GetObject, "a", true},       // managed session policy
		{S3GetObject, "secret", false}, // a Deny in one of them
		{S3DeleteObject, "a", false},   // none allows it (nor the role)
	} {
		in := Input{Owner: "RGW00000000000000001", Request: Request{Principal: p, Action: tc.a,
			Resource: Resource{Bucket: "bk", Key: tc.key}, Context: Context{}}}
		if got := Evaluate(&in).Allowed(); got != tc.want {
			t.Errorf("%s %s: allowed %v, want %v (%s)", tc.a, tc.key, got, tc.want, Evaluate(&in).Reason)
		}
	}
	if UnionPolicies(putOnly) != putOnly {
		t.Error("the union of one policy is not the policy")
	}
	if len(read.Statements) == 0 || len(putOnly.Statements) != 1 {
		t.Error("UnionPolicies changed its arguments")
	}
}
