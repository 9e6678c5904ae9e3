package s3api

import (
	"encoding/xml"
	"testing"
	"time"
)

// DeleteObjects decides each key with the action its entry needs: a
// VersionId makes it s3:DeleteObjectVersion, so a Deny on that action holds
// per key, for the owner too, and a bucket WRITE grant does not reach it.
func TestDeleteObjectsPerKeyAction(t *testing.T) {
	h := newHarness(t)
	h.bucket("d")
	h.mustDo(req{method: "PUT", path: "/d?acl", hdr: map[string]string{"x-amz-grant-write": `id="bob"`, "x-amz-grant-full-control": `id="alice"`}}, 200)
	for _, k := range []string{"a", "b", "c", "e"} {
		h.put("d", k, k)
	}
	multi := func(key, body string) deleteResultXML {
		t.Helper()
		res := h.mustDo(req{method: "POST", path: "/d?delete", key: key, body: body, hdr: contentMD5(body)}, 200)
		var out deleteResultXML
		if err := xml.Unmarshal([]byte(res.body), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// Bob (WRITE grantee): deletes a current object, never a version.
	out := multi(bobKey, `<Delete><Object><Key>a</Key></Object><Object><Key>b</Key><VersionId>null</VersionId></Object></Delete>`)
	if len(out.Deleted) != 1 || out.Deleted[0].Key != "a" || len(out.Error) != 1 || out.Error[0].Key != "b" || out.Error[0].Code != "AccessDenied" {
		t.Fatalf("bob: %+v", out)
	}
	if objs := h.be.buckets["d"].objects; objs["a"] != nil || objs["b"] == nil {
		t.Fatalf("bob: a deleted, b kept; left %v", objs)
	}
	// The same single DELETE is refused too.
	h.mustDo(req{method: "DELETE", path: "/d/b?versionId=null", key: bobKey}, 403)

	// The owner under its own Deny on s3:DeleteObjectVersion.
	h.mustDo(req{method: "PUT", path: "/d?policy", body: `{"Statement":[{"Sid":"NoPurge","Effect":"Deny","Principal":"*","Action":"s3:DeleteObjectVersion","Resource":"arn:aws:s3:::d/*"}]}`}, 204)
	out = multi(aliceKey, `<Delete><Object><Key>b</Key><VersionId>null</VersionId></Object><Object><Key>c</Key></Object></Delete>`)
	if len(out.Deleted) != 1 || out.Deleted[0].Key != "c" || len(out.Error) != 1 || out.Error[0].Key != "b" || out.Error[0].Code != "AccessDenied" {
		t.Fatalf("alice: %+v", out)
	}
	if objs := h.be.buckets["d"].objects; objs["b"] == nil || objs["c"] != nil {
		t.Fatalf("alice: left %v", objs)
	}
	h.mustDo(req{method: "DELETE", path: "/d/b?versionId=null"}, 403)

	// s3:versionid is each entry's own: a Deny pinned to one version id
	// refuses that entry only.
	h.mustDo(req{method: "PUT", path: "/d?policy", body: `{"Statement":[{"Sid":"KeepNull","Effect":"Deny","Principal":"*","Action":"s3:DeleteObjectVersion","Resource":"arn:aws:s3:::d/*","Condition":{"StringEquals":{"s3:versionid":"null"}}}]}`}, 204)
	h.put("d", "c", "c")
	out = multi(aliceKey, `<Delete><Object><Key>b</Key><VersionId>null</VersionId></Object><Object><Key>e</Key></Object></Delete>`)
	if len(out.Error) != 1 || out.Error[0].Key != "b" || len(out.Deleted) != 1 || out.Deleted[0].Key != "e" {
		t.Fatalf("versionid condition: %+v", out)
	}

	// MFA delete cannot be enabled: x-amz-mfa is refused, not ignored.
	body := `<Delete><Object><Key>c</Key></Object></Delete>`
	hdr := contentMD5(body)
	hdr["x-amz-mfa"] = "123 456"
	if res := h.do(req{method: "POST", path: "/d?delete", body: body, hdr: hdr}); res.status != 501 {
		t.Fatalf("DeleteObjects x-amz-mfa: %d %s", res.status, res.body)
	}
	if res := h.do(req{method: "DELETE", path: "/d/c", hdr: map[string]string{"x-amz-mfa": "123 456"}}); res.status != 501 {
		t.Fatalf("DeleteObject x-amz-mfa: %d %s", res.status, res.body)
	}
	if h.be.buckets["d"].objects["c"] == nil {
		t.Fatal("a refused delete deleted c")
	}
}

// The headers of a write that AWS gates with their own actions need them
// besides s3:PutObject: nothing is stored when one is refused.
func TestWriteHeadersNeedTheirActions(t *testing.T) {
	h := newHarness(t)
	h.bucket("w")
	h.mustDo(req{method: "PUT", path: "/w?acl", hdr: map[string]string{"x-amz-grant-write": `id="bob"`, "x-amz-grant-full-control": `id="alice"`}}, 200)
	until := time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	lock := map[string]string{"x-amz-object-lock-mode": "COMPLIANCE", "x-amz-object-lock-retain-until-date": until}
	hold := map[string]string{"x-amz-object-lock-legal-hold": "ON"}
	tags := map[string]string{"x-amz-tagging": "k=v"}
	for _, tc := range []struct {
		name string
		hdr  map[string]string
	}{{"retention", lock}, {"legal hold", hold}, {"tagging", tags}} {
		for _, rq := range []req{
			{method: "PUT", path: "/w/o", key: bobKey, body: "x", hdr: tc.hdr},
			{method: "POST", path: "/w/o?uploads", key: bobKey, hdr: tc.hdr},
		} {
			if res := h.do(rq); res.status != 403 || res.code() != "AccessDenied" {
				t.Errorf("bob %s %s: %d %s", tc.name, rq.method, res.status, res.body)
			}
		}
	}
	if len(h.be.buckets["w"].objects) != 0 || len(h.be.uploads) != 0 {
		t.Fatalf("refused writes stored something")
	}
	// Bob may still write plainly, and set the ACL of what he creates.
	h.mustDo(req{method: "PUT", path: "/w/plain", key: bobKey, body: "x", hdr: map[string]string{"x-amz-acl": "bucket-owner-read"}}, 200)
	// A copy with lock headers is refused the same way.
	cp := map[string]string{"x-amz-copy-source": "/w/plain"}
	for k, v := range lock {
		cp[k] = v
	}
	h.mustDo(req{method: "PUT", path: "/w/copy", key: bobKey, hdr: cp}, 403)
	if h.be.buckets["w"].objects["copy"] != nil {
		t.Fatal("refused copy stored")
	}

	// The owner may, unless its policy denies it; a policy Allow lets bob.
	h.mustDo(req{method: "PUT", path: "/w/mine", body: "x", hdr: lock}, 200)
	if o := h.be.buckets["w"].objects["mine"]; o == nil || o.info.Meta.LockMode != "COMPLIANCE" {
		t.Fatal("owner's lock not stored")
	}
	h.mustDo(req{method: "PUT", path: "/w?policy", body: `{"Statement":[
	 {"Sid":"NoLocks","Effect":"Deny","Principal":{"AWS":"alice"},"Action":["s3:PutObjectRetention","s3:PutObjectAcl"],"Resource":"arn:aws:s3:::w/*"},
	 {"Sid":"BobTags","Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:PutObjectTagging","Resource":"arn:aws:s3:::w/*"}]}`}, 204)
	h.mustDo(req{method: "PUT", path: "/w/mine2", body: "x", hdr: lock}, 403)
	h.mustDo(req{method: "PUT", path: "/w/mine3", body: "x", hdr: map[string]string{"x-amz-acl": "private"}}, 403)
	h.mustDo(req{method: "PUT", path: "/w/tagged", key: bobKey, body: "x", hdr: tags}, 200)
	if o := h.be.buckets["w"].objects; o["mine2"] != nil || o["mine3"] != nil || o["tagged"] == nil || o["tagged"].info.Meta.Tags["k"] != "v" {
		t.Fatalf("after policy: %v", o)
	}
}

// POST form fields are the headers of a PUT: the acl field is applied,
// refused under BlockPublicAcls and BucketOwnerEnforced, and lock fields
// need s3:PutObjectRetention.
func TestPostFormFieldsAuthorized(t *testing.T) {
	h := newHarness(t)
	h.bucket("pf")
	h.mustDo(req{method: "PUT", path: "/pf?acl", hdr: map[string]string{"x-amz-grant-write": `id="bob"`, "x-amz-grant-full-control": `id="alice"`}}, 200)
	exp := time.Now().Add(time.Hour)
	form := func(ak, key string, extra ...formField) []formField {
		conds := []any{map[string]string{"key": key}}
		for _, f := range extra {
			conds = append(conds, map[string]string{f.name: f.value})
		}
		return v4Form(ak, exp, conds, append([]formField{{"key", key}}, extra...)...)
	}
	// Applied: anonymous can read an object posted with acl=public-read.
	if res := h.postForm("pf", form(aliceKey, "pub", formField{"acl", "public-read"}), "f", "data"); res.status != 204 {
		t.Fatalf("post public-read: %d %s", res.status, res.body)
	}
	if res := h.do(req{method: "GET", path: "/pf/pub", key: "-"}); res.status != 200 || res.body != "data" {
		t.Fatalf("anonymous read of a public-read POST: %d", res.status)
	}
	// Bob's POST makes an object bob owns (as his PUT would).
	if res := h.postForm("pf", form(bobKey, "bobs"), "f", "b"); res.status != 204 {
		t.Fatalf("bob post: %d %s", res.status, res.body)
	}
	if o := h.be.buckets["pf"].objects["bobs"]; o == nil || o.info.Owner != "bob" {
		t.Fatal("bob's POST not owned by bob")
	}
	// A lock field needs s3:PutObjectRetention.
	until := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	res := h.postForm("pf", form(bobKey, "locked", formField{"x-amz-object-lock-mode", "GOVERNANCE"}, formField{"x-amz-object-lock-retain-until-date", until}), "f", "l")
	if res.status != 403 || h.be.buckets["pf"].objects["locked"] != nil {
		t.Fatalf("bob lock field: %d %s", res.status, res.body)
	}
	// BlockPublicAcls refuses the field; nothing is stored.
	h.mustDo(req{method: "PUT", path: "/pf?publicAccessBlock", body: `<PublicAccessBlockConfiguration><BlockPublicAcls>true</BlockPublicAcls></PublicAccessBlockConfiguration>`}, 200)
	if res := h.postForm("pf", form(aliceKey, "blocked", formField{"acl", "public-read"}), "f", "x"); res.status != 403 || h.be.buckets["pf"].objects["blocked"] != nil {
		t.Fatalf("BlockPublicAcls: %d %s", res.status, res.body)
	}
	// BucketOwnerEnforced refuses ACLs.
	h.mustDo(req{method: "DELETE", path: "/pf?publicAccessBlock"}, 204)
	h.mustDo(req{method: "PUT", path: "/pf?ownershipControls", body: `<OwnershipControls><Rule><ObjectOwnership>BucketOwnerEnforced</ObjectOwnership></Rule></OwnershipControls>`}, 200)
	if res := h.postForm("pf", form(aliceKey, "enforced", formField{"acl", "public-read"}), "f", "x"); res.code() != "AccessControlListNotSupported" || h.be.buckets["pf"].objects["enforced"] != nil {
		t.Fatalf("BucketOwnerEnforced: %d %s", res.status, res.body)
	}
}

// Per-key delete decisions read the key's own tags when the policy asks
// for s3:ExistingObjectTag, single and multi alike.
func TestDeleteExistingObjectTag(t *testing.T) {
	h := newHarness(t)
	h.bucket("t")
	h.mustDo(req{method: "PUT", path: "/t/trash", body: "x", hdr: map[string]string{"x-amz-tagging": "class=trash"}}, 200)
	h.mustDo(req{method: "PUT", path: "/t/trash2", body: "x", hdr: map[string]string{"x-amz-tagging": "class=trash"}}, 200)
	h.put("t", "keep", "x")
	h.put("t", "keep2", "x")
	h.mustDo(req{method: "PUT", path: "/t?policy", body: `{"Statement":[{"Sid":"BobTrash","Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:DeleteObject","Resource":"arn:aws:s3:::t/*","Condition":{"StringEquals":{"s3:ExistingObjectTag/class":"trash"}}}]}`}, 204)
	h.mustDo(req{method: "DELETE", path: "/t/keep", key: bobKey}, 403)
	h.mustDo(req{method: "DELETE", path: "/t/trash", key: bobKey}, 204)
	body := `<Delete><Object><Key>trash2</Key></Object><Object><Key>keep2</Key></Object></Delete>`
	res := h.mustDo(req{method: "POST", path: "/t?delete", key: bobKey, body: body, hdr: contentMD5(body)}, 200)
	var out deleteResultXML
	if err := xml.Unmarshal([]byte(res.body), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Deleted) != 1 || out.Deleted[0].Key != "trash2" || len(out.Error) != 1 || out.Error[0].Key != "keep2" {
		t.Fatalf("%s", res.body)
	}
	if o := h.be.buckets["t"].objects; o["keep"] == nil || o["keep2"] == nil || o["trash"] != nil || o["trash2"] != nil {
		t.Fatalf("left %v", o)
	}
}
