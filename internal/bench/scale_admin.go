package bench

// The admin half of issue 24 item 6 in driver mode (a ListObjectVersions
// walk, a manual reshard to --final-reshard shards) and the per-second LSM
// and GC series that attribute the fill's noise (item 2 of the follow-up).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/metrics"
	"sort"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cairn-s3/cairn/internal/reshard"
)

// phReshard marks the seconds of the manual final reshard.
const phReshard = 'm'

// scaleAdmin is what driver mode adds to scaleTarget.
type scaleAdmin interface {
	// listVersions reads one ListObjectVersions page; live counts the
	// current versions that are not delete markers.
	listVersions(ctx context.Context, keyMarker, vidMarker string, max int) (versions, live int, nextKey, nextVid string, err error)
	// reshardTo runs the admin reshard (`bucket reshard --num-shards n`).
	reshardTo(ctx context.Context, n int) (reshard.Result, error)
	// reshardState is `reshard status`: a state, or "none".
	reshardState(ctx context.Context) (string, error)
	lsmCounters() embedded.LSMCounters
	pace() reshard.PaceStats
	// storeDir is the store's directory (its device's counters).
	storeDir() string
}

// ScaleVersionsWalk is the full ListObjectVersions walk.
type ScaleVersionsWalk struct {
	Versions   int64   `json:"versions"`
	LiveKeys   int64   `json:"live_keys"`
	Expected   int64   `json:"expected_keys"` // LiveKeys must equal it
	Pages      int     `json:"pages"`
	Seconds    float64 `json:"seconds"`
	KeysPerSec float64 `json:"keys_per_sec"`
	Complete   bool    `json:"complete"`
}

// ScaleFinalReshard is the manual reshard after the walks.
type ScaleFinalReshard struct {
	FromShards int     `json:"from_shards"`
	ToShards   int     `json:"to_shards"`
	StartSec   float64 `json:"start_sec"`
	Seconds    float64 `json:"seconds"` // the admin call, end to end
	Copied     uint64  `json:"copied"`
	CopySec    float64 `json:"copy_sec"`
	CopyPerSec float64 `json:"copy_entries_per_sec"`
	Replayed   uint64  `json:"replayed"`
	Rounds     int     `json:"replay_rounds"`
	Tail       uint64  `json:"tail_replayed"`
	BlockMs    float64 `json:"block_ms"` // writers' switch pause
	// The admin calls around it: bucket stats and reshard status.
	StatsBeforeMs  float64 `json:"bucket_stats_before_ms"`
	StatsAfterMs   float64 `json:"bucket_stats_after_ms"`
	StatusBeforeMs float64 `json:"reshard_status_before_ms"`
	StatusAfterMs  float64 `json:"reshard_status_after_ms"`
	StatusBefore   string  `json:"reshard_status_before"`
	StatusAfter    string  `json:"reshard_status_after"`
	ObjectsBefore  uint64  `json:"objects_before"`
	ObjectsAfter   uint64  `json:"objects_after"`
	ShardsAfter    int     `json:"shards_after"`
	// Walk: a ListObjectsV2 walk of the resharded bucket (every key kept).
	Walk *ScaleWalk `json:"walk,omitempty"`
}

// ScaleLSMSeries: one entry per second of the run, beside
// fill_puts_per_sec (driver mode; counters differenced each second).
type ScaleLSMSeries struct {
	WALSyncs      []int32   `json:"wal_syncs"`
	WALSyncMeanUs []float32 `json:"wal_sync_mean_us"`
	WALMiB        []float32 `json:"wal_mib"`
	// Synced commits and their mean time in pebble's commit pipeline: in
	// all, in SyncWait (the WAL fsync, shared by a group of commits), in
	// the WAL queue, for the commit semaphore, in write stalls.
	Commits         []int32   `json:"commits"`
	CommitMeanUs    []float32 `json:"commit_mean_us"`
	SyncWaitMeanUs  []float32 `json:"sync_wait_mean_us"`
	WALQueueMeanUs  []float32 `json:"wal_queue_wait_mean_us"`
	SemWaitMeanUs   []float32 `json:"semaphore_wait_mean_us"`
	StallWaitMeanUs []float32 `json:"stall_wait_mean_us"`
	// Flushes and compactions begun in the second; *Busy: 1 when one ran
	// at some point in the second (begun, finished or running at its end).
	Flushes        []int32   `json:"flushes_begun"`
	FlushBusy      []int8    `json:"flush_busy"`
	Compactions    []int32   `json:"compactions_begun"`
	CompactionBusy []int8    `json:"compaction_busy"`
	FlushedMiB     []float32 `json:"flushed_mib"`
	CompactedMiB   []float32 `json:"compacted_mib"`
	StallMs        []float32 `json:"write_stall_ms"`
	L0Sublevels    []int32   `json:"l0_sublevels"`
	MemtableMiB    []float32 `json:"memtable_mib"`
	// Bulk loads' tables ingested in the second, and those into L0;
	// compactions running at the sample.
	IngestedMiB        []float32 `json:"ingested_mib"`
	IngestedL0MiB      []float32 `json:"ingested_l0_mib"`
	LoadTables         []int32   `json:"load_tables"`
	LoadMemOverlaps    []int32   `json:"load_memtable_overlaps"`
	CompactionsRunning []int8    `json:"compactions_running"`
	// Table lookups in pebble's file cache in the second, and misses
	// (each opened a table).
	FileCacheLookups []int32 `json:"file_cache_lookups"`
	FileCacheMisses  []int32 `json:"file_cache_misses"`
	// The process's Go GC: cycles, stop-the-world pause and GC CPU.
	GCCycles  []int32   `json:"gc_cycles"`
	GCPauseMs []float32 `json:"gc_pause_ms"`
	GCCPUMs   []float32 `json:"gc_cpu_ms"`
	// SchedLatencyUs: the mean time a goroutine waited to run (a CPU-
	// starved process shows here, e.g. pebble's WAL flusher).
	SchedLatencyUs []float32 `json:"sched_latency_mean_us"`
	// The Go runtime's memory not returned to the OS (of the RSS, the
	// rest is C: jemalloc's block cache and memtables) and its heap live
	// at the last GC, MiB.
	GoMemMiB      []float32 `json:"go_mem_mib"`
	GoLiveHeapMiB []float32 `json:"go_live_heap_mib"`
	// The running reshard's pace at the sample (entries/s), the entries
	// of copy and replay charged to it and copied in the second, the
	// governor's latency base (µs) and whether it was probing.
	PaceRate    []float32 `json:"reshard_pace"`
	PaceCharged []int32   `json:"reshard_charged"`
	PaceCopied  []int32   `json:"reshard_copied"`
	PaceBaseUs  []float32 `json:"reshard_base_us"`
	PaceProbing []int8    `json:"reshard_probing"`
	// The block device holding the store (/proc/diskstats, Linux; absent
	// elsewhere): MiB written and read, writes, their mean time, ms busy,
	// cache flushes and their mean time in the second; and the system's
	// dirty and under-writeback page cache at the sample (/proc/meminfo),
	// MiB. What a WAL fsync waits behind beyond pebble's own writes.
	DiskWriteMiB    []float32 `json:"disk_write_mib,omitempty"`
	DiskReadMiB     []float32 `json:"disk_read_mib,omitempty"`
	DiskWrites      []int32   `json:"disk_writes,omitempty"`
	DiskWriteMeanUs []float32 `json:"disk_write_mean_us,omitempty"`
	DiskBusyMs      []int32   `json:"disk_busy_ms,omitempty"`
	DiskFlushes     []int32   `json:"disk_flushes,omitempty"`
	DiskFlushMeanUs []float32 `json:"disk_flush_mean_us,omitempty"`
	DirtyMiB        []float32 `json:"dirty_mib,omitempty"`
	WritebackMiB    []float32 `json:"writeback_mib,omitempty"`
}

// ScaleNoise attributes the fill's per-second swings (fill seconds that
// touch no reshard): the Pearson correlation of PUTs/s with each series,
// and the mean rate in seconds with and without a flush, a compaction, a
// GC cycle.
type ScaleNoise struct {
	Seconds        int                `json:"seconds"`
	MeanPerSec     float64            `json:"mean_puts_per_sec"`
	P10PerSec      float64            `json:"p10_puts_per_sec"`
	Correlation    map[string]float64 `json:"correlation"`
	WithFlush      ScaleNoiseSplit    `json:"flush"`
	WithCompaction ScaleNoiseSplit    `json:"compaction"`
	WithGC         ScaleNoiseSplit    `json:"gc"`
	WALSyncMeanUs  float64            `json:"wal_sync_mean_us"`
	// Commit-weighted means over the same seconds: a commit's time in
	// pebble and in SyncWait, beside the fsync's own latency above.
	CommitMeanUs   float64 `json:"commit_mean_us"`
	SyncWaitMeanUs float64 `json:"sync_wait_mean_us"`
	WALSyncsPerPut float64 `json:"wal_syncs_per_put"`
}

// ScaleNoiseSplit: fill seconds with the activity and without it.
type ScaleNoiseSplit struct {
	SecondsWith    int     `json:"seconds_with"`
	MeanWith       float64 `json:"mean_puts_per_sec_with"`
	SecondsWithout int     `json:"seconds_without"`
	MeanWithout    float64 `json:"mean_puts_per_sec_without"`
}

// gcSampler differences the runtime's GC and scheduler metrics.
type gcSampler struct {
	s                []metrics.Sample
	cycles           uint64
	pauseSec, cpuSec float64
	// Goroutine scheduling latency: runnable to running, summed.
	schedN   uint64
	schedSec float64
	// At the last call: the runtime's memory held from the OS, and the
	// heap live at the last GC (bytes).
	mem, live uint64
}

func newGCSampler() *gcSampler {
	g := &gcSampler{s: []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/sched/pauses/total/gc:seconds"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/sched/latencies:seconds"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}}
	g.next()
	return g
}

// histSum is a runtime histogram's count and sum (bucket midpoints, the
// finite bound at an open end).
func histSum(v metrics.Value) (uint64, float64) {
	if v.Kind() != metrics.KindFloat64Histogram {
		return 0, 0
	}
	h := v.Float64Histogram()
	var n uint64
	var sum float64
	for i, c := range h.Counts {
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		x := (lo + hi) / 2
		if math.IsInf(lo, -1) {
			x = hi
		} else if math.IsInf(hi, 1) {
			x = lo
		}
		n += c
		sum += float64(c) * x
	}
	return n, sum
}

// next returns the GC cycles, pause and GC CPU seconds, and the mean
// scheduling latency (seconds), since the last call.
func (g *gcSampler) next() (int32, float64, float64, float64) {
	metrics.Read(g.s)
	g.mem, g.live = 0, 0
	if u := func(i int) uint64 {
		if g.s[i].Value.Kind() == metrics.KindUint64 {
			return g.s[i].Value.Uint64()
		}
		return 0
	}; u(4) > u(5) {
		g.mem, g.live = u(4)-u(5), u(6)
	}
	var cycles uint64
	var cpu float64
	if g.s[0].Value.Kind() == metrics.KindUint64 {
		cycles = g.s[0].Value.Uint64()
	}
	_, pause := histSum(g.s[1].Value)
	if g.s[2].Value.Kind() == metrics.KindFloat64 {
		cpu = g.s[2].Value.Float64()
	}
	sn, ss := histSum(g.s[3].Value)
	var sched float64
	if sn > g.schedN {
		sched = (ss - g.schedSec) / float64(sn-g.schedN)
	}
	dc, dp, du := int32(cycles-g.cycles), pause-g.pauseSec, cpu-g.cpuSec
	g.cycles, g.pauseSec, g.cpuSec, g.schedN, g.schedSec = cycles, pause, cpu, sn, ss
	return dc, dp, du, sched
}

// lsmSampler appends one second to the series.
type lsmSampler struct {
	a     scaleAdmin
	prev  embedded.LSMCounters
	pprev reshard.PaceStats
	gc    *gcSampler
	disk  *diskSampler
	dprev diskCounters
}

func newLSMSampler(a scaleAdmin) *lsmSampler {
	d := newDiskSampler(a.storeDir())
	return &lsmSampler{a: a, prev: a.lsmCounters(), gc: newGCSampler(), disk: d, dprev: d.read()}
}

// sampleDisk appends the device's second (zeros when a read fails);
// nothing where the device has no counters.
func (l *lsmSampler) sampleDisk(s *ScaleLSMSeries) {
	if !l.disk.ok {
		return
	}
	c, p := l.disk.read(), l.dprev
	if c.ok {
		l.dprev = c
	}
	if !c.ok || !p.ok {
		c = p // a second of zeros
	}
	const mib = 1 << 20
	d := func(cur, prev uint64) uint64 {
		if cur < prev {
			return 0
		}
		return cur - prev
	}
	mean := func(ms, n uint64) float32 {
		if n == 0 {
			return 0
		}
		return float32(float64(ms) * 1000 / float64(n))
	}
	writes, flushes := d(c.writes, p.writes), d(c.flushes, p.flushes)
	s.DiskWriteMiB = append(s.DiskWriteMiB, float32(float64(d(c.writeSectors, p.writeSectors))*512/mib))
	s.DiskReadMiB = append(s.DiskReadMiB, float32(float64(d(c.readSectors, p.readSectors))*512/mib))
	s.DiskWrites = append(s.DiskWrites, int32(min(writes, math.MaxInt32)))
	s.DiskWriteMeanUs = append(s.DiskWriteMeanUs, mean(d(c.writeMs, p.writeMs), writes))
	s.DiskBusyMs = append(s.DiskBusyMs, int32(min(d(c.ioTicksMs, p.ioTicksMs), math.MaxInt32)))
	s.DiskFlushes = append(s.DiskFlushes, int32(min(flushes, math.MaxInt32)))
	s.DiskFlushMeanUs = append(s.DiskFlushMeanUs, mean(d(c.flushMs, p.flushMs), flushes))
	s.DirtyMiB = append(s.DirtyMiB, float32(float64(c.dirtyKiB)/1024))
	s.WritebackMiB = append(s.WritebackMiB, float32(float64(c.writebackKiB)/1024))
}

func (l *lsmSampler) sample(s *ScaleLSMSeries) {
	c := l.a.lsmCounters()
	p := l.prev
	l.prev = c
	syncs := c.WALSyncs - p.WALSyncs
	var mean float32
	if syncs > 0 {
		mean = float32(float64(c.WALSyncNanos-p.WALSyncNanos) / float64(syncs) / 1000)
	}
	busy := func(begun, done, pbegun, pdone int64) int8 {
		if begun != pbegun || done != pdone || begun > done {
			return 1
		}
		return 0
	}
	const mib = 1 << 20
	s.WALSyncs = append(s.WALSyncs, int32(syncs))
	s.WALSyncMeanUs = append(s.WALSyncMeanUs, mean)
	s.WALMiB = append(s.WALMiB, float32(float64(c.WALBytes-p.WALBytes)/mib))
	commits := c.Commits - p.Commits
	perCommit := func(cur, prev int64) float32 {
		if commits == 0 {
			return 0
		}
		return float32(float64(cur-prev) / float64(commits) / 1000)
	}
	s.Commits = append(s.Commits, int32(commits))
	s.CommitMeanUs = append(s.CommitMeanUs, perCommit(c.CommitNanos, p.CommitNanos))
	s.SyncWaitMeanUs = append(s.SyncWaitMeanUs, perCommit(c.SyncWaitNanos, p.SyncWaitNanos))
	s.WALQueueMeanUs = append(s.WALQueueMeanUs, perCommit(c.WALQueueNanos, p.WALQueueNanos))
	s.SemWaitMeanUs = append(s.SemWaitMeanUs, perCommit(c.SemWaitNanos, p.SemWaitNanos))
	s.StallWaitMeanUs = append(s.StallWaitMeanUs, perCommit(c.StallWaitNanos, p.StallWaitNanos))
	s.Flushes = append(s.Flushes, int32(c.FlushesBegun-p.FlushesBegun))
	s.FlushBusy = append(s.FlushBusy, busy(c.FlushesBegun, c.FlushesDone, p.FlushesBegun, p.FlushesDone))
	s.Compactions = append(s.Compactions, int32(c.CompactionsBegun-p.CompactionsBegun))
	s.CompactionBusy = append(s.CompactionBusy, busy(c.CompactionsBegun, c.CompactionsDone, p.CompactionsBegun, p.CompactionsDone))
	s.FlushedMiB = append(s.FlushedMiB, float32(float64(c.FlushedBytes-p.FlushedBytes)/mib))
	s.CompactedMiB = append(s.CompactedMiB, float32(float64(c.CompactedBytes-p.CompactedBytes)/mib))
	s.StallMs = append(s.StallMs, float32(float64(c.WriteStallNanos-p.WriteStallNanos)/1e6))
	s.L0Sublevels = append(s.L0Sublevels, int32(c.L0Sublevels))
	s.MemtableMiB = append(s.MemtableMiB, float32(float64(c.MemtableBytes)/mib))
	s.IngestedMiB = append(s.IngestedMiB, float32(float64(c.IngestedBytes-p.IngestedBytes)/mib))
	s.IngestedL0MiB = append(s.IngestedL0MiB, float32(float64(c.IngestedL0Bytes-p.IngestedL0Bytes)/mib))
	s.LoadTables = append(s.LoadTables, int32(c.LoadTables-p.LoadTables))
	s.LoadMemOverlaps = append(s.LoadMemOverlaps, int32(c.LoadMemtableOverlaps-p.LoadMemtableOverlaps))
	s.CompactionsRunning = append(s.CompactionsRunning, int8(min(c.CompactionsRunning, 127)))
	miss := c.FileCacheMisses - p.FileCacheMisses
	s.FileCacheLookups = append(s.FileCacheLookups, int32(min(c.FileCacheHits-p.FileCacheHits+miss, math.MaxInt32)))
	s.FileCacheMisses = append(s.FileCacheMisses, int32(min(miss, math.MaxInt32)))
	pc, pp := l.a.pace(), l.pprev
	l.pprev = pc
	delta := func(cur, prev uint64) int32 {
		if cur < prev || pc.Running != pp.Running { // a reshard started or ended
			return int32(min(cur, math.MaxInt32))
		}
		return int32(min(cur-prev, math.MaxInt32))
	}
	probing := int8(0)
	if pc.Probing {
		probing = 1
	}
	s.PaceRate = append(s.PaceRate, float32(pc.Rate))
	s.PaceCharged = append(s.PaceCharged, delta(pc.Charged, pp.Charged))
	s.PaceCopied = append(s.PaceCopied, delta(pc.Copied, pp.Copied))
	s.PaceBaseUs = append(s.PaceBaseUs, float32(pc.Base.Microseconds()))
	s.PaceProbing = append(s.PaceProbing, probing)
	cy, pause, cpu, sched := l.gc.next()
	s.SchedLatencyUs = append(s.SchedLatencyUs, float32(sched*1e6))
	s.GCCycles = append(s.GCCycles, cy)
	s.GCPauseMs = append(s.GCPauseMs, float32(pause*1000))
	s.GCCPUMs = append(s.GCCPUMs, float32(cpu*1000))
	s.GoMemMiB = append(s.GoMemMiB, float32(float64(l.gc.mem)/mib))
	s.GoLiveHeapMiB = append(s.GoLiveHeapMiB, float32(float64(l.gc.live)/mib))
	l.sampleDisk(s)
}

// fillNoise computes the attribution over fill seconds (interior to a
// fill phase, as reshardWindows counts them) that touch no reshard.
func fillNoise(res *ScaleResult) *ScaleNoise {
	s := res.LSMPerSec
	if s == nil {
		return nil
	}
	ph := res.PhasePerSec
	var idx []int
	for i := range res.FillPerSec {
		if i >= len(s.WALSyncs) || i >= len(ph) || ph[i] != phFill || i == 0 || ph[i-1] != phFill || i+1 >= len(ph) || ph[i+1] != phFill {
			continue
		}
		in := false
		for _, ev := range res.ReshardList {
			end := ev.EndSec
			if end == 0 {
				end = math.Inf(1)
			}
			in = in || (float64(i) < end && float64(i+1) > ev.StartSec)
		}
		if !in {
			idx = append(idx, i)
		}
	}
	n := &ScaleNoise{Seconds: len(idx), Correlation: map[string]float64{}}
	if len(idx) < 2 {
		return n
	}
	fill := make([]float64, len(idx))
	var puts, syncs, syncNs, commits, commitUs, waitUs float64
	for k, i := range idx {
		if i < len(s.Commits) {
			commits += float64(s.Commits[i])
			commitUs += float64(s.Commits[i]) * float64(s.CommitMeanUs[i])
			waitUs += float64(s.Commits[i]) * float64(s.SyncWaitMeanUs[i])
		}
		fill[k] = float64(res.FillPerSec[i])
		puts += fill[k]
		syncs += float64(s.WALSyncs[i])
		syncNs += float64(s.WALSyncs[i]) * float64(s.WALSyncMeanUs[i]) * 1000
	}
	n.MeanPerSec = puts / float64(len(idx))
	sorted := append([]float64(nil), fill...)
	sort.Float64s(sorted)
	n.P10PerSec = sorted[len(sorted)/10]
	if syncs > 0 {
		n.WALSyncMeanUs = syncNs / syncs / 1000
	}
	if commits > 0 {
		n.CommitMeanUs, n.SyncWaitMeanUs = commitUs/commits, waitUs/commits
	}
	if puts > 0 {
		n.WALSyncsPerPut = syncs / puts
	}
	series := map[string]func(i int) float64{
		"wal_syncs":              func(i int) float64 { return float64(s.WALSyncs[i]) },
		"wal_sync_mean_us":       func(i int) float64 { return float64(s.WALSyncMeanUs[i]) },
		"wal_mib":                func(i int) float64 { return float64(s.WALMiB[i]) },
		"commit_mean_us":         func(i int) float64 { return float64(s.CommitMeanUs[i]) },
		"sync_wait_mean_us":      func(i int) float64 { return float64(s.SyncWaitMeanUs[i]) },
		"wal_queue_wait_mean_us": func(i int) float64 { return float64(s.WALQueueMeanUs[i]) },
		"semaphore_wait_mean_us": func(i int) float64 { return float64(s.SemWaitMeanUs[i]) },
		"stall_wait_mean_us":     func(i int) float64 { return float64(s.StallWaitMeanUs[i]) },
		"flush_busy":             func(i int) float64 { return float64(s.FlushBusy[i]) },
		"compaction_busy":        func(i int) float64 { return float64(s.CompactionBusy[i]) },
		"flushed_mib":            func(i int) float64 { return float64(s.FlushedMiB[i]) },
		"compacted_mib":          func(i int) float64 { return float64(s.CompactedMiB[i]) },
		"write_stall_ms":         func(i int) float64 { return float64(s.StallMs[i]) },
		"l0_sublevels":           func(i int) float64 { return float64(s.L0Sublevels[i]) },
		"ingested_l0_mib":        func(i int) float64 { return float64(s.IngestedL0MiB[i]) },
		"gc_cycles":              func(i int) float64 { return float64(s.GCCycles[i]) },
		"gc_pause_ms":            func(i int) float64 { return float64(s.GCPauseMs[i]) },
		"gc_cpu_ms":              func(i int) float64 { return float64(s.GCCPUMs[i]) },
		"sched_latency_mean_us":  func(i int) float64 { return float64(s.SchedLatencyUs[i]) },
	}
	for name, f := range series {
		x := make([]float64, len(idx))
		for k, i := range idx {
			x[k] = f(i)
		}
		if c, ok := pearson(fill, x); ok {
			n.Correlation[name] = math.Round(c*1000) / 1000
		}
	}
	split := func(on func(i int) bool) ScaleNoiseSplit {
		var sp ScaleNoiseSplit
		var w, wo float64
		for k, i := range idx {
			if on(i) {
				sp.SecondsWith++
				w += fill[k]
			} else {
				sp.SecondsWithout++
				wo += fill[k]
			}
		}
		if sp.SecondsWith > 0 {
			sp.MeanWith = w / float64(sp.SecondsWith)
		}
		if sp.SecondsWithout > 0 {
			sp.MeanWithout = wo / float64(sp.SecondsWithout)
		}
		return sp
	}
	n.WithFlush = split(func(i int) bool { return s.FlushBusy[i] != 0 })
	n.WithCompaction = split(func(i int) bool { return s.CompactionBusy[i] != 0 })
	n.WithGC = split(func(i int) bool { return s.GCCycles[i] != 0 })
	return n
}

// pearson is the correlation of x and y; false when either is constant.
func pearson(x, y []float64) (float64, bool) {
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(len(x))
	my /= float64(len(y))
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0, false
	}
	return sxy / math.Sqrt(sxx*syy), true
}

// walkVersions lists every version of the bucket, 1000 per page.
func (r *scaleRun) walkVersions(ctx context.Context, a scaleAdmin) error {
	r.phase.Store(phList)
	defer r.phase.Store(phOther)
	w := &ScaleVersionsWalk{Expected: int64(r.putNext.Load() - r.delNext.Load())}
	t0 := time.Now()
	km, vm := "", ""
	for ctx.Err() == nil {
		nv, live, nk, nvid, err := a.listVersions(ctx, km, vm, 1000)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return err
		}
		w.Versions += int64(nv)
		w.LiveKeys += int64(live)
		w.Pages++
		if nk == "" {
			w.Complete = true
			break
		}
		km, vm = nk, nvid
		if w.Pages%1000 == 0 {
			r.logf("versions walk: %d versions in %.0f s", w.Versions, time.Since(t0).Seconds())
		}
	}
	w.Seconds = time.Since(t0).Seconds()
	if w.Seconds > 0 {
		w.KeysPerSec = float64(w.Versions) / w.Seconds
	}
	r.logf("versions walk: %d versions, %d live keys (%d expected) in %d pages, %.1f s (%.0f keys/s)", w.Versions, w.LiveKeys, w.Expected, w.Pages, w.Seconds, w.KeysPerSec)
	r.mu.Lock()
	r.res.WalkVersions = w
	r.mu.Unlock()
	if err := r.publish(); err != nil {
		r.logf("write report: %v", err)
	}
	if ctx.Err() == nil && w.LiveKeys != w.Expected {
		return fmt.Errorf("versions walk saw %d live keys, %d expected", w.LiveKeys, w.Expected)
	}
	return ctx.Err()
}

// finalReshard waits for any dynamic reshard to end, then reshards the
// bucket to n shards as the admin command does, timing stats and status
// calls around it, and walks the result to check every key was kept.
func (r *scaleRun) finalReshard(ctx context.Context, a scaleAdmin, n int) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for { // the manager refuses a second reshard of the bucket
		_, _, busy, err := r.t.stats(ctx)
		if err != nil {
			return err
		}
		if !busy {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	r.phase.Store(phReshard)
	defer r.phase.Store(phOther)
	f := &ScaleFinalReshard{ToShards: n}
	timed := func(fn func() error) (float64, error) {
		t := time.Now()
		err := fn()
		return float64(time.Since(t).Microseconds()) / 1000, err
	}
	var err error
	if f.StatsBeforeMs, err = timed(func() (err error) { f.FromShards, f.ObjectsBefore, _, err = r.t.stats(ctx); return }); err != nil {
		return err
	}
	if f.StatusBeforeMs, err = timed(func() (err error) { f.StatusBefore, err = a.reshardState(ctx); return }); err != nil {
		return err
	}
	r.mu.Lock()
	r.finalStart = time.Now()
	r.mu.Unlock()
	r.manual.Store(true)
	f.StartSec = r.sec()
	r.logf("final reshard: %d → %d shards at %d objects", f.FromShards, n, f.ObjectsBefore)
	var res reshard.Result
	for {
		t := time.Now()
		res, err = a.reshardTo(ctx, n)
		f.Seconds = time.Since(t).Seconds()
		if !errors.Is(err, driver.ErrReshardInProgress) || ctx.Err() != nil {
			break
		}
		// A dynamic reshard began between the check and the call.
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	r.manual.Store(false)
	if err != nil {
		return fmt.Errorf("final reshard: %w", err)
	}
	f.Copied, f.CopySec, f.Replayed, f.Rounds, f.Tail = res.Copied, res.CopyTime.Seconds(), res.Replayed, res.ReplayRounds, res.Tail
	f.BlockMs = float64(res.Block.Microseconds()) / 1000
	if res.CopyTime > 0 {
		f.CopyPerSec = float64(res.Copied) / res.CopyTime.Seconds()
	}
	if f.StatsAfterMs, err = timed(func() (err error) { f.ShardsAfter, f.ObjectsAfter, _, err = r.t.stats(ctx); return }); err != nil {
		return err
	}
	if f.StatusAfterMs, err = timed(func() (err error) { f.StatusAfter, err = a.reshardState(ctx); return }); err != nil {
		return err
	}
	r.logf("final reshard: %d → %d in %.1f s: copied %d (%.0f/s) in %.1f s, replayed %d in %d rounds + tail %d, block %.1f ms; stats %.1f/%.1f ms, status %.1f/%.1f ms",
		f.FromShards, f.ShardsAfter, f.Seconds, f.Copied, f.CopyPerSec, f.CopySec, f.Replayed, f.Rounds, f.Tail, f.BlockMs, f.StatsBeforeMs, f.StatsAfterMs, f.StatusBeforeMs, f.StatusAfterMs)
	r.mu.Lock()
	r.res.FinalReshard = f
	r.mu.Unlock()
	w, err := r.walkKeys(ctx, "after final reshard")
	r.mu.Lock()
	f.Walk = w
	r.mu.Unlock()
	if perr := r.publish(); perr != nil {
		r.logf("write report: %v", perr)
	}
	if err == nil && w.Complete && w.Keys != w.Expected {
		return fmt.Errorf("after the final reshard the walk saw %d keys, %d expected", w.Keys, w.Expected)
	}
	return err
}

func (s *scaleDriver) listVersions(ctx context.Context, keyMarker, vidMarker string, max int) (int, int, string, string, error) {
	lr, err := s.d.ListObjectVersions(ctx, driver.ListVersionsInput{Bucket: s.bucket, KeyMarker: keyMarker, VersionIDMarker: vidMarker, MaxKeys: max})
	if err != nil {
		return 0, 0, "", "", err
	}
	live := 0
	for _, v := range lr.Versions {
		if v.IsLatest && !v.DeleteMarker {
			live++
		}
	}
	if !lr.IsTruncated {
		return len(lr.Versions), live, "", "", nil
	}
	return len(lr.Versions), live, lr.NextKeyMarker, lr.NextVersionIDMarker, nil
}

func (s *scaleDriver) reshardTo(ctx context.Context, n int) (reshard.Result, error) {
	return s.m.Reshard(ctx, s.bucket, n)
}

func (s *scaleDriver) reshardState(ctx context.Context) (string, error) {
	st, err := s.m.Status(ctx, s.bucket)
	if errors.Is(err, driver.ErrNoSuchReshard) {
		return "none", nil
	}
	return st.State, err
}

func (s *scaleDriver) lsmCounters() embedded.LSMCounters { return s.st.LSMCounters() }

func (s *scaleDriver) pace() reshard.PaceStats { return s.m.Pace() }

func (s *scaleDriver) storeDir() string { return s.dir }

var _ scaleAdmin = (*scaleDriver)(nil)
