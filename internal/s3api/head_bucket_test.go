package s3api

import "testing"

// HEAD bucket carries RGW's usage headers.
func TestHeadBucketUsage(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	res := h.mustDo(req{method: "HEAD", path: "/b"}, 200)
	if res.header.Get("X-RGW-Object-Count") != "0" || res.header.Get("X-RGW-Bytes-Used") != "0" {
		t.Fatalf("empty bucket: %v", res.header)
	}
	h.put("b", "k1", "hello")
	h.put("b", "k2", "worlds")
	res = h.mustDo(req{method: "HEAD", path: "/b"}, 200)
	if res.header.Get("X-RGW-Object-Count") != "2" || res.header.Get("X-RGW-Bytes-Used") != "11" {
		t.Fatalf("two objects: count %q bytes %q", res.header.Get("X-RGW-Object-Count"), res.header.Get("X-RGW-Bytes-Used"))
	}
}
