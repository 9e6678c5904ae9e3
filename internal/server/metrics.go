package server

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/s3api"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// metricsAccess decides who may scrape /metrics (README "Metrics"): anyone
// (public, or the dedicated metrics listener without a token), a bearer
// token, or an admin's SigV4 signature.
type metricsAccess struct {
	public    bool
	token     string // metrics-token
	tokenFile string // metrics-token-file, read at each scrape
	api       *s3api.Server
	log       *slog.Logger
}

// metricsHandler serves reg to the callers access admits; without tenant
// labels, per-topic and per-bucket series are summed away first.
func metricsHandler(reg prometheus.Gatherer, tenantLabels bool, access metricsAccess) http.Handler {
	if !tenantLabels {
		reg = withoutTenantLabels{reg}
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status, msg := access.check(r); status != 0 {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="cairn-metrics"`)
			}
			http.Error(w, msg, status)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// check returns 0 when r may scrape, else the HTTP status and message:
// 401 without credentials, 403 with a wrong token or a non-admin
// signature.
func (a metricsAccess) check(r *http.Request) (int, string) {
	if a.public {
		return 0, ""
	}
	hdr := r.Header.Get("Authorization")
	if tok, ok := strings.CutPrefix(hdr, "Bearer "); ok {
		want, err := a.wantToken()
		if err != nil {
			a.log.Error("metrics token unreadable", "err", err)
			return http.StatusInternalServerError, "metrics token unreadable"
		}
		if want != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(want)) == 1 {
			return 0, ""
		}
		return http.StatusForbidden, "invalid metrics token"
	}
	if hdr == "" || a.api == nil {
		return http.StatusUnauthorized, "scraping /metrics needs a bearer token (metrics-token) or an admin's SigV4 signature"
	}
	if err := a.api.AuthorizeAdmin(r, authz.AdminMetricsRead); err != nil {
		e := s3err.From(err)
		return e.HTTPStatus, e.Code
	}
	return 0, ""
}

func (a metricsAccess) wantToken() (string, error) {
	if a.tokenFile == "" {
		return a.token, nil
	}
	b, err := os.ReadFile(a.tokenFile)
	if err != nil {
		return "", err
	}
	t := string(bytes.TrimSpace(b))
	if len(t) < config.MinMetricsTokenLen {
		return "", fmt.Errorf("%s: token shorter than %d characters", a.tokenFile, config.MinMetricsTokenLen)
	}
	return t, nil
}

// tenantLabels name tenants' resources (a topic or bucket name is chosen by
// a user and may say what it is for).
var tenantLabels = map[string]bool{"topic": true, "bucket": true}

// withoutTenantLabels drops tenant labels from every series, merging the
// series that then coincide: counters, gauges and histograms summed,
// except age gauges (*_age_seconds), which keep the maximum.
type withoutTenantLabels struct{ g prometheus.Gatherer }

func (w withoutTenantLabels) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := w.g.Gather()
	for _, mf := range mfs {
		if !hasTenantLabel(mf) {
			continue
		}
		useMax := strings.HasSuffix(mf.GetName(), "_age_seconds")
		merged := map[string]*dto.Metric{}
		var order []string
		for _, m := range mf.Metric {
			var kept []*dto.LabelPair
			for _, lp := range m.Label {
				if !tenantLabels[lp.GetName()] {
					kept = append(kept, lp)
				}
			}
			m.Label = kept
			k := labelKey(kept)
			into, ok := merged[k]
			if !ok {
				merged[k] = m
				order = append(order, k)
				continue
			}
			mergeMetric(into, m, useMax)
		}
		sort.Strings(order)
		mf.Metric = mf.Metric[:0]
		for _, k := range order {
			mf.Metric = append(mf.Metric, merged[k])
		}
	}
	return mfs, err
}

func hasTenantLabel(mf *dto.MetricFamily) bool {
	for _, m := range mf.Metric {
		for _, lp := range m.Label {
			if tenantLabels[lp.GetName()] {
				return true
			}
		}
	}
	return false
}

func labelKey(lps []*dto.LabelPair) string {
	var b strings.Builder
	for _, lp := range lps {
		b.WriteString(lp.GetName())
		b.WriteByte(0)
		b.WriteString(lp.GetValue())
		b.WriteByte(0)
	}
	return b.String()
}

func mergeMetric(into, m *dto.Metric, useMax bool) {
	add := func(a, b float64) float64 {
		if useMax {
			return max(a, b)
		}
		return a + b
	}
	switch {
	case into.Counter != nil && m.Counter != nil:
		into.Counter.Value = ptr(into.Counter.GetValue() + m.Counter.GetValue())
	case into.Gauge != nil && m.Gauge != nil:
		into.Gauge.Value = ptr(add(into.Gauge.GetValue(), m.Gauge.GetValue()))
	case into.Untyped != nil && m.Untyped != nil:
		into.Untyped.Value = ptr(add(into.Untyped.GetValue(), m.Untyped.GetValue()))
	case into.Histogram != nil && m.Histogram != nil:
		h, o := into.Histogram, m.Histogram
		h.SampleCount = ptr(h.GetSampleCount() + o.GetSampleCount())
		h.SampleSum = ptr(h.GetSampleSum() + o.GetSampleSum())
		// Histograms of one family share their bucket bounds.
		for i := range h.Bucket {
			if i < len(o.Bucket) {
				h.Bucket[i].CumulativeCount = ptr(h.Bucket[i].GetCumulativeCount() + o.Bucket[i].GetCumulativeCount())
			}
		}
		h.CreatedTimestamp = nil
	case into.Summary != nil && m.Summary != nil:
		s, o := into.Summary, m.Summary
		s.SampleCount = ptr(s.GetSampleCount() + o.GetSampleCount())
		s.SampleSum = ptr(s.GetSampleSum() + o.GetSampleSum())
		s.Quantile = nil // quantiles do not add up
	}
	if into.Counter != nil {
		into.Counter.CreatedTimestamp = nil
	}
}

func ptr[T any](v T) *T { return &v }

// newMetricsAccess builds the access rule of the main listener (main=true)
// or of the metrics-listen one.
func newMetricsAccess(cfg *config.Config, api *s3api.Server, log *slog.Logger, main bool) metricsAccess {
	a := metricsAccess{public: cfg.MetricsPublic, token: cfg.MetricsToken, tokenFile: cfg.MetricsTokenFile, api: api, log: log}
	if !main && a.token == "" && a.tokenFile == "" {
		// The dedicated listener is the operator's protection.
		a.public = true
	}
	return a
}
