package tests

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// TestExpectHeaderIgnored: AWS ignores an Expect header other than
// 100-continue; so does Cairn (net/http alone answers 417 before any
// handler). Signed requests through a real gateway: a PUT with Expect:
// bogus stores its body (one that holds an Expect line itself comes back
// byte for byte), and the next request on the same connection is served.
func TestExpectHeaderIgnored(t *testing.T) {
	g := StartGateway(t)
	creds := aws.Credentials{AccessKeyID: g.AccessKey, SecretAccessKey: g.SecretKey}
	do := func(method, path, body, expect string) (int, string) {
		t.Helper()
		r, err := http.NewRequest(method, g.Endpoint+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body == "" {
			r.Body, r.ContentLength = nil, 0
		}
		if expect != "" {
			r.Header.Set("Expect", expect)
		}
		sum := sha256Hex(body)
		r.Header.Set("X-Amz-Content-Sha256", sum)
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, sum, "s3", "us-east-1", time.Now()); err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode, string(b)
	}
	if st, b := do("PUT", "/expect-b", "", "bogus"); st != 200 {
		t.Fatalf("CreateBucket with Expect: bogus: %d %s", st, b)
	}
	body := "line\r\nExpect: inside-the-body\r\n\r\nmore"
	if st, b := do("PUT", "/expect-b/k", body, "something-else"); st != 200 {
		t.Fatalf("PUT with Expect: something-else: %d %s", st, b)
	}
	if st, b := do("GET", "/expect-b/k", "", "x"); st != 200 || b != body {
		t.Fatalf("GET with Expect: x: %d %q", st, b)
	}
	if st, b := do("GET", "/expect-b/k", "", ""); st != 200 || b != body {
		t.Fatalf("GET: %d %q", st, b)
	}
}
