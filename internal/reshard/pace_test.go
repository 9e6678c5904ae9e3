package reshard

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestPacerRate(t *testing.T) {
	p := newPacer(10000)
	ctx := context.Background()
	t0 := time.Now()
	for i := 0; i < 20; i++ {
		if err := p.wait(ctx, 100); err != nil {
			t.Fatal(err)
		}
	}
	// 2000 entries at 10k/s: 200 ms of pacing (the bound only, not timing).
	if d := time.Since(t0); d < 190*time.Millisecond {
		t.Fatalf("2000 entries at 10000/s took %v", d)
	}
	if err := newPacer(0).wait(ctx, 1<<30); err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithCancel(ctx)
	cancel()
	if err := newPacer(1).wait(c, 10); err == nil {
		t.Fatal("a canceled wait returned nil")
	}
}

// The governor cuts the rate when the signal rises well above its floor,
// never below lo, and climbs back to hi while the signal stays low.
func TestGovernorAIMD(t *testing.T) {
	lat := time.Millisecond
	p := newPacer(50000)
	g := newGovernor(p, 5000, 100000, func() time.Duration { return lat })
	g.tick() // sets the floor (and climbs: calm)
	g.tick()
	if r := p.current(); r != 50000+2*95000/20 {
		t.Fatalf("rate after calm ticks %v", r)
	}
	lat = 20 * time.Millisecond
	for i := 0; i < 30; i++ {
		g.tick()
	}
	if r := p.current(); r != 5000 {
		t.Fatalf("rate under pressure %v, want the floor", r)
	}
	lat = time.Millisecond
	for i := 0; i < 30; i++ {
		g.tick()
	}
	if r := p.current(); r != 100000 {
		t.Fatalf("rate after recovery %v, want the cap", r)
	}
	if cuts, lo := g.stats(); cuts == 0 || lo != 5000 {
		t.Fatalf("stats %d %v", cuts, lo)
	}
	// Without a foreground signal, the copy's own batch latency drives it.
	g2 := newGovernor(newPacer(10000), 1000, 20000, nil)
	g2.tick() // no samples: no change
	if r := g2.p.current(); r != 10000 {
		t.Fatalf("rate without samples %v", r)
	}
	g2.observe(time.Millisecond)
	g2.tick()
	g2.observe(50 * time.Millisecond)
	g2.tick()
	if r := g2.p.current(); r >= 10000 {
		t.Fatalf("rate after slow batches %v", r)
	}
}

// fakeFG is a foreground whose write latency the test sets: stats returns
// cumulative (count, summed latency) as Driver.IndexWriteStats does.
type fakeFG struct {
	n   uint64
	sum time.Duration
}

func (f *fakeFG) stats() (uint64, time.Duration) { return f.n, f.sum }

// writes records k writes of latency d.
func (f *fakeFG) writes(k int, d time.Duration) {
	f.n += uint64(k)
	f.sum += time.Duration(k) * d
}

// The tracker's baseline is the median second, and seconds without
// writes or with a reshard running do not count.
func TestFGTrackerBaseline(t *testing.T) {
	f := &fakeFG{}
	tr := newFGTracker(f.stats)
	if tr.baseline() != 0 {
		t.Fatal("a baseline before any second")
	}
	for _, ms := range []int{4, 5, 6, 50, 5} {
		f.writes(100, time.Duration(ms)*time.Millisecond)
		tr.sample()
	}
	tr.sample() // no writes: left out
	tr.pause(1)
	f.writes(100, time.Second) // a reshard's second: left out
	tr.sample()
	tr.pause(-1)
	if b := tr.baseline(); b != 5*time.Millisecond {
		t.Fatalf("baseline %v, want the median 5ms", b)
	}
	for i := 0; i < 70; i++ { // the ring keeps the last minute
		f.writes(10, 2*time.Millisecond)
		tr.sample()
	}
	if b := tr.baseline(); b != 2*time.Millisecond {
		t.Fatalf("baseline after a minute %v", b)
	}
}

// A minute that changed phase has the baseline of the phase it ended in:
// the seconds whose write rate matches the last few seconds'.
func TestFGTrackerBaselineFollowsPhase(t *testing.T) {
	f := &fakeFG{}
	tr := newFGTracker(f.stats)
	for i := 0; i < 40; i++ { // a mixed phase: fewer writes, slower
		f.writes(7500, time.Duration(2000+10*(i%7))*time.Microsecond)
		tr.sample()
	}
	for i := 0; i < 20; i++ { // a fill: three times the writes, faster
		f.writes(22000+500*(i%3), time.Duration(1100+20*(i%5))*time.Microsecond)
		tr.sample()
	}
	if b := tr.baseline(); b < 1100*time.Microsecond || b > 1200*time.Microsecond {
		t.Fatalf("baseline %v, want the fill's ~1.1 ms, not the minute's", b)
	}
	// Back in the mixed phase for three seconds: its seconds again.
	for i := 0; i < 3; i++ {
		f.writes(7500, 2*time.Millisecond)
		tr.sample()
	}
	if b := tr.baseline(); b < 2*time.Millisecond || b > 2100*time.Microsecond {
		t.Fatalf("baseline %v back in the mixed phase, want its ~2 ms", b)
	}
	// A rate no earlier second had: too few match, the whole minute's
	// median.
	f2 := &fakeFG{}
	tr2 := newFGTracker(f2.stats)
	for i := 0; i < 30; i++ {
		f2.writes(1000, time.Duration(1+i%3)*time.Millisecond)
		tr2.sample()
	}
	for _, n := range []int{100, 300, 30000, 90000, 3000} {
		f2.writes(n, 50*time.Millisecond)
		tr2.sample()
	}
	if b := tr2.baseline(); b != 2*time.Millisecond {
		t.Fatalf("baseline %v without a matching phase, want the minute's median 2ms", b)
	}
}

// The baseline governor starts at the floor, climbs while foreground
// latency holds, cuts above the target, holds in between, and climbs
// when there is no foreground write to protect.
func TestBaselineGovernor(t *testing.T) {
	f := &fakeFG{}
	p := newPacer(25000)
	g := newBaselineGovernor(p, 5000, 25000, f.stats, 10*time.Millisecond, 1.2)
	if r := p.current(); r != 5000 {
		t.Fatalf("start rate %v, want the floor", r)
	}
	f.writes(100, 10*time.Millisecond)
	g.tick()
	if r := p.current(); r != 5000+20000/fixedGrowSteps {
		t.Fatalf("rate after a calm tick %v", r)
	}
	f.writes(100, 11500*time.Microsecond) // between grow (1.1) and cut (1.2)
	g.tick()
	if r := p.current(); r != 5000+20000/fixedGrowSteps {
		t.Fatalf("rate in the band %v, want held", r)
	}
	f.writes(100, 13*time.Millisecond)
	g.tick()
	if r := p.current(); r != 5000 {
		t.Fatalf("rate after a slow tick %v, want cut to the floor", r)
	}
	for i := 0; i < fixedGrowSteps; i++ {
		g.tick() // idle
	}
	if r := p.current(); r != 25000 {
		t.Fatalf("rate while idle %v, want the cap", r)
	}
	if cuts, lo := g.stats(); cuts != 1 || lo != 5000 {
		t.Fatalf("stats %d %v", cuts, lo)
	}
}

// A closed-loop foreground on a machine the copy competes with: its
// latency grows with the copy rate (here as measured on the 2-core CI
// machine: 25k entries/s of copy cost the fill 0.42 of its rate, so
// latency ×1.72). Whatever governor paces the copy, foreground
// throughput (1/latency) must stay at or above 0.8× its level before the
// reshard (issue 24); the old governor, which only cut at twice the lowest
// latency it saw, settled at the cap and 0.58×.
func TestGovernorKeepsForeground(t *testing.T) {
	const base = 4 * time.Millisecond
	lat := func(rate float64) time.Duration {
		return time.Duration(float64(base) * (1 + 0.72*rate/25000))
	}
	for _, tc := range []struct {
		name string
		mk   func(p *pacer, f *fakeFG) *governor
	}{
		{"baseline", func(p *pacer, f *fakeFG) *governor {
			return newBaselineGovernor(p, 1000, 25000, f.stats, base, 1.15)
		}},
	} {
		f := &fakeFG{}
		p := newPacer(25000)
		g := tc.mk(p, f)
		var worst float64 = 1
		for i := 0; i < 300; i++ {
			d := lat(p.current())
			f.writes(200, d)
			g.tick()
			if i > 20 { // after the first climb
				worst = min(worst, float64(base)/float64(d))
			}
		}
		if worst < 0.8 {
			t.Errorf("%s: foreground fell to %.2f× (copy rate %.0f)", tc.name, worst, p.current())
		}
		if p.current() < 1000 {
			t.Errorf("%s: copy rate %.0f below the floor", tc.name, p.current())
		}
	}
}

// However slow the foreground gets, the baseline governor keeps the copy
// at twice the rate writers add entries (convergeFactor), so the copy and
// the replay of the log finish: at its plain floor (5,000/s) a reshard of
// a bucket filled at 4,500 PUT/s ran for over an hour in the scale run.
func TestGovernorOutrunsArrivals(t *testing.T) {
	f := &fakeFG{}
	p := newPacer(25000)
	g := newBaselineGovernor(p, 5000, 25000, f.stats, time.Millisecond, 1.15)
	perTick := 900 // 4,500 writes/s at 5 ticks a second
	for i := 0; i < 100; i++ {
		f.writes(perTick, 10*time.Millisecond) // always congested
		g.tick()
	}
	if r := p.current(); r < 8500 || r > 9000 {
		t.Fatalf("rate under congestion with 4,500 writes/s arriving: %.0f, want about 9,000", r)
	}
	for i := 0; i < 100; i++ {
		f.writes(20, 10*time.Millisecond) // 100/s: the plain floor rules
		g.tick()
	}
	if r := p.current(); r != 5000 {
		t.Fatalf("rate with few arrivals %.0f, want the floor", r)
	}
	for i := 0; i < 100; i++ {
		f.writes(20000, 10*time.Millisecond) // 100,000/s: never above the cap
		g.tick()
	}
	if r := p.current(); r != 25000 {
		t.Fatalf("rate with arrivals over the cap %.0f, want the cap", r)
	}
}

// TestGovernorRampsIn: over its first rampTicks ticks the ceiling, and
// with it the floor that follows the arrival rate, climbs from lo to hi, so
// that a reshard's load comes in gradually; then the governor runs as
// without the ramp (twice the arrivals under congestion, the cap when calm).
func TestGovernorRampsIn(t *testing.T) {
	f := &fakeFG{}
	p := newPacer(25000)
	g := newBaselineGovernor(p, 5000, 25000, f.stats, time.Millisecond, 1.15)
	g.rampTicks = 100
	prev := 0.0
	for i := 1; i < 100; i++ {
		f.writes(2000, 10*time.Millisecond) // 10,000 writes/s, congested
		g.tick()
		r := p.current()
		if limit := 5000 + 20000*float64(i)/100; r > limit+1e-6 {
			t.Fatalf("tick %d: rate %.0f above the ramp's %.0f", i, r, limit)
		}
		if r < prev {
			t.Fatalf("tick %d: rate fell from %.0f to %.0f while the ramp climbs to the floor", i, prev, r)
		}
		prev = r
	}
	for range 50 {
		f.writes(2000, 10*time.Millisecond)
		g.tick()
	}
	if r := p.current(); r < 19500 || r > 20000 {
		t.Fatalf("rate after the ramp, congested, 10,000 writes/s: %.0f, want about 20,000", r)
	}
	for range 100 {
		f.writes(2000, 0) // calm
		g.tick()
	}
	if r := p.current(); r != 25000 {
		t.Fatalf("calm after the ramp: %.0f, want the cap", r)
	}

	// A bulk load's ceiling is far above the floor: congested, the floor
	// still takes the whole ramp to reach twice the writers' rate (at the
	// ceiling's slope it took a fifth of it, and the fill's windows fell to
	// 0.71 of the minute before).
	f = &fakeFG{}
	p = newPacer(100000)
	g = newBaselineGovernor(p, 5000, 100000, f.stats, time.Millisecond, 1.15)
	g.rampTicks = 100
	for i := 1; i < 100; i++ {
		f.writes(2000, 10*time.Millisecond)
		g.tick()
		if limit := 5000 + 15000*float64(i)/100; p.current() > limit+1e-6 {
			t.Fatalf("bulk load: tick %d: rate %.0f above the floor's ramp %.0f", i, p.current(), limit)
		}
	}
	for range 20 {
		f.writes(2000, 10*time.Millisecond)
		g.tick()
	}
	if r := p.current(); r < 19500 || r > 20000 {
		t.Fatalf("bulk load: rate after the ramp, congested, 10,000 writes/s: %.0f, want about 20,000", r)
	}
}

// TestGovernorRebases: a fill gives way to a mixed phase mid-reshard: the
// writers slow to a quarter and their writes cost 60 % more. Against the
// minute before the reshard the foreground then looks congested whatever
// the copy does, and the pace sits at its floor. With probes on a change
// of phase the base follows the level at the lowest pace, so after the
// shift the copy settles where it did before it, and the foreground still
// keeps 0.8× of what it would do without the copy. Each probe holds the
// lowest pace for probeTicks ticks.
func TestGovernorRebases(t *testing.T) {
	const base = 4 * time.Millisecond
	phase := func(i int) (level float64, writes int) {
		if i < 300 {
			return 1, 400
		}
		return 1.6, 100
	}
	run := func(rebase bool) (before, after float64, probeTicksAtLo int) {
		f := &fakeFG{}
		p := newPacer(25000)
		g := newBaselineGovernor(p, 1000, 25000, f.stats, base, 1.15)
		g.rebase = rebase
		var sb, sa float64
		var nb, na int
		for i := 0; i < 900; i++ {
			r := p.current()
			level, k := phase(i)
			d := time.Duration(level * float64(base) * (1 + 0.72*r/25000))
			f.writes(k, d)
			g.tick()
			if _, probing := g.baseNow(); probing {
				if p.current() == 1000 {
					probeTicksAtLo++
				}
				continue
			}
			if rebase && i > 20 && (i < 300 || i > 320) {
				if w := level * float64(base) / float64(d); w < 0.8 {
					t.Errorf("tick %d: foreground at %.2f× its level without the copy (rate %.0f)", i, w, r)
				}
			}
			switch {
			case i >= 100 && i < 300:
				sb += r
				nb++
			case i >= 500:
				sa += r
				na++
			}
		}
		return sb / float64(nb), sa / float64(na), probeTicksAtLo
	}
	before, after, atLo := run(true)
	if after < 0.6*before || after > 1.2*before {
		t.Errorf("with probes: mean pace %.0f before the shift, %.0f after: the base did not follow", before, after)
	}
	// One probe at the start, one at the shift: no periodic ones.
	if atLo < 2*(probeTicks-1) || atLo > 2*probeTicks {
		t.Errorf("with probes: %d probe ticks at the lowest pace, want two probes' (%d)", atLo, 2*probeTicks)
	}
	if before < 3000 {
		t.Errorf("with probes: mean pace before the shift %.0f, want well above the floor", before)
	}
	// Without them the old minute rules: congested from the shift on, at
	// the floor (twice the 500 writes/s, below the lower bound).
	before0, after0, _ := run(false)
	t.Logf("mean pace before / after the shift: probes %.0f / %.0f, none %.0f / %.0f", before, after, before0, after0)
	if after0 > 1100 || before0 < 3000 {
		t.Errorf("without probes: mean pace %.0f before the shift, %.0f after; want the floor after it", before0, after0)
	}
}

// TestGovernorBaseIgnoresCopyAftereffects: in a steady fill the copy's cost
// outlasts it (flushes, compactions, the replay: here a 20 s average of
// the pace) and a second's latency swings ±30 %. Probes every 15 s took
// that for the foreground's own drift: each measured the copy's leftovers
// at the lowest pace, the base climbed with the copy (1.4 to 2.1–3.2 ms
// within five minutes of a 10M run's reshard) and the fill's worst 10 s
// window fell to 0.75. Without a change of phase the base must stay the
// minute before's and the fill keep 0.8× its level without the copy.
func TestGovernorBaseIgnoresCopyAftereffects(t *testing.T) {
	const base = time.Millisecond
	run := func(probeEvery int) (mean float64, end time.Duration) {
		f := &fakeFG{}
		p := newPacer(100000)
		g := newBaselineGovernor(p, 5000, 100000, f.stats, base, 1.15)
		// The climb of stops 42–45 (a twentieth of the range a tick), whose
		// copy left the after-effects the probes measured.
		g.rebase, g.probeEvery, g.growSteps = true, probeEvery, 20
		rng := rand.New(rand.NewPCG(1, 2))
		var slow, sum float64 // slow: the copy's lingering cost, its pace averaged over 20 s
		n := 0
		for i := 0; i < 3000; i++ {
			slow += (p.current() - slow) / 100
			d := float64(base) * (1 + 0.4*slow/100000)
			noisy := time.Duration(d * (0.7 + 0.6*rng.Float64()))
			f.writes(int(4400*float64(base)/d), noisy) // closed loop: 22,000 writes/s at the base
			g.tick()
			if i >= 1000 {
				sum += float64(base) / d
				n++
			}
		}
		b, _ := g.baseNow()
		return sum / float64(n), b
	}
	mean, b := run(0)
	if b != base {
		t.Errorf("probes on a change of phase only: base %v after a steady fill, want the minute before's %v", b, base)
	}
	if mean < 0.8 {
		t.Errorf("probes on a change of phase only: the fill at %.2f× its level without the copy", mean)
	}
	meanP, bP := run(75)
	t.Logf("the fill's level without the copy: phase probes %.2f× (base %v), probes every 15 s %.2f× (base %v)", mean, b, meanP, bP)
	if bP < base*103/100 {
		t.Errorf("probes every 15 s: base %v, the fill at %.2f×: the model no longer shows what it is for", bP, meanP)
	}
}

// TestGovernorClimbsGently: the copy's cost reaches the writers seconds
// after its pace (chunks, the replay, compactions). Climbing a twentieth of
// its range a tick, the pace of a 30M run's reshard swung from 12,000 to
// 36,000 entries/s within a second of calm and the fill fell to 6,400 PUT/s
// behind it; a hundredth keeps every second of the fill at 0.8× its level
// without the copy. And a second's dip of the writers is not a new phase:
// no probe, the base stays.
func TestGovernorClimbsGently(t *testing.T) {
	const base = time.Millisecond
	run := func(steps int) (worst float64, probes int) {
		f := &fakeFG{}
		p := newPacer(100000)
		g := newBaselineGovernor(p, 5000, 100000, f.stats, base, 1.15)
		g.rebase, g.growSteps = true, steps
		var past []float64 // the pace, ten ticks back
		worst = math.Inf(1)
		var sec float64
		for i := 0; i < 1500; i++ {
			past = append(past, p.current())
			lag := past[max(0, len(past)-11)]
			d := float64(base) * (1 + 0.3*lag/100000)
			k := 4400 * float64(base) / d // closed loop: 22,000 writes/s at the base
			if i == 700 || i == 701 {
				k /= 4 // a second's dip (two ticks): not a phase
			}
			f.writes(int(k), time.Duration(d))
			g.tick()
			sec += float64(base) / d
			if i%5 == 4 {
				if i >= 200 {
					worst = min(worst, sec/5)
				}
				sec = 0
			}
		}
		b, _ := g.baseNow()
		if b != base {
			t.Errorf("steps %d: base %v after a steady fill with a dip, want %v", steps, b, base)
		}
		return worst, g.probes
	}
	worst, probes := run(fixedGrowSteps)
	worst20, _ := run(20)
	t.Logf("the fill's worst second at its level without the copy: %.2f (a twentieth a tick: %.2f)", worst, worst20)
	if worst < 0.8 {
		t.Errorf("the fill's worst second at %.2f× its level without the copy", worst)
	}
	if probes != 1 {
		t.Errorf("%d probes, want only the first", probes)
	}
	if worst20 >= worst {
		t.Errorf("a twentieth a tick: worst second %.2f, not below %.2f: the model no longer shows what it is for", worst20, worst)
	}
}

// TestGovernorHoldsWhenWritesMove: when the write rate moves (a mixed phase
// gives way to a fill, whose writes are faster and three times as many),
// the base is stale until the probe the new phase triggers, which may not
// start for a few seconds; in between the rate must not climb against the
// stale base (it climbed to the cap against the mixed phase's slower
// writes).
func TestGovernorHoldsWhenWritesMove(t *testing.T) {
	lat := func(level time.Duration, rate float64) time.Duration {
		return time.Duration(float64(level) * (1 + 0.72*rate/100000)) // a loaded copy's cost
	}
	f := &fakeFG{}
	p := newPacer(100000)
	g := newBaselineGovernor(p, 5000, 100000, f.stats, 8*time.Millisecond, 1.15)
	g.rebase, g.probeEvery = true, 75
	// The mixed phase: 5,000 writes/s at 8 ms, until a probe has just ended.
	wasProbing, ended := false, 0
	for i := 0; ended < 2; i++ {
		if i > 1000 {
			t.Fatal("no probe ended")
		}
		f.writes(1000, lat(8*time.Millisecond, p.current()))
		g.tick()
		_, probing := g.baseNow()
		if wasProbing && !probing {
			ended++
		}
		wasProbing = probing
	}
	r0 := p.current()
	// The fill: 15,000 writes/s at 4 ms. One tick passes before the arrivals'
	// average has moved by a third; after it the rate holds until the probe.
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatal("no probe after the write rate moved")
		}
		f.writes(3000, lat(4*time.Millisecond, p.current()))
		g.tick()
		if _, probing := g.baseNow(); probing {
			if i < 10 {
				t.Fatalf("the probe started %d ticks after the last: the gap is %d", i, probeMinGap)
			}
			break
		}
		// (The floor, twice the arrivals, may lift it to 30,000.)
		if r := p.current(); r > max(r0+(100000-5000)/fixedGrowSteps, 30000) {
			t.Fatalf("tick %d after the move: rate %.0f climbed from %.0f against the stale base", i, r, r0)
		}
	}
	// After the probe the base is the fill's: the governor keeps the fill
	// within its target of the level without the copy.
	for i := 0; i < 300; i++ {
		d := lat(4*time.Millisecond, p.current())
		f.writes(3000, d)
		g.tick()
		if _, probing := g.baseNow(); !probing && i > 30 {
			if w := float64(4*time.Millisecond) / float64(d); w < 0.8 {
				t.Fatalf("tick %d: the fill at %.2f× its level without the copy (rate %.0f)", i, w, p.current())
			}
		}
	}
}

// TestGovernorFloorClimbs: after the ramp-in, when the writers speed up
// (a mixed phase gives way to a fill), the floor of twice their rate
// climbs at the ramp's slope instead of stepping there within a second
// (in a 3M run the copy jumped from 14,000 to 30,000 entries/s as the fill
// resumed, and the fill's first windows fell to 0.62 of the fill before);
// it falls at once.
func TestGovernorFloorClimbs(t *testing.T) {
	f := &fakeFG{}
	p := newPacer(25000)
	g := newBaselineGovernor(p, 5000, 25000, f.stats, time.Millisecond, 1.15)
	g.rampTicks = 100
	for range 150 { // the ramp, then 1,000 writes/s, congested: the plain floor
		f.writes(200, 10*time.Millisecond)
		g.tick()
	}
	if r := p.current(); r != 5000 {
		t.Fatalf("rate with 1,000 writes/s, congested: %.0f, want 5,000", r)
	}
	step := (25000.0 - 5000) / 100
	prev := p.current()
	for i := 0; i < 100; i++ { // 10,000 writes/s, congested
		f.writes(2000, 10*time.Millisecond)
		g.tick()
		r := p.current()
		if r > prev+step+1e-6 {
			t.Fatalf("tick %d: rate %.0f jumped from %.0f (slope %.0f a tick)", i, r, prev, step)
		}
		prev = r
	}
	if r := p.current(); r < 19500 || r > 20000 {
		t.Fatalf("rate after the climb: %.0f, want about 20,000", r)
	}
	for range 30 { // the writers slow down: the floor falls with their average
		f.writes(200, 10*time.Millisecond)
		g.tick()
	}
	if r := p.current(); r > 5100 {
		t.Fatalf("rate after the writers slowed: %.0f, want the floor", r)
	}
}
