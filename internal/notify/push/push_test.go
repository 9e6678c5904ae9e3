package push

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/event"
)

func TestClassification(t *testing.T) {
	base := errors.New("boom")
	cases := []struct {
		err       error
		retryable bool
	}{
		{nil, false},
		{base, true},
		{Retryable(base), true},
		{Permanent(base), false},
		{fmt.Errorf("wrapped: %w", Permanent(base)), false},
		{fmt.Errorf("wrapped: %w", Retryable(ErrUnroutable)), true},
		{ErrClosed, false},
		{context.DeadlineExceeded, true},
	}
	for _, c := range cases {
		if got := IsRetryable(c.err); got != c.retryable {
			t.Errorf("IsRetryable(%v) = %v", c.err, got)
		}
		if c.err != nil && IsPermanent(c.err) == c.retryable {
			t.Errorf("IsPermanent(%v) wrong", c.err)
		}
	}
	if !errors.Is(Retryable(ErrUnroutable), ErrUnroutable) {
		t.Fatal("classification hides the cause")
	}
	if Retryable(nil) != nil || Permanent(nil) != nil {
		t.Fatal("nil must stay nil")
	}
}

func TestNewMessage(t *testing.T) {
	rec := event.New(event.Params{
		Type: event.ObjectCreatedPut, Time: time.Unix(1, 0), Region: "zg", Bucket: "bk",
		Key: "a b/c", EventID: "e1", RequestID: "req-1", HostID: "zone-a",
	})
	m, err := NewMessage("t1", rec)
	if err != nil {
		t.Fatal(err)
	}
	if m.Topic != "t1" || m.Key != "bk/a b/c" {
		t.Fatalf("%+v", m)
	}
	msg, err := event.UnmarshalMessage(m.Body)
	if err != nil || len(msg.Records) != 1 || msg.Records[0].EventID != "e1" {
		t.Fatal(err, string(m.Body))
	}
	ce := m.CloudEvent
	// RGW's headers: id request-id.host-id, type without "s3.", source from eventSource ceph:s3.
	if ce.ID != "req-1.zone-a" || ce.Type != "com.amazonaws.ObjectCreated:Put" || ce.Source != "ceph:s3.zg.bk" || ce.Subject != "a+b/c" || !ce.Time.Equal(time.Unix(1, 0)) {
		t.Fatalf("%+v", ce)
	}
}

// StoredMessage wraps the stored bytes, takes the key it is given, and
// fills the CloudEvent attributes only when asked to.
func TestStoredMessage(t *testing.T) {
	rec := event.New(event.Params{
		Type: event.ObjectCreatedPut, Time: time.Unix(1, 0), Region: "zg", Bucket: "bk",
		Key: "a b/c", EventID: "e1", RequestID: "req-1", HostID: "zone-a",
	})
	stored, _ := event.Marshal(rec)
	want, _ := NewMessage("t1", rec)
	m := StoredMessage("t1", "bk/a b/c", rec, stored, true)
	if m.Topic != "t1" || m.Key != "bk/a b/c" || string(m.Body) != string(want.Body) || m.CloudEvent != want.CloudEvent {
		t.Fatalf("%+v, want %+v", m, want)
	}
	if m := StoredMessage("t1", "bk/a b/c", rec, stored, false); m.CloudEvent != (CloudEvent{}) || string(m.Body) != string(want.Body) {
		t.Fatalf("%+v", m)
	}
}

type slow struct {
	cur, max atomic.Int32
	release  chan struct{}
}

func (s *slow) Push(ctx context.Context, _ Message) error {
	n := s.cur.Add(1)
	defer s.cur.Add(-1)
	for {
		m := s.max.Load()
		if n <= m || s.max.CompareAndSwap(m, n) {
			break
		}
	}
	<-s.release
	return nil
}

func (s *slow) Close() error { return nil }

func TestLimit(t *testing.T) {
	s := &slow{release: make(chan struct{})}
	ep := Limit(s, 3)
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _ = ep.Push(context.Background(), Message{}) }()
	}
	deadline := time.Now().Add(2 * time.Second)
	for InFlight(ep) < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if InFlight(ep) != 3 {
		t.Fatalf("in flight = %d", InFlight(ep))
	}
	// A push that cannot get a slot gives up with its context, retryably.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := ep.Push(ctx, Message{}); !IsRetryable(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	close(s.release)
	wg.Wait()
	if s.max.Load() != 3 {
		t.Fatalf("max concurrent = %d, want 3", s.max.Load())
	}
}
