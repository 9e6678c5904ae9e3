package embedded

import "github.com/prometheus/client_golang/prometheus"

// lsmCollector exports LSMCounters as Prometheus counters: what the store
// writes (WAL, flushes, compactions) per request is read off these.
type lsmCollector struct {
	s                                       *Store
	wal, flushed, compacted, commits, syncs *prometheus.Desc
	debt, jobs, dead                        *prometheus.Desc
	blobFlushed, blobCompacted, blobBytes   *prometheus.Desc
}

// Collector returns a collector of the store's LSM write counters
// (cairn_store_*). Each scrape reads pebble's Metrics once.
func (s *Store) Collector() prometheus.Collector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("cairn_store_"+name, help, nil, nil)
	}
	return &lsmCollector{s: s,
		wal:           d("wal_bytes_total", "Bytes written to the embedded store's write-ahead log."),
		flushed:       d("flushed_bytes_total", "Bytes of sstables written by memtable flushes."),
		compacted:     d("compacted_bytes_total", "Bytes of sstables written by compactions."),
		commits:       d("synced_commits_total", "Synced batch commits."),
		syncs:         d("wal_syncs_total", "WAL fsyncs."),
		debt:          d("compaction_debt_bytes", "Bytes pebble estimates it must still compact to reach a stable shape."),
		jobs:          d("background_jobs", "Flushes and compactions running now."),
		dead:          d("dead_range_compactions_total", "Compactions asked for by scans that stepped over many deleted keys."),
		blobFlushed:   d("blob_flushed_bytes_total", "Bytes of blob files (separated values) written by memtable flushes."),
		blobCompacted: d("blob_compacted_bytes_total", "Bytes of blob files (separated values) written by compactions and blob file rewrites."),
		blobBytes:     d("blob_file_bytes", "Bytes of live blob files (separated values) on disk."),
	}
}

func (c *lsmCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.wal
	ch <- c.flushed
	ch <- c.compacted
	ch <- c.commits
	ch <- c.syncs
	ch <- c.debt
	ch <- c.jobs
	ch <- c.dead
	ch <- c.blobFlushed
	ch <- c.blobCompacted
	ch <- c.blobBytes
}

func (c *lsmCollector) Collect(ch chan<- prometheus.Metric) {
	if c.s.checkOpen() != nil {
		return
	}
	m := c.s.LSMCounters()
	st := c.s.LSMStats()
	ch <- prometheus.MustNewConstMetric(c.debt, prometheus.GaugeValue, float64(st.DebtBytes))
	ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(st.CompactionsRunning+m.FlushesBegun-m.FlushesDone))
	ch <- prometheus.MustNewConstMetric(c.wal, prometheus.CounterValue, float64(m.WALBytes))
	ch <- prometheus.MustNewConstMetric(c.flushed, prometheus.CounterValue, float64(m.FlushedBytes))
	ch <- prometheus.MustNewConstMetric(c.compacted, prometheus.CounterValue, float64(m.CompactedBytes))
	ch <- prometheus.MustNewConstMetric(c.commits, prometheus.CounterValue, float64(m.Commits))
	ch <- prometheus.MustNewConstMetric(c.syncs, prometheus.CounterValue, float64(m.WALSyncs))
	ch <- prometheus.MustNewConstMetric(c.blobFlushed, prometheus.CounterValue, float64(m.BlobFlushedBytes))
	ch <- prometheus.MustNewConstMetric(c.blobCompacted, prometheus.CounterValue, float64(m.BlobCompactedBytes+m.BlobRewrittenBytes))
	ch <- prometheus.MustNewConstMetric(c.blobBytes, prometheus.GaugeValue, float64(st.BlobFileBytes))
	asked, _ := c.s.DeadRangeCompactions()
	ch <- prometheus.MustNewConstMetric(c.dead, prometheus.CounterValue, float64(asked))
}
