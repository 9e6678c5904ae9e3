package queue

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// cpuTime is the process's user+system CPU time in ns: under a loaded
// machine it tells per-op cost where elapsed time does not.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// plainIO hides the store's objstore.WriteBatcher: OperateMany then runs
// one Operate per shard, concurrently (what every shard's own committer
// did before the committer was shared).
type plainIO struct{ objstore.IOContext }

func (p plainIO) WithNamespace(ns string) objstore.IOContext {
	return plainIO{p.IOContext.WithNamespace(ns)}
}

// BenchmarkDeferredRound: one committer round of k deferred commits on
// each of n shards (reserve from the pool, hand over, flush), through one
// OperateMany call ("shared") or one Operate per shard ("separate").
// Run with -cpu 1; the per-event figure is ns/op / (n*k).
func BenchmarkDeferredRound(b *testing.B) {
	for _, shared := range []bool{true, false} {
		for _, sk := range [][2]int{{11, 4}, {11, 16}, {1, 32}} {
			n, k := sk[0], sk[1]
			name := fmt.Sprintf("shared=%v/shards=%d/events=%d", shared, n, k)
			b.Run(name, func(b *testing.B) {
				// A real directory (TMPDIR; tmpfs for these runs): the
				// in-memory FS spends most of the time growing its WAL
				// file.
				reg := objstore.NewRegistry()
				cls.RegisterAll(reg)
				st, err := embedded.Open(embedded.Options{Dir: b.TempDir(), Classes: reg})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { st.Close() })
				ctx := context.Background()
				q, err := Open(ctx, st, Options{DeferLinger: time.Hour, PoolMax: 128})
				if err != nil {
					b.Fatal(err)
				}
				if !shared {
					q = New(plainIO{q.io}, q.opts)
				}
				if err := q.Create(ctx, ":b", n); err != nil {
					b.Fatal(err)
				}
				data := make([]byte, 800)
				var wg sync.WaitGroup
				done := func(_ string, err error) {
					if err != nil {
						b.Error(err)
					}
					wg.Done()
				}
				b.ReportAllocs()
				cpu0 := cpuTime()
				b.ResetTimer()
				for range b.N {
					for s := range n {
						for range k {
							r, err := q.Reserve(ctx, ":b", s, 100)
							if err != nil {
								b.Fatal(err)
							}
							wg.Add(1)
							r.CommitDeferred(data, done)
						}
					}
					if err := q.FlushDeferred(ctx); err != nil {
						b.Fatal(err)
					}
					wg.Wait()
				}
				b.StopTimer()
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*n*k)/1e3, "cpu-µs/event")
			})
		}
	}
}
