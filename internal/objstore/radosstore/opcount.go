//go:build rados

package radosstore

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// opKind says why a round trip to the OSDs was made: the per-kind counts
// per pool and namespace tell which objects a request reads and writes
// (docs/design/rados-backend.md, "Round trips per S3 operation").
type opKind uint8

const (
	opRead     opKind = iota // a plain ReadOp's rados_read_op
	opReadMore               // a follow-up of a multi-round-trip read (omap pages, data past the guess)
	opWrite                  // a plain WriteOp's rados_write_op
	opStat                   // the stat of a write op with nothing to write (SetMtime only)
	opTxnLoad                // an optimistic transaction's state read (stat, xattrs, header)
	opTxnRead                // a transaction's guarded lazy read or validation stat
	opTxnWrite               // a transaction's guarded write
	opExec                   // ExecNative (a class loaded in the OSDs)
	opList                   // a ListObjects call (rados_nobjects_list_*: one or more pgls ops)
	numOpKinds
)

var opKindNames = [numOpKinds]string{"read", "read_more", "write", "stat", "txn_load", "txn_read", "txn_write", "exec", "list"}

// opCounts counts round trips per (pool, namespace, kind).
type opCounts struct {
	m sync.Map // ioKey -> *[numOpKinds]atomic.Int64
}

func (o *opCounts) add(pool, ns string, k opKind) {
	key := ioKey{pool, ns}
	v, ok := o.m.Load(key)
	if !ok {
		v, _ = o.m.LoadOrStore(key, new([numOpKinds]atomic.Int64))
	}
	v.(*[numOpKinds]atomic.Int64)[k].Add(1)
}

// OpCount is the number of round trips of one kind made on one pool and
// namespace since Open.
type OpCount struct {
	Pool, Namespace, Kind string
	N                     int64
}

// OpCounts returns the round-trip counters, sorted, without zeros.
func (s *Store) OpCounts() []OpCount {
	var out []OpCount
	s.ops.m.Range(func(k, v any) bool {
		key, a := k.(ioKey), v.(*[numOpKinds]atomic.Int64)
		for i := range a {
			if n := a[i].Load(); n > 0 {
				out = append(out, OpCount{Pool: key.pool, Namespace: key.ns, Kind: opKindNames[i], N: n})
			}
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Pool != b.Pool {
			return a.Pool < b.Pool
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Kind < b.Kind
	})
	return out
}

// Collector exports OpCounts as cairn_rados_ops_total{pool,namespace,op}
// and Counters as cairn_rados_txn_events_total{event}.
func (s *Store) Collector() prometheus.Collector {
	return &opCollector{s: s,
		ops: prometheus.NewDesc("cairn_rados_ops_total",
			"RADOS round trips (rados_read_op / rados_write_op submissions) by pool (without the prefix), namespace and kind.",
			[]string{"pool", "namespace", "op"}, nil),
		txn: prometheus.NewDesc("cairn_rados_txn_events_total",
			"Optimistic class transactions and what happened in them (txns, conflicts, state_reads, batched_ops, writes, absent_guesses, absent_misses).",
			[]string{"event"}, nil)}
}

type opCollector struct {
	s        *Store
	ops, txn *prometheus.Desc
}

func (c *opCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.ops; ch <- c.txn }

func (c *opCollector) Collect(ch chan<- prometheus.Metric) {
	for _, o := range c.s.OpCounts() {
		ch <- prometheus.MustNewConstMetric(c.ops, prometheus.CounterValue, float64(o.N), o.Pool, o.Namespace, o.Kind)
	}
	for k, v := range c.s.Counters() {
		ch <- prometheus.MustNewConstMetric(c.txn, prometheus.CounterValue, float64(v), k)
	}
}
