package push

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultFailureLogInterval is how often a failing endpoint's summary line
// is logged.
const DefaultFailureLogInterval = 30 * time.Second

// FailureLog makes push failures visible at the default level without a
// line per failure: per endpoint it logs the first failure (warn), then at
// most one summary per interval while failures go on (warn), and one line
// when a push succeeds again (info). Delivery (persistent topics) and the
// synchronous pushes of non-persistent topics share one per gateway. Safe
// for concurrent use.
type FailureLog struct {
	log      *slog.Logger
	interval time.Duration
	failing  atomic.Int64 // endpoints in the map: lets ok skip the lock

	mu  sync.Mutex
	eps map[string]*failState
}

type failState struct {
	since, lastLog  time.Time
	total, unlogged int64
	lastErr         error
	topic           string
}

// NewFailureLog logs to log; interval <= 0 means
// DefaultFailureLogInterval.
func NewFailureLog(log *slog.Logger, interval time.Duration) *FailureLog {
	if interval <= 0 {
		interval = DefaultFailureLogInterval
	}
	return &FailureLog{log: log, interval: interval, eps: map[string]*failState{}}
}

// AnyFailing is the cheap check before OK (which needs the endpoint key).
func (l *FailureLog) AnyFailing() bool { return l.failing.Load() > 0 }

// Failed records one failed push to endpoint (a URL without credentials).
func (l *FailureLog) Failed(endpoint, topic string, err error, retryable bool, now time.Time) {
	l.mu.Lock()
	s := l.eps[endpoint]
	if s == nil {
		l.eps[endpoint] = &failState{since: now, lastLog: now, total: 1, lastErr: err, topic: topic}
		l.failing.Add(1)
		l.mu.Unlock()
		l.log.Warn("notification push failed", "endpoint", endpoint, "topic", topic, "retryable", retryable, "err", err)
		return
	}
	s.total++
	s.unlogged++
	s.lastErr, s.topic = err, topic
	if now.Sub(s.lastLog) < l.interval {
		l.mu.Unlock()
		return
	}
	n, total, since := s.unlogged, s.total, s.since
	s.unlogged, s.lastLog = 0, now
	l.mu.Unlock()
	l.log.Warn("notification pushes still failing", "endpoint", endpoint, "topic", topic, "failures", n,
		"failures_total", total, "failing_for", now.Sub(since).Round(time.Second).String(), "last_err", err)
}

// OK records a successful push to endpoint.
func (l *FailureLog) OK(endpoint string, now time.Time) {
	l.mu.Lock()
	s := l.eps[endpoint]
	if s == nil {
		l.mu.Unlock()
		return
	}
	delete(l.eps, endpoint)
	l.failing.Add(-1)
	l.mu.Unlock()
	l.log.Info("notification endpoint recovered", "endpoint", endpoint, "topic", s.topic,
		"failures_total", s.total, "failed_for", now.Sub(s.since).Round(time.Millisecond).String())
}
