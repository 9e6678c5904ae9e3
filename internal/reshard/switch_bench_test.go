package reshard_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cairn-s3/cairn/internal/reshard"
)

// BenchmarkSwitchUnderWrites reshards a bucket of 20k objects while 8
// writers PUT as fast as they can (in-memory store: syncs cost nothing, so
// the figures are CPU-bound) and reports, per reshard, the records replayed
// with writers blocked (tail/op), the block (block-ms/op) and the writes
// done meanwhile. Run with -cpu 1 and -benchtime Nx for comparable figures:
//
//	go test ./internal/reshard/ -run '^$' -bench SwitchUnderWrites -cpu 1 -benchtime 5x
func BenchmarkSwitchUnderWrites(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b)
	e.bucket("bkt", 11)
	fill(e, "bkt", 20000)
	m, err := reshard.New(ctx, reshard.Config{Driver: e.d, Store: e.st})
	if err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := e.put("bkt", fmt.Sprintf("w%d/%07d", w, i%20000), 8); err != nil {
					b.Errorf("put: %v", err)
					return
				}
				writes.Add(1)
			}
		}(w)
	}
	var tail, blockNs, closeNs, tailNs, switchNs uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := m.Reshard(ctx, "bkt", []int{13, 11}[i%2])
		if err != nil {
			b.Fatal(err)
		}
		tail += res.Tail
		blockNs += uint64(res.Block)
		closeNs, tailNs, switchNs = closeNs+uint64(res.BlockClose), tailNs+uint64(res.BlockTail), switchNs+uint64(res.BlockSwitch)
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(tail)/float64(b.N), "tail/op")
	b.ReportMetric(float64(blockNs)/1e6/float64(b.N), "block-ms/op")
	b.ReportMetric(float64(closeNs)/1e6/float64(b.N), "close-ms/op")
	b.ReportMetric(float64(tailNs)/1e6/float64(b.N), "tail-ms/op")
	b.ReportMetric(float64(switchNs)/1e6/float64(b.N), "switch-ms/op")
	b.ReportMetric(float64(writes.Load())/float64(b.N), "writes/op")
}
