package embedded

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	dto "github.com/prometheus/client_model/go"
)

// PoolDiskUsage estimates the bytes pool name occupies in the LSM: pebble's
// estimate over the pool's meta (M), part (O) and view (V) key ranges, so it counts
// the sstables that hold its keys, not the memtable, and not blob files
// (objects of BlobThreshold or more). Benchmarks use it to split index
// bytes from data bytes.
func (s *Store) PoolDiskUsage(name string) (uint64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	s.poolsMu.RLock()
	p, ok := s.pools[name]
	s.poolsMu.RUnlock()
	if !ok {
		return 0, fmt.Errorf("embedded: pool %q: not found", name)
	}
	var total uint64
	for _, kind := range []byte{kMeta, kObj, kView} {
		lo := u64([]byte{kind}, p.id)
		hi := u64([]byte{kind}, p.id+1)
		n, err := s.db.EstimateDiskUsage(lo, hi)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// LSMStats are the LSM's totals since Open (write amplification) and now
// (sizes).
type LSMStats struct {
	// DiskBytes is everything pebble keeps on disk (tables, WAL, manifests).
	DiskBytes uint64 `json:"disk_bytes"`
	// TablesBytes is the live sstables, BottomBytes those of the lowest
	// non-empty level; SpaceAmp = TablesBytes / BottomBytes (1 when all
	// data sits in one level: no overwritten or deleted versions kept).
	TablesBytes uint64  `json:"tables_bytes"`
	BottomBytes uint64  `json:"bottom_level_bytes"`
	SpaceAmp    float64 `json:"space_amp"`
	// WriteAmp is bytes written to WAL, flushes and compactions divided by
	// bytes written to the WAL (pebble's Total().WriteAmp(), blob files
	// counted once).
	WriteAmp float64 `json:"write_amp"`
	// L0Sublevels: read amplification in L0 (compaction debt shows here).
	L0Sublevels int32  `json:"l0_sublevels"`
	Compactions int64  `json:"compactions"`
	DebtBytes   uint64 `json:"compaction_debt_bytes"`
	// CompactionsRunning: compactions in progress now.
	CompactionsRunning int64 `json:"compactions_running"`
	// IngestedBytes per level: where bulk loads' tables landed (a table
	// above the lowest level is compacted again; in L0 it adds read
	// amplification until it is).
	IngestedBytes []uint64 `json:"ingested_bytes_by_level,omitempty"`
	// BlobFileBytes: live blob files of value separation (on disk);
	// BlobValueBytes the values they hold, BlobLiveValueBytes those still
	// referenced: BlobValueBytes / BlobLiveValueBytes is their space
	// amplification (garbage a blob file rewrite would reclaim).
	BlobFiles          uint64 `json:"blob_files,omitempty"`
	BlobFileBytes      uint64 `json:"blob_file_bytes,omitempty"`
	BlobValueBytes     uint64 `json:"blob_value_bytes,omitempty"`
	BlobLiveValueBytes uint64 `json:"blob_live_value_bytes,omitempty"`
}

// LSMStats reports pebble's metrics in the terms benchmarks publish.
func (s *Store) LSMStats() LSMStats {
	m := s.db.Metrics()
	var out LSMStats
	out.DiskBytes = m.DiskSpaceUsage()
	for l := range m.Levels {
		if b := m.Levels[l].TableBytesIngested; b > 0 {
			if out.IngestedBytes == nil {
				out.IngestedBytes = make([]uint64, len(m.Levels))
			}
			out.IngestedBytes[l] = b
		}
		sz := uint64(m.Levels[l].TablesSize)
		out.TablesBytes += sz
		if sz > 0 {
			out.BottomBytes = sz
		}
	}
	if out.BottomBytes > 0 {
		out.SpaceAmp = float64(out.TablesBytes) / float64(out.BottomBytes)
	}
	tot := m.Total()
	if tot.TableBytesIn > 0 {
		// pebble's WriteAmp counts a flush's blob bytes twice (as flushed
		// and as compacted) and blob file rewrites not at all.
		w := tot.TableBytesFlushed + tot.TableBytesCompacted + tot.BlobBytesCompacted + s.blobRewritten.Load()
		out.WriteAmp = float64(w) / float64(tot.TableBytesIn)
	}
	out.L0Sublevels = m.Levels[0].Sublevels
	out.Compactions = m.Compact.Count
	out.DebtBytes = m.Compact.EstimatedDebt
	out.CompactionsRunning = m.Compact.NumInProgress
	out.BlobFiles, out.BlobFileBytes = m.BlobFiles.LiveCount, m.BlobFiles.LiveSize
	out.BlobValueBytes, out.BlobLiveValueBytes = m.BlobFiles.ValueSize, m.BlobFiles.ReferencedValueSize
	return out
}

// PointGets reports how many pebble point reads operations made since
// Open (meta, omap values, xattrs, chunks): benchmarks divide it by their
// op count; most on the write path look for keys that do not exist.
func (s *Store) PointGets() uint64 { return s.pointGets.Load() }

// LSMCounters are pebble's activity since Open as cumulative counters, cheap
// enough to read once a second (benchmarks difference them to attribute a
// workload's per-second rate to WAL syncs, flushes and compactions).
type LSMCounters struct {
	// WALSyncs and WALSyncNanos: WAL fsyncs and their total latency.
	WALSyncs, WALSyncNanos uint64
	// WALBytes written to the WAL.
	WALBytes uint64
	// Commits: synced writes of ops; the other fields sum where they
	// spent their time in pebble's commit pipeline (BatchCommitStats):
	// in all, waiting for the commit semaphore, for the WAL queue, in
	// memtable or L0 write stalls, and in SyncWait for the WAL fsync.
	Commits, CommitNanos, SemWaitNanos, WALQueueNanos, StallWaitNanos, SyncWaitNanos int64
	// Flushes and compactions begun and finished (pebble's EventListener;
	// begun minus finished is what runs now).
	FlushesBegun, FlushesDone         int64
	CompactionsBegun, CompactionsDone int64
	// FlushedBytes and CompactedBytes: sstables written; BlobFlushedBytes,
	// BlobCompactedBytes and BlobRewrittenBytes: blob files written (value
	// separation) by flushes, by compactions (values moved out of old
	// sstables or out of too many blob files) and by rewrites of blob
	// files that hold garbage.
	FlushedBytes, CompactedBytes                             uint64
	BlobFlushedBytes, BlobCompactedBytes, BlobRewrittenBytes uint64
	WriteStalls, WriteStallNanos                             int64
	MemtableBytes, L0Files, L0Sublevels                      int64
	// IngestedBytes: tables bulk loads added, IngestedL0Bytes those that
	// landed in L0 (they overlapped data above the lowest level).
	IngestedBytes, IngestedL0Bytes uint64
	// LoadTables: tables omap loads ingested; LoadMemtableOverlaps: those
	// whose keys overlapped a memtable's.
	LoadTables, LoadMemtableOverlaps uint64
	// CompactionsRunning: compactions in progress now.
	CompactionsRunning int64
	// FileCacheHits/Misses: table lookups in pebble's file cache (a miss
	// opens the table).
	FileCacheHits, FileCacheMisses int64
}

// LSMCounters reads the counters (one pebble Metrics call).
func (s *Store) LSMCounters() LSMCounters {
	m := s.db.Metrics()
	out := LSMCounters{
		FlushesBegun: s.flushBegun.Load(), FlushesDone: s.flushDone.Load(),
		CompactionsBegun: s.compBegun.Load(), CompactionsDone: s.compDone.Load(),
		WriteStalls: s.stalls.Load(), WriteStallNanos: s.stallNanos.Load(),
		MemtableBytes: int64(m.MemTable.Size), L0Files: m.Levels[0].TablesCount, L0Sublevels: int64(m.Levels[0].Sublevels),
	}
	if h := m.LogWriter.FsyncLatency; h != nil {
		var d dto.Metric
		if h.Write(&d) == nil && d.Histogram != nil {
			// pebble observes time.Duration values: nanoseconds.
			out.WALSyncs, out.WALSyncNanos = d.Histogram.GetSampleCount(), uint64(d.Histogram.GetSampleSum())
		}
	}
	// Per level, not Total(): that adds the WAL's bytes to the flushed ones.
	for l := range m.Levels {
		out.FlushedBytes += m.Levels[l].TableBytesFlushed
		out.CompactedBytes += m.Levels[l].TableBytesCompacted
		out.BlobFlushedBytes += m.Levels[l].BlobBytesFlushed
		out.BlobCompactedBytes += m.Levels[l].BlobBytesCompacted
		out.IngestedBytes += m.Levels[l].TableBytesIngested
	}
	out.IngestedL0Bytes = m.Levels[0].TableBytesIngested
	out.LoadTables, out.LoadMemtableOverlaps = s.loadTables.Load(), s.loadMemOverlaps.Load()
	out.CompactionsRunning = m.Compact.NumInProgress
	out.FileCacheHits, out.FileCacheMisses = m.FileCache.Hits, m.FileCache.Misses
	// pebble counts a flush's blob bytes as compacted too.
	out.BlobCompactedBytes -= min(out.BlobFlushedBytes, out.BlobCompactedBytes)
	out.BlobRewrittenBytes = s.blobRewritten.Load()
	out.WALBytes = m.WAL.BytesWritten
	out.Commits, out.CommitNanos, out.SemWaitNanos = s.commits.Load(), s.commitNanos.Load(), s.semNanos.Load()
	out.WALQueueNanos, out.StallWaitNanos, out.SyncWaitNanos = s.walQueueNanos.Load(), s.stallWaitNanos.Load(), s.syncWaitNanos.Load()
	return out
}

// countCommit adds one synced commit's stats (a few atomic adds: cheap
// beside the fsync it waited for).
func (s *Store) countCommit(c pebble.BatchCommitStats) {
	s.commits.Add(1)
	s.commitNanos.Add(int64(c.TotalDuration))
	s.semNanos.Add(int64(c.SemaphoreWaitDuration))
	s.walQueueNanos.Add(int64(c.WALQueueWaitDuration))
	s.stallWaitNanos.Add(int64(c.MemTableWriteStallDuration + c.L0ReadAmpWriteStallDuration + c.WALRotationDuration))
	s.syncWaitNanos.Add(int64(c.CommitWaitDuration))
}
