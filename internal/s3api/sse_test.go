package s3api

import (
	"crypto/md5"
	"encoding/base64"
	"strings"
	"testing"
)

func TestSSEHeaderValidation(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.AllowSSECOverHTTP = true })
	h.bucket("b")
	key := make([]byte, 32)
	sum := md5.Sum(key)
	k64, m64 := base64.StdEncoding.EncodeToString(key), base64.StdEncoding.EncodeToString(sum[:])
	ssec := func(alg, k, m string) map[string]string {
		return map[string]string{
			"x-amz-server-side-encryption-customer-algorithm": alg,
			"x-amz-server-side-encryption-customer-key":       k,
			"x-amz-server-side-encryption-customer-key-MD5":   m,
		}
	}
	withSSE := ssec("AES256", k64, m64)
	withSSE["x-amz-server-side-encryption"] = "AES256"
	for _, tc := range []struct {
		name   string
		rq     req
		status int
		code   string
		msg    string
	}{
		{"md5 mismatch", req{method: "PUT", path: "/b/k", body: "d", hdr: ssec("AES256", k64, base64.StdEncoding.EncodeToString(make([]byte, 16)))}, 400, "InvalidArgument", "MD5"},
		{"short key", req{method: "PUT", path: "/b/k", body: "d", hdr: ssec("AES256", "AAAA", m64)}, 400, "InvalidArgument", "secret key"},
		{"bad algorithm", req{method: "PUT", path: "/b/k", body: "d", hdr: ssec("AES128", k64, m64)}, 400, "InvalidArgument", "algorithm"},
		{"no md5", req{method: "PUT", path: "/b/k", body: "d", hdr: ssec("AES256", k64, "")}, 400, "InvalidArgument", "MD5"},
		{"sse-c and sse", req{method: "PUT", path: "/b/k", body: "d", hdr: withSSE}, 400, "InvalidArgument", "incompatible"},
		{"sse on GET", req{method: "GET", path: "/b/k", hdr: map[string]string{"x-amz-server-side-encryption": "AES256"}}, 400, "InvalidArgument", ""},
		{"copy-source key without copy", req{method: "PUT", path: "/b/k", body: "d", hdr: map[string]string{
			"x-amz-copy-source-server-side-encryption-customer-algorithm": "AES256",
			"x-amz-copy-source-server-side-encryption-customer-key":       k64,
			"x-amz-copy-source-server-side-encryption-customer-key-MD5":   m64,
		}}, 400, "InvalidArgument", "copy-source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := h.mustDo(tc.rq, tc.status)
			if res.code() != tc.code || !strings.Contains(string(res.body), tc.msg) {
				t.Fatalf("code %q, want %q: %s", res.code(), tc.code, res.body)
			}
		})
	}
}
