package delivery

import (
	"fmt"
	nq "github.com/cairn-s3/cairn/internal/notify/queue"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Many keys, several shards, random endpoint failures and delays: every
// event arrives exactly once, each key in order, never two pushes of one key
// at once, and keys do run in parallel.
func TestPerKeyOrderWithFailures(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t)
	rcv.set(func(r *receiver) {
		r.status = func(string, uint64) int {
			if rand.IntN(5) == 0 {
				return 503
			}
			return 0
		}
		r.delay = func() time.Duration { return time.Duration(rand.IntN(2000)) * time.Microsecond }
	})
	tp := e.createTopic("orders", rcv.url(), 3, nil)
	m := e.manager("gw1", e.endpoints(nil))

	const keys, perKey = 40, 25
	want := map[string][]uint64{}
	for i := 0; i < perKey; i++ {
		for k := 0; k < keys; k++ {
			key := fmt.Sprintf("obj-%02d", k)
			want["bkt/"+key] = append(want["bkt/"+key], e.publish(tp, "bkt", key))
		}
	}
	eventually(t, 60*time.Second, "all events delivered", func() bool { return rcv.delivered() == keys*perKey })
	if dups := rcv.checkOrder(t, want); dups != 0 {
		t.Errorf("%d duplicates without any crash or lease loss", dups)
	}
	eventually(t, 5*time.Second, "queues empty", func() bool { return e.entries(tp) == 0 })
	st := m.Stats()
	if st.PushesFailed == 0 {
		t.Error("no failed pushes counted although the receiver failed ~20%")
	}
	if st.PushesOK != keys*perKey {
		t.Errorf("PushesOK = %d, want %d", st.PushesOK, keys*perKey)
	}
	rcv.mu.Lock()
	par := rcv.max
	rcv.mu.Unlock()
	if par < 2 {
		t.Errorf("max concurrent pushes %d: keys were not delivered in parallel", par)
	}
	reg := m.cfg.Registerer.(prometheus.Gatherer)
	if got := counter(t, reg, "cairn_notify_delivery_latency_seconds", map[string]string{"topic": "orders"}); got != keys*perKey {
		t.Errorf("latency observations %v, want %d", got, keys*perKey)
	}
	t.Logf("pushes ok=%d failed=%d, max concurrent at receiver %d, requests %d", st.PushesOK, st.PushesFailed, par, rcv.requests)
}

// The endpoint is down: nothing is removed, retry counts and next attempts
// are persisted with the entries. It comes back: everything arrives, in
// order per key.
func TestEndpointDownThenUp(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t)
	rcv.set(func(r *receiver) { r.status = func(string, uint64) int { return 503 } })
	tp := e.createTopic("down", rcv.url(), 4, nil)
	m := e.manager("gw1", e.endpoints(nil))

	want := map[string][]uint64{}
	for i := 0; i < 10; i++ {
		for k := 0; k < 20; k++ {
			key := fmt.Sprintf("k%d", k)
			want["b/"+key] = append(want["b/"+key], e.publish(tp, "b", key))
		}
	}
	eventually(t, 20*time.Second, "retries persisted", func() bool {
		n := 0
		for i := 0; i < tp.NumShards; i++ {
			for _, en := range e.listAll(nq.ShardOID(nq.Name("", tp.Name), i)) {
				if en.Retries >= 3 && !en.NextAttempt.IsZero() {
					n++
				}
			}
		}
		return n >= 10
	})
	if got := e.entries(tp); got != 200 {
		t.Fatalf("entries while the endpoint is down = %d, want 200 (nothing may be removed)", got)
	}
	if d := rcv.delivered(); d != 0 {
		t.Fatalf("%d events acknowledged by a down endpoint", d)
	}
	// Only heads are tried: 20 keys, so at most 20 keys' first events.
	rcv.mu.Lock()
	tried := len(rcv.inflight)
	rcv.mu.Unlock()
	if tried > 20 {
		t.Errorf("%d distinct keys tried, want <= 20", tried)
	}
	rcv.set(func(r *receiver) { r.status = nil })
	eventually(t, 30*time.Second, "all delivered after recovery", func() bool { return rcv.delivered() == 200 })
	if dups := rcv.checkOrder(t, want); dups != 0 {
		t.Errorf("%d duplicates", dups)
	}
	eventually(t, 5*time.Second, "queues empty", func() bool { return e.entries(tp) == 0 })
	if m.Stats().Expired != 0 {
		t.Errorf("expired %d with no TTL or max_retries", m.Stats().Expired)
	}
}

// A later event of a key never overtakes an earlier one that waits for a
// retry, while other keys flow.
func TestRetryBlocksOnlyItsKey(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t)
	var failFirst atomic.Int32
	failFirst.Store(5)
	rcv.set(func(r *receiver) {
		r.status = func(key string, seq uint64) int {
			if key == "b/slow" && failFirst.Add(-1) >= 0 {
				return 500
			}
			return 0
		}
	})
	tp := e.createTopic("block", rcv.url(), 1, nil)
	e.manager("gw1", e.endpoints(nil), func(c *Config) { c.InitialBackoff, c.MaxBackoff = 50*time.Millisecond, 100*time.Millisecond })
	want := map[string][]uint64{}
	for i := 0; i < 5; i++ {
		for _, k := range []string{"slow", "fast1", "fast2"} {
			want["b/"+k] = append(want["b/"+k], e.publish(tp, "b", k))
		}
	}
	eventually(t, 10*time.Second, "fast keys delivered", func() bool {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		return len(rcv.got["b/fast1"]) == 5 && len(rcv.got["b/fast2"]) == 5
	})
	rcv.mu.Lock()
	slowDone := len(rcv.got["b/slow"])
	rcv.mu.Unlock()
	if slowDone != 0 {
		t.Errorf("slow key delivered %d events while its first was still failing", slowDone)
	}
	eventually(t, 10*time.Second, "slow key delivered", func() bool { return rcv.delivered() == 15 })
	rcv.checkOrder(t, want)
}

// Throughput to a local HTTP receiver with 11 shards, measured (not
// asserted beyond completion): the rate the manager sustains per gateway.
func TestThroughputHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	e := newEnv(t)
	rcv := newReceiver(t)
	tp := e.createTopic("rate", rcv.url(), 11, nil)
	const n = 6000
	for i := 0; i < n; i++ {
		e.publish(tp, "b", fmt.Sprintf("k%d", i%600))
	}
	start := time.Now()
	m := e.manager("gw1", e.endpoints(nil))
	// Generous: under -race on a loaded 2-CPU machine this takes minutes.
	eventually(t, 5*time.Minute, "all delivered", func() bool { return rcv.delivered() == n })
	el := time.Since(start)
	t.Logf("%d events (600 keys, 11 shards) in %v: %.0f events/s, max in flight %d", n, el.Round(time.Millisecond),
		float64(n)/el.Seconds(), m.Stats().MaxInFlight)
}
