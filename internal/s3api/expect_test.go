package s3api

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Expect: 100-continue: the gateway authenticates and routes on the
// headers and answers errors before asking for the body (the client never
// sends it); a request that will be served gets "100 Continue" first. Any
// other expectation is 417.
func TestExpectContinue(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	addr := strings.TrimPrefix(h.ts.URL, "http://")
	body := strings.Repeat("x", 4096)

	send := func(t *testing.T, path, expect string) (*bufio.Reader, net.Conn) {
		t.Helper()
		r, _ := http.NewRequest("PUT", h.ts.URL+path, nil)
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", fmt.Sprint(len(body)))
		r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
		creds := aws.Credentials{AccessKeyID: aliceKey, SecretAccessKey: secrets[aliceKey]}
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now()); err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		var sb strings.Builder
		fmt.Fprintf(&sb, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nExpect: %s\r\n", path, r.Host, len(body), expect)
		for k, vs := range r.Header {
			if k != "Content-Length" {
				fmt.Fprintf(&sb, "%s: %s\r\n", k, vs[0])
			}
		}
		sb.WriteString("\r\n")
		if _, err := c.Write([]byte(sb.String())); err != nil {
			t.Fatal(err)
		}
		return bufio.NewReader(c), c
	}

	t.Run("served", func(t *testing.T) {
		br, c := send(t, "/b/k", "100-continue")
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
			t.Fatalf("want 100 Continue first, got %q (%v)", line, err)
		}
		if _, err := br.ReadString('\n'); err != nil { // blank line after the interim response
			t.Fatal(err)
		}
		if _, err := c.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(br, nil)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("final response: %v %v", res, err)
		}
		if o := h.be.buckets["b"].objects["k"]; o == nil || len(o.data) != len(body) {
			t.Fatalf("stored %v", o)
		}
	})
	t.Run("rejected-before-body", func(t *testing.T) {
		br, _ := send(t, "/missing/k", "100-continue")
		res, err := http.ReadResponse(br, nil)
		if err != nil || res.StatusCode != http.StatusNotFound {
			t.Fatalf("want 404 without sending the body, got %v %v", res, err)
		}
	})
	t.Run("unknown-expectation", func(t *testing.T) {
		br, _ := send(t, "/b/k2", "something-else")
		res, err := http.ReadResponse(br, nil)
		if err != nil || res.StatusCode != http.StatusExpectationFailed {
			t.Fatalf("want 417, got %v %v", res, err)
		}
	})
}
