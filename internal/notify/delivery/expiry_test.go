package delivery

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/prometheus/client_golang/prometheus"
)

// time_to_live: events older than the topic's TTL are removed undelivered,
// counted and logged.
func TestTTLExpiry(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t)
	rcv.set(func(r *receiver) { r.status = func(string, uint64) int { return 503 } })
	tp := e.createTopic("ttl", rcv.url(), 2, func(s *topic.Settings) { s.TimeToLive = 60 })
	m := e.manager("gw1", e.endpoints(nil))
	for k := 0; k < 10; k++ {
		e.publish(tp, "b", fmt.Sprintf("k%d", k%5))
	}
	eventually(t, 5*time.Second, "failures", func() bool { return m.Stats().PushesFailed >= 5 })
	if m.Stats().Expired != 0 || e.entries(tp) != 10 {
		t.Fatalf("expired before the TTL: %+v, entries %d", m.Stats(), e.entries(tp))
	}
	e.clock.Advance(61 * time.Second)
	eventually(t, 5*time.Second, "all expired", func() bool { return e.entries(tp) == 0 })
	// Expiries are counted just after their removal is durable.
	eventually(t, 5*time.Second, "expiries counted", func() bool { return m.Stats().Expired >= 10 })
	if got := m.Stats().Expired; got != 10 {
		t.Errorf("Expired = %d, want 10", got)
	}
	reg := m.cfg.Registerer.(prometheus.Gatherer)
	if got := counter(t, reg, "cairn_notify_delivery_events_expired_total", map[string]string{"topic": "ttl", "reason": "ttl"}); got != 10 {
		t.Errorf("expired{reason=ttl} = %v, want 10", got)
	}
	if rcv.delivered() != 0 {
		t.Error("a down endpoint acknowledged something")
	}
}

// max_retries: each event is tried 1+max_retries times, then expired. The
// topic's attribute wins over the global default; the global default
// applies to topics that leave it unset.
func TestMaxRetriesExpiry(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t)
	var tries keyCounter
	rcv.set(func(r *receiver) {
		r.status = func(key string, _ uint64) int { tries.inc(key); return 500 }
	})
	own := e.createTopic("retries", rcv.url()+"?own", 1, func(s *topic.Settings) { s.MaxRetries = 2 })
	glob := e.createTopic("global", rcv.url()+"?global", 1, nil)
	m := e.manager("gw1", e.endpoints(nil), func(c *Config) { c.MaxRetries = 1 })
	for k := 0; k < 3; k++ {
		e.publish(own, "own", fmt.Sprintf("k%d", k))
		e.publish(own, "own", fmt.Sprintf("k%d", k))
		e.publish(glob, "glob", fmt.Sprintf("k%d", k))
	}
	eventually(t, 10*time.Second, "all expired", func() bool { return e.entries(own)+e.entries(glob) == 0 })
	// Expiries are counted just after their removal is durable.
	eventually(t, 5*time.Second, "expiries counted", func() bool { return m.Stats().Expired >= 9 })
	reg := m.cfg.Registerer.(prometheus.Gatherer)
	if got := counter(t, reg, "cairn_notify_delivery_events_expired_total", map[string]string{"topic": "retries", "reason": "max_retries"}); got != 6 {
		t.Errorf("retries topic expired %v, want 6", got)
	}
	if got := counter(t, reg, "cairn_notify_delivery_events_expired_total", map[string]string{"topic": "global", "reason": "max_retries"}); got != 3 {
		t.Errorf("global topic expired %v, want 3", got)
	}
	for k := 0; k < 3; k++ {
		if got := tries.get(fmt.Sprintf("own/k%d", k)); got != 6 {
			t.Errorf("own/k%d tried %d times, want 6 (two events, 1+2 attempts each)", k, got)
		}
		if got := tries.get(fmt.Sprintf("glob/k%d", k)); got != 2 {
			t.Errorf("glob/k%d tried %d times, want 2 (1+1)", k, got)
		}
	}
}

// A permanent failure (HTTP 4xx) drops the event at once, counted.
func TestPermanentFailureDrops(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t)
	rcv.set(func(r *receiver) {
		r.status = func(key string, _ uint64) int {
			if key == "b/bad" {
				return 400
			}
			return 0
		}
	})
	tp := e.createTopic("perm", rcv.url(), 1, nil)
	m := e.manager("gw1", e.endpoints(nil))
	e.publish(tp, "b", "bad")
	e.publish(tp, "b", "bad")
	e.publish(tp, "b", "good")
	eventually(t, 5*time.Second, "queue drained", func() bool { return e.entries(tp) == 0 })
	// Expiries are counted just after their removal is durable.
	eventually(t, 5*time.Second, "drops counted", func() bool { return m.Stats().Expired >= 2 })
	reg := m.cfg.Registerer.(prometheus.Gatherer)
	if got := counter(t, reg, "cairn_notify_delivery_events_expired_total", map[string]string{"reason": "permanent"}); got != 2 {
		t.Errorf("permanent drops %v, want 2", got)
	}
	if got := counter(t, reg, "cairn_notify_delivery_pushes_failed_total", map[string]string{"retryable": "false"}); got != 2 {
		t.Errorf("permanent failures %v, want 2", got)
	}
	if rcv.delivered() != 1 {
		t.Errorf("delivered %d, want 1", rcv.delivered())
	}
}

// A slow endpoint: pushes in flight stay within the per-endpoint and total
// bounds, entries held in memory within the shard window, goroutines do
// not pile up, and everything still arrives.
func TestBoundedInFlightSlowEndpoint(t *testing.T) {
	e := newEnv(t)
	slow1, slow2 := newReceiver(t), newReceiver(t)
	for _, r := range []*receiver{slow1, slow2} {
		r.set(func(r *receiver) { r.delay = func() time.Duration { return 10 * time.Millisecond } })
	}
	t1 := e.createTopic("slow1", slow1.url(), 2, nil)
	t2 := e.createTopic("slow2", slow2.url(), 2, nil)
	const n = 400 // per topic, all distinct keys: nothing orders them
	for i := 0; i < n; i++ {
		e.publish(t1, "b", fmt.Sprintf("k%d", i))
		e.publish(t2, "b", fmt.Sprintf("k%d", i))
	}
	base := runtime.NumGoroutine()
	m := e.manager("gw1", e.endpoints(nil), func(c *Config) {
		c.MaxInFlightPerEndpoint, c.MaxInFlightTotal, c.ShardWindow = 4, 6, 32
	})
	var peakG atomic.Int64
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				g := int64(runtime.NumGoroutine())
				if g > peakG.Load() {
					peakG.Store(g)
				}
			}
		}
	}()
	eventually(t, 30*time.Second, "all delivered", func() bool { return slow1.delivered()+slow2.delivered() == 2*n })
	close(stop)
	st := m.Stats()
	for i, r := range []*receiver{slow1, slow2} {
		r.mu.Lock()
		if r.max > 4 {
			t.Errorf("endpoint %d saw %d concurrent pushes, bound 4", i+1, r.max)
		}
		r.mu.Unlock()
	}
	if st.MaxInFlight > 6 || st.MaxInFlight < 5 {
		t.Errorf("max in flight %d, want 5..6 (bound 6, and the bound should be reached)", st.MaxInFlight)
	}
	if st.MaxHeld > 4*32 {
		t.Errorf("held up to %d entries, bound 4 shards x window 32", st.MaxHeld)
	}
	// Per push: the push goroutine plus the HTTP client's and server's
	// connection goroutines; the manager's own loops and workers are few.
	if extra := peakG.Load() - int64(base); extra > 6*4+40 {
		t.Errorf("goroutines grew by %d with 6 pushes in flight", extra)
	}
	t.Logf("in flight max %d (bound 6), held max %d (bound 128), goroutines +%d", st.MaxInFlight, st.MaxHeld, peakG.Load()-int64(base))
}

// keyCounter counts per key.
type keyCounter struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *keyCounter) inc(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[k]++
}

func (c *keyCounter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}
