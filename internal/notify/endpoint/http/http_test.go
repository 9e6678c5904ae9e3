package http

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/push"
)

type received struct {
	header nethttp.Header
	body   []byte
}

// receiver is a real HTTP server on 127.0.0.1 answering with status.
func receiver(t *testing.T, status func() int) (*httptest.Server, func() []received) {
	var mu sync.Mutex
	var got []received
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Header.Clone(), b})
		mu.Unlock()
		if r.Method != nethttp.MethodPost {
			w.WriteHeader(405)
			return
		}
		w.WriteHeader(status())
	}))
	t.Cleanup(srv.Close)
	return srv, func() []received { mu.Lock(); defer mu.Unlock(); return append([]received(nil), got...) }
}

func message(t *testing.T) push.Message {
	rec := event.New(event.Params{Type: event.ObjectCreatedPut, Time: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC),
		Region: "default", Bucket: "bk", Key: "dir/a b.txt", Size: 5, EventID: "ev1", RequestID: "rq1", HostID: "h1"}).ForConfiguration("n1", "od")
	m, err := push.NewMessage("t1", rec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPushAck(t *testing.T) {
	srv, got := receiver(t, func() int { return 200 })
	ep, err := New(Options{URL: srv.URL + "/hook", VerifySSL: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	m := message(t)
	if err := ep.Push(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	r := got()
	if len(r) != 1 || string(r[0].body) != string(m.Body) || r[0].header.Get("Content-Type") != "application/json" {
		t.Fatalf("%+v", r)
	}
	var msg event.Message
	if err := json.Unmarshal(r[0].body, &msg); err != nil || msg.Records[0].S3.Object.Key != "dir/a+b.txt" {
		t.Fatal(err, string(r[0].body))
	}
	if r[0].header.Get("ce-specversion") != "" {
		t.Fatal("CloudEvents headers without cloudevents=true")
	}
}

func TestCloudEventsHeaders(t *testing.T) {
	srv, got := receiver(t, func() int { return 204 })
	ep, _ := New(Options{URL: srv.URL, CloudEvents: true})
	defer ep.Close()
	m := message(t)
	// Finer than the record's milliseconds: ce-time still equals eventTime.
	m.CloudEvent.Time = m.CloudEvent.Time.Add(789 * time.Microsecond)
	if err := ep.Push(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	h := got()[0].header
	want := map[string]string{
		"ce-specversion": "1.0", "ce-type": "com.amazonaws.ObjectCreated:Put", "ce-source": "ceph:s3.default.bk",
		"ce-id": "rq1.h1", "ce-time": "2026-01-02T03:04:05.006Z", "ce-subject": "dir/a+b.txt",
	}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v)
		}
	}
}

func TestStatusClassification(t *testing.T) {
	var code int
	srv, _ := receiver(t, func() int { return code })
	ep, _ := New(Options{URL: srv.URL})
	defer ep.Close()
	for c, retryable := range map[int]bool{500: true, 503: true, 429: true, 408: true, 400: false, 403: false, 404: false, 301: false} {
		code = c
		err := ep.Push(context.Background(), message(t))
		if err == nil || push.IsRetryable(err) != retryable || !IsStatus(err, c) {
			t.Errorf("status %d: %v (retryable %v)", c, err, push.IsRetryable(err))
		}
	}
}

func TestDownAndTimeout(t *testing.T) {
	// Nothing listens: a retryable transport error.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ep, _ := New(Options{URL: "http://" + addr + "/"})
	if err := ep.Push(context.Background(), message(t)); err == nil || !push.IsRetryable(err) {
		t.Fatalf("down: %v", err)
	}
	// A receiver slower than the timeout: retryable.
	block := make(chan struct{})
	slow := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) { <-block }))
	defer slow.Close()
	defer close(block)
	ep, _ = New(Options{URL: slow.URL, Timeout: 100 * time.Millisecond})
	t0 := time.Now()
	if err := ep.Push(context.Background(), message(t)); err == nil || !push.IsRetryable(err) {
		t.Fatalf("timeout: %v", err)
	}
	if time.Since(t0) > 2*time.Second {
		t.Fatal("timeout not honoured")
	}
	ep.Close()
	if err := ep.Push(context.Background(), message(t)); !errors.Is(err, push.ErrClosed) {
		t.Fatal(err)
	}
}

func TestTLSVerify(t *testing.T) {
	srv := httptest.NewTLSServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {}))
	defer srv.Close()
	// Self-signed: rejected when verifying (retryable: the cert may be fixed)...
	ep, _ := New(Options{URL: srv.URL, VerifySSL: true})
	if err := ep.Push(context.Background(), message(t)); err == nil {
		t.Fatal("self-signed certificate accepted with verify-ssl=true")
	}
	// ...accepted with verify-ssl=false.
	ep, _ = New(Options{URL: srv.URL, VerifySSL: false})
	if err := ep.Push(context.Background(), message(t)); err != nil {
		t.Fatal(err)
	}
}

// countingServer is an httptest server that records bodies with their
// headers and counts the connections it accepted.
func countingServer(t testing.TB, tls bool, h nethttp.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s nethttp.ConnState) {
		if s == nethttp.StateNew {
			conns.Add(1)
		}
	}
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, &conns
}

func numbered(i int) push.Message {
	return push.Message{
		Body: []byte(fmt.Sprintf(`{"Records":[{"n":%d,"pad":%q}]}`, i, strings.Repeat("x", i%300))),
		CloudEvent: push.CloudEvent{ID: fmt.Sprintf("id-%d", i), Type: "com.amazonaws.ObjectCreated:Put",
			Source: "ceph:s3.default.bk", Subject: fmt.Sprintf("k%d", i), Time: time.Date(2026, 1, 2, 3, 4, 5, i, time.UTC)},
	}
}

func TestConcurrentPushesReuseConnections(t *testing.T) {
	for _, ce := range []bool{false, true} {
		t.Run(fmt.Sprint("cloudevents=", ce), func(t *testing.T) {
			var mu sync.Mutex
			got := map[string]*nethttp.Request{}
			bodies := map[string]string{}
			srv, conns := countingServer(t, false, func(w nethttp.ResponseWriter, r *nethttp.Request) {
				b, err := io.ReadAll(r.Body)
				if err != nil || int64(len(b)) != r.ContentLength {
					w.WriteHeader(400)
					return
				}
				mu.Lock()
				id := fmt.Sprint(len(got))
				if ce {
					id = r.Header.Get("ce-id")
				}
				got[id], bodies[id] = r, string(b)
				mu.Unlock()
				w.WriteHeader(200)
			})
			ep, err := New(Options{URL: srv.URL + "/hook?a=1", CloudEvents: ce})
			if err != nil {
				t.Fatal(err)
			}
			defer ep.Close()
			const workers, each = 16, 50
			var wg sync.WaitGroup
			errs := make(chan error, workers*each)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						if err := ep.Push(context.Background(), numbered(w*each+i)); err != nil {
							errs <- err
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if len(got) != workers*each {
				t.Fatalf("%d requests arrived, want %d", len(got), workers*each)
			}
			for id, r := range got {
				if r.Method != "POST" || r.URL.RequestURI() != "/hook?a=1" || r.Host != srv.Listener.Addr().String() ||
					r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Content-Length") != fmt.Sprint(len(bodies[id])) {
					t.Fatalf("request %s: %s %s host %s %v", id, r.Method, r.URL, r.Host, r.Header)
				}
				if !ce {
					if r.Header.Get("ce-id") != "" {
						t.Fatal("ce-* headers without cloudevents")
					}
					continue
				}
				var n int
				fmt.Sscanf(id, "id-%d", &n)
				m := numbered(n)
				if bodies[id] != string(m.Body) || r.Header.Get("ce-specversion") != "1.0" ||
					r.Header.Get("ce-type") != m.CloudEvent.Type || r.Header.Get("ce-source") != m.CloudEvent.Source ||
					r.Header.Get("ce-subject") != m.CloudEvent.Subject ||
					r.Header.Get("ce-time") != m.CloudEvent.Time.UTC().Format(event.TimeLayout) {
					t.Fatalf("request %s: %v %q", id, r.Header, bodies[id])
				}
			}
			if n := conns.Load(); n > workers {
				t.Fatalf("%d connections for %d pushes from %d goroutines", n, workers*each, workers)
			}
		})
	}
}

func TestStatusOK(t *testing.T) {
	var code atomic.Int64
	srv, _ := receiver(t, func() int { return int(code.Load()) })
	ep, _ := New(Options{URL: srv.URL})
	defer ep.Close()
	for _, c := range []int{200, 201, 202, 204} {
		code.Store(int64(c))
		if err := ep.Push(context.Background(), message(t)); err != nil {
			t.Errorf("status %d: %v", c, err)
		}
	}
}

// rawServer serves each connection with serve on 127.0.0.1 and counts
// connections.
func rawServer(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) (string, *atomic.Int64) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); defer c.Close(); serve(c, bufio.NewReader(c)) }()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + l.Addr().String() + "/", &conns
}

// readRequest reads one request and its body.
func readRequest(br *bufio.Reader) (*nethttp.Request, []byte, error) {
	r, err := nethttp.ReadRequest(br)
	if err != nil {
		return nil, nil, err
	}
	b, err := io.ReadAll(r.Body)
	return r, b, err
}

func TestServerClosesIdleConnections(t *testing.T) {
	// The receiver closes each connection after answering, without saying
	// so: the next push finds its pooled connection dead and goes again
	// on a fresh one.
	var requests atomic.Int64
	u, conns := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, _, err := readRequest(br); err != nil {
			return
		}
		requests.Add(1)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	ep, _ := New(Options{URL: u})
	defer ep.Close()
	const n = 20
	for i := range n {
		if err := ep.Push(context.Background(), numbered(i)); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
		if i%2 == 0 {
			time.Sleep(5 * time.Millisecond) // let the close arrive before some pushes, race it for others
		}
	}
	if requests.Load() != n || conns.Load() < n {
		t.Fatalf("%d requests on %d connections for %d pushes", requests.Load(), conns.Load(), n)
	}

	// The same through net/http: keep-alives off, and connections closed
	// between requests.
	srv, nconns := countingServer(t, false, func(w nethttp.ResponseWriter, r *nethttp.Request) { io.Copy(io.Discard, r.Body) })
	srv.Config.SetKeepAlivesEnabled(false)
	ep2, _ := New(Options{URL: srv.URL})
	defer ep2.Close()
	for i := range 5 {
		if err := ep2.Push(context.Background(), numbered(i)); err != nil {
			t.Fatal(err)
		}
	}
	if nconns.Load() != 5 {
		t.Fatalf("keep-alives off: %d connections", nconns.Load())
	}
	srv.Config.SetKeepAlivesEnabled(true)
	for i := range 5 {
		if err := ep2.Push(context.Background(), numbered(i)); err != nil {
			t.Fatal(err)
		}
		srv.CloseClientConnections()
	}
}

func TestConnectionCloseAndChunked(t *testing.T) {
	srv, conns := countingServer(t, false, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/close":
			w.Header().Set("Connection", "close")
			w.WriteHeader(200)
		case "/chunked":
			for range 3 {
				io.WriteString(w, strings.Repeat("y", 1000))
				w.(nethttp.Flusher).Flush()
			}
		case "/big":
			io.WriteString(w, strings.Repeat("z", 100<<10)) // more than is drained
		}
	})
	for _, tc := range []struct {
		path  string
		conns int64
	}{{"/chunked", 1}, {"/close", 4}, {"/big", 4}} {
		conns.Store(0)
		ep, _ := New(Options{URL: srv.URL + tc.path})
		for i := range 4 {
			if err := ep.Push(context.Background(), numbered(i)); err != nil {
				t.Fatalf("%s: %v", tc.path, err)
			}
		}
		ep.Close()
		if conns.Load() != tc.conns {
			t.Errorf("%s: %d connections, want %d", tc.path, conns.Load(), tc.conns)
		}
	}

	// Interim 1xx answers are skipped; an unbounded body (no length, read
	// until close) is not kept.
	u, rconns := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, _, err := readRequest(br); err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"+
				"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n")
		}
	})
	ep, _ := New(Options{URL: u})
	defer ep.Close()
	for i := range 3 {
		if err := ep.Push(context.Background(), numbered(i)); err != nil {
			t.Fatal(err)
		}
	}
	if rconns.Load() != 1 {
		t.Fatalf("1xx + chunked: %d connections", rconns.Load())
	}
	u, rconns = rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, _, err := readRequest(br); err == nil {
			io.WriteString(c, "HTTP/1.1 503 Busy\r\n\r\nuntil close")
		}
	})
	ep3, _ := New(Options{URL: u})
	defer ep3.Close()
	for range 2 {
		if err := ep3.Push(context.Background(), numbered(0)); !push.IsRetryable(err) || !IsStatus(err, 503) {
			t.Fatal(err)
		}
	}
	if rconns.Load() != 2 {
		t.Fatalf("unbounded body: %d connections", rconns.Load())
	}
}

func TestNoRetryAfterPartialResponse(t *testing.T) {
	// The first request is answered in full on a kept connection; the
	// second answer breaks off midway: the push fails, and is not sent
	// again even though its connection came from the pool.
	var requests atomic.Int64
	u, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, _, err := readRequest(br); err != nil {
				return
			}
			if requests.Add(1) == 1 {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
				continue
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Le")
			return
		}
	})
	ep, _ := New(Options{URL: u})
	defer ep.Close()
	if err := ep.Push(context.Background(), numbered(0)); err != nil {
		t.Fatal(err)
	}
	big := numbered(1)
	big.Body = []byte(strings.Repeat("b", 200<<10)) // also: a write buffer too large to keep
	if err := ep.Push(context.Background(), big); err == nil || !push.IsRetryable(err) {
		t.Fatalf("partial response: %v", err)
	}
	time.Sleep(20 * time.Millisecond)
	if requests.Load() != 2 {
		t.Fatalf("%d requests, want 2", requests.Load())
	}
}

func TestHungServer(t *testing.T) {
	// A push that never ends would run into the test's own timeout; the
	// bound only has to tell "ended" from "hung", with room for a loaded
	// machine (2 s flaked once beside heavy load).
	const hung = 20 * time.Second
	var requests atomic.Int64
	u, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, _, err := readRequest(br); err == nil {
			requests.Add(1)
		}
		io.Copy(io.Discard, br) // never answers; ends when the client closes
	})
	ep, _ := New(Options{URL: u, Timeout: 200 * time.Millisecond})
	defer ep.Close()
	t0 := time.Now()
	err := ep.Push(context.Background(), numbered(0))
	if err == nil || !push.IsRetryable(err) {
		t.Fatalf("timeout: %v", err)
	}
	if d := time.Since(t0); d < 150*time.Millisecond || d > hung {
		t.Fatalf("timeout after %v", d)
	}

	// ctx's deadline, when earlier than the timeout.
	ep2, _ := New(Options{URL: u, Timeout: time.Minute})
	defer ep2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	t0 = time.Now()
	err = ep2.Push(ctx, numbered(1))
	if err == nil || !push.IsRetryable(err) || !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > hung {
		t.Fatalf("ctx deadline: %v after %v", err, time.Since(t0))
	}

	// ctx cancellation.
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	t0 = time.Now()
	err = ep2.Push(ctx, numbered(2))
	if err == nil || !push.IsRetryable(err) || !errors.Is(err, context.Canceled) || time.Since(t0) > hung {
		t.Fatalf("cancel: %v after %v", err, time.Since(t0))
	}
	if err := ep2.Push(ctx, numbered(3)); !errors.Is(err, context.Canceled) || !push.IsRetryable(err) {
		t.Fatalf("cancelled before: %v", err)
	}
	if requests.Load() != 3 {
		t.Fatalf("%d requests, want 3 (no retry after a timeout)", requests.Load())
	}
}

func TestTLS(t *testing.T) {
	srv, conns := countingServer(t, true, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.TLS == nil {
			w.WriteHeader(400)
		}
	})
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{URL: srv.URL}, {URL: srv.URL + "/x", VerifySSL: true, CALocation: ca}} {
		conns.Store(0)
		ep, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := ep.Push(context.Background(), numbered(i)); err != nil {
				t.Fatalf("%+v: %v", o, err)
			}
		}
		ep.Close()
		if conns.Load() != 1 {
			t.Fatalf("%+v: %d connections", o, conns.Load())
		}
	}
	// A CA that did not sign the server's certificate (httptest servers
	// all share one): rejected.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	otherCA := filepath.Join(t.TempDir(), "other.pem")
	if err := os.WriteFile(otherCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	ep, _ := New(Options{URL: srv.URL, VerifySSL: true, CALocation: otherCA})
	defer ep.Close()
	if err := ep.Push(context.Background(), numbered(0)); err == nil || !push.IsRetryable(err) {
		t.Fatalf("foreign certificate: %v", err)
	}
	if _, err := New(Options{URL: srv.URL, CALocation: filepath.Join(t.TempDir(), "none.pem")}); err == nil {
		t.Fatal("missing ca-location accepted")
	}
}

func TestCloseWithPushInFlight(t *testing.T) {
	release := make(chan struct{})
	srv, _ := countingServer(t, false, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/slow" {
			<-release
		}
	})
	ep, _ := New(Options{URL: srv.URL + "/slow"})
	done := make(chan error, 1)
	go func() { done <- ep.Push(context.Background(), numbered(0)) }()
	time.Sleep(50 * time.Millisecond)
	ep.Close()
	if err := ep.Push(context.Background(), numbered(1)); !errors.Is(err, push.ErrClosed) || push.IsRetryable(err) {
		t.Fatalf("push after close: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ep.mu.Lock()
	n := len(ep.idle)
	ep.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d idle connections after Close", n)
	}
}

func TestRequestDetails(t *testing.T) {
	srv, got := receiver(t, func() int { return 200 })
	u, _ := url.Parse(srv.URL)
	u.User, u.Path = url.UserPassword("me", "p:w"), ""
	ep, err := New(Options{URL: u.String(), CloudEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if err := ep.Push(context.Background(), numbered(0)); err != nil {
		t.Fatal(err)
	}
	r := got()
	if len(r) != 1 || r[0].header.Get("Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte("me:p:w")) {
		t.Fatalf("%+v", r)
	}
	// A header value that would split the request is refused, unsent.
	m := numbered(1)
	m.CloudEvent.Subject = "a\r\nX-Evil: 1"
	if err := ep.Push(context.Background(), m); err == nil || !push.IsRetryable(err) {
		t.Fatal(err)
	}
	if len(got()) != 1 {
		t.Fatal("request with a bad header value sent")
	}
	for _, bad := range []string{"ftp://h/", "http:///x", "::"} {
		if _, err := New(Options{URL: bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func BenchmarkPush(b *testing.B) {
	srv, _ := countingServer(b, false, func(w nethttp.ResponseWriter, r *nethttp.Request) { io.Copy(io.Discard, r.Body) })
	ep, _ := New(Options{URL: srv.URL + "/hook", CloudEvents: true})
	defer ep.Close()
	m := numbered(1)
	m.Body = []byte(`{"Records":[` + strings.Repeat("x", 1000) + `]}`)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := ep.Push(context.Background(), m); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
