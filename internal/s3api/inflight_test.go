package s3api

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// blockingWriter holds the response's first write until released.
type blockingWriter struct {
	*httptest.ResponseRecorder
	writing, release chan struct{}
}

func (w *blockingWriter) Write(b []byte) (int, error) {
	if w.writing != nil {
		close(w.writing)
		w.writing = nil
		<-w.release
	}
	return w.ResponseRecorder.Write(b)
}

// TestInFlightCountsClientRequests: InFlight (what transitions yield to)
// counts a client request while it is served, and not admin API calls.
func TestInFlightCountsClientRequests(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		path string
		want int64
	}{{"/nosuchbucket/k", 1}, {"/admin/user?uid=x", 0}} {
		w := &blockingWriter{ResponseRecorder: httptest.NewRecorder(), writing: make(chan struct{}), release: make(chan struct{})}
		done := make(chan struct{})
		writing := w.writing
		go func() {
			defer close(done)
			h.srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, c.path, nil))
		}()
		<-writing // the request is being answered
		if got := h.srv.InFlight(); got != c.want {
			t.Errorf("%s while answered: %d in flight, want %d", c.path, got, c.want)
		}
		close(w.release)
		<-done
		if got := h.srv.InFlight(); got != 0 {
			t.Fatalf("%s after: %d in flight", c.path, got)
		}
	}
}
