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
		CopyRateAdaptive: true, Walk: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done || len(res.Rounds) != 3 || res.Objects == 0 || res.Reshards == 0 || res.MaxRSSBytes == 0 {
		t.Fatalf("done %v, rounds %d, objects %d, reshards %d, rss %d", res.Done, len(res.Rounds), res.Objects, res.Reshards, res.MaxRSSBytes)
	}
	for _, rd := range res.Rounds {
		// The count comes from bucket stats, which may read the generation
		// a reshard has just closed (a write or so behind); the walk below
		// is the exact check.
		if !rd.Complete || rd.Objects < uint64(rd.Target)*99/100 || rd.Shards < 2 || rd.FillPerSec <= 0 || rd.RWLDPerSec <= 0 ||
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
	var top map[string]any
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"objects", "reshards", "reshard_worst_window_ratio", "rwld_ratio_final_vs_1m", "list_page_ratio_final_vs_1m", "aged_ratio", "max_rss_bytes"} {
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
