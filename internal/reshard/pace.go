package reshard

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// pacer spreads the engine's background work, the copy and the replay
// rounds before the close, at a rate in entries per second. Copy and
// replay share one pacer so that together they stay under the cap and a
// replay backlog cannot burst at full speed after the copy.
type pacer struct {
	mu   sync.Mutex
	rate float64 // entries/s; 0: unlimited
	next time.Time
	// charged counts the entries charged (progress for Manager.Pace).
	charged atomic.Uint64
}

func newPacer(rate float64) *pacer { return &pacer{rate: rate} }

func (p *pacer) setRate(r float64) {
	p.mu.Lock()
	p.rate = r
	p.mu.Unlock()
}

func (p *pacer) current() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rate
}

// wait charges n entries of work just done and sleeps until the rate
// allows more. Unused time is not saved up: no bursts after a pause.
func (p *pacer) wait(ctx context.Context, n int) error {
	if p == nil || n <= 0 {
		return nil
	}
	p.charged.Add(uint64(n))
	p.mu.Lock()
	if p.rate <= 0 {
		p.mu.Unlock()
		return nil
	}
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	p.next = p.next.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	d := p.next.Sub(now)
	p.mu.Unlock()
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// governor adapts a pacer's rate to foreground latency (AIMD): each tick
// it compares the latency signal with a base; above cut×base the rate is
// cut by a third, below grow×base it grows by a twentieth of the range
// (a hundredth against a fixed base: fixedGrowSteps), in between it holds. With a closed-loop client, throughput falls as
// latency rises, so holding latency within cut×base keeps foreground
// throughput near 1/cut of what it was.
//
// The base is the foreground level of the minute before the reshard
// (Manager's fgTracker) when known, else the lowest signal seen during
// the reshard with a loose bound (2× + 2 ms: the minimum under load is a
// poor reference). The signal is Config.ForegroundStats' mean write
// latency (or Config.Foreground), else the latency of the copy's own full
// batches, which share the commit pipeline with foreground writes.
type governor struct {
	p      *pacer
	lo, hi float64
	sample func() (time.Duration, sampleKind)
	// fixed: base came from the minute before; cut/grow are its ratios.
	fixed     bool
	cut, grow float64
	// growSteps: calm, the rate climbs by 1/growSteps of its range a tick.
	growSteps int
	mu        sync.Mutex
	sum       time.Duration
	n         int
	base      time.Duration
	cuts      int
	minRate   float64
	observed  bool
	// arrivals: foreground index writes per second (EWMA over ticks),
	// when the signal counts them; the rate never drops below
	// convergeFactor times it, so the copy and the replay outrun what
	// the bucket's writers add behind them and the reshard ends.
	arrivals float64
	// rampTicks: over its first rampTicks ticks the governor's ceiling
	// (and so its floor) climbs from lo to hi, so that the reshard's
	// load comes in gradually (0: at once); ticks counts them.
	rampTicks, ticks int
	// floorNow: the floor applied at the last tick. With a ramp, the floor
	// climbs at most at the ramp's slope: when the writers speed up (a
	// mixed phase gives way to a fill) twice their rate arrives as a slope
	// too, not as a step (it falls at once).
	floorNow float64
	// Probes (fixed base only, rebase set): see probe.
	rebase        bool
	probeEvery    int     // ticks between periodic probes (0: none)
	probeLeft     int     // ticks left in the running probe
	sinceProbe    int     // ticks since the last probe ended
	probeArrivals float64 // arrivals when the last probe ended
	probeSlow     float64 // slowArrivals then
	// slowArrivals: arrivals over ~5 s, what a change of phase is judged
	// on: a second's dip of a fill (compactions, the copy's own cost)
	// halved the 1 s average and was taken for a mixed phase.
	slowArrivals float64
	seeded       bool
	saved        float64       // the rate before the running probe
	psum         time.Duration // latency summed over the probe's ticks
	pn           int
	base0        time.Duration // the minute before the reshard
	first        time.Duration // foreground latency in the reshard's first probe
	probes       int           // probes that measured
	probed       bool          // a probe has started
}

// rampIn is how long a reshard's pace takes to reach its ceiling. At once,
// the copy started at twice the arrival rate within a second of the
// reshard's start, and the first 10 s fill windows of the 30M run's last
// reshard fell to 0.77 of the minute before; later windows, measured
// against a minute that already carried the reshard, held 0.9 and more
// (docs/bench/scale.md, "Stop 41").
const rampIn = 2 * time.Minute

// convergeFactor is how many times the foreground write rate the copy and
// replay keep at least. Below the arrival rate they never finish: the scale
// run filled a bucket at ~4,500 PUT/s while the governor held a reshard from
// 47 shards at its 5,000 entries/s floor, and the copy (which also meets the
// keys written ahead of its cursor) and then the replay of every logged write
// ran for over an hour while the shards grew to three times their limit.
const convergeFactor = 2

// Probes re-measure the baseline when the workload changes phase. The
// minute before a reshard says what foreground latency was then; when a
// fill gives way to a mixed phase (or back), the writes' latency moves by
// far more than the copy's share, and against the old minute the mixed
// phase's slower writes look congested (the pace sits at its floor) and
// the fill's faster ones look calm (it climbs to its cap). So when the
// write rate has moved by phaseFactor since the last probe (at most every
// probeMinGap ticks) the governor holds the pace at its lower bound for
// probeTicks ticks and takes the mean latency of the later ones: the
// level the copy cannot go below. The base becomes the minute before ×
// (this probe ÷ the reshard's first, taken in its first ticks, when the
// ramp holds the pace low anyway): it follows the phase, and a copy that
// costs the foreground latency still gets cut against it. A probe runs
// below the arrival floor for its moment.
//
// Not periodically (probeEvery, for A/B runs): a 1.4 s probe every 15 s
// let the base climb from 1.4 to 2.1–3.2 ms within five minutes of a 10M
// run's reshard while the bucket's growth explains 1.15–1.2× of that: a
// second's mean write latency swings ±30 % in a steady fill, and what the
// copy leaves behind (flushes, compactions, the replay) outlasts a short
// probe, so the copy's own cost became the base and the fill's worst
// 10 s window fell to 0.75 (docs/bench/scale.md, "Stop 45"). Within a
// phase the bucket's growth moves the level slowly; against a base that
// lags it the pace sits at its floor, which still outruns the writers.
const (
	probeTicks  = 25  // 5 s at the lower bound
	probeSkip   = 5   // ticks of it the pace takes to settle
	probeMinGap = 25  // ticks between the end of a probe and the next
	phaseFactor = 2.0 // a change of the write rate that is a new phase
)

type sampleKind int

const (
	sampleNone sampleKind = iota // no signal this tick: hold
	sampleIdle                   // no foreground writes: nothing to protect
	sampleLatency
)

// fixedGrowSteps: against a fixed base the rate climbs by this fraction of
// its range a tick (the whole range in 20 s). The copy's cost reaches the
// writers' latency a second or more after its pace (chunks, the replay,
// compactions), so at a twentieth a tick (the range in 4 s) the pace of a
// 30M run's reshard swung 12,000 → 36,000 entries/s within a second of
// calm and the fill fell to 6,400 PUT/s behind it (docs/bench/scale.md,
// "Stop 46").
const fixedGrowSteps = 100

const (
	governorTick  = 200 * time.Millisecond
	governorSlack = 2 * time.Millisecond
	// fixedSlack absorbs timer and scheduling noise at sub-ms latencies.
	// It was 300 µs, set when a fill's writes took a few hundred; at
	// 30M-run latencies (a 1.6 ms base) it let the fill's latency reach
	// 1.26× before the rate stopped climbing and 1.34× before a cut, a
	// fill at 0.75–0.8 of its rate by design against a 1.15 target.
	fixedSlack = 100 * time.Microsecond
)

func newGovernor(p *pacer, lo, hi float64, fg func() time.Duration) *governor {
	g := &governor{p: p, lo: lo, hi: hi, minRate: hi, growSteps: 20}
	if fg != nil {
		g.sample = func() (time.Duration, sampleKind) {
			if d := fg(); d > 0 {
				return d, sampleLatency
			}
			return 0, sampleNone
		}
	} else {
		g.sample = g.ownBatches
	}
	return g
}

// newBaselineGovernor paces against base, the foreground write latency
// before the reshard, with stats the cumulative (count, summed latency)
// of foreground writes. The rate starts at lo and climbs while foreground
// latency stays within grow×base.
func newBaselineGovernor(p *pacer, lo, hi float64, stats func() (uint64, time.Duration), base time.Duration, cut float64) *governor {
	g := &governor{p: p, lo: lo, hi: hi, minRate: lo, fixed: true, base: base, base0: base, observed: true, cut: cut, grow: 1 + (cut-1)/2, growSteps: fixedGrowSteps}
	n0, s0 := stats()
	g.sample = func() (time.Duration, sampleKind) {
		n, s := stats()
		dn, ds := n-n0, s-s0
		n0, s0 = n, s
		// Sampled once per governorTick (run's ticker).
		g.mu.Lock()
		x := float64(dn) / governorTick.Seconds()
		if !g.seeded { // the averages start at the first tick's rate
			g.arrivals, g.slowArrivals, g.seeded = x, x, true
		}
		g.arrivals += 0.2 * (x - g.arrivals)
		g.slowArrivals += 0.04 * (x - g.slowArrivals)
		g.mu.Unlock()
		if dn == 0 {
			return 0, sampleIdle
		}
		return ds / time.Duration(dn), sampleLatency
	}
	p.setRate(lo)
	return g
}

// setHi moves the rate's ceiling: a loaded copy's entries cost the
// foreground less than copy ops do (bucketindex.CopyLoad).
func (g *governor) setHi(hi float64) {
	g.mu.Lock()
	g.hi = hi
	g.mu.Unlock()
}

func (g *governor) ceiling() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.hi
}

// observe records one copy batch's latency (the fallback signal).
func (g *governor) observe(d time.Duration) {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.sum += d
	g.n++
	g.mu.Unlock()
}

func (g *governor) ownBatches() (time.Duration, sampleKind) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		return 0, sampleNone
	}
	d := g.sum / time.Duration(g.n)
	g.sum, g.n = 0, 0
	return d, sampleLatency
}

// probe runs the probes' part of a tick (see probeTicks): consumed, the
// tick belongs to a probe and the rate is left as it set it; hold, the
// write rate has moved by a third since the last probe (and a probe for a
// new phase may not start yet, or the move is not one): the base may be
// stale, so the rate may fall but not climb.
func (g *governor) probe(d time.Duration, kind sampleKind) (consumed, hold bool) {
	if !g.fixed || !g.rebase {
		return false, false
	}
	g.mu.Lock()
	if g.probeLeft > 0 {
		g.probeLeft--
		if g.probeLeft < probeTicks-probeSkip && kind == sampleLatency {
			g.psum += d
			g.pn++
		}
		if g.probeLeft > 0 {
			g.mu.Unlock()
			return true, false
		}
		if m := g.psum / time.Duration(max(g.pn, 1)); m > 0 {
			if g.first == 0 {
				g.first = m
			}
			g.base = time.Duration(float64(g.base0) * float64(m) / float64(g.first))
			g.probes++
		}
		g.psum, g.pn, g.sinceProbe, g.probeArrivals, g.probeSlow = 0, 0, 0, g.arrivals, g.slowArrivals
		r := g.saved
		g.mu.Unlock()
		g.p.setRate(r)
		return true, false
	}
	g.sinceProbe++
	a, pa, slow, ps := g.arrivals, g.probeArrivals, g.slowArrivals, g.probeSlow
	// The rate holds from a move of a third of the 1 s average: the 5 s
	// one takes a few seconds to reach a new phase's factor, and the base
	// is stale by then.
	drifted := g.probes > 0 && math.Abs(a-pa) > pa/3
	phase := g.probes > 0 && (slow > phaseFactor*ps || slow < ps/phaseFactor)
	periodic := g.probeEvery > 0 && g.sinceProbe >= g.probeEvery
	if g.probed && !periodic && (!phase || g.sinceProbe < probeMinGap) {
		g.mu.Unlock()
		return false, drifted
	}
	g.probeLeft, g.probed = probeTicks, true
	g.saved = g.p.current()
	lo := g.lo
	g.mu.Unlock()
	g.p.setRate(lo)
	return true, false
}

// tick adjusts the rate once.
func (g *governor) tick() {
	d, kind := g.sample()
	consumed, hold := g.probe(d, kind)
	if consumed || kind == sampleNone {
		return
	}
	g.mu.Lock()
	congested, calm := false, true
	if kind == sampleLatency {
		if g.fixed {
			congested = d > time.Duration(g.cut*float64(g.base))+fixedSlack
			calm = d <= time.Duration(g.grow*float64(g.base))+fixedSlack
		} else {
			if !g.observed || d < g.base {
				g.base, g.observed = d, true
			}
			congested = d > 2*g.base+governorSlack
			calm = !congested
		}
	}
	hi := g.hi
	if g.ticks++; g.ticks < g.rampTicks {
		hi = g.lo + (hi-g.lo)*float64(g.ticks)/float64(g.rampTicks)
	}
	floor := min(hi, max(g.lo, convergeFactor*g.arrivals))
	switch {
	case g.ticks < g.rampTicks:
		// In the ramp the floor climbs to its own level, not at the
		// ceiling's slope: with a bulk load's 100,000 entries/s ceiling it
		// reached twice a 20,000 writes/s fill 45 s into the reshard.
		floor = g.lo + (floor-g.lo)*float64(g.ticks)/float64(g.rampTicks)
	case g.rampTicks > 0:
		floor = min(floor, max(g.lo, g.floorNow+(g.hi-g.lo)/float64(g.rampTicks)))
	}
	g.floorNow = floor
	g.mu.Unlock()
	r := g.p.current()
	switch {
	case congested:
		r = max(floor, r*2/3)
	case calm && !hold:
		r = min(hi, r+(hi-g.lo)/float64(g.growSteps))
	}
	r = min(max(r, floor), hi)
	g.p.setRate(r)
	g.mu.Lock()
	if congested {
		g.cuts++
	}
	g.minRate = min(g.minRate, r)
	g.mu.Unlock()
}

// run ticks until ctx ends.
func (g *governor) run(ctx context.Context) {
	t := time.NewTicker(governorTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.tick()
		}
	}
}

// baseNow is the latency the governor paces against now (0: none yet,
// the non-baseline governor) and whether a probe is running.
func (g *governor) baseNow() (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.fixed {
		return 0, false
	}
	return g.base, g.probeLeft > 0
}

func (g *governor) stats() (int, float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cuts, g.minRate
}

// fgTracker keeps the mean foreground write latency and the write count
// of each of the last 60 seconds without a reshard running, so that a
// reshard's governor has the level before it as its base.
type fgTracker struct {
	stats func() (uint64, time.Duration)
	mu    sync.Mutex
	n0    uint64
	s0    time.Duration
	ring  [60]fgSecond
	next  int
	full  bool
	// paused counts running engines: their seconds are not the baseline.
	paused int
}

type fgSecond struct {
	lat    time.Duration
	writes uint64
}

// baselineRecent seconds give the write rate the baseline's seconds must
// match (within a factor baselineBand); at least baselineMin must match,
// else every second counts.
const (
	baselineRecent = 5
	baselineBand   = 1.5
	baselineMin    = 5
)

func newFGTracker(stats func() (uint64, time.Duration)) *fgTracker {
	t := &fgTracker{stats: stats}
	t.n0, t.s0 = stats()
	return t
}

// sample records the second since the previous call (called once a
// second); seconds without writes, or with a reshard running, are left
// out.
func (t *fgTracker) sample() {
	n, s := t.stats()
	t.mu.Lock()
	defer t.mu.Unlock()
	dn, ds := n-t.n0, s-t.s0
	t.n0, t.s0 = n, s
	if dn == 0 || t.paused > 0 {
		return
	}
	t.ring[t.next] = fgSecond{ds / time.Duration(dn), dn}
	t.next = (t.next + 1) % len(t.ring)
	t.full = t.full || t.next == 0
}

// baseline is the median latency of the recorded seconds whose write
// rate is within baselineBand of the last few seconds' (0: none yet). A
// minute that held two phases (the scale run's mixed phase, ~7,500 index
// writes/s at 2–3 ms, then a fill, ~22,000/s at 1–1.5 ms) has the median
// of the phase it ended in, the one the reshard runs beside: against the
// whole minute's 2.1 ms the governor let the copy take the fill's latency
// to 2 ms and its rate to 0.70 of the fill before (docs/bench/scale.md,
// "Stop 45").
func (t *fgTracker) baseline() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var secs []fgSecond // oldest first
	if t.full {
		secs = append(secs, t.ring[t.next:]...)
	}
	secs = append(secs, t.ring[:t.next]...)
	if len(secs) == 0 {
		return 0
	}
	recent := make([]uint64, 0, baselineRecent)
	for _, s := range secs[max(0, len(secs)-baselineRecent):] {
		recent = append(recent, s.writes)
	}
	slices.Sort(recent)
	ref := float64(recent[len(recent)/2])
	var all, match []time.Duration
	for _, s := range secs {
		all = append(all, s.lat)
		if w := float64(s.writes); w >= ref/baselineBand && w <= ref*baselineBand {
			match = append(match, s.lat)
		}
	}
	v := all
	if len(match) >= baselineMin {
		v = match
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func (t *fgTracker) pause(d int) {
	t.mu.Lock()
	t.paused += d
	t.mu.Unlock()
}

// run samples once a second until ctx ends.
func (t *fgTracker) run(ctx context.Context) {
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			t.sample()
		}
	}
}

// PaceStats is the pace of the reshards this Manager runs, summed.
type PaceStats struct {
	Running int
	// Rate: entries/s the pacers allow now (0 with none running or an
	// unlimited one); Charged: entries of copy and replay charged to them
	// so far (it resets as reshards end).
	Rate    float64
	Charged uint64
	Copied  uint64
	// Base: the latency the governor paces against (0: none; the
	// largest when several run); Probing: a probe is running.
	Base    time.Duration
	Probing bool
}

// Pace reports the running reshards' pace (benchmarks sample it).
func (m *Manager) Pace() PaceStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s PaceStats
	for e := range m.engines {
		s.Running++
		s.Rate += e.pace.current()
		s.Charged += e.pace.charged.Load()
		s.Copied += e.copied.Load()
		if e.gov != nil {
			b, p := e.gov.baseNow()
			s.Base = max(s.Base, b)
			s.Probing = s.Probing || p
		}
	}
	return s
}
