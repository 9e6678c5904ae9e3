package embedded

import (
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/prometheus/client_golang/prometheus"
)

// LSMCounters counts what the scale bench attributes its noise to: a
// synced write's WAL sync, a flush begun and finished and its bytes.
func TestLSMCounters(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := s.LSMCounters()
	ioc := mustIO(t, s, "p")
	mustOp(t, ioc, "a", objstore.NewWriteOp().WriteFull([]byte("hello")))
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	c := s.LSMCounters()
	if c.WALSyncs <= before.WALSyncs || c.WALSyncNanos <= before.WALSyncNanos || c.WALBytes <= before.WALBytes {
		t.Fatalf("WAL: before %+v, after %+v", before, c)
	}
	if c.FlushesBegun != before.FlushesBegun+1 || c.FlushesDone != before.FlushesDone+1 || c.FlushedBytes <= before.FlushedBytes {
		t.Fatalf("flush: before %+v, after %+v", before, c)
	}
	if c.Commits <= before.Commits || c.CommitNanos <= before.CommitNanos || c.SyncWaitNanos > c.CommitNanos {
		t.Fatalf("commits: before %+v, after %+v", before, c)
	}
	if c.L0Files == 0 {
		t.Fatalf("no L0 table after a flush: %+v", c)
	}
}

// The collector exports the counters under the names the notify bench reads.
func TestLSMCollector(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collector())
	mustOp(t, mustIO(t, s, "p"), "a", objstore.NewWriteOp().WriteFull([]byte("hello")))
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		got[mf.GetName()] = mf.GetMetric()[0].GetCounter().GetValue()
	}
	c := s.LSMCounters()
	for name, want := range map[string]uint64{"cairn_store_wal_bytes_total": c.WALBytes, "cairn_store_flushed_bytes_total": c.FlushedBytes,
		"cairn_store_synced_commits_total": uint64(c.Commits), "cairn_store_wal_syncs_total": c.WALSyncs} {
		if v, ok := got[name]; !ok || v == 0 || uint64(v) != want {
			t.Errorf("%s = %v (present %v), want %d", name, v, ok, want)
		}
	}
	for _, name := range []string{"cairn_store_compacted_bytes_total", "cairn_store_compaction_debt_bytes", "cairn_store_background_jobs"} {
		if _, ok := got[name]; !ok {
			t.Errorf("%s missing", name)
		}
	}
}
