package reshard

import (
	"math"
	"sync"
	"time"
)

// Sizing says why a dynamic reshard chose its target: the objects at the
// trigger, the objects expected when its copy and replay end, and the
// entries the target holds before the next trigger. RGW sizes for the
// objects at the trigger because it blocks writes during the copy; Cairn
// does not, so a bucket filling fast keeps growing while it reshards.
// Predicted = Objects + ArrivalsPerSec × ExpectedSec; Capacity is the larger
// of 2 × Predicted (RGW's room to double, applied to Predicted) and
// Predicted + quietRatio × ArrivalsPerSec × ExpectedSec (at the same growth,
// the next reshard comes no sooner than quietRatio reshards' time after
// this one ends); the target is a prime near Capacity / max-objs-per-shard.
// With no growth Capacity = 2 × Objects: RGW's rule exactly.
type Sizing struct {
	// Objects are the index entries at the trigger.
	Objects uint64 `json:"objects"`
	// ArrivalsPerSec is the bucket's growth (entries/s) over the checks
	// before the trigger.
	ArrivalsPerSec uint64 `json:"arrivals_per_sec"`
	// ExpectedSec is how long the reshard is expected to run; Basis says
	// from what: "last-reshard" (the seconds per entry of this bucket's
	// previous reshard on this gateway), "pace" (the pace the copy is
	// expected to hold, net of arrivals), or "" (no growth: not needed).
	ExpectedSec float64 `json:"expected_sec"`
	Basis       string  `json:"basis,omitempty"`
	// Predicted are the entries expected when the reshard ends.
	Predicted uint64 `json:"predicted_objects"`
	// Capacity are the entries the target holds before the next trigger.
	Capacity uint64 `json:"capacity"`
}

// quietRatio: a bucket growing at a steady rate spends at most about
// 1/(1+quietRatio) of its time in reshards. Each reshard copies every entry
// and costs the writers ~20 % of their rate while it runs (the governor's
// target); 2 × Predicted alone leaves a fast fill resharding a third to a
// half of the time (the 30M scale runs: a third reshard from 25M entries ran
// 37 minutes). More shards cost little here: listing reads the bucket's
// ordered view, not the shards, and an op touches one shard.
const quietRatio = 3

// maxPredictedGrowth caps Predicted at this many times Objects: a copy paced
// at or below the arrival rate (a fixed cap under a faster fill) would
// otherwise predict without bound.
const maxPredictedGrowth = 4

// Predict returns the sizing for objs entries at the trigger, growing by
// arrivals entries/s. secsPerEntry (> 0) is the measured duration per entry
// at the trigger of the bucket's previous reshard; else the reshard is
// expected to take objs / (pace − arrivals) seconds: the copy and replay
// run at pace entries/s (0: unlimited) and every arrival during them is one
// more entry to copy or log record to replay, so they gain only the
// difference.
func Predict(objs uint64, arrivals, pace, secsPerEntry float64) Sizing {
	s := Sizing{Objects: objs, Predicted: objs, Capacity: 2 * objs, ArrivalsPerSec: uint64(math.Round(max(0, arrivals)))}
	if arrivals <= 0 || objs == 0 {
		return s
	}
	limit := float64(objs) * maxPredictedGrowth
	switch {
	case secsPerEntry > 0:
		s.Basis, s.ExpectedSec = "last-reshard", secsPerEntry*float64(objs)
	case pace <= 0:
		return s // unpaced: as fast as the store goes
	case pace > arrivals:
		s.Basis, s.ExpectedSec = "pace", float64(objs)/(pace-arrivals)
	default:
		s.Basis, s.ExpectedSec = "pace", math.Inf(1)
	}
	grown := arrivals * s.ExpectedSec
	s.Predicted = uint64(min(limit, float64(objs)+grown))
	// The room is capped as Predicted is: 2 × the capped Predicted.
	s.Capacity = uint64(min(2*limit, max(2*float64(s.Predicted), float64(s.Predicted)+quietRatio*grown)))
	if math.IsInf(s.ExpectedSec, 1) {
		s.ExpectedSec = -1 // JSON has no infinity: "never ends at this pace"
	}
	return s
}

// TargetShards is the shard count for a dynamic reshard of a bucket with
// objs entries in cur shards, sized to hold capacity entries: 0 unless
// objs exceeds cur × maxPerShard (the trigger is RGW's), else a prime near
// capacity / maxPerShard (at least RGW's 2 × objs), at most maxShards (0
// when that is no growth).
func TargetShards(objs, capacity uint64, cur, maxPerShard, maxShards int) int {
	if maxPerShard <= 0 || cur <= 0 || objs <= uint64(cur)*uint64(maxPerShard) {
		return 0
	}
	capacity = max(capacity, 2*objs)
	want := int(min(capacity/uint64(maxPerShard)+1, uint64(maxShards)))
	n := nextPrime(want)
	if n > maxShards {
		n = prevPrime(maxShards)
	}
	if n <= cur {
		return 0
	}
	return n
}

// growth measures each bucket's entry count over the dynamic checks, and
// remembers how long its last reshard took per entry at the trigger.
type growth struct {
	mu      sync.Mutex
	buckets map[string]*bucketGrowth
}

type bucketGrowth struct {
	samples      []countSample // oldest first, within growthWindow
	secsPerEntry float64
	seen         bool // by the current Scan
}

type countSample struct {
	at   time.Time
	objs uint64
}

// growthWindow is how far back the arrival rate looks (at least one
// earlier check is kept, however old).
const growthWindow = 2 * time.Minute

func newGrowth() *growth { return &growth{buckets: map[string]*bucketGrowth{}} }

// observe records objs at now and returns the arrival rate (entries/s)
// since the oldest sample in the window (0: no earlier sample, or no
// growth) and the bucket's measured seconds per entry (0: none).
func (g *growth) observe(bucket string, now time.Time, objs uint64) (float64, float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.bucket(bucket)
	b.seen = true
	var rate float64
	if len(b.samples) > 0 {
		old := b.samples[0]
		if dt := now.Sub(old.at).Seconds(); dt > 0 && objs > old.objs {
			rate = float64(objs-old.objs) / dt
		}
	}
	b.samples = append(b.samples, countSample{now, objs})
	for len(b.samples) > 2 && now.Sub(b.samples[1].at) >= growthWindow {
		b.samples = b.samples[1:]
	}
	return rate, b.secsPerEntry
}

// bucket returns bucket's record, created empty; g.mu is held.
func (g *growth) bucket(name string) *bucketGrowth {
	b := g.buckets[name]
	if b == nil {
		b = &bucketGrowth{}
		g.buckets[name] = b
	}
	return b
}

// finished records a reshard's duration per entry at its trigger.
func (g *growth) finished(bucket string, objs uint64, d time.Duration) {
	if objs == 0 || d <= 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.bucket(bucket)
	b.secsPerEntry = d.Seconds() / float64(objs)
}

// sweep forgets buckets no Scan saw since the last sweep (deleted).
func (g *growth) sweep() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for name, b := range g.buckets {
		if !b.seen {
			delete(g.buckets, name)
		}
		b.seen = false
	}
}
