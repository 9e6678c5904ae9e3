package ratelimit

import (
	"testing"
	"time"
)

func TestOpsRefillOverInterval(t *testing.T) {
	now := time.Unix(1000, 0)
	lm := New(Options{Interval: time.Minute, Now: func() time.Time { return now }})
	k := Key{"u/alice", Limit{Enabled: true, MaxWriteOps: 2}}
	if !lm.Allow(true, k) || !lm.Allow(true, k) {
		t.Fatal("the first two writes must pass")
	}
	if lm.Allow(true, k) {
		t.Fatal("third write in the same minute passed")
	}
	if !lm.Allow(false, k) {
		t.Fatal("reads are not limited")
	}
	now = now.Add(30 * time.Second) // half a minute refills one op
	if !lm.Allow(true, k) || lm.Allow(true, k) {
		t.Fatal("half an interval must refill exactly one op")
	}
}

func TestBytesChargedAfterwards(t *testing.T) {
	now := time.Unix(1000, 0)
	lm := New(Options{Now: func() time.Time { return now }})
	k := Key{"b/bk", Limit{Enabled: true, MaxReadBytes: 100}}
	if !lm.Allow(false, k) {
		t.Fatal("first read refused")
	}
	lm.Charge(false, 250, k)
	if lm.Allow(false, k) {
		t.Fatal("read admitted with the bytes overspent")
	}
	now = now.Add(2 * time.Minute) // -150 + 200 = 50 > 0
	if !lm.Allow(false, k) {
		t.Fatal("read refused after refill")
	}
}

func TestAllOrNothingAndDisabled(t *testing.T) {
	now := time.Unix(1000, 0)
	lm := New(Options{Now: func() time.Time { return now }})
	u := Key{"u/a", Limit{Enabled: true, MaxWriteOps: 5}}
	b := Key{"b/x", Limit{Enabled: true, MaxWriteOps: 1}}
	off := Key{"b/y", Limit{Enabled: false, MaxWriteOps: 1}}
	if !lm.Allow(true, u, b, off) || lm.Allow(true, u, b) {
		t.Fatal("bucket limit of 1 not enforced")
	}
	// The refused call took nothing from the user: 4 left.
	for i := 0; i < 4; i++ {
		if !lm.Allow(true, u, off) {
			t.Fatalf("user write %d refused", i)
		}
	}
	if lm.Allow(true, u) {
		t.Fatal("user limit of 5 not enforced")
	}
}
