package reshard

import (
	"context"
	"sync"
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

// governor adapts a pacer's rate to foreground latency (AIMD, in the
// manner of TCP Vegas): each tick it compares the latency signal with the
// lowest seen so far; well above it, the rate is cut by a third, otherwise
// it grows by a twentieth of the range. The signal is Config.Foreground
// when set (foreground write latency), else the latency of the copy's own
// full batches, which share the commit pipeline with foreground writes.
type governor struct {
	p        *pacer
	lo, hi   float64
	fg       func() time.Duration
	mu       sync.Mutex
	sum      time.Duration
	n        int
	base     time.Duration
	cuts     int
	minRate  float64
	observed bool
}

const (
	governorTick  = 200 * time.Millisecond
	governorSlack = 2 * time.Millisecond
)

func newGovernor(p *pacer, lo, hi float64, fg func() time.Duration) *governor {
	return &governor{p: p, lo: lo, hi: hi, fg: fg, minRate: hi}
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

// sample returns this tick's latency signal.
func (g *governor) sample() (time.Duration, bool) {
	if g.fg != nil {
		d := g.fg()
		return d, d > 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		return 0, false
	}
	d := g.sum / time.Duration(g.n)
	g.sum, g.n = 0, 0
	return d, true
}

// tick adjusts the rate once.
func (g *governor) tick() {
	d, ok := g.sample()
	if !ok {
		return
	}
	g.mu.Lock()
	if !g.observed || d < g.base {
		g.base, g.observed = d, true
	}
	congested := d > 2*g.base+governorSlack
	g.mu.Unlock()
	r := g.p.current()
	if congested {
		r = max(g.lo, r*2/3)
	} else {
		r = min(g.hi, r+(g.hi-g.lo)/20)
	}
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

func (g *governor) stats() (int, float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cuts, g.minRate
}
