package s3api

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/auth/sigv2"
	"github.com/cairn-s3/cairn/internal/auth/sigv4"
	"github.com/cairn-s3/cairn/internal/checksum"
)

type formField struct{ name, value string }

// postForm sends a multipart form: fields in order, then the file part
// (filename fname), then trailing fields (which S3 ignores).
func (h *harness) postForm(bucket string, fields []formField, fname, content string, after ...formField) resp {
	h.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		_ = mw.WriteField(f.name, f.value)
	}
	fw, _ := mw.CreateFormFile("file", fname)
	_, _ = io.WriteString(fw, content)
	for _, f := range after {
		_ = mw.WriteField(f.name, f.value)
	}
	_ = mw.Close()
	r, _ := http.NewRequest("POST", h.ts.URL+"/"+bucket, &buf)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := h.ts.Client().Do(r)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: string(data)}
}

// v4Form returns the SigV4 form fields for conditions (plus the
// x-amz-* fields, which the policy names as boto3 does) and extra fields.
func v4Form(ak string, exp time.Time, conds []any, extra ...formField) []formField {
	now := time.Now().UTC()
	date := now.Format("20060102")
	cred := ak + "/" + date + "/us-east-1/s3/aws4_request"
	amzDate := now.Format("20060102T150405Z")
	conds = append(conds, map[string]string{"x-amz-algorithm": "AWS4-HMAC-SHA256"}, map[string]string{"x-amz-credential": cred}, map[string]string{"x-amz-date": amzDate})
	doc, _ := json.Marshal(map[string]any{"expiration": exp.UTC().Format("2006-01-02T15:04:05.000Z"), "conditions": conds})
	pol := base64.StdEncoding.EncodeToString(doc)
	m := hmac.New(sha256.New, sigv4.SigningKey(secrets[ak], sigv4.Scope{Date: date, Region: "us-east-1", Service: "s3"}))
	m.Write([]byte(pol))
	return append(extra,
		formField{"X-Amz-Algorithm", "AWS4-HMAC-SHA256"}, formField{"X-Amz-Credential", cred}, formField{"X-Amz-Date", amzDate},
		formField{"Policy", pol}, formField{"X-Amz-Signature", hex.EncodeToString(m.Sum(nil))})
}

func v2Form(ak string, exp time.Time, conds []any, extra ...formField) []formField {
	doc, _ := json.Marshal(map[string]any{"expiration": exp.UTC().Format("2006-01-02T15:04:05.000Z"), "conditions": conds})
	pol := base64.StdEncoding.EncodeToString(doc)
	return append(extra, formField{"AWSAccessKeyId", ak}, formField{"policy", pol}, formField{"signature", sigv2.Sign(secrets[ak], pol)})
}

func TestPostObjectV4(t *testing.T) {
	h := newHarness(t)
	h.bucket("up")
	exp := time.Now().Add(time.Hour)
	conds := []any{
		map[string]string{"bucket": "up"},
		[]any{"starts-with", "$key", "user/"},
		[]any{"starts-with", "$Content-Type", "image/"},
		[]any{"eq", "$x-amz-meta-color", "blue"},
		map[string]string{"success_action_status": "201"},
		[]any{"content-length-range", 1, 100},
		[]any{"starts-with", "$tagging", ""},
	}
	fields := v4Form(aliceKey, exp, conds,
		formField{"key", "user/${filename}"}, formField{"content-type", "image/png"}, formField{"X-Amz-Meta-Color", "blue"},
		formField{"success_action_status", "201"},
		formField{"tagging", "<Tagging><TagSet><Tag><Key>k1</Key><Value>v1</Value></Tag></TagSet></Tagging>"},
		formField{"x-ignore-flash", "anything"})
	res := h.postForm("up", fields, `C:\pics\cat.png`, "meow", formField{"key", "ignored-after-file"})
	if res.status != 201 {
		t.Fatalf("POST: %d %s", res.status, res.body)
	}
	for _, want := range []string{"<Bucket>up</Bucket>", "<Key>user/cat.png</Key>", "<ETag>&#34;" + md5hex([]byte("meow")) + "&#34;</ETag>", "<Location>"} {
		if !strings.Contains(res.body, want) {
			t.Errorf("PostResponse lacks %s: %s", want, res.body)
		}
	}
	o, err := h.be.object("up", "user/cat.png")
	if err != nil {
		t.Fatal(err)
	}
	if string(o.data) != "meow" || o.info.Meta.ContentType != "image/png" || o.info.Meta.UserMeta["color"] != "blue" || o.info.Meta.Tags["k1"] != "v1" {
		t.Fatalf("stored %q %+v", o.data, o.info.Meta)
	}
	if h.be.lastEvent != "ObjectCreated:Post" {
		t.Fatalf("event %q", h.be.lastEvent)
	}
	// S3's default checksum, as for PUT: the CRC64NVME of "meow".
	if got := o.info.Meta.Checksums; len(got) != 1 || got["CRC64NVME"] != checksum.CRC64NVME.Sum([]byte("meow")) {
		t.Fatalf("stored checksums %v", got)
	}
	if _, err := h.be.object("up", "ignored-after-file"); err == nil {
		t.Fatal("a field after the file was used")
	}
}

func TestPostObjectV2AndResponses(t *testing.T) {
	h := newHarness(t)
	h.bucket("up")
	exp := time.Now().Add(time.Hour)
	// Default: 204 with ETag and Location.
	res := h.postForm("up", v2Form(aliceKey, exp, []any{map[string]string{"key": "a"}}, formField{"key", "a"}), "a.txt", "aaa")
	if res.status != 204 || res.header.Get("ETag") == "" || !strings.HasSuffix(res.header.Get("Location"), "/up/a") {
		t.Fatalf("204: %d %v %s", res.status, res.header, res.body)
	}
	res = h.postForm("up", v2Form(aliceKey, exp, []any{map[string]string{"key": "b"}, map[string]string{"success_action_status": "200"}},
		formField{"key", "b"}, formField{"success_action_status", "200"}), "b", "b")
	if res.status != 200 || res.body != "" {
		t.Fatalf("200: %d %s", res.status, res.body)
	}
	// Redirect: 303 with bucket, key and etag.
	h.ts.Client().CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res = h.postForm("up", v2Form(aliceKey, exp, []any{map[string]string{"key": "c d"}, []any{"starts-with", "$success_action_redirect", "http://app.test/"}},
		formField{"key", "c d"}, formField{"success_action_redirect", "http://app.test/done?x=1"}), "c", "ccc")
	if res.status != 303 {
		t.Fatalf("redirect: %d %s", res.status, res.body)
	}
	u, err := url.Parse(res.header.Get("Location"))
	if err != nil || u.Host != "app.test" || u.Query().Get("bucket") != "up" || u.Query().Get("key") != "c d" || u.Query().Get("etag") != `"`+md5hex([]byte("ccc"))+`"` || u.Query().Get("x") != "1" {
		t.Fatalf("Location %q", res.header.Get("Location"))
	}
	// AWS's order: the form's own query, then bucket, key, etag.
	if want := "x=1&bucket=up&key=c+d&etag=" + url.QueryEscape(`"`+md5hex([]byte("ccc"))+`"`); u.RawQuery != want {
		t.Fatalf("redirect query %q, want %q", u.RawQuery, want)
	}
	// A wrong SigV2 signature.
	f := v2Form(aliceKey, exp, []any{map[string]string{"key": "d"}}, formField{"key", "d"})
	f[len(f)-1].value = sigv2.Sign("wrong", f[len(f)-2].value)
	if res := h.postForm("up", f, "d", "d"); res.status != 403 || res.code() != "SignatureDoesNotMatch" {
		t.Fatalf("bad v2 signature: %d %s", res.status, res.body)
	}
}

func TestPostObjectErrors(t *testing.T) {
	h := newHarness(t)
	h.bucket("up")
	exp := time.Now().Add(time.Hour)
	key := []any{map[string]string{"key": "k"}}
	withKey := formField{"key", "k"}
	rng := func(lo, hi int) []any { return append([]any{[]any{"content-length-range", lo, hi}}, key...) }
	for _, tc := range []struct {
		name    string
		fields  []formField
		content string
		status  int
		code    string
		msg     string
	}{
		{"expired", v4Form(aliceKey, time.Now().Add(-time.Minute), key, withKey), "x", 403, "AccessDenied", "Invalid according to Policy: Policy expired."},
		{"eq failed", v4Form(aliceKey, exp, append([]any{[]any{"eq", "$x-amz-meta-a", "1"}}, key...), withKey, formField{"x-amz-meta-a", "2"}), "x", 403, "AccessDenied", "Invalid according to Policy: Policy Condition failed: [&#34;eq&#34;,&#34;$x-amz-meta-a&#34;,&#34;1&#34;]"},
		{"starts-with failed", v4Form(aliceKey, exp, []any{[]any{"starts-with", "$key", "user/"}}, withKey), "x", 403, "AccessDenied", "Policy Condition failed"},
		{"exact failed", v4Form(aliceKey, exp, key, formField{"key", "other"}), "x", 403, "AccessDenied", "Policy Condition failed"},
		{"bucket failed", v4Form(aliceKey, exp, append([]any{map[string]string{"bucket": "elsewhere"}}, key...), withKey), "x", 403, "AccessDenied", "Policy Condition failed"},
		// A form for another bucket, its bucket field included: refused.
		{"form for another bucket", v4Form(aliceKey, exp, append([]any{map[string]string{"bucket": "elsewhere"}}, key...), withKey, formField{"bucket", "elsewhere"}), "x", 403, "AccessDenied", "Policy Condition failed"},
		{"extra field", v4Form(aliceKey, exp, key, withKey, formField{"x-amz-meta-extra", "1"}), "x", 403, "AccessDenied", "Extra input fields: x-amz-meta-extra"},
		{"too large", v4Form(aliceKey, exp, rng(2, 4), withKey), "12345", 400, "EntityTooLarge", ""},
		{"too small", v4Form(aliceKey, exp, rng(2, 4), withKey), "1", 400, "EntityTooSmall", ""},
		{"no key", v4Form(aliceKey, exp, nil), "x", 400, "InvalidArgument", "named &#39;key&#39;"},
		{"signature without policy", []formField{withKey, {"AWSAccessKeyId", aliceKey}, {"signature", "x"}}, "x", 400, "InvalidArgument", "named &#39;policy&#39;"},
		{"policy without access key", []formField{withKey, {"policy", "e30="}, {"signature", "x"}}, "x", 400, "InvalidArgument", "AWSAccessKeyId"},
		{"unknown key", v2Form("AKNOBODY", exp, key, withKey), "x", 403, "InvalidAccessKeyId", ""},
		{"anonymous", []formField{withKey}, "x", 403, "AccessDenied", ""},
		{"not owner", v4Form(bobKey, exp, key, withKey), "x", 403, "AccessDenied", ""},
		{"bad policy json", func() []formField {
			f := v2Form(aliceKey, exp, key, withKey)
			f[len(f)-2].value = base64.StdEncoding.EncodeToString([]byte("{nope"))
			f[len(f)-1].value = sigv2.Sign(secrets[aliceKey], f[len(f)-2].value)
			return f
		}(), "x", 400, "InvalidPolicyDocument", ""},
	} {
		res := h.postForm("up", tc.fields, "f", tc.content)
		if res.status != tc.status || res.code() != tc.code || !strings.Contains(res.body, tc.msg) {
			t.Errorf("%s: %d %s, want %d %s %q", tc.name, res.status, res.body, tc.status, tc.code, tc.msg)
		}
	}
	if _, err := h.be.object("up", "k"); err == nil {
		t.Fatal("a refused POST stored an object")
	}
	// Exactly at the bounds is fine.
	if res := h.postForm("up", v4Form(aliceKey, exp, rng(2, 4), withKey), "f", "1234"); res.status != 204 {
		t.Fatalf("at max: %d %s", res.status, res.body)
	}
	// No file part.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("key", "k")
	_ = mw.Close()
	r, _ := http.NewRequest("POST", h.ts.URL+"/up", &buf)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := h.ts.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 {
		t.Fatalf("no file: %d", res.StatusCode)
	}
}

// Checksum form fields are verified like PUT headers: a matching value is
// stored, a wrong one is BadDigest, a malformed one InvalidRequest.
func TestPostObjectChecksumFields(t *testing.T) {
	h := newHarness(t)
	h.bucket("up")
	exp := time.Now().Add(time.Hour)
	for _, tc := range []struct{ value, code string }{
		{"rfPzYw==", ""}, // CRC32 of "data"
		{"AAAAAA==", "BadDigest"},
		{"AAAA", "InvalidRequest"},
	} {
		conds := []any{map[string]string{"bucket": "up"}, []any{"starts-with", "$key", ""},
			[]any{"starts-with", "$x-amz-checksum-crc32", ""}}
		fields := v4Form(aliceKey, exp, conds, formField{"key", "k"}, formField{"x-amz-checksum-crc32", tc.value})
		res := h.postForm("up", fields, "f", "data")
		if tc.code == "" {
			if res.status != 204 {
				t.Fatalf("%s: %d %s", tc.value, res.status, res.body)
			}
			o, err := h.be.object("up", "k")
			if err != nil || len(o.info.Meta.Checksums) != 1 || o.info.Meta.Checksums["CRC32"] != tc.value {
				t.Fatalf("stored %v %v", o, err)
			}
			continue
		}
		if res.status != 400 || !strings.Contains(res.body, "<Code>"+tc.code+"</Code>") {
			t.Fatalf("%s: %d %s", tc.value, res.status, res.body)
		}
	}
	if o, err := h.be.object("up", "k"); err != nil || o.info.Meta.Checksums["CRC32"] != "rfPzYw==" {
		t.Fatalf("a refused POST replaced the object: %v %v", o, err)
	}
}
