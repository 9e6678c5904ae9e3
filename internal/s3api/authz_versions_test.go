package s3api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// Authorization of versions, copy sources and missing keys, through the
// handlers over the real driver (the fake has no per-version state): the
// decision must use the version a request names and that version's ACL.

// newDriverHarness serves the real driver on an in-memory embedded store,
// with users alice, bob and admin (the fake harness's keys).
func newDriverHarness(t *testing.T) *harness {
	t.Helper()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: "/d", FS: vfs.NewMem(), Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	d, err := driver.New(context.Background(), driver.Options{Store: st, DefaultShards: 3, GCMinWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); st.Close() })
	for _, u := range []driver.User{
		{ID: "alice", Keys: []driver.Key{{User: "alice", AccessKey: aliceKey, SecretKey: secrets[aliceKey]}}},
		{ID: "bob", Keys: []driver.Key{{User: "bob", AccessKey: bobKey, SecretKey: secrets[bobKey]}}},
		{ID: "admin", Admin: true, Keys: []driver.Key{{User: "admin", AccessKey: adminKey, SecretKey: secrets[adminKey]}}},
	} {
		if _, err := d.CreateUser(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	auth, err := NewSigV4(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Backend: d, Auth: auth, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, srv: srv, ts: httptest.NewServer(srv)}
	t.Cleanup(h.ts.Close)
	return h
}

// versioned creates bucket b for alice with versioning on.
func (h *harness) versioned(b string) {
	h.t.Helper()
	h.mustDo(req{method: "PUT", path: "/" + b}, 200)
	h.mustDo(req{method: "PUT", path: "/" + b + "?versioning",
		body: `<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>`}, 200)
}

// putVersion writes key and returns the new version id.
func (h *harness) putVersion(b, key, data string) string {
	h.t.Helper()
	res := h.mustDo(req{method: "PUT", path: "/" + b + "/" + key, body: data}, 200)
	v := res.header.Get("x-amz-version-id")
	if v == "" {
		h.t.Fatalf("PUT %s/%s: no version id", b, key)
	}
	return v
}

func (h *harness) policy(b, doc string) {
	h.t.Helper()
	h.mustDo(req{method: "PUT", path: "/" + b + "?policy", body: doc}, 204)
}

// bobPolicy allows bob the actions on b/* plus statements (JSON, may be "").
func bobPolicy(b string, actions []string, more string) string {
	st := fmt.Sprintf(`{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":%q,"Resource":"arn:aws:s3:::%s/*"}`, "X", b)
	st = strings.Replace(st, `"X"`, `["`+strings.Join(actions, `","`)+`"]`, 1)
	if more != "" {
		st += "," + more
	}
	return `{"Version":"2012-10-17","Statement":[` + st + `]}`
}

func denyBob(b string, actions ...string) string {
	return fmt.Sprintf(`{"Effect":"Deny","Principal":{"AWS":"bob"},"Action":["%s"],"Resource":"arn:aws:s3:::%s/*"}`, strings.Join(actions, `","`), b)
}

func expect(t *testing.T, what string, res resp, status int, code string) {
	t.Helper()
	if res.status != status || (code != "" && res.code() != code) {
		t.Errorf("%s: %d %s, want %d %s: %s", what, res.status, res.code(), status, code, res.body)
	}
}

func TestCopySourceVersionAuthz(t *testing.T) {
	h := newDriverHarness(t)
	h.versioned("src")
	old := h.putVersion("src", "k", "private-old")
	h.putVersion("src", "k", "current")
	h.mustDo(req{method: "PUT", path: "/bobs", key: bobKey}, 200)
	copyFrom := func(srcPath, dst string) resp {
		return h.do(req{method: "PUT", path: "/bobs/" + dst, key: bobKey, hdr: map[string]string{"x-amz-copy-source": srcPath}})
	}
	absent := func(key string) {
		t.Helper()
		if res := h.do(req{method: "HEAD", path: "/bobs/" + key, key: bobKey}); res.status != 404 {
			t.Errorf("bobs/%s exists after a refused copy (HEAD %d)", key, res.status)
		}
	}
	upload := func() string {
		res := h.mustDo(req{method: "POST", path: "/bobs/mp?uploads", key: bobKey}, 200)
		i, j := strings.Index(res.body, "<UploadId>"), strings.Index(res.body, "</UploadId>")
		return res.body[i+len("<UploadId>") : j]
	}
	partCopy := func(id, srcPath string) resp {
		return h.do(req{method: "PUT", path: "/bobs/mp?partNumber=1&uploadId=" + url.QueryEscape(id), key: bobKey,
			hdr: map[string]string{"x-amz-copy-source": srcPath}})
	}
	noParts := func(id string) {
		t.Helper()
		res := h.mustDo(req{method: "GET", path: "/bobs/mp?uploadId=" + url.QueryEscape(id), key: bobKey}, 200)
		if strings.Contains(res.body, "<Part>") {
			t.Errorf("a refused UploadPartCopy stored a part: %s", res.body)
		}
	}

	// Bob may GetObject: the current version, not a named one.
	h.policy("src", bobPolicy("src", []string{"s3:GetObject"}, ""))
	expect(t, "copy current with GetObject", copyFrom("src/k", "cur"), 200, "")
	expect(t, "copy old version with GetObject only", copyFrom("src/k?versionId="+old, "stolen"), 403, "AccessDenied")
	absent("stolen")
	id := upload()
	expect(t, "part copy old version with GetObject only", partCopy(id, "src/k?versionId="+old), 403, "AccessDenied")
	noParts(id)

	// An explicit Deny of GetObjectVersion wins over an Allow of s3:*.
	h.policy("src", bobPolicy("src", []string{"s3:*"}, denyBob("src", "s3:GetObjectVersion")))
	expect(t, "copy old version under Deny", copyFrom("src/k?versionId="+old, "stolen"), 403, "AccessDenied")
	absent("stolen")
	expect(t, "part copy old version under Deny", partCopy(id, "src/k?versionId="+old), 403, "AccessDenied")
	noParts(id)

	// Allowed GetObjectVersion: the copy is of that version.
	h.policy("src", bobPolicy("src", []string{"s3:GetObjectVersion"}, ""))
	res := copyFrom("src/k?versionId="+old, "granted")
	expect(t, "copy old version with GetObjectVersion", res, 200, "")
	if res.header.Get("x-amz-copy-source-version-id") != old {
		t.Errorf("copy source version %q, want %q", res.header.Get("x-amz-copy-source-version-id"), old)
	}
	if got := h.mustDo(req{method: "GET", path: "/bobs/granted", key: bobKey}, 200).body; got != "private-old" {
		t.Errorf("copied %q", got)
	}
	expect(t, "part copy with GetObjectVersion", partCopy(id, "src/k?versionId="+old), 200, "")

	// The source version's own ACL counts: public-read on the old version
	// lets anyone with PutObject on the destination copy it, the current
	// version's ACL does not.
	h.mustDo(req{method: "DELETE", path: "/src?policy"}, 204)
	expect(t, "copy old version, no grant", copyFrom("src/k?versionId="+old, "acl"), 403, "AccessDenied")
	h.mustDo(req{method: "PUT", path: "/src/k?acl", hdr: map[string]string{"x-amz-acl": "public-read"}}, 200)
	expect(t, "copy old version, only current public", copyFrom("src/k?versionId="+old, "acl"), 403, "AccessDenied")
	absent("acl")
	h.mustDo(req{method: "PUT", path: "/src/k?acl&versionId=" + old, hdr: map[string]string{"x-amz-acl": "public-read"}}, 200)
	expect(t, "copy old version, its ACL public", copyFrom("src/k?versionId="+old, "acl"), 200, "")
}

func TestVersionOwnACL(t *testing.T) {
	h := newDriverHarness(t)
	h.versioned("vbk")
	old := h.putVersion("vbk", "k", "old-private")
	cur := h.putVersion("vbk", "k", "current")
	anon := func(q string) resp { return h.do(req{method: "GET", path: "/vbk/k" + q, key: "-"}) }

	h.mustDo(req{method: "PUT", path: "/vbk/k?acl", hdr: map[string]string{"x-amz-acl": "public-read"}}, 200)
	expect(t, "anonymous GET current after public-read", anon(""), 200, "")
	expect(t, "anonymous GET current by id", anon("?versionId="+cur), 200, "")
	res := anon("?versionId=" + old)
	expect(t, "anonymous GET old version", res, 403, "AccessDenied")
	if strings.Contains(res.body, "old-private") {
		t.Fatal("old data leaked")
	}
	expect(t, "anonymous HEAD old version", h.do(req{method: "HEAD", path: "/vbk/k?versionId=" + old, key: "-"}), 403, "")

	// PutObjectAcl ?versionId changes that version only.
	res = h.mustDo(req{method: "PUT", path: "/vbk/k?acl&versionId=" + old, hdr: map[string]string{"x-amz-acl": "public-read"}}, 200)
	if res.header.Get("x-amz-version-id") != old {
		t.Errorf("PutObjectAcl version header %q", res.header.Get("x-amz-version-id"))
	}
	if res := anon("?versionId=" + old); res.status != 200 || res.body != "old-private" {
		t.Errorf("old version after its ACL: %d %q", res.status, res.body)
	}
	h.mustDo(req{method: "PUT", path: "/vbk/k?acl&versionId=" + cur, hdr: map[string]string{"x-amz-acl": "private"}}, 200)
	expect(t, "current after private", anon(""), 403, "AccessDenied")
	expect(t, "old after current private", anon("?versionId="+old), 200, "")
	acl := h.mustDo(req{method: "GET", path: "/vbk/k?acl&versionId=" + old}, 200).body
	if !strings.Contains(acl, "AllUsers") {
		t.Errorf("GetObjectAcl of the old version: %s", acl)
	}
	if acl := h.mustDo(req{method: "GET", path: "/vbk/k?acl"}, 200).body; strings.Contains(acl, "AllUsers") {
		t.Errorf("GetObjectAcl of the current version: %s", acl)
	}
	// A delete marker has no ACL to set.
	h.mustDo(req{method: "DELETE", path: "/vbk/k"}, 204)
	dm := h.mustDo(req{method: "GET", path: "/vbk?versions"}, 200).body
	i := strings.Index(dm, "<DeleteMarker>")
	j := strings.Index(dm[i:], "<VersionId>") + i + len("<VersionId>")
	mid := dm[j : j+strings.Index(dm[j:], "<")]
	expect(t, "PutObjectAcl on a delete marker", h.do(req{method: "PUT", path: "/vbk/k?acl&versionId=" + mid, hdr: map[string]string{"x-amz-acl": "public-read"}}), 405, "MethodNotAllowed")
}

func TestVersionActions(t *testing.T) {
	h := newDriverHarness(t)
	h.versioned("vbk")
	old := h.putVersion("vbk", "k", "old")
	h.putVersion("vbk", "k", "new")
	h.mustDo(req{method: "PUT", path: "/vbk/k?tagging&versionId=" + old, body: `<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag></TagSet></Tagging>`}, 200)
	h.policy("vbk", bobPolicy("vbk", []string{"s3:*"}, denyBob("vbk", "s3:GetObjectVersionTagging", "s3:PutObjectVersionTagging",
		"s3:DeleteObjectVersionTagging", "s3:GetObjectVersionAttributes", "s3:GetObjectVersion", "s3:GetObjectVersionAcl", "s3:PutObjectVersionAcl")))
	tags := `<Tagging><TagSet><Tag><Key>b</Key><Value>2</Value></Tag></TagSet></Tagging>`
	bob := func(method, q, body string, hdr map[string]string) resp {
		return h.do(req{method: method, path: "/vbk/k" + q, key: bobKey, body: body, hdr: hdr})
	}
	v := "&versionId=" + old
	expect(t, "PutObjectTagging version", bob("PUT", "?tagging"+v, tags, nil), 403, "AccessDenied")
	expect(t, "DeleteObjectTagging version", bob("DELETE", "?tagging"+v, "", nil), 403, "AccessDenied")
	expect(t, "GetObjectTagging version", bob("GET", "?tagging"+v, "", nil), 403, "AccessDenied")
	if got := h.mustDo(req{method: "GET", path: "/vbk/k?tagging" + v}, 200).body; !strings.Contains(got, "<Key>a</Key>") || strings.Contains(got, "<Key>b</Key>") {
		t.Errorf("old version's tags changed: %s", got)
	}
	attrs := map[string]string{"x-amz-object-attributes": "ETag"}
	expect(t, "GetObjectAttributes version", bob("GET", "?attributes"+v, "", attrs), 403, "AccessDenied")
	expect(t, "GetObject version", bob("GET", "?versionId="+old, "", nil), 403, "AccessDenied")
	expect(t, "HeadObject version", bob("HEAD", "?versionId="+old, "", nil), 403, "")
	expect(t, "GetObjectAcl version", bob("GET", "?acl"+v, "", nil), 403, "AccessDenied")
	expect(t, "PutObjectAcl version", bob("PUT", "?acl"+v, "", map[string]string{"x-amz-acl": "public-read"}), 403, "AccessDenied")
	// The plain actions on the current version stay allowed.
	expect(t, "PutObjectTagging current", bob("PUT", "?tagging", tags, nil), 200, "")
	expect(t, "GetObjectAttributes current", bob("GET", "?attributes", "", attrs), 200, "")
	expect(t, "GetObject current", bob("GET", "", "", nil), 200, "")

	// Reading tags is READ on the version's own ACL: bob's private object
	// in alice's bucket is not hers to read.
	h.policy("vbk", bobPolicy("vbk", []string{"s3:PutObject"}, ""))
	bv := h.mustDo(req{method: "PUT", path: "/vbk/bobs", key: bobKey, body: "b"}, 200).header.Get("x-amz-version-id")
	expect(t, "owner GetObjectTagging of bob's object", h.do(req{method: "GET", path: "/vbk/bobs?tagging"}), 403, "AccessDenied")
	expect(t, "owner GetObjectTagging of bob's version", h.do(req{method: "GET", path: "/vbk/bobs?tagging&versionId=" + bv}), 403, "AccessDenied")
	expect(t, "owner GetObject of bob's version", h.do(req{method: "GET", path: "/vbk/bobs?versionId=" + bv}), 403, "AccessDenied")

	// GetObjectAttributes needs the read action too, and reads the
	// version named.
	h.policy("vbk", bobPolicy("vbk", []string{"s3:GetObjectVersionAttributes"}, ""))
	expect(t, "GetObjectAttributes without GetObjectVersion", bob("GET", "?attributes"+v, "", attrs), 403, "AccessDenied")
	h.policy("vbk", bobPolicy("vbk", []string{"s3:GetObjectVersionAttributes", "s3:GetObjectVersion"}, ""))
	res := bob("GET", "?attributes"+v, "", attrs)
	expect(t, "GetObjectAttributes with both", res, 200, "")
	if res.header.Get("x-amz-version-id") != old || !strings.Contains(res.body, md5hex([]byte("old"))) {
		t.Errorf("attributes of the old version: %v %s", res.header, res.body)
	}
}

func TestMissingKeyNeedsListBucket(t *testing.T) {
	h := newDriverHarness(t)
	h.versioned("vbk")
	gone := h.putVersion("vbk", "public/gone", "x")
	h.mustDo(req{method: "DELETE", path: "/vbk/public/gone?versionId=" + gone}, 204)
	h.putVersion("vbk", "public/marked", "x")
	h.mustDo(req{method: "DELETE", path: "/vbk/public/marked"}, 204) // current is a delete marker
	h.mustDo(req{method: "PUT", path: "/bobs", key: bobKey}, 200)

	type probe struct {
		name string
		rq   req
	}
	probes := func(key string) []probe {
		return []probe{
			{"GET missing", req{method: "GET", path: "/vbk/public/missing", key: key}},
			{"HEAD missing", req{method: "HEAD", path: "/vbk/public/missing", key: key}},
			{"GET missing version", req{method: "GET", path: "/vbk/public/gone?versionId=" + gone, key: key}},
			{"GET delete-marked", req{method: "GET", path: "/vbk/public/marked", key: key}},
			{"GetObjectTagging missing", req{method: "GET", path: "/vbk/public/missing?tagging", key: key}},
		}
	}
	run := func(who, key string, ps []probe, status int, codes ...string) {
		t.Helper()
		for i, p := range ps {
			res := h.do(p.rq)
			code := ""
			if p.rq.method != "HEAD" {
				code = codes[0]
				if len(codes) > i {
					code = codes[i]
				}
			}
			expect(t, who+" "+p.name, res, status, code)
			if res.status == 403 && res.header.Get("x-amz-delete-marker") != "" {
				t.Errorf("%s %s: 403 with x-amz-delete-marker", who, p.name)
			}
		}
	}
	nsk := []string{"NoSuchKey", "", "NoSuchVersion", "NoSuchKey", "NoSuchKey"}

	// The owner may list: 404.
	run("owner", "", probes(""), 404, nsk...)

	// Bob (GetObject and GetObjectVersion, tagging) and anonymous (a
	// public-prefix GetObject) may not list: 403.
	pub := `{"Effect":"Allow","Principal":"*","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":"arn:aws:s3:::vbk/public/*"}`
	h.policy("vbk", bobPolicy("vbk", []string{"s3:GetObject", "s3:GetObjectVersion", "s3:GetObjectTagging"}, pub))
	run("bob", bobKey, probes(bobKey), 403, "AccessDenied")
	run("anonymous", "-", probes("-")[:4], 403, "AccessDenied")
	// ...and the copy source: a missing source is 403 without ListBucket
	// on the source bucket.
	cp := req{method: "PUT", path: "/bobs/c", key: bobKey, hdr: map[string]string{"x-amz-copy-source": "vbk/public/missing"}}
	expect(t, "bob copy from a missing key", h.do(cp), 403, "AccessDenied")
	cpv := req{method: "PUT", path: "/bobs/c", key: bobKey, hdr: map[string]string{"x-amz-copy-source": "vbk/public/gone?versionId=" + gone}}
	expect(t, "bob copy from a missing version", h.do(cpv), 403, "AccessDenied")

	// With s3:ListBucket they learn it is missing.
	list := `{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::vbk"}`
	h.policy("vbk", bobPolicy("vbk", []string{"s3:GetObject", "s3:GetObjectVersion", "s3:GetObjectTagging"}, pub+","+list))
	run("bob with ListBucket", bobKey, probes(bobKey), 404, nsk...)
	run("anonymous with ListBucket", "-", probes("-")[:4], 404, nsk...)
	expect(t, "bob copy from a missing key with ListBucket", h.do(cp), 404, "NoSuchKey")
	expect(t, "bob copy from a missing version with ListBucket", h.do(cpv), 404, "NoSuchVersion")
	// The delete marker is announced to who may list.
	if res := h.do(req{method: "GET", path: "/vbk/public/marked", key: bobKey}); res.header.Get("x-amz-delete-marker") != "true" {
		t.Errorf("delete marker header missing for a lister: %v", res.header)
	}

	// The owner under an explicit Deny of ListBucket: 403 too.
	h.policy("vbk", `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":{"AWS":"alice"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::vbk"}]}`)
	run("owner denied ListBucket", "", probes("")[:3], 403, "AccessDenied")
}

// staleHead answers HeadObject of src/k with a public-read ACL the stored
// object no longer has: the ACL changed between the copy's decision and
// its read.
type staleHead struct{ *fakeBackend }

func (f staleHead) HeadObject(ctx context.Context, bucket, key string) (driver.ObjectInfo, error) {
	info, err := f.fakeBackend.HeadObject(ctx, bucket, key)
	if err == nil && bucket == "src" && key == "k" {
		pub, _ := authz.CannedACL("public-read", authz.Owner{ID: "alice"}, authz.Owner{ID: "alice"})
		info.Meta.ACL = &pub
	}
	return info, err
}

// TestCopyDecidesOnTheVersionRead: a copy is authorized against the
// source it actually reads, not only the one it looked at first.
func TestCopyDecidesOnTheVersionRead(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Backend = staleHead{c.Backend.(*fakeBackend)} })
	h.bucket("src")
	h.put("src", "k", "private")
	if err := h.be.CreateBucket(context.Background(), "bob", "bobs", "", 0); err != nil {
		t.Fatal(err)
	}
	res := h.do(req{method: "PUT", path: "/bobs/c", key: bobKey, hdr: map[string]string{"x-amz-copy-source": "src/k"}})
	expect(t, "CopyObject of a source whose ACL changed", res, 403, "AccessDenied")
	if _, ok := h.be.buckets["bobs"].objects["c"]; ok {
		t.Fatal("the refused copy was written")
	}
	res = h.mustDo(req{method: "POST", path: "/bobs/mp?uploads", key: bobKey}, 200)
	id := res.body[strings.Index(res.body, "<UploadId>")+len("<UploadId>") : strings.Index(res.body, "</UploadId>")]
	res = h.do(req{method: "PUT", path: "/bobs/mp?partNumber=1&uploadId=" + url.QueryEscape(id), key: bobKey,
		hdr: map[string]string{"x-amz-copy-source": "src/k"}})
	expect(t, "UploadPartCopy of a source whose ACL changed", res, 403, "AccessDenied")
	if up := h.be.uploads[id]; up == nil || len(up.parts) != 0 {
		t.Fatalf("the refused part copy stored a part: %+v", up)
	}
}
