package bench

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
)

// TestScaleSmoke is the scale benchmark scaled down for CI: three rounds
// through dynamic reshards (thresholds lowered), RWLD, listing and aging;
// the report on disk must carry every field issue 24 names.
func TestScaleSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a bucket")
	}
	out := filepath.Join(t.TempDir(), "scale.json")
	res, err := RunScale(context.Background(), ScaleConfig{
		Dir: t.TempDir(), Targets: []int64{3000, 6000, 12000}, Clients: 8, InitialShards: 2, MaxObjsPerShard: 1000,
		CheckInterval: 50 * time.Millisecond, RWLD: time.Second, ListRepeats: 2, Aging: 2 * time.Second, Out: out,
		CopyRateAdaptive: true, Walk: true, VersionsWalk: true, FinalReshard: 40,
		InlineMax: driver.DefaultInline, // as the command runs it
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done || len(res.Rounds) != 3 || res.Objects == 0 || res.Reshards == 0 || res.MaxRSSBytes == 0 {
		t.Fatalf("done %v, rounds %d, objects %d, reshards %d, rss %d", res.Done, len(res.Rounds), res.Objects, res.Reshards, res.MaxRSSBytes)
	}
	// The store's tables are mapped (mmap-reads): file pages in the RSS,
	// counted apart from the process's own memory.
	if last := res.Rounds[len(res.Rounds)-1]; res.MaxRSSAnonBytes == 0 || res.MaxRSSAnonBytes > res.MaxRSSBytes || last.FileBytes == 0 || last.FileBytes >= last.RSSBytes {
		t.Errorf("max RSS %d, of it anon %d; last round RSS %d, file pages %d", res.MaxRSSBytes, res.MaxRSSAnonBytes, last.RSSBytes, last.FileBytes)
	}
	for i, rd := range res.Rounds {
		// A fast machine's RWLD phase (net +15 % of its ops are new keys)
		// can take the bucket past the next round's target: that round's
		// fill then has nothing to write. The first round always fills.
		emptyFill := i > 0 && rd.FillPut.Ops == 0 && rd.FillPerSec == 0
		// The count comes from bucket stats, which may read the generation
		// a reshard has just closed (a write or so behind); the walk below
		// is the exact check.
		if !rd.Complete || rd.Objects < uint64(rd.Target)*99/100 || rd.Shards < 2 || (rd.FillPerSec <= 0 && !emptyFill) || rd.RWLDPerSec <= 0 ||
			rd.List.StartMs <= 0 || rd.List.PrefixMs <= 0 || rd.List.ContinuationMs <= 0 || rd.Disk.TotalBytes == 0 || rd.RSSBytes == 0 {
			t.Fatalf("round %+v", rd)
		}
		for _, op := range []string{"get", "put", "list", "delete"} {
			if rd.RWLD[op].Ops == 0 {
				t.Fatalf("round %d: no %s in the RWLD phase: %+v", rd.Target, op, rd.RWLD)
			}
		}
	}
	if last := res.Rounds[2]; last.Shards <= 2 {
		t.Fatalf("no reshard grew the bucket: %d shards", last.Shards)
	}
	if a := res.Aging; a == nil || a.FirstPerSec <= 0 || a.Ops["overwrite"].Ops == 0 || a.Ops["head"].Ops == 0 || res.AgedRatio <= 0 {
		t.Fatalf("aging %+v, ratio %v", res.Aging, res.AgedRatio)
	}
	// Every key written and not deleted is listed, once, after three
	// reshards under load.
	if w := res.Walk; w == nil || !w.Complete || w.Keys != w.Expected || w.Expected < 12000 || w.Pages < 2 {
		t.Fatalf("walk %+v", res.Walk)
	}
	// The versions listing sees every live key; the manual reshard changes
	// the shard count, keeps every key and is not counted as a dynamic one.
	if v := res.WalkVersions; v == nil || !v.Complete || v.LiveKeys != v.Expected || v.Versions != v.Expected || v.Pages < 2 || v.KeysPerSec <= 0 {
		t.Fatalf("versions walk %+v", res.WalkVersions)
	}
	f := res.FinalReshard
	if f == nil || f.FromShards == 40 || f.ShardsAfter != 40 || f.Copied < uint64(res.Walk.Expected) || f.CopyPerSec <= 0 || f.Seconds <= 0 ||
		f.StatsBeforeMs <= 0 || f.StatsAfterMs <= 0 || f.StatusBefore == "" || f.StatusAfter == "" || f.ObjectsAfter == 0 {
		t.Fatalf("final reshard %+v", f)
	}
	if w := f.Walk; w == nil || !w.Complete || w.Keys != w.Expected || w.Expected != res.Walk.Expected {
		t.Fatalf("walk after the final reshard %+v (before: %+v)", f.Walk, res.Walk)
	}
	for _, e := range res.ReshardList {
		if e.StartSec >= f.StartSec {
			t.Fatalf("the manual reshard was recorded as a dynamic one: %+v", e)
		}
	}
	// One LSM sample per second of the timeline, and WAL syncs seen.
	s, n := res.LSMPerSec, len(res.FillPerSec)
	if s == nil || n == 0 {
		t.Fatalf("no per-second LSM series (%d seconds)", n)
	}
	lens := []int{len(s.WALSyncs), len(s.WALSyncMeanUs), len(s.WALMiB), len(s.Commits), len(s.CommitMeanUs), len(s.SyncWaitMeanUs),
		len(s.WALQueueMeanUs), len(s.SemWaitMeanUs), len(s.StallWaitMeanUs), len(s.Flushes), len(s.FlushBusy), len(s.Compactions), len(s.CompactionBusy),
		len(s.FlushedMiB), len(s.CompactedMiB), len(s.StallMs), len(s.L0Sublevels), len(s.MemtableMiB), len(s.IngestedMiB), len(s.IngestedL0MiB), len(s.LoadTables), len(s.LoadMemOverlaps), len(s.CompactionsRunning), len(s.GCCycles), len(s.GCPauseMs), len(s.GCCPUMs), len(s.SchedLatencyUs), len(s.GoMemMiB), len(s.GoLiveHeapMiB), len(res.RSSPerSec),
		len(s.FileCacheLookups), len(s.FileCacheMisses), len(s.PaceRate), len(s.PaceCharged), len(s.PaceCopied), len(s.PaceBaseUs), len(s.PaceProbing)}
	if newDiskSampler(t.TempDir()).ok { // a block device under the test's directory (not tmpfs)
		lens = append(lens, len(s.DiskWriteMiB), len(s.DiskReadMiB), len(s.DiskWrites), len(s.DiskWriteMeanUs), len(s.DiskBusyMs),
			len(s.DiskFlushes), len(s.DiskFlushMeanUs), len(s.DirtyMiB), len(s.WritebackMiB))
	}
	var syncs int64
	for _, v := range s.WALSyncs {
		syncs += int64(v)
	}
	for _, l := range lens {
		if l != n {
			t.Fatalf("series lengths %v, want %d", lens, n)
		}
	}
	var commits int64
	for _, v := range s.Commits {
		commits += int64(v)
	}
	if syncs == 0 || commits == 0 {
		t.Fatalf("%d WAL syncs, %d commits in %d seconds", syncs, commits, n)
	}
	// The memory series: RSS each second, the Go runtime's share of it
	// and its live heap within that (0 until a GC has marked it).
	var maxLive float32
	for i := range n {
		if rss, mem, live := float32(res.RSSPerSec[i]), s.GoMemMiB[i], s.GoLiveHeapMiB[i]; rss <= 0 || mem <= 0 || live < 0 || live > mem {
			t.Fatalf("second %d: RSS %v MiB, Go memory %v MiB, live heap %v MiB", i, rss, mem, live)
		}
		maxLive = max(maxLive, s.GoLiveHeapMiB[i])
	}
	if maxLive == 0 {
		t.Fatal("no live heap in any second")
	}
	if res.FillNoise == nil {
		t.Fatal("no fill noise analysis")
	}
	var top map[string]any
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"walk_versions", "final_reshard", "lsm_per_sec", "fill_noise", "objects", "reshards", "reshard_worst_window_ratio", "rwld_ratio_final_vs_1m", "list_page_ratio_final_vs_1m", "aged_ratio", "max_rss_bytes"} {
		if _, ok := top[k]; !ok {
			t.Errorf("report lacks %q", k)
		}
	}
}

// A run cut short still writes a report with the rounds it finished.
func TestScaleCutShort(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a bucket")
	}
	out := filepath.Join(t.TempDir(), "scale.json")
	ctx, cancel := context.WithCancel(context.Background())
	cfg := ScaleConfig{Dir: t.TempDir(), Targets: []int64{500, 1 << 40}, Clients: 4, RWLD: 200 * time.Millisecond, ListRepeats: 1, Out: out}
	// Cancel once the first round is on disk.
	go func() {
		for ctx.Err() == nil {
			if b, err := os.ReadFile(out); err == nil && strings.Contains(string(b), `"complete": true`) {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res, err := RunScale(ctx, cfg)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if res.Done || len(res.Rounds) != 2 || !res.Rounds[0].Complete || res.Rounds[1].Complete || res.Note == "" {
		t.Fatalf("done %v, rounds %+v, note %q", res.Done, res.Rounds, res.Note)
	}
	var back ScaleResult
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &back); err != nil || len(back.Rounds) != 2 || back.Objects < 500 {
		t.Fatalf("report on disk: %v, %d rounds, %d objects", err, len(back.Rounds), back.Objects)
	}
}

// reshardWindows: a reshard whose fill seconds drop to half shows 0.5;
// seconds outside fills (RWLD) and the partial first and last second of a
// fill are not counted, and windows away from reshards give the noise
// floor.
func TestScaleReshardWindows(t *testing.T) {
	res := &ScaleResult{}
	phase := []byte{}
	add := func(n int, ph byte, v int32) {
		for i := 0; i < n; i++ {
			res.FillPerSec = append(res.FillPerSec, v)
			phase = append(phase, ph)
		}
	}
	add(100, phFill, 1000)
	add(30, phRWLD, 0) // not fill: skipped, the fill seconds are stitched
	add(50, phFill, 1000)
	add(20, phFill, 500) // seconds 180..199: the reshard
	add(80, phFill, 1000)
	res.PhasePerSec = string(phase)
	res.ReshardList = []ScaleReshard{{FromShards: 11, ToShards: 23, StartSec: 180, EndSec: 200}, {FromShards: 23, StartSec: 250}}
	reshardWindows(res)
	if r := res.ReshardList[0].WorstWindowRatio; math.Abs(r-0.5) > 1e-9 || res.ReshardWorstWindowRatio != 0.5 || res.ReshardWorstWindowRatio1s != 0.5 {
		t.Fatalf("worst %v / %v / %v, want 0.5", r, res.ReshardWorstWindowRatio, res.ReshardWorstWindowRatio1s)
	}
	if res.OutsideWorstWindowRatio < 0.99 || res.OutsideWorstWindowRatio > 1 {
		// Windows after the dip see a median of 1000 and 1000/s.
		t.Fatalf("outside %v", res.OutsideWorstWindowRatio)
	}
	if res.ReshardList[1].Windows == 0 {
		t.Fatal("a running reshard (no end) touches the windows after its start")
	}
}

// Seconds that alternate 2000 and 500 (a flush every other second) hold
// 1250/s over any 10 s: like against like that is 1.0, while the median
// second (2000, or 500: the upper middle of an even count) calls the same
// steady fill a dip or a surge.
func TestScaleReshardWindowsBimodal(t *testing.T) {
	res := &ScaleResult{}
	for i := 0; i < 200; i++ {
		v := int32(2000)
		if i%2 == 1 {
			v = 500
		}
		res.FillPerSec = append(res.FillPerSec, v)
	}
	res.PhasePerSec = strings.Repeat(string(rune(phFill)), 200)
	res.ReshardList = []ScaleReshard{{FromShards: 11, ToShards: 23, StartSec: 120, EndSec: 150}}
	reshardWindows(res)
	if r := res.ReshardWorstWindowRatio; math.Abs(r-1) > 1e-9 {
		t.Fatalf("like-for-like worst window %v, want 1", r)
	}
	if r := res.ReshardWorstWindowRatio1s; math.Abs(r-1) < 0.1 {
		t.Fatalf("median-second reference %v: the bimodal seconds should move it", r)
	}
}

func TestScaleRatios(t *testing.T) {
	rounds := []ScaleRound{
		{Target: 500_000, Complete: true, RWLDPerSec: 9000, List: ScaleList{StartMs: 1, PrefixMs: 1, ContinuationMs: 1}},
		{Target: 1_000_000, Complete: true, RWLDPerSec: 8000, List: ScaleList{StartMs: 10, PrefixMs: 10, ContinuationMs: 10}},
		{Target: 30_000_000, Complete: true, RWLDPerSec: 6000, List: ScaleList{StartMs: 15, PrefixMs: 25, ContinuationMs: 12}},
		{Target: 40_000_000, Complete: false, RWLDPerSec: 1},
	}
	rw, list := roundRatios(rounds)
	if rw != 0.75 || list != 2.5 {
		t.Fatalf("ratios %v %v", rw, list)
	}
	if rw, list := roundRatios(rounds[:2]); rw != 0 || list != 0 {
		t.Fatalf("ratios without a round past 1M: %v %v", rw, list)
	}
	f, l := agedRates([]int64{600, 600, 600, 600, 600, 300, 300, 300, 300, 300})
	if f != 10 || l != 5 {
		t.Fatalf("aged rates %v %v", f, l)
	}
}

// FillFor ends the rounds and the run goes on to age what it filled.
func TestScaleFillFor(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a bucket")
	}
	res, err := RunScale(context.Background(), ScaleConfig{Dir: t.TempDir(), Targets: []int64{300, 1 << 40}, Clients: 4,
		RWLD: 100 * time.Millisecond, ListRepeats: 1, FillFor: 2 * time.Second, Aging: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done || len(res.Rounds) != 2 || res.Rounds[1].Complete || res.Aging == nil || len(res.Aging.PerMinute) == 0 || !strings.Contains(res.Note, "fill-for") {
		t.Fatalf("done %v, rounds %d, aging %+v, note %q", res.Done, len(res.Rounds), res.Aging, res.Note)
	}
}

// fillNoise: fill seconds with a flush running are told apart from the
// rest, and the rate's correlation with the flush series is negative;
// seconds outside the fill phase and inside a reshard do not count.
func TestScaleFillNoise(t *testing.T) {
	res := &ScaleResult{LSMPerSec: &ScaleLSMSeries{}}
	s := res.LSMPerSec
	var ph []byte
	for i := 0; i < 200; i++ {
		p, fill, flush := byte(phFill), int32(10000), int8(0)
		switch {
		case i >= 150: // RWLD: not fill
			p, fill = phRWLD, 1
		case i%10 == 3:
			fill, flush = 4000, 1
		case i >= 100 && i < 120: // inside the reshard: left out
			fill = 1
		}
		ph = append(ph, p)
		res.FillPerSec = append(res.FillPerSec, fill)
		s.WALSyncs = append(s.WALSyncs, fill/10)
		s.WALSyncMeanUs = append(s.WALSyncMeanUs, 500)
		s.WALMiB = append(s.WALMiB, 1)
		s.Commits = append(s.Commits, fill)
		s.CommitMeanUs = append(s.CommitMeanUs, 800)
		s.SyncWaitMeanUs = append(s.SyncWaitMeanUs, 600)
		s.WALQueueMeanUs = append(s.WALQueueMeanUs, 0)
		s.SemWaitMeanUs = append(s.SemWaitMeanUs, 0)
		s.StallWaitMeanUs = append(s.StallWaitMeanUs, 0)
		s.FlushBusy = append(s.FlushBusy, flush)
		s.Flushes = append(s.Flushes, int32(flush))
		s.CompactionBusy = append(s.CompactionBusy, 0)
		s.Compactions = append(s.Compactions, 0)
		s.FlushedMiB = append(s.FlushedMiB, float32(flush)*64)
		s.CompactedMiB = append(s.CompactedMiB, 0)
		s.StallMs = append(s.StallMs, 0)
		s.L0Sublevels = append(s.L0Sublevels, 1)
		s.MemtableMiB = append(s.MemtableMiB, 1)
		s.IngestedMiB = append(s.IngestedMiB, 0)
		s.IngestedL0MiB = append(s.IngestedL0MiB, 0)
		s.LoadTables = append(s.LoadTables, 0)
		s.LoadMemOverlaps = append(s.LoadMemOverlaps, 0)
		s.CompactionsRunning = append(s.CompactionsRunning, 0)
		s.GCCycles = append(s.GCCycles, int32(i%2))
		s.GCPauseMs = append(s.GCPauseMs, 0)
		s.GCCPUMs = append(s.GCCPUMs, 0)
		s.SchedLatencyUs = append(s.SchedLatencyUs, 0)
	}
	res.PhasePerSec = string(ph)
	res.ReshardList = []ScaleReshard{{StartSec: 100, EndSec: 120}}
	n := fillNoise(res)
	// Fill seconds 1..148 (the first and last of the phase are partial),
	// less the 20 the reshard touches (100..119 overlap [100, 120)).
	if n.Seconds != 148-20 {
		t.Fatalf("seconds %d", n.Seconds)
	}
	if n.WithFlush.MeanWith != 4000 || n.WithFlush.MeanWithout != 10000 || n.WithFlush.SecondsWith == 0 {
		t.Fatalf("flush split %+v", n.WithFlush)
	}
	if c := n.Correlation["flush_busy"]; c > -0.99 {
		t.Fatalf("flush correlation %v, want -1", c)
	}
	if _, ok := n.Correlation["compaction_busy"]; ok {
		t.Fatal("a constant series has no correlation")
	}
	if n.CommitMeanUs != 800 || n.SyncWaitMeanUs != 600 {
		t.Fatalf("commit %v µs, sync wait %v µs", n.CommitMeanUs, n.SyncWaitMeanUs)
	}
	if n.WALSyncMeanUs != 500 || math.Abs(n.WALSyncsPerPut-0.1) > 1e-9 {
		t.Fatalf("WAL sync mean %v µs, %v per PUT", n.WALSyncMeanUs, n.WALSyncsPerPut)
	}
}

// The driver-mode steps are refused in HTTP mode rather than skipped.
func TestScaleValidateDriverOnly(t *testing.T) {
	for _, c := range []ScaleConfig{
		{Endpoint: "http://127.0.0.1:1", AccessKey: "a", SecretKey: "s", VersionsWalk: true},
		{Endpoint: "http://127.0.0.1:1", AccessKey: "a", SecretKey: "s", FinalReshard: 7},
		{FinalReshard: -1},
	} {
		if err := c.EnsureDefaults().Validate(); err == nil {
			t.Errorf("%+v: accepted", c)
		}
	}
	c := ScaleConfig{VersionsWalk: true, FinalReshard: 7}
	if err := c.EnsureDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestScaleResume: a run that kept its store (RWLD deleted the oldest keys
// and wrote new ones) is reopened by --resume, which finds the live key
// range exactly, walks the bucket (every live key), ages it and counts the
// GC records before and after.
func TestScaleResume(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a bucket")
	}
	parent := t.TempDir()
	first, err := RunScale(context.Background(), ScaleConfig{
		Dir: parent, Keep: true, Targets: []int64{2000}, Clients: 4, RWLD: 500 * time.Millisecond, ListRepeats: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, "cairn-bench-scale-*"))
	if len(dirs) != 1 {
		t.Fatalf("kept stores: %v", dirs)
	}
	filled := first.Rounds[0].Objects
	out := filepath.Join(t.TempDir(), "resumed.json")
	res, err := RunScale(context.Background(), ScaleConfig{
		Resume: dirs[0], Clients: 4, Aging: 2 * time.Second, Walk: true, Out: out, ResumeRWLD: 500 * time.Millisecond, ResumeWarmup: 300 * time.Millisecond, ListRepeats: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	rs := res.Resumed
	if rs == nil || len(res.Rounds) != 0 || !res.Done {
		t.Fatalf("resumed %+v, rounds %d, done %v", rs, len(res.Rounds), res.Done)
	}
	if rs.WarmupPerSec <= 0 || rs.RWLDPerSec <= 0 {
		t.Errorf("warm-up %.0f ops/s, RWLD %.0f ops/s: want both measured", rs.WarmupPerSec, rs.RWLDPerSec)
	}
	// RWLD deleted keys 0.. oldest first and put new ones after the fill,
	// so the range starts above 0, ends above the fill and holds exactly
	// the bucket's objects.
	if rs.RWLDPerSec <= 0 || rs.RWLD["get"].Ops == 0 || rs.List == nil || rs.List.StartMs <= 0 || rs.Disk == nil {
		t.Fatalf("resumed RWLD %+v, list %+v", rs.RWLD, rs.List)
	}
	live := rs.Objects
	if rs.DelNext == 0 || rs.PutNext <= filled || rs.PutNext-rs.DelNext != live {
		t.Fatalf("live range [%d, %d) for %d objects (filled %d)", rs.DelNext, rs.PutNext, live, filled)
	}
	if w := res.Walk; w == nil || !w.Complete || w.Keys != w.Expected || w.Expected == 0 {
		t.Fatalf("walk %+v, want %d keys", res.Walk, live)
	}
	a := res.Aging
	if a == nil || a.Ops["overwrite"].Ops == 0 || a.GCRecordsStart == nil || a.GCRecordsEnd == nil {
		t.Fatalf("aging %+v", a)
	}
	// The aging overwrote keys: their replaced data is recorded for GC
	// (collected only after gc-min-wait, longer than this run).
	if *a.GCRecordsEnd == 0 {
		t.Fatalf("GC records %d → %d after %d overwrites", *a.GCRecordsStart, *a.GCRecordsEnd, a.Ops["overwrite"].Ops)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "db")); err != nil {
		t.Fatalf("a resumed store is kept: %v", err)
	}
}
