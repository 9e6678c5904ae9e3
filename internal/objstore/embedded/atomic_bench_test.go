package embedded

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// BenchmarkSmallPutCommit: a small PUT's two writes, a fresh 4 KiB
// stripe (DeferSync) in one pool and an omap key on a shard object in
// another, 16 at a time over 11 shards: "two" commits them as the driver
// did before (a deferred Operate, then a synced one), "atomic" as one
// OperateAtomic. cpu-µs/op is the process's CPU time (getrusage).
func BenchmarkSmallPutCommit(b *testing.B) {
	for _, mode := range []string{"two", "atomic"} {
		b.Run(mode, func(b *testing.B) {
			s := openDisk(b, nil)
			data, index := mustIO(b, s, "data"), mustIO(b, s, "index").WithNamespace("ix")
			aw := objstore.Atomic(data, index)
			body := bytes.Repeat([]byte("d"), 4096)
			val := bytes.Repeat([]byte("v"), 300) // about an index entry
			var seq atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(8) // 16 goroutines at GOMAXPROCS=2
			c0 := cpuNow()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := seq.Add(1)
					oid := fmt.Sprintf("stripe.%d", n)
					dop := objstore.NewWriteOp().WriteFull(body).SetXattr("cairn.owner", []byte("bucket/key"))
					dop.DeferSync, dop.Fresh = true, true
					xop := objstore.NewWriteOp().SetOmap(objstore.KV{Key: oid, Value: val})
					shard := fmt.Sprintf("shard.%d", n%11)
					var err error
					if mode == "atomic" {
						err = aw.OperateAtomic(bg, []objstore.AtomicReq{{IO: data, OID: oid, Op: dop}, {IO: index, OID: shard, Op: xop}})
					} else if err = data.Operate(bg, oid, dop); err == nil {
						err = index.Operate(bg, shard, xop)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(cpuNow()-c0)/float64(b.N)/1e3, "cpu-µs/op")
		})
	}
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
