package delivery

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/event"
)

// A slow receiver: the first push of E1 outlives PushTimeout. The gateway
// closes that connection when it gives up (so a receiver that stops work
// when its client goes away never applies it), retries E1, then sends E2.
// A receiver that finishes the abandoned request anyway applies E1 after
// E2: the late duplicate of docs/design/delivery.md. The sequencer rule
// (drop an event whose sequencer is not above the last applied for its
// key) restores E1, E2.
func TestLateDuplicateAfterTimeout(t *testing.T) {
	type arrival struct {
		seq string
		id  string
	}
	var (
		mu        sync.Mutex
		log       []arrival
		slowSeen  bool
		slowIn    = make(chan struct{})
		release   = make(chan struct{})
		abandoned = make(chan struct{}) // the slow request's client went away
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		msg, err := event.UnmarshalMessage(body)
		if err != nil || len(msg.Records) != 1 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rec := msg.Records[0]
		a := arrival{seq: rec.S3.Object.Sequencer, id: rec.EventID}
		mu.Lock()
		slow := !slowSeen
		slowSeen = true
		mu.Unlock()
		if slow {
			close(slowIn)
			go func() { <-r.Context().Done(); close(abandoned) }()
			<-release // a slow receiver that does not watch its client
		}
		mu.Lock()
		log = append(log, a)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	e := newEnv(t)
	tp := e.createTopic("slow", srv.URL, 1, nil)
	s1 := event.FormatSequencer(e.publish(tp, "b", "k"))
	s2 := event.FormatSequencer(e.publish(tp, "b", "k"))
	e.manager("gw", e.endpoints(nil), func(c *Config) { c.PushTimeout = 300 * time.Millisecond })

	<-slowIn
	snapshot := func() []arrival { mu.Lock(); defer mu.Unlock(); return append([]arrival(nil), log...) }
	has := func(l []arrival, seq string) bool {
		for _, a := range l {
			if a.seq == seq {
				return true
			}
		}
		return false
	}
	eventually(t, 20*time.Second, "E1 retried and E2 delivered", func() bool {
		l := snapshot()
		return has(l, s1) && has(l, s2)
	})
	eventually(t, 20*time.Second, "queue empty", func() bool { return e.entries(tp) == 0 })
	select {
	case <-abandoned:
	case <-time.After(20 * time.Second):
		t.Fatal("the abandoned push's connection was never closed")
	}
	before := len(snapshot())
	close(release)
	eventually(t, 20*time.Second, "the abandoned push applied late", func() bool { return len(snapshot()) == before+1 })

	l := snapshot()
	if last := l[len(l)-1]; last.seq != s1 || !has(l[:len(l)-1], s2) {
		t.Fatalf("arrivals %v: want the abandoned E1 (%s) after E2 (%s)", l, s1, s2)
	}
	// The consumer's rule: per key, apply only sequencers above the last
	// applied one (fixed-width hex compares as strings).
	var applied []string
	lastApplied := ""
	for _, a := range l {
		if a.seq > lastApplied {
			applied = append(applied, a.seq)
			lastApplied = a.seq
		}
	}
	if len(applied) != 2 || applied[0] != s1 || applied[1] != s2 {
		t.Fatalf("applied %v from arrivals %v, want [%s %s]", applied, l, s1, s2)
	}
	t.Logf("arrivals %v; applied %v", l, applied)
}
