package s3api

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

const corsDoc = `<CORSConfiguration>
 <CORSRule><ID>web</ID><AllowedOrigin>http://*.example.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedMethod>PUT</AllowedMethod>
  <AllowedHeader>x-amz-*</AllowedHeader><AllowedHeader>Content-Type</AllowedHeader><ExposeHeader>ETag</ExposeHeader><ExposeHeader>x-amz-meta-color</ExposeHeader><MaxAgeSeconds>600</MaxAgeSeconds></CORSRule>
 <CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>HEAD</AllowedMethod></CORSRule>
</CORSConfiguration>`

func TestBucketCorsCRUD(t *testing.T) {
	h := newHarness(t)
	h.mustDo(req{method: "PUT", path: "/web"}, 200)
	res := h.mustDo(req{method: "GET", path: "/web?cors"}, 404)
	if res.code() != "NoSuchCORSConfiguration" {
		t.Fatalf("code %s", res.code())
	}
	h.mustDo(req{method: "PUT", path: "/web?cors", body: corsDoc}, 200)
	res = h.mustDo(req{method: "GET", path: "/web?cors"}, 200)
	for _, want := range []string{"<ID>web</ID>", "<AllowedOrigin>http://*.example.com</AllowedOrigin>", "<MaxAgeSeconds>600</MaxAgeSeconds>", "<ExposeHeader>x-amz-meta-color</ExposeHeader>"} {
		if !strings.Contains(res.body, want) {
			t.Errorf("GetBucketCors lacks %s: %s", want, res.body)
		}
	}
	// Another user cannot read or change it.
	h.mustDo(req{method: "GET", path: "/web?cors", key: bobKey}, 403)
	h.mustDo(req{method: "DELETE", path: "/web?cors"}, 204)
	h.mustDo(req{method: "GET", path: "/web?cors"}, 404)
	h.mustDo(req{method: "DELETE", path: "/web?cors"}, 204)
	// A bucket PUT with ?cors never creates a bucket.
	h.mustDo(req{method: "PUT", path: "/nobucket?cors", body: corsDoc}, 404)
}

func TestBucketCorsValidation(t *testing.T) {
	h := newHarness(t)
	h.mustDo(req{method: "PUT", path: "/web"}, 200)
	rule := func(s string) string { return "<CORSConfiguration><CORSRule>" + s + "</CORSRule></CORSConfiguration>" }
	many := "<CORSConfiguration>" + strings.Repeat("<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>", 101) + "</CORSConfiguration>"
	for _, tc := range []struct{ name, body, code string }{
		{"not xml", "nope", "MalformedXML"},
		{"no rules", "<CORSConfiguration></CORSConfiguration>", "MalformedXML"},
		{"101 rules", many, "MalformedXML"},
		{"no origin", rule("<AllowedMethod>GET</AllowedMethod>"), "MalformedXML"},
		{"no method", rule("<AllowedOrigin>*</AllowedOrigin>"), "MalformedXML"},
		{"bad method", rule("<AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod>"), "InvalidRequest"},
		{"lower-case method", rule("<AllowedOrigin>*</AllowedOrigin><AllowedMethod>get</AllowedMethod>"), "InvalidRequest"},
		{"two wildcards", rule("<AllowedOrigin>http://*.*.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"), "InvalidRequest"},
		{"header wildcards", rule("<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedHeader>*a*</AllowedHeader>"), "InvalidRequest"},
		{"expose wildcard", rule("<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod><ExposeHeader>*</ExposeHeader>"), "InvalidRequest"},
	} {
		res := h.do(req{method: "PUT", path: "/web?cors", body: tc.body})
		if res.status != 400 || res.code() != tc.code {
			t.Errorf("%s: %d %s, want 400 %s", tc.name, res.status, res.code(), tc.code)
		}
	}
	if n := h.be.calls["PutBucketCORS"]; n != 0 {
		t.Fatalf("invalid documents reached the backend %d times", n)
	}
	h.mustDo(req{method: "PUT", path: "/web?cors", body: "<CORSConfiguration>" + strings.Repeat("<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>", 100) + "</CORSConfiguration>"}, 200)
}

func TestCorsPreflight(t *testing.T) {
	h := newHarness(t)
	h.mustDo(req{method: "PUT", path: "/web"}, 200)
	pre := func(path string, hdr map[string]string) resp {
		return h.do(req{method: "OPTIONS", path: path, key: "-", hdr: hdr})
	}
	ok := map[string]string{"Origin": "http://app.example.com", "Access-Control-Request-Method": "PUT", "Access-Control-Request-Headers": "Content-Type, X-Amz-Date"}

	// No CORS configuration yet.
	if res := pre("/web/k", ok); res.status != 403 || res.code() != "AccessForbidden" || !strings.Contains(res.body, "CORS is not enabled") {
		t.Fatalf("no config: %d %s", res.status, res.body)
	}
	h.mustDo(req{method: "PUT", path: "/web?cors", body: corsDoc}, 200)

	res := pre("/web/some/key", ok)
	if res.status != 200 {
		t.Fatalf("preflight: %d %s", res.status, res.body)
	}
	for k, want := range map[string]string{
		"Access-Control-Allow-Origin":      "http://app.example.com",
		"Access-Control-Allow-Methods":     "GET, PUT",
		"Access-Control-Allow-Headers":     "content-type, x-amz-date",
		"Access-Control-Expose-Headers":    "ETag, x-amz-meta-color",
		"Access-Control-Max-Age":           "600",
		"Access-Control-Allow-Credentials": "true",
	} {
		if got := res.header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if !strings.Contains(res.header.Get("Vary"), "Origin") {
		t.Errorf("Vary = %q", res.header.Get("Vary"))
	}
	// The bucket itself (no key) answers too.
	if res := pre("/web", ok); res.status != 200 {
		t.Fatalf("bucket preflight: %d", res.status)
	}
	// The "*" rule: HEAD from anywhere, answered with "*".
	res = pre("/web/k", map[string]string{"Origin": "https://other.test", "Access-Control-Request-Method": "HEAD"})
	if res.status != 200 || res.header.Get("Access-Control-Allow-Origin") != "*" || res.header.Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("wildcard: %d %v", res.status, res.header)
	}
	for name, hdr := range map[string]map[string]string{
		"origin":  {"Origin": "http://evil.test", "Access-Control-Request-Method": "PUT"},
		"method":  {"Origin": "http://app.example.com", "Access-Control-Request-Method": "DELETE"},
		"header":  {"Origin": "http://app.example.com", "Access-Control-Request-Method": "PUT", "Access-Control-Request-Headers": "authorization"},
		"nosub":   {"Origin": "http://example.com", "Access-Control-Request-Method": "GET"},
		"scheme":  {"Origin": "https://app.example.com", "Access-Control-Request-Method": "GET"},
		"wildhdr": {"Origin": "https://x.test", "Access-Control-Request-Method": "HEAD", "Access-Control-Request-Headers": "x-custom"},
	} {
		res := pre("/web/k", hdr)
		if res.status != 403 || !strings.Contains(res.body, "This CORS request is not allowed") || res.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: %d %s", name, res.status, res.body)
		}
	}
	if res := pre("/web/k", map[string]string{"Access-Control-Request-Method": "GET"}); res.status != 400 {
		t.Errorf("no origin: %d", res.status)
	}
	if res := pre("/web/k", map[string]string{"Origin": "http://app.example.com"}); res.status != 400 {
		t.Errorf("no method: %d", res.status)
	}
	if res := pre("/nobucket/k", ok); res.status != 404 {
		t.Errorf("missing bucket: %d", res.status)
	}
}

func TestCorsActualResponses(t *testing.T) {
	h := newHarness(t)
	h.mustDo(req{method: "PUT", path: "/web"}, 200)
	h.mustDo(req{method: "PUT", path: "/web?cors", body: corsDoc}, 200)
	h.mustDo(req{method: "PUT", path: "/web/k", body: "hello"}, 200)

	res := h.mustDo(req{method: "GET", path: "/web/k", hdr: map[string]string{"Origin": "http://app.example.com"}}, 200)
	if res.header.Get("Access-Control-Allow-Origin") != "http://app.example.com" || res.header.Get("Access-Control-Expose-Headers") != "ETag, x-amz-meta-color" {
		t.Fatalf("GET headers: %v", res.header)
	}
	// Errors carry them too, so a page can read why it failed.
	res = h.mustDo(req{method: "GET", path: "/web/missing", hdr: map[string]string{"Origin": "http://app.example.com"}}, 404)
	if res.header.Get("Access-Control-Allow-Origin") != "http://app.example.com" {
		t.Fatalf("404 headers: %v", res.header)
	}
	res = h.mustDo(req{method: "GET", path: "/web/k", key: "-", hdr: map[string]string{"Origin": "http://app.example.com"}}, 403)
	if res.header.Get("Access-Control-Allow-Origin") != "http://app.example.com" {
		t.Fatalf("403 headers: %v", res.header)
	}
	// Other origins and methods the rules do not allow get none.
	res = h.mustDo(req{method: "GET", path: "/web/k", hdr: map[string]string{"Origin": "http://evil.test"}}, 200)
	if res.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("disallowed origin got %v", res.header)
	}
	res = h.mustDo(req{method: "DELETE", path: "/web/k", hdr: map[string]string{"Origin": "http://app.example.com"}}, 204)
	if res.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("disallowed method got %v", res.header)
	}
	// No Origin, no headers.
	res = h.mustDo(req{method: "GET", path: "/web?cors"}, 200)
	if res.header.Get("Access-Control-Allow-Origin") != "" || res.header.Get("Vary") != "" {
		t.Fatalf("no origin got %v", res.header)
	}
}

func TestBucketCorsSDK(t *testing.T) {
	h := newHarness(t)
	c := h.client(aliceKey)
	ctx := t.Context()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("sdk")}); err != nil {
		t.Fatal(err)
	}
	_, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: aws.String("sdk"), CORSConfiguration: &types.CORSConfiguration{
		CORSRules: []types.CORSRule{{AllowedMethods: []string{"GET"}, AllowedOrigins: []string{"https://a.test"}, MaxAgeSeconds: aws.Int32(5)}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: aws.String("sdk")})
	if err != nil || len(out.CORSRules) != 1 || out.CORSRules[0].AllowedOrigins[0] != "https://a.test" || aws.ToInt32(out.CORSRules[0].MaxAgeSeconds) != 5 {
		t.Fatalf("%+v %v", out, err)
	}
	if _, err := c.DeleteBucketCors(ctx, &s3.DeleteBucketCorsInput{Bucket: aws.String("sdk")}); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseCORS(f *testing.F) {
	f.Add([]byte(corsDoc))
	f.Add([]byte("<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, err := parseCORS(data)
		if err != nil {
			return
		}
		if len(rules) == 0 || len(rules) > maxCORSRules {
			t.Fatalf("accepted %d rules", len(rules))
		}
		for _, r := range rules {
			if len(r.AllowedOrigins) == 0 || len(r.AllowedMethods) == 0 {
				t.Fatalf("accepted rule %+v", r)
			}
			matchCORS(rules, "http://a.test", "GET", []string{"x-a"})
		}
	})
}

func TestWildcardMatch(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		ok   bool
	}{
		{"*", "anything", true}, {"http://*.a.com", "http://x.a.com", true}, {"http://*.a.com", "http://a.com", false},
		{"http://*.a.com", "https://x.a.com", false}, {"x-amz-*", "x-amz-date", true}, {"ab*ba", "aba", false},
		{"exact", "exact", true}, {"exact", "Exact", false},
	} {
		if got := wildcardMatch(tc.p, tc.s); got != tc.ok {
			t.Errorf("%q ~ %q = %v", tc.p, tc.s, got)
		}
	}
}
