package delivery

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/push"
	nq "github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cairn-s3/cairn/internal/notify/topic"
)

// stuckFirst is a batching endpoint whose first exchange times out on its
// first message, leaving the rest queued behind it; later ones succeed.
type stuckFirst struct {
	mu      sync.Mutex
	calls   int
	stuck   string
	batches []int
}

func (s *stuckFirst) Push(ctx context.Context, msg push.Message) error {
	var err error
	s.PushBatch(ctx, []push.Message{msg}, func(_ int, e error) { err = e })
	return err
}

func (s *stuckFirst) PushBatch(_ context.Context, msgs []push.Message, done func(int, error)) {
	s.mu.Lock()
	s.calls++
	first := s.calls == 1
	if first {
		s.stuck = msgs[0].Key
	}
	s.batches = append(s.batches, len(msgs))
	s.mu.Unlock()
	for i := range msgs {
		switch {
		case !first:
			done(i, nil)
		case i == 0:
			done(i, push.Retryable(context.DeadlineExceeded))
		default:
			done(i, push.Retryable(fmt.Errorf("behind: %w", push.ErrQueuedBehind)))
		}
	}
}

func (s *stuckFirst) Close() error { return nil }

// A pipelined batch whose first push timed out: only that event is
// charged a retry (and waits for its backoff, an hour here); the events
// queued behind it go again at once and are delivered.
func TestQueuedBehindIsNotCharged(t *testing.T) {
	e := newEnv(t)
	ep := &stuckFirst{}
	tp := e.createTopic("behind", "kafka://127.0.0.1:1", 1, nil)
	const n = 5
	for i := range n {
		e.publish(tp, "b", fmt.Sprintf("k%d", i))
	}
	m := e.manager("gw1", e.endpoints(func(*topic.Topic) (push.Endpoint, error) { return ep, nil }), func(c *Config) {
		c.InitialBackoff, c.MaxBackoff = time.Hour, time.Hour
	})
	eventually(t, 30*time.Second, "the others delivered", func() bool { return m.Stats().PushesOK == n-1 })
	oid := nq.ShardOID(nq.Name("", tp.Name), 0)
	eventually(t, 30*time.Second, "only the stuck one left, charged once", func() bool {
		left := e.listAll(oid)
		return len(left) == 1 && left[0].Retries == 1
	})
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.batches[0] != n {
		t.Errorf("first batch carried %d events, want %d", ep.batches[0], n)
	}
}
