package delivery

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/topic"
)

// A topic with cloudevents=true gets the ce-* headers on delivered
// events, one without gets none (the message carries the attributes
// only for the first: push.StoredMessage).
func TestDeliveryCloudEventsHeaders(t *testing.T) {
	for _, ce := range []bool{true, false} {
		e := newEnv(t)
		var mu sync.Mutex
		var got []http.Header
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, r.Header.Clone())
			mu.Unlock()
		}))
		t.Cleanup(srv.Close)
		tp := e.createTopic("ce", srv.URL, 1, func(s *topic.Settings) { s.CloudEvents = ce })
		e.manager("gw1", e.endpoints(nil))
		e.publish(tp, "bkt", "a b")
		eventually(t, 30*time.Second, "the event delivered", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 1 })
		eventually(t, 10*time.Second, "the queue empty", func() bool { return e.entries(tp) == 0 })
		h := got[0]
		if !ce {
			if h.Get("ce-type") != "" || h.Get("ce-specversion") != "" {
				t.Errorf("ce-* headers without cloudevents: %v", h)
			}
			continue
		}
		if h.Get("ce-type") != "com.amazonaws.ObjectCreated:Put" || h.Get("ce-source") != "ceph:s3.default.bkt" ||
			h.Get("ce-subject") != "a+b" || h.Get("ce-id") == "" || h.Get("ce-time") == "" {
			t.Errorf("cloudevents headers %v", h)
		}
	}
}
