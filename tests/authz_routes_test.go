package tests

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// TestAuthzEveryRoute walks every operation docs/s3-compatibility.md lists
// as served (that table is itself checked against the router by
// internal/server/compat_test.go) and, for each, sends the operation's
// request as
//   - anonymous, and another user without any grant: AccessDenied;
//   - another user granted only a neighbouring action that must not
//     suffice (the non-version form of a version action, PutObject without
//     the retention permission its headers need): AccessDenied;
//   - the bucket owner under an explicit bucket-policy Deny of the action
//     AWS documents for the operation: AccessDenied (except the bucket
//     policy actions, which AWS keeps for the owner);
//   - another user granted exactly that action on exactly its resource
//     (bucket ARN or object ARN): not AccessDenied, and the state changed
//     where the operation writes;
//
// on a bucket with versioning and object lock enabled. Every denial must
// leave the bucket as it was: its versions, ACLs, tags, configuration,
// retention and multipart uploads, read back by the admin.
//
// The expected actions come from AWS's S3 API reference ("Permissions" of
// each operation), not from Cairn's route table: the test is an oracle for
// that table. A served operation without a spec here fails the test.
func TestAuthzEveryRoute(t *testing.T) {
	g := StartGateway(t)
	keys := map[string][2]string{"admin": {g.AccessKey, g.SecretKey}, "anon": {}}
	for _, u := range []string{"alice", "bob"} {
		out, err := g.Admin("user", "create", "--uid", u, "--display-name", u)
		if err != nil {
			t.Fatalf("create user %s: %v", u, err)
		}
		keys[u] = [2]string{jsonField(t, out, "access_key"), jsonField(t, out, "secret_key")}
	}
	h := &routeHarness{t: t, g: g, keys: keys}

	rows := servedOps(t)
	specs := routeSpecs()
	var missing []string
	for op := range rows {
		if _, ok := specs[op]; !ok {
			missing = append(missing, op)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("served operations without an authz spec in this test: %v", missing)
	}
	ops := make([]string, 0, len(specs))
	for op := range specs {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	cells := 0
	for _, op := range ops {
		sp := specs[op]
		if sp.skip != "" {
			t.Logf("%s: not walked here: %s", op, sp.skip)
			continue
		}
		req, ok := rows[op]
		if !ok {
			t.Errorf("%s has a spec but no served row in docs/s3-compatibility.md", op)
			continue
		}
		for i, v := range sp.variants() {
			cells += h.runVariant(op, req, sp, v, i)
		}
	}
	t.Logf("%d cells over %d operations", cells, len(ops))
}

// servedOps returns operation -> request template of the supported and
// partial rows of the compatibility table.
func servedOps(t *testing.T) map[string]string {
	data, err := os.ReadFile("../docs/s3-compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("^\\| *([A-Za-z0-9]+) *\\| *`([^`]*)` *\\| *(supported|partial) *\\|")
	out := map[string]string{}
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## Operations"
			continue
		}
		if m := re.FindStringSubmatch(line); in && m != nil {
			out[m[1]] = m[2]
		}
	}
	if len(out) < 40 {
		t.Fatalf("only %d served operations parsed", len(out))
	}
	return out
}

// routeSpec is what AWS requires for one operation.
type routeSpec struct {
	skip   string   // why the operation is not walked here (tested elsewhere)
	action string   // the IAM action AWS documents
	object bool     // the action's resource is the object ARN (else the bucket's)
	extra  []string // further actions the allowed user needs (copy sources)
	// body builds the request body (nil: none).
	body func(c *routeCase) string
	// headers added to the row's request.
	headers map[string]string
	changes bool // an allowed request changes the snapshot
	// ownerKeeps: AWS lets the bucket owner do this under a Deny (the
	// bucket policy actions), and answers another account 405.
	ownerKeeps bool
	// more are further variants (a version, lock headers).
	more []routeVariant
}

// routeVariant is one request shape of an operation.
type routeVariant struct {
	name    string
	query   func(c *routeCase) string // appended to the row's query
	headers map[string]string
	body    func(c *routeCase) string
	deny    string   // the owner is denied this (default: the spec's action)
	grant   []string // the allowed user's actions (default: action + extra)
	partial []string // a grant that must not suffice
	changes bool
	object  bool
	key     string // the key instead of the row's k
}

func (sp routeSpec) variants() []routeVariant {
	base := routeVariant{name: "plain", body: sp.body, headers: sp.headers, changes: sp.changes, object: sp.object,
		deny: sp.action, grant: append([]string{sp.action}, sp.extra...)}
	out := []routeVariant{base}
	for _, v := range sp.more {
		if v.body == nil {
			v.body = sp.body
		}
		if v.deny == "" {
			v.deny = v.grant[0]
		}
		v.object = sp.object
		if v.headers == nil {
			v.headers = sp.headers
		}
		out = append(out, v)
	}
	return out
}

// routeCase is the fixture of one variant: a bucket with versioning and
// object lock, key k with two versions (v1 older), src, a key under
// GOVERNANCE retention and a multipart upload on k with one part.
type routeCase struct {
	bucket, v1, v2, lockedV, upload, partETag string
}

func versionQuery(c *routeCase) string { return "versionId=" + c.v1 }

func routeSpecs() map[string]routeSpec {
	obj := func(action string, changes bool) routeSpec {
		return routeSpec{action: action, object: true, changes: changes}
	}
	bkt := func(action string, changes bool) routeSpec { return routeSpec{action: action, changes: changes} }
	withBody := func(sp routeSpec, body string) routeSpec {
		sp.body = func(*routeCase) string { return body }
		return sp
	}
	version := func(sp routeSpec, grant, partial string, changes bool) routeSpec {
		sp.more = append(sp.more, routeVariant{name: "version", query: versionQuery,
			grant: []string{grant}, partial: []string{partial}, changes: changes})
		return sp
	}
	future := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	tagging := `<Tagging><TagSet><Tag><Key>k1</Key><Value>v1</Value></Tag></TagSet></Tagging>`
	s := map[string]routeSpec{
		"ListBuckets":         {skip: "not bucket-scoped: lists the caller's own buckets (TestAccessMatrix)"},
		"GetUsage":            {skip: "not bucket-scoped: the caller's own usage log (TestUsageShow, python/test_quota.py)"},
		"CreateBucket":        {skip: "identity-scoped; no bucket policy can apply (TestAccessMatrix, limits tests)"},
		"PostObject":          {skip: "form-authenticated (tests/post_test.go walks its fields)"},
		"PreflightCors":       {skip: "unauthenticated by design (CORS preflight)"},
		"HeadBucket":          bkt("s3:ListBucket", false),
		"ListObjects":         bkt("s3:ListBucket", false),
		"ListObjectsV2":       bkt("s3:ListBucket", false),
		"DeleteBucket":        bkt("s3:DeleteBucket", false), // not empty: BucketNotEmpty when allowed
		"GetBucketAcl":        bkt("s3:GetBucketAcl", false),
		"PutBucketAcl":        {action: "s3:PutBucketAcl", headers: map[string]string{"x-amz-acl": "authenticated-read"}, changes: true},
		"GetBucketCors":       bkt("s3:GetBucketCORS", false),
		"PutBucketCors":       withBody(bkt("s3:PutBucketCORS", true), `<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>`),
		"DeleteBucketCors":    {action: "s3:PutBucketCORS", body: nil, more: nil},
		"GetBucketEncryption": bkt("s3:GetEncryptionConfiguration", false),
		"GetBucketLogging":    bkt("s3:GetBucketLogging", false),
		// Disabling (no target to set up): allowed or not, nothing changes.
		"PutBucketLogging": withBody(bkt("s3:PutBucketLogging", false), `<BucketLoggingStatus xmlns="http://s3.amazonaws.com/doc/2006-03-01/"/>`),
		"PutBucketEncryption": withBody(bkt("s3:PutEncryptionConfiguration", true),
			`<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>`),
		"DeleteBucketEncryption":          bkt("s3:PutEncryptionConfiguration", false),
		"GetBucketLifecycleConfiguration": bkt("s3:GetLifecycleConfiguration", false),
		"PutBucketLifecycleConfiguration": withBody(bkt("s3:PutLifecycleConfiguration", true),
			`<LifecycleConfiguration><Rule><ID>r</ID><Filter><Prefix>x/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>3</Days></Expiration></Rule></LifecycleConfiguration>`),
		"DeleteBucketLifecycle":                 bkt("s3:PutLifecycleConfiguration", false),
		"GetBucketLocation":                     bkt("s3:GetBucketLocation", false),
		"GetBucketNotificationConfiguration":    bkt("s3:GetBucketNotification", false),
		"PutBucketNotificationConfiguration":    withBody(bkt("s3:PutBucketNotification", false), `<NotificationConfiguration></NotificationConfiguration>`),
		"DeleteBucketNotificationConfiguration": bkt("s3:PutBucketNotification", false),
		"GetBucketOwnershipControls":            bkt("s3:GetBucketOwnershipControls", false),
		"PutBucketOwnershipControls": withBody(bkt("s3:PutBucketOwnershipControls", true),
			`<OwnershipControls><Rule><ObjectOwnership>BucketOwnerPreferred</ObjectOwnership></Rule></OwnershipControls>`),
		"DeleteBucketOwnershipControls": bkt("s3:PutBucketOwnershipControls", false),
		"GetBucketPolicy":               {action: "s3:GetBucketPolicy", ownerKeeps: true},
		"PutBucketPolicy":               {action: "s3:PutBucketPolicy", ownerKeeps: true},
		"DeleteBucketPolicy":            {action: "s3:DeleteBucketPolicy", ownerKeeps: true},
		"GetBucketPolicyStatus":         bkt("s3:GetBucketPolicyStatus", false),
		"GetBucketTagging":              bkt("s3:GetBucketTagging", false),
		"PutBucketTagging":              withBody(bkt("s3:PutBucketTagging", true), tagging),
		"DeleteBucketTagging":           bkt("s3:PutBucketTagging", false),
		"GetBucketVersioning":           bkt("s3:GetBucketVersioning", false),
		"PutBucketVersioning":           withBody(bkt("s3:PutBucketVersioning", false), `<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>`),
		"GetPublicAccessBlock":          bkt("s3:GetBucketPublicAccessBlock", false),
		"PutPublicAccessBlock": withBody(bkt("s3:PutBucketPublicAccessBlock", true),
			`<PublicAccessBlockConfiguration><BlockPublicAcls>true</BlockPublicAcls></PublicAccessBlockConfiguration>`),
		"DeletePublicAccessBlock":    bkt("s3:PutBucketPublicAccessBlock", false),
		"GetObjectLockConfiguration": bkt("s3:GetBucketObjectLockConfiguration", false),
		"PutObjectLockConfiguration": withBody(bkt("s3:PutBucketObjectLockConfiguration", true),
			`<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days></DefaultRetention></Rule></ObjectLockConfiguration>`),
		"ListMultipartUploads": bkt("s3:ListBucketMultipartUploads", false),
		"ListObjectVersions":   bkt("s3:ListBucketVersions", false),

		"GetObject":           version(obj("s3:GetObject", false), "s3:GetObjectVersion", "s3:GetObject", false),
		"HeadObject":          version(obj("s3:GetObject", false), "s3:GetObjectVersion", "s3:GetObject", false),
		"GetObjectAcl":        version(obj("s3:GetObjectAcl", false), "s3:GetObjectVersionAcl", "s3:GetObjectAcl", false),
		"PutObjectAcl":        version(routeSpec{action: "s3:PutObjectAcl", object: true, headers: map[string]string{"x-amz-acl": "authenticated-read"}, changes: true}, "s3:PutObjectVersionAcl", "s3:PutObjectAcl", true),
		"GetObjectTagging":    version(obj("s3:GetObjectTagging", false), "s3:GetObjectVersionTagging", "s3:GetObjectTagging", false),
		"PutObjectTagging":    version(withBody(obj("s3:PutObjectTagging", true), tagging), "s3:PutObjectVersionTagging", "s3:PutObjectTagging", true),
		"DeleteObjectTagging": version(obj("s3:DeleteObjectTagging", false), "s3:DeleteObjectVersionTagging", "s3:DeleteObjectTagging", false),
		// AWS: GetObjectAttributes needs the read action too (s3:GetObject,
		// or for a version s3:GetObjectVersion).
		"GetObjectAttributes": {action: "s3:GetObjectAttributes", object: true, extra: []string{"s3:GetObject"},
			headers: map[string]string{"x-amz-object-attributes": "ETag,ObjectSize"},
			more: []routeVariant{{name: "version", query: versionQuery, deny: "s3:GetObjectVersionAttributes",
				grant:   []string{"s3:GetObjectVersionAttributes", "s3:GetObjectVersion"},
				partial: []string{"s3:GetObjectAttributes", "s3:GetObject"}}}},
		"GetObjectTorrent":      version(obj("s3:GetObjectTorrent", false), "s3:GetObjectVersionTorrent", "s3:GetObjectTorrent", false),
		"GetObjectRetention":    obj("s3:GetObjectRetention", false),
		"PutObjectRetention":    withBody(obj("s3:PutObjectRetention", true), `<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>`+future+`</RetainUntilDate></Retention>`),
		"GetObjectLegalHold":    obj("s3:GetObjectLegalHold", false),
		"PutObjectLegalHold":    withBody(obj("s3:PutObjectLegalHold", true), `<LegalHold><Status>ON</Status></LegalHold>`),
		"PutObject":             withBody(obj("s3:PutObject", true), "new data"),
		"CopyObject":            {action: "s3:PutObject", object: true, extra: []string{"s3:GetObject"}, changes: true},
		"DeleteObject":          version(obj("s3:DeleteObject", true), "s3:DeleteObjectVersion", "s3:DeleteObject", true),
		"CreateMultipartUpload": obj("s3:PutObject", true),
		"UploadPart":            withBody(obj("s3:PutObject", true), "part two data"),
		"UploadPartCopy":        {action: "s3:PutObject", object: true, extra: []string{"s3:GetObject"}, changes: true},
		"CompleteMultipartUpload": {action: "s3:PutObject", object: true, changes: true, body: func(c *routeCase) string {
			return `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>` + c.partETag + `</ETag></Part></CompleteMultipartUpload>`
		}},
		"AbortMultipartUpload": obj("s3:AbortMultipartUpload", true),
		"ListParts":            obj("s3:ListMultipartUploadParts", false),
		"DeleteObjects": {action: "s3:DeleteObject", object: true, changes: true,
			body: func(*routeCase) string { return `<Delete><Object><Key>k</Key></Object></Delete>` }},
	}
	// DeleteBucketCors writes the configuration (none to delete: no change).
	s["DeleteBucketCors"] = bkt("s3:PutBucketCORS", false)

	// A copy source's exact version needs s3:GetObjectVersion.
	for _, op := range []string{"CopyObject", "UploadPartCopy"} {
		sp := s[op]
		sp.more = append(sp.more, routeVariant{name: "source-version",
			headers: map[string]string{"x-amz-copy-source-version": "v1"}, // marker, resolved in request()
			deny:    "s3:GetObjectVersion",
			grant:   []string{"s3:PutObject", "s3:GetObjectVersion"},
			partial: []string{"s3:PutObject", "s3:GetObject"}, changes: true})
		s[op] = sp
	}
	// DeleteObjects with a VersionId needs s3:DeleteObjectVersion per key.
	do := s["DeleteObjects"]
	do.more = append(do.more, routeVariant{name: "version",
		body: func(c *routeCase) string {
			return `<Delete><Object><Key>k</Key><VersionId>` + c.v1 + `</VersionId></Object></Delete>`
		},
		grant: []string{"s3:DeleteObjectVersion"}, partial: []string{"s3:DeleteObject"}, changes: true})
	s["DeleteObjects"] = do
	// Lock headers on a write need their own actions.
	lockHdr := map[string]string{"x-amz-object-lock-mode": "GOVERNANCE", "x-amz-object-lock-retain-until-date": future}
	holdHdr := map[string]string{"x-amz-object-lock-legal-hold": "ON"}
	for _, op := range []string{"PutObject", "CopyObject", "CreateMultipartUpload"} {
		sp := s[op]
		base := append([]string{"s3:PutObject"}, sp.extra...)
		sp.more = append(sp.more,
			routeVariant{name: "retention-headers", headers: lockHdr, deny: "s3:PutObjectRetention",
				grant: append(append([]string{}, base...), "s3:PutObjectRetention"), partial: base, changes: true},
			routeVariant{name: "legal-hold-header", headers: holdHdr, deny: "s3:PutObjectLegalHold",
				grant: append(append([]string{}, base...), "s3:PutObjectLegalHold"), partial: base, changes: true})
		s[op] = sp
	}
	// Removing a version under GOVERNANCE retention needs the bypass action.
	d := s["DeleteObject"]
	d.more = append(d.more, routeVariant{name: "bypass-governance", key: "locked",
		query:   func(c *routeCase) string { return "versionId=" + c.lockedV },
		headers: map[string]string{"x-amz-bypass-governance-retention": "true"},
		deny:    "s3:BypassGovernanceRetention",
		grant:   []string{"s3:DeleteObjectVersion", "s3:BypassGovernanceRetention"},
		partial: []string{"s3:DeleteObjectVersion"}, changes: true})
	s["DeleteObject"] = d
	return s
}

type routeHarness struct {
	t    *testing.T
	g    *Gateway
	keys map[string][2]string
	n    int
}

type routeReply struct {
	status int
	code   string
	body   string
}

// denied: the request was refused, or (DeleteObjects) its every key was.
func (r routeReply) denied() bool {
	if r.status == http.StatusOK && strings.Contains(r.body, "<DeleteResult") {
		return strings.Contains(r.body, "<Code>AccessDenied</Code>") && !strings.Contains(r.body, "<Deleted>")
	}
	return r.status == http.StatusForbidden && (r.code == "" || r.code == "AccessDenied")
}

func (r routeReply) String() string {
	return fmt.Sprintf("%d %s", r.status, r.code)
}

// do sends a request signed as who ("anon": unsigned).
func (h *routeHarness) do(who, method, target string, hdr map[string]string, body string) routeReply {
	h.t.Helper()
	req, err := http.NewRequest(method, h.g.Endpoint+target, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if body != "" {
		sum := md5.Sum([]byte(body))
		req.Header.Set("Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
	}
	if k := h.keys[who]; k[0] != "" {
		ph := sha256Hex(body)
		req.Header.Set("X-Amz-Content-Sha256", ph)
		if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: k[0], SecretAccessKey: k[1]},
			req, ph, "s3", "us-east-1", time.Now()); err != nil {
			h.t.Fatal(err)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	var e struct {
		Code string `xml:"Code"`
	}
	_ = xml.Unmarshal(data, &e)
	return routeReply{status: res.StatusCode, code: e.Code, body: string(data)}
}

func (h *routeHarness) must(r routeReply, what string) routeReply {
	h.t.Helper()
	if r.status/100 != 2 {
		h.t.Fatalf("%s: %s\n%s", what, r, r.body)
	}
	return r
}

var volatileXML = regexp.MustCompile(`<(RequestId|HostId)>[^<]*</(RequestId|HostId)>`)

// snapshot reads, as the admin, everything a request to bucket c could
// change.
func (h *routeHarness) snapshot(c *routeCase) string {
	var sb strings.Builder
	b := "/" + c.bucket
	for _, tgt := range []string{
		b + "?versions", b + "?acl", b + "?policy", b + "?cors", b + "?lifecycle", b + "?tagging",
		b + "?versioning", b + "?publicAccessBlock", b + "?ownershipControls", b + "?notification",
		b + "?object-lock", b + "?uploads", b + "?encryption",
		b + "/k?acl", b + "/k?tagging", b + "/k?retention", b + "/k?legal-hold",
		b + "/k?acl&versionId=" + c.v1, b + "/k?tagging&versionId=" + c.v1,
		b + "/k?retention&versionId=" + c.v1, b + "/k?legal-hold&versionId=" + c.v1,
		b + "/k?uploadId=" + c.upload,
	} {
		r := h.do("admin", "GET", tgt, nil, "")
		fmt.Fprintf(&sb, "%s -> %d %s\n", tgt, r.status, volatileXML.ReplaceAllString(r.body, ""))
	}
	return sb.String()
}

var uploadIDRe = regexp.MustCompile(`<UploadId>([^<]*)</UploadId>`)

// setup makes the fixture of one variant.
func (h *routeHarness) setup(op string, i int) *routeCase {
	h.n++
	name := strings.ToLower(op)
	if len(name) > 40 {
		name = name[:40]
	}
	c := &routeCase{bucket: fmt.Sprintf("ar-%s-%d-%d", name, i, h.n)}
	b := "/" + c.bucket
	h.must(h.do("alice", "PUT", b, map[string]string{"x-amz-bucket-object-lock-enabled": "true"}, ""), "create "+b)
	put := func(key, data string, hdr map[string]string) string {
		return h.doHeaders("alice", "PUT", b+"/"+key, hdr, data)
	}
	c.v1 = put("k", "version one", nil)
	c.v2 = put("k", "version two", nil)
	put("src", "source data", nil)
	c.lockedV = put("locked", "locked data", map[string]string{
		"x-amz-object-lock-mode": "GOVERNANCE", "x-amz-object-lock-retain-until-date": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)})
	r := h.must(h.do("alice", "POST", b+"/k?uploads", nil, ""), "create upload")
	m := uploadIDRe.FindStringSubmatch(r.body)
	if m == nil {
		h.t.Fatalf("no UploadId in %s", r.body)
	}
	c.upload = m[1]
	res := h.rawPut("alice", b+"/k?partNumber=1&uploadId="+c.upload, "part one data")
	c.partETag = res.Header.Get("ETag")
	if c.v1 == "" || c.v2 == "" || c.lockedV == "" || c.partETag == "" {
		h.t.Fatalf("fixture incomplete: %+v", c)
	}
	return c
}

// doHeaders PUTs an object and returns its version id.
func (h *routeHarness) doHeaders(who, method, target string, hdr map[string]string, body string) string {
	h.t.Helper()
	res := h.rawDo(who, method, target, hdr, body)
	if res.StatusCode/100 != 2 {
		data, _ := io.ReadAll(res.Body)
		h.t.Fatalf("%s %s: %d %s", method, target, res.StatusCode, data)
	}
	return res.Header.Get("x-amz-version-id")
}

func (h *routeHarness) rawPut(who, target, body string) *http.Response {
	res := h.rawDo(who, "PUT", target, nil, body)
	if res.StatusCode/100 != 2 {
		data, _ := io.ReadAll(res.Body)
		h.t.Fatalf("PUT %s: %d %s", target, res.StatusCode, data)
	}
	return res
}

// rawDo is do returning the response (body read and closed).
func (h *routeHarness) rawDo(who, method, target string, hdr map[string]string, body string) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.g.Endpoint+target, bytes.NewReader([]byte(body)))
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	k := h.keys[who]
	ph := sha256Hex(body)
	req.Header.Set("X-Amz-Content-Sha256", ph)
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: k[0], SecretAccessKey: k[1]},
		req, ph, "s3", "us-east-1", time.Now()); err != nil {
		h.t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(data))
	return res
}

// request builds the variant's request from the table row.
func (h *routeHarness) request(row string, sp routeSpec, v routeVariant, c *routeCase) (method, target string, hdr map[string]string, body string) {
	f := strings.Fields(row)
	method, target = f[0], f[1]
	path, query, _ := strings.Cut(target, "?")
	path = strings.Replace(path, "/b", "/"+c.bucket, 1)
	if v.key != "" {
		path = strings.TrimSuffix(path, "/k") + "/" + v.key
	}
	var qs []string
	for _, kv := range strings.Split(query, "&") {
		if kv == "" {
			continue
		}
		if kv == "uploadId=u" {
			kv = "uploadId=" + c.upload
		}
		qs = append(qs, kv)
	}
	if v.query != nil {
		qs = append(qs, v.query(c))
	}
	target = path
	if len(qs) > 0 {
		target += "?" + strings.Join(qs, "&")
	}
	hdr = map[string]string{}
	for _, kv := range f[2:] {
		k, val, _ := strings.Cut(kv, ":")
		if k == "x-amz-copy-source" {
			val = "/" + c.bucket + "/src"
		}
		hdr[k] = val
	}
	for k, val := range v.headers {
		if k == "x-amz-copy-source-version" {
			hdr["x-amz-copy-source"] = "/" + c.bucket + "/k?versionId=" + c.v1
			continue
		}
		hdr[k] = val
	}
	if v.body != nil {
		body = v.body(c)
	}
	return method, target, hdr, body
}

func (h *routeHarness) putPolicy(c *routeCase, stmts ...string) {
	h.t.Helper()
	doc := `{"Version":"2012-10-17","Statement":[` + strings.Join(stmts, ",") + `]}`
	h.must(h.do("alice", "PUT", "/"+c.bucket+"?policy", nil, doc), "PutBucketPolicy")
}

func statement(effect, user string, actions []string, resource string) string {
	q := make([]string, len(actions))
	for i, a := range actions {
		q[i] = `"` + a + `"`
	}
	return fmt.Sprintf(`{"Effect":%q,"Principal":{"AWS":"arn:aws:iam:::user/%s"},"Action":[%s],"Resource":%q}`,
		effect, user, strings.Join(q, ","), resource)
}

// resourceOf is the exact resource an action applies to.
func resourceOf(c *routeCase, object bool) string {
	if object {
		return "arn:aws:s3:::" + c.bucket + "/*"
	}
	return "arn:aws:s3:::" + c.bucket
}

// runVariant runs the principals of one variant and returns the cells run.
func (h *routeHarness) runVariant(op, row string, sp routeSpec, v routeVariant, i int) int {
	t := h.t
	c := h.setup(op, i)
	cell := func(who, what string, wantDenied bool, wantChange bool) {
		t.Helper()
		method, target, hdr, body := h.request(row, sp, v, c)
		before := h.snapshot(c)
		r := h.do(who, method, target, hdr, body)
		after := h.snapshot(c)
		label := fmt.Sprintf("%s [%s] %s (%s %s)", op, v.name, what, method, target)
		switch {
		case wantDenied && !r.denied():
			t.Errorf("%s: got %s, want AccessDenied\n%s", label, r, r.body)
		case !wantDenied && r.denied():
			t.Errorf("%s: got AccessDenied, want it allowed\n%s", label, r.body)
		}
		if wantDenied && before != after {
			t.Errorf("%s was denied but changed the bucket:\nbefore:\n%s\nafter:\n%s", label, before, after)
		}
		if !wantDenied && wantChange && r.status/100 == 2 && before == after {
			t.Errorf("%s answered %s but changed nothing", label, r)
		}
	}
	res := resourceOf(c, v.object)
	cells := 0
	cell("anon", "anonymous", true, false)
	cell("bob", "another user without a grant", true, false)
	cells += 2
	if len(v.partial) > 0 {
		h.putPolicy(c, statement("Allow", "bob", v.partial, res))
		cell("bob", "another user granted only "+strings.Join(v.partial, "+"), true, false)
		cells++
	}
	h.putPolicy(c, statement("Deny", "alice", []string{v.deny}, res))
	cell("alice", "owner under Deny "+v.deny, !sp.ownerKeeps, false)
	cells++
	h.putPolicy(c, statement("Allow", "bob", v.grant, res))
	if sp.ownerKeeps {
		// AWS: another account is refused the policy actions even when
		// granted (405); the grant must not let bob change the policy.
		method, target, hdr, body := h.request(row, sp, v, c)
		before := h.snapshot(c)
		if r := h.do("bob", method, target, hdr, body); r.status != http.StatusMethodNotAllowed {
			t.Errorf("%s by another user granted it: %s, want 405 MethodNotAllowed", op, r)
		}
		if after := h.snapshot(c); after != before {
			t.Errorf("%s by another user changed the bucket", op)
		}
	} else {
		cell("bob", "another user granted "+strings.Join(v.grant, "+"), false, v.changes)
	}
	return cells + 1
}
