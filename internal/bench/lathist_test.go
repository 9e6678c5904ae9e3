package bench

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestLatHist: the histogram's p50 / p99 are within 3.5 % of the exact
// samples' (summarise), its count and max exact, and merging two halves
// gives the histogram of the whole.
func TestLatHist(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var all []time.Duration
	var a, b, whole latHist
	for i := range 200000 {
		// 1 ns to 100 ms, log-uniform (a tenth of it below a microsecond).
		d := time.Duration(math.Exp(rng.Float64()*math.Log(1e8))) * time.Nanosecond
		if i%1000 == 0 {
			d = 300 * time.Nanosecond
		}
		all = append(all, d)
		whole.add(d)
		if i%2 == 0 {
			a.add(d)
		} else {
			b.add(d)
		}
	}
	a.merge(&b)
	if a != whole {
		t.Fatal("merged halves differ from the whole")
	}
	exact := summarise(all, time.Second)
	if whole.n != exact.Ops || float64(whole.max.Microseconds())/1000 != exact.MaxMs {
		t.Fatalf("n %d max %v; want %d, %v ms", whole.n, whole.max, exact.Ops, exact.MaxMs)
	}
	for _, c := range []struct {
		p    float64
		want float64
	}{{0.5, exact.P50Ms}, {0.99, exact.P99Ms}} {
		got := whole.quantile(c.p) / 1000
		if math.Abs(got-c.want) > 0.035*c.want {
			t.Errorf("p%v: %.4f ms, exact %.4f ms", c.p*100, got, c.want)
		}
	}
	var empty latHist
	if empty.quantile(0.5) != 0 {
		t.Fatal("empty histogram")
	}
	// Every bucket's bounds hold its durations.
	for _, us := range []int64{1, 2, 3, 15, 16, 17, 31, 1000, 123456, 1 << 40} {
		i := latBucket(time.Duration(us) * time.Microsecond)
		if lo, hi := latLower(i), latLower(i+1); float64(us) < lo || (float64(us) >= hi && i < latBuckets-1) {
			t.Errorf("%d µs in bucket %d [%v, %v)", us, i, lo, hi)
		}
	}
}
