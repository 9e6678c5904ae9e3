package delivery

import (
	"fmt"
	"math/rand/v2"
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
