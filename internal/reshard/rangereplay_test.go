package reshard

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
)

// queue puts n records per source into rr's ready queues, keys numbered
// from next[i] on (so a source's keys rise in log order).
func queue(rr *rangeReplay, next []int, n int) {
	for i := range rr.ready {
		for j := 0; j < n; j++ {
			rr.ready[i] = append(rr.ready[i], bucketindex.RawLogRecord{Seq: uint64(next[i]), Key: fmt.Sprintf("k%06d", next[i])})
			next[i]++
		}
	}
}

// A commit's released records are applied over as long as the chunk took
// to stage, beside each round's fresh ones, in log order per source.
func TestRangeReplaySpreadsReleased(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rr := newRangeReplay(4, t0)
	next := make([]int, 4)
	seen := make([]int, 4)
	check := func(out [][]bucketindex.RawLogRecord) int {
		n := 0
		for i, recs := range out {
			for _, r := range recs {
				if int(r.Seq) != seen[i] {
					t.Fatalf("source %d: applied seq %d, want %d (log order)", i, r.Seq, seen[i])
				}
				seen[i]++
				n++
			}
		}
		return n
	}
	// The chunk staged for 10 s; its commit releases 2,500 records per
	// source (10,000) and reads 25 fresh per source.
	now := t0.Add(10 * time.Second)
	rr.committed(now, "k999999")
	queue(rr, next, 2500)
	queue(rr, next, 25)
	rr.last = now.Add(-time.Second)
	if n := check(rr.take(now, 100, 10000, false)); n != 100+1000 {
		t.Fatalf("commit round applied %d, want the 100 fresh and a second of the 10,000 released (1,000)", n)
	}
	for r := 1; r < 9; r++ {
		now = now.Add(time.Second)
		queue(rr, next, 25)
		if n := check(rr.take(now, 100, 0, false)); n != 1100 {
			t.Fatalf("round %d applied %d, want 1,100", r, n)
		}
	}
	// The tenth second drains the backlog and with it all that waits.
	now = now.Add(time.Second)
	queue(rr, next, 25)
	if n := check(rr.take(now, 100, 0, false)); n != 1100 || rr.pending() != 0 || rr.backlog != 0 {
		t.Fatalf("last round applied %d, left %d ready, backlog %.1f; want 1,100, 0, 0", n, rr.pending(), rr.backlog)
	}
	// With no backlog a round applies what it found.
	now = now.Add(time.Second)
	queue(rr, next, 10)
	if n := check(rr.take(now, 40, 0, false)); n != 40 || rr.pending() != 0 {
		t.Fatalf("steady round applied %d, left %d", n, rr.pending())
	}
}

// The last chunk, and a copy without rounds between chunks, apply all
// that is ready at once.
func TestRangeReplayFinalAppliesAll(t *testing.T) {
	for _, c := range []struct {
		name          string
		final, atOnce bool
	}{{"final", true, false}, {"no-mid-rounds", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			t0 := time.Unix(1000, 0)
			rr := newRangeReplay(3, t0)
			rr.atOnce = c.atOnce
			now := t0.Add(20 * time.Second)
			rr.committed(now, "k999999")
			queue(rr, make([]int, 3), 1000)
			out := rr.take(now.Add(100*time.Millisecond), 0, 3000, c.final)
			n := 0
			for _, recs := range out {
				n += len(recs)
			}
			if n != 3000 || rr.pending() != 0 {
				t.Fatalf("applied %d, left %d; want 3,000 and 0", n, rr.pending())
			}
		})
	}
}

// No more than maxReadyLeft records wait for later rounds.
func TestRangeReplayBoundsReady(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rr := newRangeReplay(1, t0)
	now := t0.Add(100 * time.Second)
	rr.committed(now, "k999999")
	n := maxReadyLeft + 1000
	queue(rr, make([]int, 1), n)
	out := rr.take(now.Add(10*time.Millisecond), 0, n, false)
	if len(out[0]) < 1000 || rr.pending() > maxReadyLeft {
		t.Fatalf("applied %d of %d, left %d; want at most %d left", len(out[0]), n, rr.pending(), maxReadyLeft)
	}
}
