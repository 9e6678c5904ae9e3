package bench

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// Latency summarises one phase: completed operations, their rate and
// latency percentiles in milliseconds.
type Latency struct {
	Ops       int64   `json:"ops"`
	Errors    int64   `json:"errors"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
}

func (l Latency) String() string {
	return fmt.Sprintf("%9.0f ops/s  p50 %7.3f ms  p99 %7.3f ms  max %8.3f ms  (%d ops, %d errors)",
		l.OpsPerSec, l.P50Ms, l.P99Ms, l.MaxMs, l.Ops, l.Errors)
}

// closedLoop runs op from clients goroutines, each issuing its next call
// when the previous returns, for d. op gets the client number and its call
// count. The first error stops the phase and is returned.
func closedLoop(ctx context.Context, clients int, d time.Duration, op func(client, i int) error) (Latency, error) {
	var s samples
	err := s.run(ctx, clients, d, op)
	return s.summary(), err
}

// samples accumulates latencies and run time over several closed-loop
// slices (interleaved phases).
type samples struct {
	lats    []time.Duration
	elapsed time.Duration
	calls   []int // per client, so op's i keeps counting across slices
}

func (s *samples) summary() Latency { return summarise(s.lats, s.elapsed) }

func (s *samples) run(ctx context.Context, clients int, d time.Duration, op func(client, i int) error) error {
	if len(s.calls) < clients {
		s.calls = append(s.calls, make([]int, clients-len(s.calls))...)
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	lats := make([][]time.Duration, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			ls := make([]time.Duration, 0, 4096)
			for ctx.Err() == nil {
				t0 := time.Now()
				i := s.calls[c]
				s.calls[c]++
				if err := op(c, i); err != nil {
					errs[c] = err
					cancel()
					break
				}
				ls = append(ls, time.Since(t0))
			}
			lats[c] = ls
		}(c)
	}
	wg.Wait()
	s.elapsed += time.Since(start)
	for _, ls := range lats {
		s.lats = append(s.lats, ls...)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func summarise(all []time.Duration, elapsed time.Duration) Latency {
	all = append([]time.Duration(nil), all...)
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	l := Latency{Ops: int64(len(all)), Seconds: elapsed.Seconds()}
	if len(all) == 0 {
		return l
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	pct := func(p float64) time.Duration { return all[int(p*float64(len(all)-1))] }
	l.OpsPerSec = float64(len(all)) / elapsed.Seconds()
	l.P50Ms, l.P99Ms, l.MaxMs = ms(pct(0.50)), ms(pct(0.99)), ms(all[len(all)-1])
	return l
}

// tempStore opens a fresh embedded store (with every class) in a new
// directory under parent ("" = the system temp dir). close removes it.
func tempStore(parent, name string) (objstore.Store, string, func(), error) {
	dir, err := os.MkdirTemp(parent, "cairn-bench-"+name+"-")
	if err != nil {
		return nil, "", nil, err
	}
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	st, err := embedded.Open(embedded.Options{Dir: dir, Classes: reg})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	return st, dir, func() { st.Close(); os.RemoveAll(dir) }, nil
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31) + seed
	}
	return b
}
