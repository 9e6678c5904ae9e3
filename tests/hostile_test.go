package tests

import (
	"bufio"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Hostile HTTP: what a client that misbehaves on the wire gets from a real
// `cairn serve`. Requests are written by hand on raw TCP connections.

// rawHead returns a SigV4-signed (UNSIGNED-PAYLOAD) request head for
// method and path, with hdr added before signing, ending in the blank line.
// Neither Content-Length nor Transfer-Encoding is added: callers put what
// they test in hdr.
func rawHead(t *testing.T, g *Gateway, method, path string, hdr map[string]string) string {
	t.Helper()
	r, err := http.NewRequest(method, g.Endpoint+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	creds := aws.Credentials{AccessKeyID: g.AccessKey, SecretAccessKey: g.SecretKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, g.Addr)
	for k, vs := range r.Header {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	return b.String()
}

func dial(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// readResp reads one response (body included) within a generous bound.
func readResp(t *testing.T, c net.Conn) (*http.Response, string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res, string(body)
}

func errCode(body string) string {
	var e struct{ Code string }
	_ = xml.Unmarshal([]byte(body), &e)
	return e.Code
}

func mustCreateBucket(t *testing.T, g *Gateway, name string) *s3.Client {
	t.Helper()
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	return c
}

func objectExists(t *testing.T, c *s3.Client, bucket, key string) bool {
	t.Helper()
	_, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err == nil {
		return true
	}
	if !strings.Contains(err.Error(), "404") {
		t.Fatalf("head %s: %v", key, err)
	}
	return false
}

// sendBigHeader sends a request whose X-Pad header has n bytes and returns
// the response, reading while it writes (the server answers before it has
// read everything).
func sendBigHeader(t *testing.T, c net.Conn, host string, n int) (*http.Response, string) {
	t.Helper()
	head := fmt.Sprintf("GET /hdrbucket HTTP/1.1\r\nHost: %s\r\nX-Pad: %s\r\n\r\n", host, strings.Repeat("a", n))
	go func() { _, _ = io.WriteString(c, head) }()
	return readResp(t, c)
}

// TestHeaderLimits: max-header-bytes applies, and every oversized header
// section gets the S3 error, never net/http's bare 431 (which it sends by
// itself beyond http.Server.MaxHeaderBytes).
func TestHeaderLimits(t *testing.T) {
	cert, key, _ := writeTestCert(t)
	tlsAddr := freeAddr(t)
	g := StartGateway(t, "--max-header-bytes", "65536", "--tls-listen", tlsAddr, "--tls-cert", cert, "--tls-key", key)
	for _, tc := range []struct {
		n       int
		tooBig  bool
		overTLS bool
	}{
		{20 << 10, false, false},
		{70 << 10, true, false},
		{1 << 20, true, false},
		{1 << 20, true, true},
	} {
		t.Run(fmt.Sprintf("%dB-tls=%v", tc.n, tc.overTLS), func(t *testing.T) {
			var c net.Conn = dial(t, g.Addr)
			if tc.overTLS {
				c = dialTLS(t, tlsAddr)
			}
			res, body := sendBigHeader(t, c, g.Addr, tc.n)
			if res.StatusCode == http.StatusRequestHeaderFieldsTooLarge {
				t.Fatalf("bare 431: %s", body)
			}
			if !tc.tooBig {
				if errCode(body) == "RequestHeaderSectionTooLarge" {
					t.Fatalf("%d bytes refused: %s", tc.n, body)
				}
				return
			}
			if res.StatusCode != 400 || errCode(body) != "RequestHeaderSectionTooLarge" || res.Header.Get("x-amz-request-id") == "" {
				t.Fatalf("status %d %v: %s", res.StatusCode, res.Header, body)
			}
		})
	}
}

// TestStalledBodyTimesOut: a body that stops arriving gets RequestTimeout
// after request-body-idle-timeout, and nothing is stored.
func TestStalledBodyTimesOut(t *testing.T) {
	g := StartGateway(t, "--request-body-idle-timeout", "4s")
	c3 := mustCreateBucket(t, g, "stall")
	c := dial(t, g.Addr)
	io.WriteString(c, rawHead(t, g, "PUT", "/stall/k", map[string]string{"Content-Length": "100"})+"0123456789")
	start := time.Now()
	res, body := readResp(t, c)
	if res.StatusCode != 400 || errCode(body) != "RequestTimeout" {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	t.Logf("RequestTimeout after %v", time.Since(start).Round(time.Millisecond))
	if objectExists(t, c3, "stall", "k") {
		t.Fatal("a timed-out PUT stored an object")
	}
	if d := time.Since(start); d < 3*time.Second {
		t.Fatalf("RequestTimeout after %v, before the idle timeout", d)
	}
	// A slow but steady body is not cut off: it takes longer than the idle
	// timeout in all, in pieces far apart from each other.
	c2 := dial(t, g.Addr)
	io.WriteString(c2, rawHead(t, g, "PUT", "/stall/slow", map[string]string{"Content-Length": "6"}))
	for i := 0; i < 6; i++ {
		time.Sleep(time.Second)
		io.WriteString(c2, "x")
	}
	if res, body := readResp(t, c2); res.StatusCode != 200 {
		t.Fatalf("slow body: %d %s", res.StatusCode, body)
	}
}

// TestSlowlorisAndIdleConnections: a header section that never completes
// and an idle keep-alive connection are both closed by the server.
func TestSlowlorisAndIdleConnections(t *testing.T) {
	g := StartGateway(t, "--read-header-timeout", "1s", "--idle-timeout", "1s")
	waitClosed := func(c net.Conn) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the server kept the connection open")
		}
	}
	slow := dial(t, g.Addr)
	io.WriteString(slow, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: ")
	waitClosed(slow)

	idle := dial(t, g.Addr)
	io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(idle)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("healthz: %v", err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	_ = idle.SetReadDeadline(time.Now().Add(60 * time.Second))
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Fatalf("idle connection not closed: %v", err)
	}
}

// TestHalfCloseMidBody: a client that shuts its sending side before the
// declared length gets IncompleteBody (400), and nothing is stored.
func TestHalfCloseMidBody(t *testing.T) {
	g := StartGateway(t)
	c3 := mustCreateBucket(t, g, "half")
	c := dial(t, g.Addr)
	io.WriteString(c, rawHead(t, g, "PUT", "/half/k", map[string]string{"Content-Length": "100"})+"0123456789")
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	res, body := readResp(t, c)
	if res.StatusCode != 400 || errCode(body) != "IncompleteBody" {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	if objectExists(t, c3, "half", "k") {
		t.Fatal("a truncated PUT stored an object")
	}
	// The same with a chunked body cut off mid-chunk.
	c2 := dial(t, g.Addr)
	io.WriteString(c2, rawHead(t, g, "PUT", "/half/k2", map[string]string{"Transfer-Encoding": "chunked"})+"64\r\n0123456789")
	_ = c2.CloseWrite()
	res, body = readResp(t, c2)
	if res.StatusCode != 400 || errCode(body) != "IncompleteBody" {
		t.Fatalf("chunked: status %d: %s", res.StatusCode, body)
	}
	if objectExists(t, c3, "half", "k2") {
		t.Fatal("a truncated chunked PUT stored an object")
	}
}

// TestPutNeedsLength: a PUT with neither Content-Length nor chunked
// transfer coding is 411 MissingContentLength and stores nothing; chunked
// without a length is accepted, as RGW does.
func TestPutNeedsLength(t *testing.T) {
	g := StartGateway(t)
	c3 := mustCreateBucket(t, g, "length")
	c := dial(t, g.Addr)
	io.WriteString(c, rawHead(t, g, "PUT", "/length/k", nil))
	res, body := readResp(t, c)
	if res.StatusCode != http.StatusLengthRequired || errCode(body) != "MissingContentLength" {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	if objectExists(t, c3, "length", "k") {
		t.Fatal("a PUT without length stored an object")
	}
	c2 := dial(t, g.Addr)
	io.WriteString(c2, rawHead(t, g, "PUT", "/length/chunked", map[string]string{"Transfer-Encoding": "chunked"})+"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
	if res, body := readResp(t, c2); res.StatusCode != 200 {
		t.Fatalf("chunked PUT: %d %s", res.StatusCode, body)
	}
	out, err := c3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("length"), Key: aws.String("chunked")})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(out.Body)
	if string(data) != "hello world" {
		t.Fatalf("stored %q", data)
	}
}
