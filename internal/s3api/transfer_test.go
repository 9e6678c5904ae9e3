package s3api

import (
	"strings"
	"testing"
)

// A plain PUT with Transfer-Encoding: chunked and no Content-Length is
// accepted, as RGW accepts it; its size is what arrived. Content-MD5 is
// still verified.
func TestPutTransferEncodingChunked(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	data := strings.Repeat("chunked body ", 5000)
	h.mustDo(req{method: "PUT", path: "/b/te", body: data, chunked: true}, 200)
	o := h.be.buckets["b"].objects["te"]
	if o == nil || string(o.data) != data {
		t.Fatalf("stored %v", o)
	}
	h.mustDo(req{method: "PUT", path: "/b/te2", body: data, chunked: true,
		hdr: map[string]string{"Content-MD5": "1B2M2Y8AsgTpgAmY7PhCfg=="}}, 400)
	if _, ok := h.be.buckets["b"].objects["te2"]; ok {
		t.Fatal("object stored despite a Content-MD5 mismatch")
	}
	// UploadPart takes the same path.
	res := h.mustDo(req{method: "POST", path: "/b/mp?uploads"}, 200)
	id := between(res.body, "<UploadId>", "</UploadId>")
	h.mustDo(req{method: "PUT", path: "/b/mp?partNumber=1&uploadId=" + id, body: data, chunked: true}, 200)
}

func between(s, a, b string) string {
	_, rest, _ := strings.Cut(s, a)
	v, _, _ := strings.Cut(rest, b)
	return v
}
