package http

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/push"
)

// outcomes runs PushBatch and returns each message's error, checking that
// done was called exactly once per message.
func outcomes(t *testing.T, ep *Endpoint, msgs []push.Message) []error {
	t.Helper()
	errs := make([]error, len(msgs))
	calls := make([]int, len(msgs))
	ep.PushBatch(context.Background(), msgs, func(i int, err error) {
		calls[i]++
		errs[i] = err
	})
	for i, n := range calls {
		if n != 1 {
			t.Fatalf("message %d: done called %d times", i, n)
		}
	}
	return errs
}

func batchOf(n int) []push.Message {
	msgs := make([]push.Message, n)
	for i := range msgs {
		msgs[i] = numbered(i)
	}
	return msgs
}

// A batch goes out in one write on one connection, and each message is
// acknowledged by its own answer: the receiver refuses every third one.
func TestPushBatchPipelines(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv, conns := countingServer(t, false, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		n := len(bodies)
		mu.Unlock()
		if n%3 == 0 {
			w.WriteHeader(503)
		}
	})
	ep, err := New(Options{URL: srv.URL + "/hook", CloudEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	msgs := batchOf(20)
	errs := outcomes(t, ep, msgs)
	for i, err := range errs {
		if (i+1)%3 == 0 {
			if !IsStatus(err, 503) || !push.IsRetryable(err) {
				t.Errorf("message %d: %v, want retryable 503", i, err)
			}
		} else if err != nil {
			t.Errorf("message %d: %v", i, err)
		}
	}
	if len(bodies) != len(msgs) {
		t.Fatalf("receiver got %d requests, want %d", len(bodies), len(msgs))
	}
	for i, b := range bodies {
		if b != string(msgs[i].Body) {
			t.Errorf("request %d body %q, want %q", i, b, msgs[i].Body)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
	// The connection is pooled again: the next batch reuses it.
	for i, err := range outcomes(t, ep, batchOf(2)) {
		if err != nil && !IsStatus(err, 503) {
			t.Errorf("second batch, message %d: %v", i, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections after a second batch, want 1", n)
	}
}

// rawPipelineServer answers the requests of each connection with 200, up
// to limit per connection (then ends the connection, saying so when
// announce), and records every request's body in arrival order.
func rawPipelineServer(t *testing.T, limit int, announce bool) (string, func() []string) {
	var mu sync.Mutex
	var got []string
	url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for i := 0; i < limit; i++ {
			_, body, err := readRequest(br)
			if err != nil {
				return
			}
			mu.Lock()
			got = append(got, string(body))
			mu.Unlock()
			hdr := ""
			if announce && i == limit-1 {
				hdr = "Connection: close\r\n"
			}
			if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\n%sContent-Length: 0\r\n\r\n", hdr); err != nil {
				return
			}
		}
	})
	return url, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// A receiver that ends each connection after some answers (with
// Connection: close, or silently): the unanswered requests go again on a
// new connection until every message is acknowledged.
func TestPushBatchResendsUnanswered(t *testing.T) {
	for _, announce := range []bool{true, false} {
		t.Run(fmt.Sprintf("announce=%v", announce), func(t *testing.T) {
			url, got := rawPipelineServer(t, 3, announce)
			ep, err := New(Options{URL: url})
			if err != nil {
				t.Fatal(err)
			}
			defer ep.Close()
			msgs := batchOf(10)
			for i, err := range outcomes(t, ep, msgs) {
				if err != nil {
					t.Errorf("message %d: %v", i, err)
				}
			}
			// Each message was answered exactly once; a message the
			// receiver read but did not answer may have been read
			// again (at-least-once), never skipped.
			seen := map[string]int{}
			for _, b := range got() {
				seen[b]++
			}
			for i, m := range msgs {
				if seen[string(m.Body)] == 0 {
					t.Errorf("message %d never reached the receiver", i)
				}
			}
		})
	}
}

// A fresh connection that ends before any answer fails every message of
// the batch retryably (no endless redial), and done still reports each.
func TestPushBatchNoAnswer(t *testing.T) {
	url, conns := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		_, _, _ = readRequest(br)
	})
	ep, err := New(Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	for i, err := range outcomes(t, ep, batchOf(4)) {
		if err == nil || !push.IsRetryable(err) {
			t.Errorf("message %d: %v, want a retryable error", i, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// A message whose CloudEvents header cannot be sent fails alone; the rest
// of the batch is delivered.
func TestPushBatchBadHeaderFailsAlone(t *testing.T) {
	srv, rcvd := receiver(t, func() int { return 200 })
	ep, err := New(Options{URL: srv.URL, CloudEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	msgs := batchOf(3)
	msgs[1].CloudEvent.Subject = "bad\r\nkey"
	errs := outcomes(t, ep, msgs)
	if errs[0] != nil || errs[2] != nil {
		t.Errorf("good messages: %v, %v", errs[0], errs[2])
	}
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "ce-subject") {
		t.Errorf("bad header: %v", errs[1])
	}
	if n := len(rcvd()); n != 2 {
		t.Errorf("receiver got %d requests, want 2", n)
	}
}

// A closed endpoint reports ErrClosed for each message.
func TestPushBatchClosed(t *testing.T) {
	ep, err := New(Options{URL: "http://127.0.0.1:1/"})
	if err != nil {
		t.Fatal(err)
	}
	ep.Close()
	for i, err := range outcomes(t, ep, batchOf(3)) {
		if !errors.Is(err, push.ErrClosed) {
			t.Errorf("message %d: %v, want ErrClosed", i, err)
		}
	}
}

// BenchmarkPushBatch pipelines 32 requests per exchange; compare with
// BenchmarkPush (one request per round trip). -cpu 1, ns/op per message.
func BenchmarkPushBatch(b *testing.B) {
	srv, _ := countingServer(b, false, func(w nethttp.ResponseWriter, r *nethttp.Request) { io.Copy(io.Discard, r.Body) })
	ep, _ := New(Options{URL: srv.URL + "/hook", CloudEvents: true})
	defer ep.Close()
	m := numbered(1)
	m.Body = []byte(`{"Records":[` + strings.Repeat("x", 1000) + `]}`)
	msgs := make([]push.Message, 32)
	for i := range msgs {
		msgs[i] = m
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i += len(msgs) {
		n := min(len(msgs), b.N-i)
		ep.PushBatch(context.Background(), msgs[:n], func(_ int, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
}

// The requests are written before any answer is read: this receiver reads
// the whole batch first and only then answers, which a client sending one
// request per round trip could never get through.
func TestPushBatchWritesBeforeReading(t *testing.T) {
	const n = 8
	url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for range n {
			if _, _, err := readRequest(br); err != nil {
				return
			}
		}
		for range n {
			if _, err := io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n"); err != nil {
				return
			}
		}
		_, _ = br.ReadByte() // hold the connection until the client leaves
	})
	ep, err := New(Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	for i, err := range outcomes(t, ep, batchOf(n)) {
		if err != nil {
			t.Errorf("message %d: %v", i, err)
		}
	}
}

// A receiver stuck on one request of a batch: that message fails with the
// timeout, the ones behind it with ErrQueuedBehind (delivery does not
// charge them a retry), the ones before it are acknowledged.
func TestPushBatchTimeoutChargesTheStuckOne(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for i := 0; ; i++ {
			if _, _, err := readRequest(br); err != nil {
				return
			}
			if i == 1 {
				<-release
				return
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"); err != nil {
				return
			}
		}
	})
	ep, err := New(Options{URL: url, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	errs := outcomes(t, ep, batchOf(5))
	if errs[0] != nil {
		t.Errorf("message 0: %v", errs[0])
	}
	if !push.IsRetryable(errs[1]) || errors.Is(errs[1], push.ErrQueuedBehind) || !isTimeout(errs[1]) {
		t.Errorf("message 1 (stuck): %v, want a retryable timeout", errs[1])
	}
	for i := 2; i < 5; i++ {
		if !push.IsRetryable(errs[i]) || !errors.Is(errs[i], push.ErrQueuedBehind) {
			t.Errorf("message %d: %v, want retryable ErrQueuedBehind", i, errs[i])
		}
	}
}

// A refused connection is every message's failure, not a queue.
func TestPushBatchRefusedChargesAll(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ep, err := New(Options{URL: "http://" + addr + "/"})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	for i, err := range outcomes(t, ep, batchOf(3)) {
		if !push.IsRetryable(err) || errors.Is(err, push.ErrQueuedBehind) {
			t.Errorf("message %d: %v, want a retryable error of its own", i, err)
		}
	}
}
