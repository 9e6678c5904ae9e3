package delivery

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A local commit wakes its shard's worker: with a poll interval of an
// hour, events still arrive, one after another; with waking disabled they
// wait for the poll.
func TestCommitWakesWorker(t *testing.T) {
	for _, wake := range []bool{true, false} {
		t.Run(fmt.Sprintf("wake=%v", wake), func(t *testing.T) {
			e := newEnv(t)
			rcv := newReceiver(t)
			tp := e.createTopic("wake", rcv.url(), 2, nil)
			m := e.manager("gw1", e.endpoints(nil), func(c *Config) {
				c.PollInterval = time.Hour
				if !wake {
					c.WakeGap = -1
				}
			})
			eventually(t, 10*time.Second, "shards owned", func() bool { return len(m.Owned()) == 2 })
			// Let the workers' first (empty) list happen.
			time.Sleep(50 * time.Millisecond)
			if !wake {
				e.publish(tp, "b", "k")
				time.Sleep(300 * time.Millisecond)
				if d := rcv.delivered(); d != 0 {
					t.Fatalf("%d delivered without waking or polling", d)
				}
				return
			}
			for i := range 20 {
				e.publish(tp, "b", fmt.Sprintf("k%d", i%5))
				eventually(t, 10*time.Second, "event delivered after its commit", func() bool { return rcv.delivered() == i+1 })
			}
		})
	}
}

// The wake gap follows the commit rate: a steady trickle grows it towards
// MaxWakeGap (fewer lists and removal ops, more events each), full lists
// shrink it, and a wake after a quiet spell starts from WakeGap again.
func TestWakeGapAdapts(t *testing.T) {
	cfg := Config{WakeGap: 20 * time.Millisecond, MaxWakeGap: 200 * time.Millisecond, WakeBatch: 32}
	w := &worker{m: &Manager{cfg: cfg}, gap: cfg.WakeGap}
	for range 10 { // a few events per list, lists back to back
		w.adaptGap(w.gap, 3)
	}
	if w.gap != cfg.MaxWakeGap {
		t.Fatalf("steady trickle: gap %v, want %v", w.gap, cfg.MaxWakeGap)
	}
	w.adaptGap(w.gap, 100)
	if w.gap != cfg.MaxWakeGap/2 {
		t.Fatalf("full list: gap %v, want %v", w.gap, cfg.MaxWakeGap/2)
	}
	for range 10 {
		w.adaptGap(w.gap, 100)
	}
	if w.gap != cfg.WakeGap {
		t.Fatalf("busy: gap %v, want the floor %v", w.gap, cfg.WakeGap)
	}
	w.gap = cfg.MaxWakeGap
	w.adaptGap(5*time.Second, 1)
	if w.gap != cfg.WakeGap {
		t.Fatalf("after a quiet spell: gap %v, want %v", w.gap, cfg.WakeGap)
	}
}

// Acknowledged entries are removed at once, whatever the removal interval
// and the wake gap: what a crash would deliver again is what is in flight,
// not a timer's worth of acknowledgements. With RemoveInterval an hour, the
// queue still empties as events are acknowledged.
func TestAckedEntriesRemovedAtOnce(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t)
	tp := e.createTopic("rm", rcv.url(), 2, nil)
	m := e.manager("gw1", e.endpoints(nil), func(c *Config) {
		c.RemoveInterval = time.Hour
		c.MaxWakeGap = time.Hour
	})
	eventually(t, 10*time.Second, "shards owned", func() bool { return len(m.Owned()) == 2 })
	for i := range 40 {
		e.publish(tp, "b", fmt.Sprintf("k%d", i%7))
	}
	eventually(t, 30*time.Second, "all delivered", func() bool { return rcv.delivered() == 40 })
	eventually(t, 30*time.Second, "acknowledged entries removed", func() bool { return e.entries(tp) == 0 })
}

// The acknowledgements of one list's pushes share one removal op: an ack
// waits (up to AckLinger, an hour here) while other pushes of its shard
// are in flight. Removing each ack as the loop saw it cost one op per
// answer when the answers came apart.
func TestAcksOfOneListShareARemoval(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t)
	tp := e.createTopic("linger", rcv.url(), 1, nil)
	const n = 10
	for i := range n {
		e.publish(tp, "b", fmt.Sprintf("k%d", i))
	}
	release := make(chan struct{})
	rcv.set(func(r *receiver) {
		r.status = func(key string, _ uint64) int {
			if key != "b/k0" {
				<-release
			}
			return 0
		}
	})
	reg := prometheus.NewRegistry()
	e.manager("gw1", e.endpoints(nil), func(c *Config) {
		c.Registerer = reg
		c.AckLinger = time.Hour
		c.PollInterval = time.Hour
		c.MaxWakeGap = time.Hour
		c.RemoveInterval = time.Hour
	})
	ok := func() float64 { return counter(t, reg, "cairn_notify_delivery_pushes_ok_total", nil) }
	// k0 is answered and handled while the other nine wait in the receiver.
	eventually(t, 30*time.Second, "k0 acknowledged", func() bool { return ok() == 1 })
	close(release)
	eventually(t, 30*time.Second, "all acknowledged", func() bool { return ok() == n })
	eventually(t, 30*time.Second, "acknowledged entries removed", func() bool { return e.entries(tp) == 0 })
	removals := counter(t, reg, "cairn_notify_delivery_shard_ops_total", map[string]string{"op": "remove"}) +
		counter(t, reg, "cairn_notify_delivery_shard_ops_total", map[string]string{"op": "list_remove"})
	if removals != 1 {
		t.Errorf("%v removal ops for %d acknowledgements of one list, want 1", removals, n)
	}
}

// A removal owed when a list is due rides in the list's op: a commit wakes
// the worker while one push is still open and another's ack waits for it.
func TestRemovalRidesTheList(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t)
	tp := e.createTopic("ride", rcv.url(), 1, nil)
	e.publish(tp, "b", "k0")
	e.publish(tp, "b", "k1")
	release := make(chan struct{})
	rcv.set(func(r *receiver) {
		r.status = func(key string, _ uint64) int {
			if key == "b/k1" {
				<-release
			}
			return 0
		}
	})
	reg := prometheus.NewRegistry()
	e.manager("gw1", e.endpoints(nil), func(c *Config) {
		c.Registerer = reg
		c.AckLinger = time.Hour
		c.PollInterval = time.Hour
		c.WakeGap = time.Millisecond
		c.RemoveInterval = time.Hour
	})
	defer close(release)
	ops := func(op string) float64 {
		return counter(t, reg, "cairn_notify_delivery_shard_ops_total", map[string]string{"op": op})
	}
	eventually(t, 30*time.Second, "k0 acknowledged", func() bool {
		return counter(t, reg, "cairn_notify_delivery_pushes_ok_total", nil) == 1
	})
	// k0's removal waits for k1 (AckLinger an hour); a commit makes a list
	// due, which carries it.
	e.publish(tp, "b", "k2")
	eventually(t, 30*time.Second, "k0 removed with the list", func() bool { return ops("list_remove") == 1 })
	if n := ops("remove"); n != 0 {
		t.Errorf("%v removal ops of their own, want 0", n)
	}
	// k1 is still open; k2 was listed and delivered: k1 and k2's ack remain.
	eventually(t, 30*time.Second, "k2 acknowledged", func() bool {
		return counter(t, reg, "cairn_notify_delivery_pushes_ok_total", nil) == 2
	})
	if n := e.entries(tp); n != 2 {
		t.Errorf("%d entries queued, want 2 (k1 in flight, k2's removal waiting for it)", n)
	}
}

// Idle polls back off: each poll that finds nothing doubles the interval
// up to MaxPollInterval; a list that finds entries, a woken list or a
// backlog resets it.
func TestIdlePollBacksOff(t *testing.T) {
	cfg := Config{PollInterval: 200 * time.Millisecond, MaxPollInterval: 2 * time.Second}
	w := &worker{m: &Manager{cfg: cfg}, idle: cfg.PollInterval, drained: true}
	want := []time.Duration{400, 800, 1600, 2000, 2000}
	for i, ms := range want {
		w.adaptIdle(false, 0)
		if w.idle != ms*time.Millisecond {
			t.Fatalf("idle poll %d: interval %v, want %v", i+1, w.idle, ms*time.Millisecond)
		}
	}
	w.adaptIdle(false, 3)
	if w.idle != cfg.PollInterval {
		t.Fatalf("after a poll with entries: %v, want %v", w.idle, cfg.PollInterval)
	}
	w.idle = cfg.MaxPollInterval
	w.adaptIdle(true, 0)
	if w.idle != cfg.PollInterval {
		t.Fatalf("after a woken list: %v, want %v", w.idle, cfg.PollInterval)
	}
	w.idle, w.drained = cfg.MaxPollInterval, false
	w.adaptIdle(false, 0)
	if w.idle != cfg.PollInterval {
		t.Fatalf("with a backlog: %v, want %v", w.idle, cfg.PollInterval)
	}
}

// A commit that wakes nobody (another gateway's) still reaches a shard
// whose polls have backed off to MaxPollInterval.
func TestBackedOffPollFindsUnwokenCommit(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t)
	tp := e.createTopic("idle", rcv.url(), 1, nil)
	reg := prometheus.NewRegistry()
	m := e.manager("gw1", e.endpoints(nil), func(c *Config) {
		c.Registerer = reg
		c.WakeGap = -1
		c.PollInterval = 5 * time.Millisecond
		c.MaxPollInterval = 80 * time.Millisecond
	})
	eventually(t, 10*time.Second, "shard owned", func() bool { return len(m.Owned()) == 1 })
	// Five empty polls take the interval from 5 ms to its 80 ms ceiling.
	eventually(t, 30*time.Second, "idle polls", func() bool {
		return counter(t, reg, "cairn_notify_delivery_shard_ops_total", map[string]string{"op": "list"}) >= 6
	})
	e.publish(tp, "b", "k")
	eventually(t, 30*time.Second, "event delivered by a poll", func() bool { return rcv.delivered() == 1 })
}
