package service

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-s3/cairn/internal/notify/push"
)

// FailureLog is the per-endpoint failure log of this service's pushes;
// the server hands it to delivery so both report an endpoint together.
func (s *Service) FailureLog() *push.FailureLog { return s.opts.FailureLog }

// QueueCollector exports every persistent topic's queue as gauges read at
// scrape time from the same accounting `cairn admin topic stats` reads
// (Service.TopicStats), so the two always agree: no refresh interval, no
// per-gateway share. (The delivery manager's cairn_notify_delivery_queue_*
// gauges are the shards one gateway owns, refreshed per scan.)
func (s *Service) QueueCollector() prometheus.Collector { return queueCollector{s} }

type queueCollector struct{ s *Service }

var (
	queueEntriesDesc = prometheus.NewDesc("cairn_notify_queue_entries",
		"Committed events waiting in the topic's queue (all shards), as topic stats reports.", []string{"topic"}, nil)
	queueBytesDesc = prometheus.NewDesc("cairn_notify_queue_bytes",
		"Bytes of committed events in the topic's queue (topic stats' size).", []string{"topic"}, nil)
	queueOldestDesc = prometheus.NewDesc("cairn_notify_queue_oldest_entry_age_seconds",
		"Age of the topic's oldest committed event; 0 when the queue is empty.", []string{"topic"}, nil)
	queueReservedDesc = prometheus.NewDesc("cairn_notify_queue_reservations",
		"Reservations of writes in flight (topic stats' reservations; pooled ones excluded).", []string{"topic"}, nil)
	queueCapacityDesc = prometheus.NewDesc("cairn_notify_queue_capacity_bytes",
		"Capacity of the topic's queue, summed over its shards.", []string{"topic"}, nil)
	// Group commit: events / ops is the mean batch (docs/bench/notify.md).
	commitOpsDesc = prometheus.NewDesc("cairn_notify_queue_commit_ops_total",
		"Store ops that committed events to queue shards through this gateway (group commits).", nil, nil)
	commitEventsDesc = prometheus.NewDesc("cairn_notify_queue_commit_events_total",
		"Events those ops committed.", nil, nil)
	reserveOpsDesc = prometheus.NewDesc("cairn_notify_queue_reserve_ops_total",
		"Reservations that took a store op on the write's path (no pooled reservation was ready).", nil, nil)
)

func (c queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queueEntriesDesc, queueBytesDesc, queueOldestDesc, queueReservedDesc, queueCapacityDesc,
		commitOpsDesc, commitEventsDesc, reserveOpsDesc} {
		ch <- d
	}
}

// scrapeTimeout bounds one scrape's reads of topics and queue shards.
const scrapeTimeout = 10 * time.Second

func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	ops, events := c.s.queues.GroupStats()
	ch <- prometheus.MustNewConstMetric(commitOpsDesc, prometheus.CounterValue, float64(ops))
	ch <- prometheus.MustNewConstMetric(commitEventsDesc, prometheus.CounterValue, float64(events))
	ch <- prometheus.MustNewConstMetric(reserveOpsDesc, prometheus.CounterValue, float64(c.s.queues.ReserveOps()))
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	marker := ""
	for {
		ts, next, err := c.s.ListTopics(ctx, marker, 1000)
		if err != nil {
			c.s.log.Warn("queue metrics: topics unreadable", "err", err)
			return
		}
		for _, t := range ts {
			if !t.Persistent() {
				continue
			}
			st, err := c.s.queues.Stats(ctx, c.s.queueName(t), t.NumShards)
			if err != nil {
				continue // removed meanwhile, or unreadable: no sample rather than a wrong one
			}
			name := t.Name
			ch <- prometheus.MustNewConstMetric(queueEntriesDesc, prometheus.GaugeValue, float64(st.Entries), name)
			ch <- prometheus.MustNewConstMetric(queueBytesDesc, prometheus.GaugeValue, float64(st.Bytes), name)
			ch <- prometheus.MustNewConstMetric(queueOldestDesc, prometheus.GaugeValue, st.OldestAge.Seconds(), name)
			ch <- prometheus.MustNewConstMetric(queueReservedDesc, prometheus.GaugeValue, float64(st.Reservations), name)
			ch <- prometheus.MustNewConstMetric(queueCapacityDesc, prometheus.GaugeValue, float64(st.Capacity), name)
		}
		if next == "" {
			return
		}
		marker = next
	}
}
