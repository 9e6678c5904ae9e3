package authz

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

type users map[string]Owner // by id; Owner.DisplayName doubles as email in tests

func (u users) UserByID(id string) (Owner, bool) { o, ok := u[id]; return o, ok }
func (u users) UserByEmail(e string) (Owner, bool) {
	for _, o := range u {
		if o.DisplayName+"@example.com" == e {
			return o, true
		}
	}
	return Owner{}, false
}

var testUsers = users{"alice": {ID: "alice", DisplayName: "Alice"}, "bob": {ID: "bob", DisplayName: "Bob"}}

func TestCannedACLs(t *testing.T) {
	own, bo := Owner{ID: "bob"}, Owner{ID: "alice"}
	type chk struct {
		who  Principal
		perm Permission
		want bool
	}
	cases := map[string][]chk{
		"private":                   {{bobP, PermFullControl, true}, {aliceP, PermRead, false}, {Anonymous, PermRead, false}},
		"public-read":               {{Anonymous, PermRead, true}, {Anonymous, PermWrite, false}, {aliceP, PermRead, true}},
		"public-read-write":         {{Anonymous, PermWrite, true}, {Anonymous, PermReadACP, false}},
		"authenticated-read":        {{Anonymous, PermRead, false}, {aliceP, PermRead, true}, {aliceP, PermWrite, false}},
		"bucket-owner-read":         {{aliceP, PermRead, true}, {aliceP, PermWrite, false}},
		"bucket-owner-full-control": {{aliceP, PermFullControl, true}, {aliceP, PermWriteACP, true}},
		"log-delivery-write":        {{aliceP, PermWrite, false}, {Anonymous, PermWrite, false}},
	}
	for name, checks := range cases {
		acl, err := CannedACL(name, own, bo)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, c := range checks {
			if got, _ := acl.Permits(c.who, c.perm, false); got != c.want {
				t.Errorf("%s: %q %s = %v", name, c.who.ID, c.perm, got)
			}
		}
	}
	if _, err := CannedACL("public", own, bo); !errors.Is(err, ErrInvalidCannedACL) {
		t.Fatalf("bad canned ACL: %v", err)
	}
	pr, _ := CannedACL("public-read", own, bo)
	if ok, _ := pr.Permits(Anonymous, PermRead, true); ok {
		t.Error("IgnorePublicAcls must skip AllUsers grants")
	}
	if !pr.IsPublic() {
		t.Error("public-read is public")
	}
}

func TestOwnerKeepsACP(t *testing.T) {
	acl := ACL{Owner: Owner{ID: "alice"}} // all grants removed
	if ok, i := acl.Permits(aliceP, PermWriteACP, false); !ok || i != -1 {
		t.Fatal("owner must keep WRITE_ACP")
	}
	if ok, _ := acl.Permits(aliceP, PermRead, false); ok {
		t.Fatal("owner without a grant has no READ")
	}
}

func TestGrantHeaders(t *testing.T) {
	h := http.Header{}
	h.Set("x-amz-grant-read", `id="bob", uri="http://acs.amazonaws.com/groups/global/AllUsers"`)
	h.Set("x-amz-grant-full-control", `emailAddress="Alice@example.com"`)
	grants, err := ParseGrantHeaders(h)
	if err != nil || len(grants) != 3 {
		t.Fatalf("%v %v", grants, err)
	}
	acl := ACL{Owner: Owner{ID: "bob"}, Grants: grants}
	if err := acl.Resolve(testUsers); err != nil {
		t.Fatal(err)
	}
	if g := acl.Grants[2].Grantee; g.Type != GranteeCanonicalUser || g.ID != "alice" || g.DisplayName != "Alice" {
		t.Fatalf("email not resolved: %+v", g)
	}
	for _, bad := range []string{`id=`, `foo="x"`, `uri="http://example.com/group"`, `novalue`} {
		h := http.Header{}
		h.Set("x-amz-grant-write", bad)
		if _, err := ParseGrantHeaders(h); !errors.Is(err, ErrInvalidGrant) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	h = http.Header{}
	h.Set("x-amz-grant-write", `emailAddress="nobody@example.com"`)
	g, _ := ParseGrantHeaders(h)
	acl = ACL{Grants: g}
	if err := acl.Resolve(testUsers); !errors.Is(err, ErrUnresolvable) {
		t.Fatalf("unknown email: %v", err)
	}
	h.Set("x-amz-grant-write", `id="carol"`)
	g, _ = ParseGrantHeaders(h)
	acl = ACL{Grants: g}
	if err := acl.Resolve(testUsers); !errors.Is(err, ErrInvalidGrant) {
		t.Fatalf("unknown id: %v", err)
	}
}

func TestACLXMLRoundTrip(t *testing.T) {
	body := `<AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
	<Owner><ID>alice</ID></Owner><AccessControlList>
	<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID>bob</ID></Grantee><Permission>WRITE</Permission></Grant>
	<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="AmazonCustomerByEmail"><EmailAddress>Alice@example.com</EmailAddress></Grantee><Permission>FULL_CONTROL</Permission></Grant>
	<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="Group"><URI>http://acs.amazonaws.com/groups/global/AuthenticatedUsers</URI></Grantee><Permission>READ</Permission></Grant>
	</AccessControlList></AccessControlPolicy>`
	owner := Owner{ID: "alice", DisplayName: "Alice"}
	acl, err := ParseACLXML([]byte(body), owner)
	if err != nil {
		t.Fatal(err)
	}
	if err := acl.Resolve(testUsers); err != nil {
		t.Fatal(err)
	}
	out, err := acl.AppendXML(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{`<Owner><ID>alice</ID><DisplayName>Alice</DisplayName></Owner>`,
		`xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID>bob</ID><DisplayName>Bob</DisplayName></Grantee><Permission>WRITE</Permission>`,
		`xsi:type="Group"><URI>http://acs.amazonaws.com/groups/global/AuthenticatedUsers</URI>`} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %s in\n%s", want, s)
		}
	}
	again, err := ParseACLXML(out, owner)
	if err != nil || len(again.Grants) != 3 || again.Grants[1].Grantee.ID != "alice" {
		t.Fatalf("re-parse: %+v %v", again, err)
	}

	for name, bad := range map[string]string{
		"other owner": `<AccessControlPolicy><Owner><ID>bob</ID></Owner></AccessControlPolicy>`,
		"bad perm":    `<AccessControlPolicy><AccessControlList><Grant><Grantee xsi:type="Group" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><URI>` + AllUsersURI + `</URI></Grantee><Permission>ALL</Permission></Grant></AccessControlList></AccessControlPolicy>`,
		"bad type":    `<AccessControlPolicy><AccessControlList><Grant><Grantee xsi:type="Martian" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><ID>x</ID></Grantee><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>`,
		"not xml":     `<AccessControlPolicy`,
	} {
		if _, err := ParseACLXML([]byte(bad), owner); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPublicAccessBlockAndOwnershipXML(t *testing.T) {
	p, err := ParsePublicAccessBlock([]byte(`<PublicAccessBlockConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><BlockPublicAcls>true</BlockPublicAcls><RestrictPublicBuckets>true</RestrictPublicBuckets></PublicAccessBlockConfiguration>`))
	if err != nil || !p.BlockPublicAcls || p.IgnorePublicAcls || !p.RestrictPublicBuckets {
		t.Fatalf("%+v %v", p, err)
	}
	if q, err := ParsePublicAccessBlock(p.AppendXML(nil)); err != nil || q != p {
		t.Fatalf("round trip %+v %v", q, err)
	}
	o, err := ParseOwnershipControls([]byte(`<OwnershipControls><Rule><ObjectOwnership>BucketOwnerEnforced</ObjectOwnership></Rule></OwnershipControls>`))
	if err != nil || o != OwnershipBucketOwnerEnforced {
		t.Fatal(o, err)
	}
	if o2, err := ParseOwnershipControls(o.AppendXML(nil)); err != nil || o2 != o {
		t.Fatal(o2, err)
	}
	if _, err := ParseOwnershipControls([]byte(`<OwnershipControls><Rule><ObjectOwnership>Mine</ObjectOwnership></Rule></OwnershipControls>`)); err == nil {
		t.Fatal("bad ownership accepted")
	}
	bo, w := Owner{ID: "alice"}, Owner{ID: "bob"}
	if ObjectOwner(OwnershipBucketOwnerPreferred, bo, w, "bucket-owner-full-control") != bo ||
		ObjectOwner(OwnershipBucketOwnerPreferred, bo, w, "") != w ||
		ObjectOwner(OwnershipObjectWriter, bo, w, "bucket-owner-full-control") != w ||
		ObjectOwner(OwnershipBucketOwnerEnforced, bo, w, "") != bo {
		t.Fatal("ObjectOwner")
	}
}

// TestEvaluateOrder checks the combination rules: deny beats every allow,
// policy allow or ACL allow, public access block, ownership enforced.
func TestEvaluateOrder(t *testing.T) {
	owner := Owner{ID: alice}
	private, _ := CannedACL("private", owner, owner)
	public, _ := CannedACL("public-read", owner, owner)
	bobWrite := ACL{Owner: owner, Grants: append(append([]Grant{}, private.Grants...), Grant{Grantee: Grantee{Type: GranteeCanonicalUser, ID: bob}, Permission: PermWrite})}
	objByBob, _ := CannedACL("private", Owner{ID: bob}, owner)
	denyBob, _ := ParseBucketPolicy([]byte(`{"Statement":[{"Sid":"NoBob","Effect":"Deny","Principal":{"AWS":"bob"},"Action":"s3:*","Resource":"arn:aws:s3:::bk/*"}]}`), "bk")
	pubPol, _ := ParseBucketPolicy([]byte(`{"Statement":[{"Sid":"Pub","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bk/*"}]}`), "bk")
	admin := Principal{ID: "root", Admin: true}

	cases := []struct {
		name string
		in   Input
		want DecisionEffect
		why  string
	}{
		{"acl grant", Input{Request: Request{Principal: bobP, Action: S3PutObject}, BucketACL: &bobWrite}, Allowed, "WRITE to CanonicalUser bob"},
		{"deny beats acl", Input{Request: Request{Principal: bobP, Action: S3PutObject}, BucketACL: &bobWrite, Policy: denyBob}, ExplicitDeny, "NoBob"},
		{"private", Input{Request: Request{Principal: bobP, Action: S3GetObject}, ObjectACL: &private}, ImplicitDeny, ""},
		{"anon public acl", Input{Request: Request{Principal: Anonymous, Action: S3GetObject}, ObjectACL: &public}, Allowed, "AllUsers"},
		{"ignore public acls", Input{Request: Request{Principal: Anonymous, Action: S3GetObject}, ObjectACL: &public, PublicAccessBlock: PublicAccessBlock{IgnorePublicAcls: true}}, ImplicitDeny, ""},
		{"public policy", Input{Request: Request{Principal: Anonymous, Action: S3GetObject}, ObjectACL: &private, Policy: pubPol}, Allowed, "Pub"},
		{"restrict public buckets", Input{Request: Request{Principal: bobP, Action: S3GetObject}, ObjectACL: &private, Policy: pubPol, PublicAccessBlock: PublicAccessBlock{RestrictPublicBuckets: true}}, ImplicitDeny, ""},
		{"restrict keeps owner", Input{Request: Request{Principal: aliceP, Action: S3GetObject}, ObjectACL: &private, Policy: pubPol, PublicAccessBlock: PublicAccessBlock{RestrictPublicBuckets: true}}, Allowed, "Pub"},
		{"object owned by writer", Input{Request: Request{Principal: aliceP, Action: S3GetObject}, ObjectACL: &objByBob}, ImplicitDeny, ""},
		{"enforced: bucket owner reads", Input{Request: Request{Principal: aliceP, Action: S3GetObject}, ObjectACL: &objByBob, Ownership: OwnershipBucketOwnerEnforced}, Allowed, "ACLs disabled"},
		{"enforced: acl ignored", Input{Request: Request{Principal: Anonymous, Action: S3GetObject}, ObjectACL: &public, Ownership: OwnershipBucketOwnerEnforced}, ImplicitDeny, ""},
		{"owner config", Input{Request: Request{Principal: aliceP, Action: S3PutBucketVersioning}}, Allowed, "resource owner"},
		{"other config", Input{Request: Request{Principal: bobP, Action: S3PutBucketVersioning}, BucketACL: &bobWrite}, ImplicitDeny, ""},
		{"admin", Input{Request: Request{Principal: admin, Action: S3DeleteBucket}}, Allowed, "admin"},
		{"admin api", Input{Request: Request{Principal: bobP, Action: AdminUsersWrite}}, ImplicitDeny, ""},
		{"admin api admin", Input{Request: Request{Principal: admin, Action: AdminUsersWrite}}, Allowed, "admin"},
		{"list buckets anon", Input{Request: Request{Principal: Anonymous, Action: S3ListAllMyBuckets}}, ImplicitDeny, ""},
		{"create bucket", Input{Request: Request{Principal: bobP, Action: S3CreateBucket}}, Allowed, ""},
		{"topic owner", Input{Request: Request{Principal: aliceP, Action: SNSSetTopicAttributes, Resource: Resource{Topic: "arn:aws:sns:default::t"}}}, Allowed, "owner"},
		{"topic other", Input{Request: Request{Principal: bobP, Action: SNSGetTopicAttributes, Resource: Resource{Topic: "arn:aws:sns:default::t"}}}, ImplicitDeny, ""},
	}
	for _, c := range cases {
		c.in.Owner = alice
		c.in.Resource.Bucket, c.in.Resource.Key = "bk", "k"
		if c.in.Context == nil {
			c.in.Context = Context{}
		}
		d := Evaluate(&c.in)
		if d.Effect != c.want || !strings.Contains(d.Reason, c.why) {
			t.Errorf("%s: %s (%s), want %s %q", c.name, d.Effect, d.Reason, c.want, c.why)
		}
	}
}

func TestTopicPolicy(t *testing.T) {
	p, err := ParseTopicPolicy([]byte(`{"Statement":[{"Sid":"Pub","Effect":"Allow","Principal":{"AWS":["arn:aws:iam:::user/bob"]},
		"Action":["sns:GetTopicAttributes","sns:Publish"],"Resource":"arn:aws:sns:default::t"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Request: Request{Principal: bobP, Action: SNSGetTopicAttributes, Resource: Resource{Topic: "arn:aws:sns:default::t"}, Context: Context{}}, Owner: alice, Policy: p}
	if d := Evaluate(&in); !d.Allowed() {
		t.Fatal(d)
	}
	in.Action = SNSDeleteTopic
	if d := Evaluate(&in); d.Allowed() {
		t.Fatal(d)
	}
	if _, err := ParseTopicPolicy([]byte(`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"*"}]}`)); err == nil {
		t.Fatal("s3 action in a topic policy")
	}
}
