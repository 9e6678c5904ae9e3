package s3api

import "testing"

// An unsigned form (no policy, no signature) is an anonymous PutObject,
// as in AWS ("if the bucket is publicly writable" the policy may be
// omitted): refused on a private bucket, accepted where a bucket policy
// lets anyone write the key, and only there.
func TestPostObjectAnonymous(t *testing.T) {
	h := newHarness(t)
	h.bucket("drop")
	anon := []formField{{"key", "in/a"}}
	if res := h.postForm("drop", anon, "f", "x"); res.status != 403 || res.code() != "AccessDenied" {
		t.Fatalf("anonymous form on a private bucket: %d %s", res.status, res.body)
	}
	h.mustDo(req{method: "PUT", path: "/drop?policy", key: aliceKey, body: `{"Version":"2012-10-17","Statement":[
	 {"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::drop/in/*"}]}`}, 204)
	if res := h.postForm("drop", anon, "f", "anonymous data"); res.status != 204 {
		t.Fatalf("anonymous form where the policy allows it: %d %s", res.status, res.body)
	}
	if got := h.mustDo(req{method: "GET", path: "/drop/in/a", key: aliceKey}, 200); got.body != "anonymous data" {
		t.Fatalf("stored %q", got.body)
	}
	if res := h.postForm("drop", []formField{{"key", "out/b"}}, "f", "x"); res.status != 403 || res.code() != "AccessDenied" {
		t.Fatalf("anonymous form outside the policy's keys: %d %s", res.status, res.body)
	}
}
