package reshard

import (
	"context"
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
