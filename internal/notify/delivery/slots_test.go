package delivery

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/push"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/prometheus/client_golang/prometheus"
)

func TestSlotsFIFOWholeRequests(t *testing.T) {
	s := newSlots(4)
	if got := s.acquire(nil, 3); got != 3 {
		t.Fatalf("acquire 3 of 4 free = %d", got)
	}
	granted := make(chan int, 2)
	go func() { granted <- s.acquire(nil, 4) }()
	waitFor(t, func() bool { return len(s.waiting()) == 1 })
	// A small request behind a waiting large one waits its turn.
	if s.tryAcquire(1) {
		t.Fatal("tryAcquire overtook a waiter")
	}
	go func() { granted <- s.acquire(nil, 1) }()
	waitFor(t, func() bool { return len(s.waiting()) == 2 })
	s.release(2) // 3 free: not enough for the head, and the 1 must not pass it
	if got := s.waiting(); !slices.Equal(got, []int{4, 1}) || s.free() != 3 {
		t.Fatalf("waiting %v, free %d; want [4 1], 3", got, s.free())
	}
	s.release(1)
	if got := <-granted; got != 4 {
		t.Fatalf("head got %d, want 4", got)
	}
	s.release(4)
	if got := <-granted; got != 1 {
		t.Fatalf("second got %d, want 1", got)
	}
	// A request above the bound is cut to it.
	s.release(1)
	if got := s.acquire(nil, 9); got != 4 {
		t.Fatalf("acquire 9 of 4 = %d", got)
	}
	// A waiter that gives up holds nothing and unblocks the next.
	done := make(chan struct{})
	go func() { granted <- s.acquire(done, 2) }()
	waitFor(t, func() bool { return len(s.waiting()) == 1 })
	go func() { granted <- s.acquire(nil, 1) }()
	waitFor(t, func() bool { return len(s.waiting()) == 2 })
	s.release(1)
	close(done)
	if got := <-granted; got != 0 {
		t.Fatalf("cancelled waiter got %d", got)
	}
	if got := <-granted; got != 1 {
		t.Fatalf("waiter behind the cancelled one got %d", got)
	}
	s.release(4)
	if s.free() != 4 {
		t.Fatalf("free %d after all released", s.free())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	eventually(t, 10*time.Second, "condition", cond)
}

// parked is a batching endpoint that holds every exchange until the test
// answers its messages one by one.
type parked struct {
	mu    sync.Mutex
	exchs []*exchange
}

type exchange struct {
	n      int
	answer chan struct{}
	left   int // not yet answered by the test; guarded by parked.mu
}

func (p *parked) Push(ctx context.Context, msg push.Message) error {
	var err error
	p.PushBatch(ctx, []push.Message{msg}, func(_ int, e error) { err = e })
	return err
}

func (p *parked) PushBatch(ctx context.Context, msgs []push.Message, done func(int, error)) {
	x := &exchange{n: len(msgs), answer: make(chan struct{}, len(msgs)), left: len(msgs)}
	p.mu.Lock()
	p.exchs = append(p.exchs, x)
	p.mu.Unlock()
	for i := range msgs {
		select {
		case <-x.answer:
		case <-ctx.Done(): // the worker stops (a failed test)
			for ; i < len(msgs); i++ {
				p.mu.Lock()
				x.left--
				p.mu.Unlock()
				done(i, push.Retryable(ctx.Err()))
			}
			return
		}
		done(i, nil)
	}
}

func (p *parked) Close() error { return nil }

// answer lets x's next message be acknowledged. The count drops first, so
// the test never sees a message both answered and holding its slot.
func (p *parked) answer(x *exchange) {
	p.mu.Lock()
	x.left--
	p.mu.Unlock()
	x.answer <- struct{}{}
}

// unanswered reports the messages sent and not yet answered, and the
// oldest exchange with any.
func (p *parked) unanswered() (n int, oldest *exchange) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, x := range p.exchs {
		n += x.left
		if oldest == nil && x.left > 0 {
			oldest = x
		}
	}
	return n, oldest
}

// Several shards' workers waiting for one full endpoint: each answer frees
// one slot. With one slot taken at a time, the worker that won it sent it
// alone (1.4 events per exchange in an 11-shard backlog); a batch's slots
// are now taken together, so every exchange carries a full batch.
func TestBatchSlotsUnderContention(t *testing.T) {
	e := newEnv(t)
	const shards, perShard, batch = 3, 8, 4
	tp := e.createTopic("contend", "kafka://127.0.0.1:1", shards, nil)
	e.publishEvenly(tp, "b", shards, perShard)
	ep := &parked{}
	m := e.manager("gw1", e.endpoints(func(*topic.Topic) (push.Endpoint, error) { return ep, nil }), func(c *Config) {
		c.MaxInFlightPerEndpoint, c.PushBatch = batch, batch
	})
	var sem *slots
	waitFor(t, func() bool {
		m.semMu.Lock()
		defer m.semMu.Unlock()
		sem = m.sems[endpointKey(tp)]
		return sem != nil
	})
	total := shards * perShard
	for answered := 0; answered < total; answered++ {
		// Settle: every slot taken is a message sent (a granted worker
		// sends what it took) before the next answer frees one.
		var x *exchange
		waitFor(t, func() bool {
			var n int
			n, x = ep.unanswered()
			return x != nil && n == batch-sem.free()
		})
		ep.answer(x)
	}
	eventually(t, 30*time.Second, "every event delivered and removed", func() bool {
		return m.Stats().PushesOK == int64(total) && e.entries(tp) == 0
	})
	ep.mu.Lock()
	defer ep.mu.Unlock()
	var sizes []int
	for _, x := range ep.exchs {
		sizes = append(sizes, x.n)
	}
	if len(sizes) != total/batch || slices.Min(sizes) != batch {
		t.Errorf("exchange sizes %v, want %d exchanges of %d", sizes, total/batch, batch)
	}
}

// An 11-shard backlog through the real HTTP endpoint: every shard's
// entries go out in full pipelined batches, whichever worker waits for
// the endpoint's slots (a third of them: 11 x 32 > the 96 slots here).
// With one slot taken at a time the backlog went out a few events per
// exchange.
func TestBacklogExchangesAreFull(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t)
	const shards, perShard, batch = 11, 64, 32
	tp := e.createTopic("full", rcv.url(), shards, nil)
	want := e.publishEvenly(tp, "b", shards, perShard)
	reg := prometheus.NewRegistry()
	m := e.manager("gw1", e.endpoints(nil), func(c *Config) {
		c.MaxInFlightPerEndpoint, c.PushBatch, c.Registerer = 3*batch, batch, reg
	})
	total := shards * perShard
	eventually(t, 60*time.Second, "every event delivered and removed", func() bool {
		return m.Stats().PushesOK == int64(total) && e.entries(tp) == 0
	})
	if dups := rcv.checkOrder(t, want); dups != 0 {
		t.Errorf("%d duplicates", dups)
	}
	if got := counter(t, reg, "cairn_notify_delivery_push_exchanges_total", nil); got != float64(total/batch) {
		t.Errorf("%v exchanges for %d events, want %d (full batches of %d)", got, total, total/batch, batch)
	}
}
