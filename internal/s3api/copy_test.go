package s3api

import (
	"encoding/xml"
	"net/http"
	"testing"
	"time"
)

func TestParseCopySource(t *testing.T) {
	for _, tc := range []struct {
		in, bucket, key, vid string
		bad                  bool
	}{
		{in: "/b/k", bucket: "b", key: "k"},
		{in: "b/k", bucket: "b", key: "k"},
		{in: "/b/dir/with%20space%2Bplus", bucket: "b", key: "dir/with space+plus"},
		{in: "/b/%E2%9C%93?versionId=null", bucket: "b", key: "✓", vid: "null"},
		{in: "/b//double", bucket: "b", key: "/double"},
		{in: "/b/k?versionId=123", bucket: "b", key: "k", vid: "123"}, // checked by the backend
		{in: "/b/k?versionId=", bad: true},
		{in: "/b", bad: true},
		{in: "/b/", bad: true},
		{in: "", bad: true},
		{in: "/b/%zz", bad: true},
	} {
		src, err := parseCopySource(tc.in)
		if tc.bad != (err != nil) || (!tc.bad && (src.bucket != tc.bucket || src.key != tc.key || src.versionID != tc.vid)) {
			t.Errorf("%q: %+v %v", tc.in, src, err)
		}
	}
}

func TestCopyObject(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	h.bucket("b2")
	h.mustDo(req{method: "PUT", path: "/b/src", body: "hello", hdr: map[string]string{"Content-Type": "text/a", "x-amz-meta-k": "v1"}}, 200)
	etag := `"` + md5hex([]byte("hello")) + `"`
	mod := h.be.now()
	before, after := mod.Add(-time.Hour).Format(http.TimeFormat), mod.Add(time.Hour).Format(http.TimeFormat)

	res := h.mustDo(req{method: "PUT", path: "/b2/dst", hdr: map[string]string{"x-amz-copy-source": "/b/src"}}, 200)
	var out struct{ ETag, LastModified string }
	if err := xml.Unmarshal([]byte(res.body), &out); err != nil || out.ETag != etag || out.LastModified != "2025-01-02T03:04:05.000Z" {
		t.Fatalf("%s", res.body)
	}
	got := h.mustDo(req{method: "HEAD", path: "/b2/dst"}, 200)
	if got.header.Get("Content-Type") != "text/a" || got.header.Get("x-amz-meta-k") != "v1" {
		t.Fatalf("COPY directive lost metadata: %v", got.header)
	}
	h.mustDo(req{method: "PUT", path: "/b2/dst", hdr: map[string]string{"x-amz-copy-source": "/b/src", "x-amz-metadata-directive": "REPLACE", "Content-Type": "text/b", "x-amz-meta-k": "v2"}}, 200)
	got = h.mustDo(req{method: "HEAD", path: "/b2/dst"}, 200)
	if got.header.Get("Content-Type") != "text/b" || got.header.Get("x-amz-meta-k") != "v2" {
		t.Fatalf("REPLACE: %v", got.header)
	}
	// Onto itself: only with REPLACE.
	if res := h.mustDo(req{method: "PUT", path: "/b/src", hdr: map[string]string{"x-amz-copy-source": "/b/src"}}, 400); res.code() != "InvalidRequest" {
		t.Fatal(res.body)
	}
	h.mustDo(req{method: "PUT", path: "/b/src", hdr: map[string]string{"x-amz-copy-source": "/b/src", "x-amz-metadata-directive": "REPLACE"}}, 200)

	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		status int
	}{
		{"if-match hit", map[string]string{"x-amz-copy-source-if-match": etag}, 200},
		{"if-match miss", map[string]string{"x-amz-copy-source-if-match": `"x"`}, 412},
		{"if-none-match hit", map[string]string{"x-amz-copy-source-if-none-match": etag}, 412},
		{"if-none-match miss", map[string]string{"x-amz-copy-source-if-none-match": `"x"`}, 200},
		{"unmodified-since before", map[string]string{"x-amz-copy-source-if-unmodified-since": before}, 412},
		{"unmodified-since after", map[string]string{"x-amz-copy-source-if-unmodified-since": after}, 200},
		{"modified-since after", map[string]string{"x-amz-copy-source-if-modified-since": after}, 412},
		{"modified-since before", map[string]string{"x-amz-copy-source-if-modified-since": before}, 200},
		{"match beats unmodified", map[string]string{"x-amz-copy-source-if-match": etag, "x-amz-copy-source-if-unmodified-since": before}, 200},
		{"none-match miss beats modified", map[string]string{"x-amz-copy-source-if-none-match": `"x"`, "x-amz-copy-source-if-modified-since": after}, 200},
		{"bad directive", map[string]string{"x-amz-metadata-directive": "MERGE"}, 400},
	} {
		hdr := map[string]string{"x-amz-copy-source": "/b/src"}
		for k, v := range tc.hdr {
			hdr[k] = v
		}
		res := h.do(req{method: "PUT", path: "/b2/cond", hdr: hdr})
		if res.status != tc.status {
			t.Errorf("%s: %d %s", tc.name, res.status, res.body)
		}
		if tc.status == 412 && res.code() != "PreconditionFailed" {
			t.Errorf("%s: %s", tc.name, res.body)
		}
	}
	for _, tc := range []struct {
		src, code string
		status    int
	}{
		{"/b/missing", "NoSuchKey", 404},
		{"/nobucket/k", "NoSuchBucket", 404},
		{"/b/src?versionId=v1", "InvalidArgument", 400},
		{"nokey", "InvalidArgument", 400},
	} {
		res := h.do(req{method: "PUT", path: "/b2/x", hdr: map[string]string{"x-amz-copy-source": tc.src}})
		if res.status != tc.status || res.code() != tc.code {
			t.Errorf("%s: %d %s", tc.src, res.status, res.body)
		}
	}
}
