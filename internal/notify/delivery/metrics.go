package delivery

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are registered on Config.Registerer; never globals, so tests run
// several managers in one process. Queue gauges cover the shards this
// gateway owns: sum them by topic across gateways for the topic's total.
type metrics struct {
	entries  *prometheus.GaugeVec
	bytes    *prometheus.GaugeVec
	oldest   *prometheus.GaugeVec
	latency  *prometheus.HistogramVec
	ok       *prometheus.CounterVec
	failed   *prometheus.CounterVec
	expired  *prometheus.CounterVec
	inflight prometheus.Gauge
	owned    prometheus.Gauge
	lost     prometheus.Counter
	shardOps *prometheus.CounterVec
	// exchanges counts push exchanges (one pipelined batch or one single
	// push): events per exchange is what a push costs per event.
	exchanges prometheus.Counter
	// shardOps by op, resolved once (one per store op).
	opsList, opsRemove, opsListRemove prometheus.Counter

	// Totals mirrored for Stats (cheap to read without a registry).
	nOK, nFailed, nExpired, nLost, nInflight atomic.Int64
	maxInflight                              atomic.Int64
	nHeld, maxHeld                           atomic.Int64
}

const ns, sub = "cairn", "notify_delivery"

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		entries: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "queue_entries",
			Help: "Committed entries waiting in the topic's shards owned by this gateway."}, []string{"topic"}),
		bytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "queue_bytes",
			Help: "Bytes of committed entries in the topic's shards owned by this gateway."}, []string{"topic"}),
		oldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "queue_oldest_entry_age_seconds",
			Help: "Age of the oldest committed entry in the topic's shards owned by this gateway."}, []string{"topic"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "latency_seconds",
			Help:    "Time from an event's commit to its endpoint's acknowledgement.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 12)}, []string{"topic"}),
		ok: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "pushes_ok_total",
			Help: "Pushes the endpoint acknowledged."}, []string{"topic"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "pushes_failed_total",
			Help: "Failed pushes; retryable=false failures drop the event."}, []string{"topic", "retryable"}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "events_expired_total",
			Help: "Events removed without acknowledgement (ttl, max_retries, permanent, undecodable)."}, []string{"topic", "reason"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "pushes_in_flight",
			Help: "Pushes in flight from this gateway."}),
		owned: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "shards_owned",
			Help: "Queue shards this gateway holds a lease on."}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "leases_lost_total",
			Help: "Shard leases lost without releasing them (renewal failed or fenced op)."}),
		shardOps: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "shard_ops_total",
			Help: "Store ops delivery sent to queue shards: list, remove (acks and retry states), list_remove (both in one op)."}, []string{"op"}),
		exchanges: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "push_exchanges_total",
			Help: "Push exchanges with endpoints: one pipelined batch or one single push."}),
	}
	m.opsList = m.shardOps.WithLabelValues("list")
	m.opsRemove = m.shardOps.WithLabelValues("remove")
	m.opsListRemove = m.shardOps.WithLabelValues("list_remove")
	if reg != nil {
		reg.MustRegister(m.entries, m.bytes, m.oldest, m.latency, m.ok, m.failed, m.expired, m.inflight, m.owned, m.lost, m.shardOps, m.exchanges)
	}
	return m
}

func (m *metrics) pushStart() {
	n := m.nInflight.Add(1)
	m.inflight.Inc()
	for {
		cur := m.maxInflight.Load()
		if n <= cur || m.maxInflight.CompareAndSwap(cur, n) {
			return
		}
	}
}

func (m *metrics) held(d int64) {
	n := m.nHeld.Add(d)
	for {
		cur := m.maxHeld.Load()
		if n <= cur || m.maxHeld.CompareAndSwap(cur, n) {
			return
		}
	}
}

func (m *metrics) pushEnd() {
	m.nInflight.Add(-1)
	m.inflight.Dec()
}

// Stats is a snapshot of a manager's counters since it was created.
type Stats struct {
	PushesOK, PushesFailed, Expired, LeasesLost int64
	InFlight, MaxInFlight                       int64
	// Held is the number of listed entries held in memory over all shards
	// (at most ShardWindow per owned shard); MaxHeld its high-water mark.
	Held, MaxHeld int64
	// Owned is the number of shards leased right now.
	Owned int
	// Scans counts the scans that read the queue registry.
	Scans int64
}
