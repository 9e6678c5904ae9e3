package s3api

import (
	"log/slog"
	"strings"
	"testing"
)

// The access-control handlers and the decision point, through real SigV4
// requests against the fake backend.

func TestAnonymousBeforeLookup(t *testing.T) {
	h := newHarness(t)
	h.bucket("alices")
	h.put("alices", "k", "data")
	for _, tc := range []struct {
		rq     req
		status int
		code   string
	}{
		// Unsigned requests are looked up like any other: a missing bucket
		// is NoSuchBucket, not AccessDenied.
		{req{method: "GET", path: "/nobucket/k", key: "-"}, 404, "NoSuchBucket"},
		{req{method: "GET", path: "/nobucket", key: "-"}, 404, "NoSuchBucket"},
		{req{method: "GET", path: "/alices/k", key: "-"}, 403, "AccessDenied"},
		// Without ListBucket, a missing key is AccessDenied...
		{req{method: "GET", path: "/alices/missing", key: "-"}, 403, "AccessDenied"},
		{req{method: "PUT", path: "/alices/new", key: "-", body: "x"}, 403, "AccessDenied"},
		{req{method: "GET", path: "/", key: "-"}, 403, "AccessDenied"},
		{req{method: "PUT", path: "/anonbucket", key: "-"}, 403, "AccessDenied"},
	} {
		res := h.do(tc.rq)
		if res.status != tc.status || res.code() != tc.code {
			t.Errorf("%s %s: %d %s, want %d %s", tc.rq.method, tc.rq.path, res.status, res.code(), tc.status, tc.code)
		}
	}
	if _, ok := h.be.buckets["alices"].objects["new"]; ok {
		t.Fatal("denied anonymous PUT wrote")
	}
	// ...and NoSuchKey to a caller who may list.
	h.mustDo(req{method: "PUT", path: "/alices?acl", hdr: map[string]string{"x-amz-acl": "public-read"}}, 200)
	if res := h.do(req{method: "GET", path: "/alices/missing", key: "-"}); res.status != 404 || res.code() != "NoSuchKey" {
		t.Fatalf("public-read bucket, missing key: %d %s", res.status, res.code())
	}
	h.mustDo(req{method: "GET", path: "/alices", key: "-"}, 200)
	// Bucket READ does not give object READ.
	h.mustDo(req{method: "GET", path: "/alices/k", key: "-"}, 403)
}

func TestCannedAndGrantACLs(t *testing.T) {
	h := newHarness(t)
	bob := h.be.users["bob"]
	bob.Email = "bob@example.com"
	h.be.users["bob"] = bob
	h.mustDo(req{method: "PUT", path: "/pub", hdr: map[string]string{"x-amz-acl": "public-read-write"}}, 200)
	// Anonymous writes to a public-read-write bucket.
	h.mustDo(req{method: "PUT", path: "/pub/anon", key: "-", body: "a"}, 200)
	// An object with a canned ACL is readable by anyone.
	h.mustDo(req{method: "PUT", path: "/pub/open", body: "o", hdr: map[string]string{"x-amz-acl": "public-read"}}, 200)
	if res := h.mustDo(req{method: "GET", path: "/pub/open", key: "-"}, 200); res.body != "o" {
		t.Fatalf("body %q", res.body)
	}
	h.mustDo(req{method: "GET", path: "/pub/anon", key: bobKey}, 403)

	// Grants by email resolve to the user.
	h.mustDo(req{method: "PUT", path: "/priv"}, 200)
	h.mustDo(req{method: "GET", path: "/priv", key: bobKey}, 403)
	h.mustDo(req{method: "PUT", path: "/priv?acl", hdr: map[string]string{"x-amz-grant-read": `emailAddress="bob@example.com"`}}, 200)
	h.mustDo(req{method: "GET", path: "/priv", key: bobKey}, 200)
	res := h.mustDo(req{method: "GET", path: "/priv?acl"}, 200)
	for _, want := range []string{`<Owner><ID>alice</ID><DisplayName>Alice</DisplayName></Owner>`,
		`xsi:type="CanonicalUser"><ID>bob</ID><DisplayName>bob</DisplayName></Grantee><Permission>READ</Permission>`} {
		if !strings.Contains(res.body, want) {
			t.Errorf("GetBucketAcl lacks %s:\n%s", want, res.body)
		}
	}
	// The owner lost READ with that ACL, but keeps READ_ACP/WRITE_ACP.
	h.mustDo(req{method: "GET", path: "/priv"}, 403)
	h.mustDo(req{method: "PUT", path: "/priv?acl", hdr: map[string]string{"x-amz-acl": "private"}}, 200)
	h.mustDo(req{method: "GET", path: "/priv"}, 200)
	h.mustDo(req{method: "GET", path: "/priv", key: bobKey}, 403)

	for _, tc := range []struct {
		hdr  map[string]string
		body string
		code string
	}{
		{map[string]string{"x-amz-acl": "public"}, "", "InvalidArgument"},
		{map[string]string{"x-amz-grant-read": `emailAddress="nobody@example.com"`}, "", "UnresolvableGrantByEmailAddress"},
		{map[string]string{"x-amz-grant-read": `id="carol"`}, "", "InvalidArgument"},
		{map[string]string{"x-amz-acl": "private", "x-amz-grant-read": `id="bob"`}, "", "InvalidRequest"},
		{nil, "<AccessControlPolicy><AccessControlList><Grant><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>", "MalformedACLError"},
		{nil, "<AccessControlPolicy><Owner><ID>bob</ID></Owner></AccessControlPolicy>", "AccessDenied"},
	} {
		res := h.do(req{method: "PUT", path: "/priv?acl", hdr: tc.hdr, body: tc.body})
		if res.code() != tc.code {
			t.Errorf("PutBucketAcl %v %s: %d %s, want %s", tc.hdr, tc.body, res.status, res.code(), tc.code)
		}
	}
	// A failed PutBucketAcl left the ACL alone.
	h.mustDo(req{method: "GET", path: "/priv", key: bobKey}, 403)

	// An AccessControlPolicy body.
	body := `<AccessControlPolicy><Owner><ID>alice</ID></Owner><AccessControlList>
	<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID>alice</ID></Grantee><Permission>FULL_CONTROL</Permission></Grant>
	<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="Group"><URI>http://acs.amazonaws.com/groups/global/AuthenticatedUsers</URI></Grantee><Permission>WRITE</Permission></Grant>
	</AccessControlList></AccessControlPolicy>`
	h.mustDo(req{method: "PUT", path: "/priv?acl", body: body}, 200)
	h.mustDo(req{method: "PUT", path: "/priv/frombob", key: bobKey, body: "b"}, 200)
	h.mustDo(req{method: "PUT", path: "/priv/fromanon", key: "-", body: "b"}, 403)
}

func TestObjectACLAndOwnership(t *testing.T) {
	h := newHarness(t)
	h.bucket("shared")
	h.mustDo(req{method: "PUT", path: "/shared?acl", hdr: map[string]string{"x-amz-grant-write": `id="bob"`, "x-amz-grant-full-control": `id="alice"`}}, 200)
	// Bob's object is bob's (ObjectWriter): alice cannot read it...
	h.mustDo(req{method: "PUT", path: "/shared/b", key: bobKey, body: "bob's"}, 200)
	if o := h.be.buckets["shared"].objects["b"].info.Owner; o != "bob" {
		t.Fatalf("owner %q", o)
	}
	h.mustDo(req{method: "GET", path: "/shared/b"}, 403)
	h.mustDo(req{method: "HEAD", path: "/shared/b"}, 403)
	// ...until bob grants it.
	h.mustDo(req{method: "PUT", path: "/shared/b?acl", key: bobKey, hdr: map[string]string{"x-amz-grant-read": `id="alice"`}}, 200)
	if res := h.mustDo(req{method: "GET", path: "/shared/b"}, 200); res.body != "bob's" {
		t.Fatalf("body %q", res.body)
	}
	res := h.mustDo(req{method: "GET", path: "/shared/b?acl", key: bobKey}, 200)
	if !strings.Contains(res.body, "<Owner><ID>bob</ID>") {
		t.Fatalf("GetObjectAcl: %s", res.body)
	}
	// Alice has no READ_ACP on it; bob's grant was READ only.
	h.mustDo(req{method: "GET", path: "/shared/b?acl"}, 403)
	// The bucket owner may always delete (bucket WRITE).
	h.mustDo(req{method: "DELETE", path: "/shared/b"}, 204)

	// bucket-owner-full-control under BucketOwnerPreferred hands the
	// object to the bucket owner.
	h.mustDo(req{method: "PUT", path: "/shared?ownershipControls", body: `<OwnershipControls><Rule><ObjectOwnership>BucketOwnerPreferred</ObjectOwnership></Rule></OwnershipControls>`}, 200)
	res = h.mustDo(req{method: "GET", path: "/shared?ownershipControls"}, 200)
	if !strings.Contains(res.body, "<ObjectOwnership>BucketOwnerPreferred</ObjectOwnership>") {
		t.Fatal(res.body)
	}
	h.mustDo(req{method: "PUT", path: "/shared/p", key: bobKey, body: "p", hdr: map[string]string{"x-amz-acl": "bucket-owner-full-control"}}, 200)
	if o := h.be.buckets["shared"].objects["p"].info.Owner; o != "alice" {
		t.Fatalf("preferred owner %q", o)
	}
	// BucketOwnerEnforced disables ACLs.
	h.mustDo(req{method: "PUT", path: "/shared?ownershipControls", body: `<OwnershipControls><Rule><ObjectOwnership>BucketOwnerEnforced</ObjectOwnership></Rule></OwnershipControls>`}, 200)
	for _, rq := range []req{
		{method: "PUT", path: "/shared?acl", hdr: map[string]string{"x-amz-acl": "public-read"}},
		{method: "PUT", path: "/shared/x", body: "x", hdr: map[string]string{"x-amz-acl": "public-read"}},
		{method: "PUT", path: "/shared/p?acl", hdr: map[string]string{"x-amz-acl": "private"}},
	} {
		if res := h.do(rq); res.status != 400 || res.code() != "AccessControlListNotSupported" {
			t.Errorf("%s %s: %d %s", rq.method, rq.path, res.status, res.code())
		}
	}
	h.mustDo(req{method: "PUT", path: "/shared/y", key: bobKey, body: "y", hdr: map[string]string{"x-amz-acl": "bucket-owner-full-control"}}, 403)
	h.mustDo(req{method: "DELETE", path: "/shared?ownershipControls"}, 204)
	h.mustDo(req{method: "GET", path: "/shared?ownershipControls"}, 404)

	// x-amz-object-ownership on CreateBucket; ACL headers conflict with it.
	h.mustDo(req{method: "PUT", path: "/enforced", hdr: map[string]string{"x-amz-object-ownership": "BucketOwnerEnforced"}}, 200)
	if res := h.do(req{method: "PUT", path: "/enf2", hdr: map[string]string{"x-amz-object-ownership": "BucketOwnerEnforced", "x-amz-acl": "public-read"}}); res.code() != "InvalidBucketAclWithObjectOwnership" {
		t.Fatalf("%d %s", res.status, res.code())
	}
	if _, ok := h.be.buckets["enf2"]; ok {
		t.Fatal("a refused CreateBucket created the bucket")
	}
}

func TestBucketPolicyHandlers(t *testing.T) {
	h := newHarness(t)
	h.bucket("pol")
	h.put("pol", "pub/a", "A")
	h.put("pol", "priv/b", "B")
	h.mustDo(req{method: "GET", path: "/pol?policy"}, 404)
	h.mustDo(req{method: "GET", path: "/pol?policyStatus"}, 404)

	good := `{"Version":"2012-10-17","Statement":[
	 {"Sid":"PubRead","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::pol/pub/*"},
	 {"Sid":"BobList","Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bob"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::pol",
	  "Condition":{"StringLike":{"s3:prefix":"pub/*"}}}]}`
	h.mustDo(req{method: "PUT", path: "/pol?policy", body: good}, 204)
	if res := h.mustDo(req{method: "GET", path: "/pol?policy"}, 200); res.body != good {
		t.Fatalf("GetBucketPolicy: %s", res.body)
	}
	if res := h.mustDo(req{method: "GET", path: "/pol?policyStatus"}, 200); !strings.Contains(res.body, "<IsPublic>true</IsPublic>") {
		t.Fatal(res.body)
	}
	h.mustDo(req{method: "GET", path: "/pol/pub/a", key: "-"}, 200)
	h.mustDo(req{method: "GET", path: "/pol/priv/b", key: "-"}, 403)
	h.mustDo(req{method: "GET", path: "/pol?prefix=pub/x", key: bobKey}, 200)
	h.mustDo(req{method: "GET", path: "/pol?prefix=priv/", key: bobKey}, 403)
	h.mustDo(req{method: "GET", path: "/pol?policy", key: bobKey}, 403)

	// A malformed policy is refused with its reason; the old one stays.
	res := h.do(req{method: "PUT", path: "/pol?policy", body: `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::other/*"}]}`})
	if res.status != 400 || res.code() != "MalformedPolicy" || !strings.Contains(res.body, "Policy has invalid resource") {
		t.Fatalf("%d %s", res.status, res.body)
	}
	h.mustDo(req{method: "GET", path: "/pol/pub/a", key: "-"}, 200)

	// A deny on the owner: it stops her, yet she can still fix the policy.
	deny := `{"Statement":[{"Sid":"NoOne","Effect":"Deny","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::pol","arn:aws:s3:::pol/*"]}]}`
	h.mustDo(req{method: "PUT", path: "/pol?policy", body: deny}, 204)
	h.mustDo(req{method: "GET", path: "/pol/priv/b"}, 403)
	h.mustDo(req{method: "PUT", path: "/pol/priv/c", body: "c"}, 403)
	if _, ok := h.be.buckets["pol"].objects["priv/c"]; ok {
		t.Fatal("denied PUT wrote")
	}
	h.mustDo(req{method: "GET", path: "/pol?policy"}, 200)
	h.mustDo(req{method: "DELETE", path: "/pol?policy"}, 204)
	h.mustDo(req{method: "GET", path: "/pol/priv/b"}, 200)

	// Public access block: BlockPublicPolicy refuses a public policy,
	// RestrictPublicBuckets voids the one in place.
	h.mustDo(req{method: "PUT", path: "/pol?policy", body: good}, 204)
	h.mustDo(req{method: "PUT", path: "/pol?publicAccessBlock", body: `<PublicAccessBlockConfiguration><BlockPublicPolicy>true</BlockPublicPolicy><RestrictPublicBuckets>true</RestrictPublicBuckets></PublicAccessBlockConfiguration>`}, 200)
	h.mustDo(req{method: "GET", path: "/pol/pub/a", key: "-"}, 403)
	if res := h.do(req{method: "PUT", path: "/pol?policy", body: good}); res.status != 403 {
		t.Fatalf("public policy under BlockPublicPolicy: %d", res.status)
	}
	res = h.mustDo(req{method: "GET", path: "/pol?publicAccessBlock"}, 200)
	if !strings.Contains(res.body, "<RestrictPublicBuckets>true</RestrictPublicBuckets>") {
		t.Fatal(res.body)
	}
	h.mustDo(req{method: "DELETE", path: "/pol?publicAccessBlock"}, 204)
	h.mustDo(req{method: "GET", path: "/pol?publicAccessBlock"}, 404)
	h.mustDo(req{method: "GET", path: "/pol/pub/a", key: "-"}, 200)
	// Only the owner manages these.
	for _, rq := range []req{
		{method: "PUT", path: "/pol?publicAccessBlock", body: `<PublicAccessBlockConfiguration/>`},
		{method: "DELETE", path: "/pol?policy"},
		{method: "PUT", path: "/pol?ownershipControls", body: `<OwnershipControls><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule></OwnershipControls>`},
	} {
		rq.key = bobKey
		h.mustDo(rq, 403)
	}

	// DeleteObjects is decided per key.
	h.mustDo(req{method: "PUT", path: "/pol?policy", body: `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:DeleteObject","Resource":"arn:aws:s3:::pol/pub/*"}]}`}, 204)
	delBody := `<Delete><Object><Key>pub/a</Key></Object><Object><Key>priv/b</Key></Object></Delete>`
	res = h.mustDo(req{method: "POST", path: "/pol?delete", key: bobKey, body: delBody, hdr: contentMD5(delBody)}, 200)
	if !strings.Contains(res.body, "<Deleted><Key>pub/a</Key>") || !strings.Contains(res.body, "<Key>priv/b</Key><Code>AccessDenied</Code>") {
		t.Fatalf("DeleteObjects: %s", res.body)
	}
	if _, ok := h.be.buckets["pol"].objects["priv/b"]; !ok {
		t.Fatal("denied key deleted")
	}
}

func TestPolicyExistingObjectTag(t *testing.T) {
	h := newHarness(t)
	h.bucket("tags")
	h.mustDo(req{method: "PUT", path: "/tags/secret", body: "s", hdr: map[string]string{"x-amz-tagging": "class=secret"}}, 200)
	h.mustDo(req{method: "PUT", path: "/tags/open", body: "o", hdr: map[string]string{"x-amz-tagging": "class=public"}}, 200)
	h.mustDo(req{method: "PUT", path: "/tags?policy", body: `{"Statement":[
	 {"Sid":"NoSecrets","Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::tags/*","Condition":{"StringEquals":{"s3:ExistingObjectTag/class":"secret"}}},
	 {"Sid":"PublicTagged","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::tags/*","Condition":{"StringEquals":{"s3:ExistingObjectTag/class":"public"}}}]}`}, 204)
	// The deny applies to the owner too, though her ACL grant allows.
	h.mustDo(req{method: "GET", path: "/tags/secret"}, 403)
	h.mustDo(req{method: "GET", path: "/tags/open", key: "-"}, 200)
	h.mustDo(req{method: "GET", path: "/tags/secret", key: "-"}, 403)
}

// The decision log names the statement or grant that decided.
func TestDecisionLog(t *testing.T) {
	var logs strings.Builder
	h := newHarness(t, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	h.bucket("logged")
	h.put("logged", "k", "v")
	h.mustDo(req{method: "PUT", path: "/logged?policy", body: `{"Statement":[{"Sid":"NoBob","Effect":"Deny","Principal":{"AWS":"bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::logged/*"}]}`}, 204)
	h.mustDo(req{method: "GET", path: "/logged/k", key: bobKey}, 403)
	h.mustDo(req{method: "GET", path: "/logged/k"}, 200)
	for _, want := range []string{
		`"msg":"authz","request_id":`,
		`"principal":"bob","action":"s3:GetObject","resource":"arn:aws:s3:::logged/k","effect":"ExplicitDeny","reason":"policy statement \"NoBob\" (Deny)"`,
		`"principal":"alice","action":"s3:GetObject","resource":"arn:aws:s3:::logged/k","effect":"Allow","reason":"ACL grant FULL_CONTROL to CanonicalUser alice"`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s", want)
		}
	}
}
