package s3api

import (
	"net/http"
	"net/url"
	"testing"
)

// Unimplemented subresources and methods answer only the owner; others
// get the same answer as for any request on that bucket.
func TestNotImplementedAfterAuthorization(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	h.put("b", "k", "x")
	for _, tc := range []struct {
		rq     req
		status int
		code   string
	}{
		{req{method: "GET", path: "/b?website", key: bobKey}, 403, "AccessDenied"},
		{req{method: "PUT", path: "/b?lifecycle", body: "<x/>", key: bobKey}, 403, "AccessDenied"},
		{req{method: "DELETE", path: "/b?cors", key: bobKey}, 403, "AccessDenied"},
		{req{method: "GET", path: "/b/k?tagging", key: bobKey}, 403, "AccessDenied"},
		{req{method: "POST", path: "/b/k", key: bobKey}, 403, "AccessDenied"},
		{req{method: "PATCH", path: "/b/k", key: bobKey}, 403, "AccessDenied"},
		{req{method: "GET", path: "/none?website"}, 404, "NoSuchBucket"},
		{req{method: "PUT", path: "/none?lifecycle", body: "<x/>"}, 404, "NoSuchBucket"},
		{req{method: "GET", path: "/none/k?tagging"}, 404, "NoSuchBucket"},
		{req{method: "GET", path: "/b?website", key: adminKey}, 501, "NotImplemented"},
		{req{method: "GET", path: "/?Action=ListTopics"}, 405, "MethodNotAllowed"},
	} {
		res := h.do(tc.rq)
		if res.status != tc.status || res.code() != tc.code {
			t.Errorf("%s %s as %s: %d %s, want %d %s", tc.rq.method, tc.rq.path, tc.rq.key, res.status, res.code(), tc.status, tc.code)
		}
	}
}

func TestCheckSignedScope(t *testing.T) {
	v2 := AuthResult{SigV2: true, UnsignedPayload: true}
	v4 := AuthResult{}
	for _, tc := range []struct {
		kind  routeKind
		query string
		ar    AuthResult
		ok    bool
	}{
		{kindS3, "", v2, true},
		{kindS3, "AWSAccessKeyId=a&Expires=1&Signature=s", v2, true},
		{kindS3, "uploadId=1&partNumber=2&versionId=3&response-content-type=x", v2, true},
		{kindS3, "prefix=a&delimiter=/&marker=m&max-keys=1&list-type=2&x-id=GetObject", v2, true},
		{kindS3, "attributes", v2, false},
		{kindS3, "retention", v2, false},
		{kindS3, "Action=ListTopics", v2, false},
		{kindS3, "uploadId=1&uploadId=2", v2, false},
		{kindS3, "x-amz-meta-a=1", v2, false},      // no such (signed) header
		{kindS3, "content-type=text/x", v2, false}, // idem
		{kindS3, "object-lock", v2, true},          // signed by botocore and by sigv2
		{kindS3, "attributes&Action=x", v4, true},
		{kindAdmin, "", v2, false},
		{kindAdmin, "uid=alice", v4, true},
		{kindAdmin, "", AuthResult{UnsignedPayload: true}, true}, // a presigned GET
		{kindSNS, "", v2, false},
		{kindSNS, "", AuthResult{UnsignedPayload: true}, false},
		{kindSNS, "", v4, true},
	} {
		r := &http.Request{Method: "GET", URL: &url.URL{Path: "/b/k", RawQuery: tc.query}}
		err := checkSignedScope(r, tc.kind, tc.ar)
		if (err == nil) != tc.ok {
			t.Errorf("kind %d %q %+v: err %v, want ok=%v", tc.kind, tc.query, tc.ar, err, tc.ok)
		}
	}
	// A presigned URL's header parameters, once Verify made them headers.
	hq := &http.Request{Method: "PUT", URL: &url.URL{Path: "/b/k", RawQuery: "content-type=text%2Fx&x-amz-meta-a=1"},
		Header: http.Header{"Content-Type": {"text/x"}, "X-Amz-Meta-A": {"1"}}}
	if err := checkSignedScope(hq, kindS3, v2); err != nil {
		t.Errorf("signed header parameters refused: %v", err)
	}
	hq.Header.Set("X-Amz-Meta-A", "2")
	if err := checkSignedScope(hq, kindS3, v2); err == nil {
		t.Error("a header parameter that differs from its header was accepted")
	}
	post := &http.Request{Method: "POST", URL: &url.URL{Path: "/admin/rados"}, ContentLength: 10}
	if checkSignedScope(post, kindAdmin, AuthResult{UnsignedPayload: true}) == nil {
		t.Error("an admin POST with an unsigned body was accepted")
	}
	if checkSignedScope(post, kindAdmin, v4) != nil {
		t.Error("an admin POST with a signed body was refused")
	}
	post.ContentLength = -1 // chunked: unknown length
	if checkSignedScope(post, kindAdmin, AuthResult{UnsignedPayload: true}) == nil {
		t.Error("an admin POST with an unsigned chunked body was accepted")
	}
	put := &http.Request{Method: "PUT", URL: &url.URL{Path: "/admin/user", RawQuery: "uid=eve"}}
	if checkSignedScope(put, kindAdmin, AuthResult{UnsignedPayload: true}) != nil {
		t.Error("an admin PUT without a body was refused: everything it says is in the signed query")
	}
}
