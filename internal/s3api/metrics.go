package s3api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "cairn",
		Subsystem: "s3",
		Name:      "requests_total",
		Help:      "S3, admin and SNS requests by operation and HTTP status.",
	}, []string{"op", "status"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "cairn",
		Subsystem: "s3",
		Name:      "request_duration_seconds",
		Help:      "Time to serve a request, including streaming the body, by operation and HTTP status.",
		Buckets:   prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5ms .. ~16s
	}, []string{"op", "status"})
	var err error
	if requests, err = register(reg, requests); err != nil {
		return nil, err
	}
	if latency, err = register(reg, latency); err != nil {
		return nil, err
	}
	return &metrics{requests: requests, latency: latency}, nil
}

// register registers c, or returns the collector already registered under
// the same name, so several Servers can share one registerer.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

func (m *metrics) observe(op string, status int, d time.Duration) {
	st := strconv.Itoa(status)
	m.requests.WithLabelValues(op, st).Inc()
	m.latency.WithLabelValues(op, st).Observe(d.Seconds())
}

// MetricsHandler serves the metrics of g in the Prometheus text format.
func MetricsHandler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
}

// HealthHandler answers 200 "ok" when check (may be nil) returns nil, and
// 503 with the error text otherwise. It needs no authentication.
func HealthHandler(check func(r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if check != nil {
			if err := check(r); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(err.Error() + "\n"))
				return
			}
		}
		_, _ = w.Write([]byte("ok\n"))
	})
}

// Mount returns a handler that serves unsigned GET/HEAD requests for the
// exact paths in extra (e.g. "/healthz", "/metrics") with those handlers and
// everything else with s3. Unlike http.ServeMux it never cleans or
// redirects paths, which would corrupt keys containing "//" or "..".
// Signed requests always go to s3, so buckets named like the extra paths
// stay reachable.
func Mount(s3 http.Handler, extra map[string]http.Handler) http.Handler {
	paths := make(map[string]http.Handler, len(extra))
	for p, h := range extra {
		paths[p] = h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			if h, ok := paths[r.URL.Path]; ok && !isSigned(r) {
				h.ServeHTTP(w, r)
				return
			}
		}
		s3.ServeHTTP(w, r)
	})
}
