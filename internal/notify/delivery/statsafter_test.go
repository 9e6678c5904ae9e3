package delivery

import (
	"sync/atomic"
	"testing"
	"time"

	clsq "github.com/cairn-s3/cairn/internal/cls/queue"
	nq "github.com/cairn-s3/cairn/internal/notify/queue"
)

// The shard owner publishes the bound its stats may start from: before its
// oldest entry whose removal is not durable (an event that keeps failing
// holds it), else its list cursor; the manager's queue stats from there
// give the same oldest entry as a search from the queue's start.
func TestStatsAfterBound(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t)
	var stuck atomic.Bool
	stuck.Store(true)
	rcv.set(func(r *receiver) {
		r.status = func(key string, seq uint64) int {
			if key == "b/stuck" && stuck.Load() {
				return 500
			}
			return 0
		}
	})
	tp := e.createTopic("after", rcv.url(), 1, nil)
	for _, k := range []string{"a0", "a1", "stuck", "a3", "a4", "a5", "a6"} {
		e.publish(tp, "b", k)
	}
	oid := nq.ShardOID(nq.Name("", tp.Name), 0)
	all := e.listAll(oid)
	if len(all) != 7 {
		t.Fatalf("%d entries", len(all))
	}
	m := e.manager("gw1", e.endpoints(nil), func(c *Config) { c.InitialBackoff, c.MaxBackoff = 20*time.Millisecond, 40*time.Millisecond })
	bound := func() (clsq.Marker, bool) {
		for _, w := range m.allWorkers() {
			if p := w.statsAfter.Load(); p != nil {
				return *p, true
			}
		}
		return "", false
	}
	// Six delivered and removed; the stuck one (the third) holds the bound.
	eventually(t, 10*time.Second, "six delivered, removals durable", func() bool {
		b, ok := bound()
		return rcv.delivered() == 6 && e.entries(tp) == 1 && ok && b == all[1].Marker
	})
	want, err := clsq.GetStats(e.ctx, e.q.IO(), oid)
	if err != nil {
		t.Fatal(err)
	}
	got, err := clsq.GetStatsAfter(e.ctx, e.q.IO(), oid, all[1].Marker)
	if err != nil || got != want || !got.Oldest.Equal(all[2].Committed) {
		t.Fatalf("stats after the bound %+v (%v), from the start %+v", got, err, want)
	}
	// The same bound for the queues' stats (the admin API), through the manager.
	if b := m.statsBound(oid); b != all[1].Marker {
		t.Fatalf("statsBound %q, want %q", b, all[1].Marker)
	}
	if st, err := e.q.Stats(e.ctx, nq.Name("", tp.Name), 1); err != nil || !st.Oldest.Equal(all[2].Committed) || st.Entries != 1 {
		t.Fatalf("queue stats %+v %v", st, err)
	}
	// While it stays, the worker keeps only live items, not every later
	// delivered one.
	for range 300 {
		e.publish(tp, "b", "more")
	}
	eventually(t, 20*time.Second, "300 more delivered, removals durable", func() bool {
		b, _ := bound()
		return rcv.delivered() == 306 && e.entries(tp) == 1 && b == all[1].Marker
	})
	for _, w := range m.allWorkers() {
		if n := w.tracked.Load(); n > 2*64+1 {
			t.Fatalf("worker tracks %d listed items with 1 live", n)
		}
	}
	last := e.listAll(oid)
	// Once it goes through, the bound is the cursor: the last entry.
	stuck.Store(false)
	eventually(t, 10*time.Second, "all delivered, bound at the cursor", func() bool {
		b, _ := bound()
		return rcv.delivered() == 307 && e.entries(tp) == 0 && b > last[0].Marker && len(b) == 16
	})
}

// The manager hands its bounds to the queues' stats (the admin API's topic
// stats): *queue.Queues must keep satisfying StatsBounder.
var _ StatsBounder = (*nq.Queues)(nil)
