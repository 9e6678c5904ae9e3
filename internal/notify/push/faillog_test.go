package push

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func logLines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	b.Reset()
	return out
}

// First failure at warn, then one summary per interval, a line on
// recovery; endpoints are independent.
func TestFailLogRateLimited(t *testing.T) {
	var b bytes.Buffer
	l := NewFailureLog(slog.New(slog.NewJSONHandler(&b, nil)), 10*time.Second)
	t0 := time.Unix(1000, 0)
	boom := errors.New("connection refused")
	if l.AnyFailing() {
		t.Fatal("failing before any failure")
	}
	l.Failed("http://a", "t1", boom, true, t0)
	if got := logLines(t, &b); len(got) != 1 || got[0]["level"] != "WARN" || got[0]["msg"] != "notification push failed" ||
		got[0]["endpoint"] != "http://a" || got[0]["err"] != "connection refused" {
		t.Fatalf("first failure: %v", got)
	}
	for i := 1; i <= 50; i++ { // 50 failures within the interval: silent
		l.Failed("http://a", "t1", boom, true, t0.Add(time.Duration(i)*100*time.Millisecond))
	}
	if got := logLines(t, &b); len(got) != 0 {
		t.Fatalf("logged within the interval: %v", got)
	}
	l.Failed("http://b", "t2", boom, false, t0.Add(6*time.Second)) // another endpoint: its own first line
	if got := logLines(t, &b); len(got) != 1 || got[0]["endpoint"] != "http://b" {
		t.Fatalf("second endpoint: %v", got)
	}
	l.Failed("http://a", "t1", boom, true, t0.Add(11*time.Second))
	got := logLines(t, &b)
	if len(got) != 1 || got[0]["level"] != "WARN" || got[0]["msg"] != "notification pushes still failing" ||
		got[0]["failures"] != 51.0 || got[0]["failures_total"] != 52.0 || got[0]["failing_for"] != "11s" {
		t.Fatalf("summary: %v", got)
	}
	l.OK("http://a", t0.Add(12*time.Second))
	l.OK("http://a", t0.Add(13*time.Second)) // already recovered: silent
	got = logLines(t, &b)
	if len(got) != 1 || got[0]["level"] != "INFO" || got[0]["msg"] != "notification endpoint recovered" || got[0]["failures_total"] != 52.0 {
		t.Fatalf("recovery: %v", got)
	}
	if !l.AnyFailing() {
		t.Fatal("b still fails")
	}
	l.OK("http://b", t0.Add(14*time.Second))
	if l.AnyFailing() {
		t.Fatal("failing after every endpoint recovered")
	}
}
