package lcproc

import "testing"

// TestTransitionRateYieldsToForeground: while the gateway serves client
// requests, transitions copy at BusyRate; idle, at TransitionRate.
func TestTransitionRateYieldsToForeground(t *testing.T) {
	busy := false
	p := &Processor{TransitionRate: 2 << 20, BusyRate: 512 << 10, Busy: func() bool { return busy }}
	if r := p.transitionRate(); r != 2<<20 {
		t.Fatalf("idle: %d", r)
	}
	busy = true
	if r := p.transitionRate(); r != 512<<10 {
		t.Fatalf("busy: %d", r)
	}
	// Unlimited when idle still yields when busy; no busy rate: one rate.
	p.TransitionRate = 0
	if r := p.transitionRate(); r != 512<<10 {
		t.Fatalf("busy, unlimited idle rate: %d", r)
	}
	p.BusyRate, p.TransitionRate = 0, 1<<20
	if r := p.transitionRate(); r != 1<<20 {
		t.Fatalf("no busy rate: %d", r)
	}
}
