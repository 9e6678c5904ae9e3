package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/driver"
)

func metricsGateway(t *testing.T, args ...string) *Gateway {
	t.Helper()
	env := map[string]string{"CAIRN_ACCESS_KEY": "metricsadmin", "CAIRN_SECRET_KEY": "metricssecret123"}
	cfg, err := config.Load(append([]string{"--data-dir", t.TempDir(), "--log-level", "error"}, args...), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	g, err := Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// scrape GETs /metrics from h; key/secret sign it with SigV4, bearer sets
// a bearer token.
func scrape(t *testing.T, h http.Handler, key, secret, bearer string) (int, string) {
	t.Helper()
	r := httptest.NewRequest("GET", "http://127.0.0.1:7480/metrics", nil)
	if bearer != "" {
		r.Header.Set("Authorization", "Bearer "+bearer)
	}
	if key != "" {
		const payload = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
		r.Header.Set("X-Amz-Content-Sha256", payload)
		if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: key, SecretAccessKey: secret}, r, payload, "s3", "default", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// /metrics needs an admin's signature or the bearer token by default.
func TestMetricsNeedCredentials(t *testing.T) {
	g := metricsGateway(t, "--metrics-token", "0123456789abcdef-token")
	if _, err := g.Driver.CreateUser(context.Background(), driver.User{ID: "bob", Keys: []driver.Key{{User: "bob", AccessKey: "BOBKEY", SecretKey: "bobsecret"}}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, key, secret, bearer string
		want                      int
	}{
		{"anonymous", "", "", "", 401},
		{"wrong token", "", "", "0123456789abcdef-wrong", 403},
		{"token", "", "", "0123456789abcdef-token", 200},
		{"non-admin signature", "BOBKEY", "bobsecret", "", 403},
		{"bad signature", "metricsadmin", "wrongsecret", "", 403},
		{"admin signature", "metricsadmin", "metricssecret123", "", 200},
	} {
		status, body := scrape(t, g.Handler, c.key, c.secret, c.bearer)
		if status != c.want {
			t.Errorf("%s: status %d, want %d: %.200s", c.name, status, c.want, body)
		}
		if status == 200 && !strings.Contains(body, "go_goroutines") {
			t.Errorf("%s: no metrics in %.200s", c.name, body)
		}
	}

	// A token file is read at each scrape (rotation in place).
	tf := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tf, []byte("first-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g = metricsGateway(t, "--metrics-token-file", tf)
	if s, _ := scrape(t, g.Handler, "", "", "first-token-0123456789"); s != 200 {
		t.Fatalf("token from file: %d", s)
	}
	if err := os.WriteFile(tf, []byte("second-token-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, _ := scrape(t, g.Handler, "", "", "first-token-0123456789"); s != 403 {
		t.Fatalf("rotated-out token: %d", s)
	}
	if s, _ := scrape(t, g.Handler, "", "", "second-token-0123456789"); s != 200 {
		t.Fatalf("rotated-in token: %d", s)
	}

	// Without a token only the admin signature opens it.
	g = metricsGateway(t)
	if s, _ := scrape(t, g.Handler, "", "", ""); s != 401 {
		t.Fatalf("anonymous: %d", s)
	}
	if s, _ := scrape(t, g.Handler, "", "", "anything-at-all-0123"); s != 403 {
		t.Fatalf("a token when none is configured: %d", s)
	}
	if s, _ := scrape(t, g.Handler, "metricsadmin", "metricssecret123", ""); s != 200 {
		t.Fatalf("admin: %d", s)
	}

	g = metricsGateway(t, "--metrics-public")
	if s, _ := scrape(t, g.Handler, "", "", ""); s != 200 {
		t.Fatalf("public: %d", s)
	}

	// On its own listener /metrics is open (the listener is the
	// protection), and the main listener no longer serves it.
	g = metricsGateway(t, "--metrics-listen", "127.0.0.1:0")
	if s, _ := scrape(t, g.MetricsHandler, "", "", ""); s != 200 {
		t.Fatalf("metrics listener: %d", s)
	}
	if s, body := scrape(t, g.Handler, "", "", ""); s == 200 && strings.Contains(body, "go_goroutines") {
		t.Fatal("main listener still serves /metrics with metrics-listen set")
	}
}

func TestMetricsOptionsValidated(t *testing.T) {
	for _, args := range [][]string{
		{"--metrics-token", "short"},
		{"--metrics-token", "0123456789abcdef-token", "--metrics-token-file", "/x"},
		{"--metrics-public", "--metrics-token", "0123456789abcdef-token"},
	} {
		if _, err := config.Load(append([]string{"--data-dir", t.TempDir()}, args...), func(string) string { return "" }); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

// Without tenant labels, topic-labelled series are summed (ages: max)
// and no topic name is exported.
func TestMetricsWithoutTenantLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	ok := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pushes_ok_total", Help: "h"}, []string{"topic"})
	failed := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pushes_failed_total", Help: "h"}, []string{"topic", "retryable"})
	age := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "queue_oldest_entry_age_seconds", Help: "h"}, []string{"topic"})
	entries := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "queue_entries", Help: "h"}, []string{"topic"})
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "latency_seconds", Help: "h", Buckets: []float64{1, 10}}, []string{"topic"})
	reg.MustRegister(ok, failed, age, entries, lat)
	ok.WithLabelValues("secret-project-a").Add(2)
	ok.WithLabelValues("secret-project-b").Add(3)
	failed.WithLabelValues("secret-project-a", "true").Add(1)
	failed.WithLabelValues("secret-project-b", "true").Add(1)
	failed.WithLabelValues("secret-project-b", "false").Add(4)
	age.WithLabelValues("secret-project-a").Set(5)
	age.WithLabelValues("secret-project-b").Set(9)
	entries.WithLabelValues("secret-project-a").Set(5)
	entries.WithLabelValues("secret-project-b").Set(9)
	lat.WithLabelValues("secret-project-a").Observe(0.5)
	lat.WithLabelValues("secret-project-b").Observe(5)

	h := metricsHandler(reg, false, metricsAccess{public: true})
	_, body := scrape(t, h, "", "", "")
	for _, line := range []string{
		`latency_seconds_bucket{le="1"} 1`, `latency_seconds_bucket{le="10"} 2`, `latency_seconds_bucket{le="+Inf"} 2`,
		`latency_seconds_sum 5.5`, `latency_seconds_count 2`,
		`pushes_failed_total{retryable="false"} 4`, `pushes_failed_total{retryable="true"} 2`,
		`pushes_ok_total 5`, `queue_entries 14`, `queue_oldest_entry_age_seconds 9`,
	} {
		if !strings.Contains(body, "\n"+line+"\n") {
			t.Errorf("missing %q in\n%s", line, body)
		}
	}
	if strings.Contains(body, "secret-project") {
		t.Fatalf("tenant labels leak:\n%s", body)
	}
	h = metricsHandler(reg, true, metricsAccess{public: true})
	if _, body := scrape(t, h, "", "", ""); !strings.Contains(body, `pushes_ok_total{topic="secret-project-a"} 2`) {
		t.Fatalf("metrics-tenant-labels: per-topic series missing:\n%s", body)
	}
}
