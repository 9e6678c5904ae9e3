package http

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"sync"
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
		Region: "default", Bucket: "bk", Key: "dir/a b.txt", Size: 5, EventID: "ev1"}).ForConfiguration("n1", "od")
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
	if err := ep.Push(context.Background(), message(t)); err != nil {
		t.Fatal(err)
	}
	h := got()[0].header
	want := map[string]string{
		"ce-specversion": "1.0", "ce-type": "com.amazonaws.s3.ObjectCreated:Put", "ce-source": "cairn:s3.default.bk",
		"ce-id": "ev1", "ce-time": "2026-01-02T03:04:05.006Z", "ce-subject": "dir/a+b.txt",
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
