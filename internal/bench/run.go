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
			for i := 0; ctx.Err() == nil; i++ {
				t0 := time.Now()
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
	elapsed := time.Since(start)
	var all []time.Duration
	for _, ls := range lats {
		all = append(all, ls...)
	}
	l := summarise(all, elapsed)
	for _, err := range errs {
		if err != nil {
			l.Errors++
			return l, err
		}
	}
	return l, nil
}

func summarise(all []time.Duration, elapsed time.Duration) Latency {
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
