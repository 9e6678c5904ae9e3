package service

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// BenchmarkPut4K measures 4 KiB PUTs through the real driver with no
// notification, a persistent topic with 1 shard and with 11 shards, with
// and without the reservation pool, on pebble's in-memory FS (CPU cost)
// and on disk (CAIRN_BENCH_DIR, default the test temp dir; real fsyncs).
// Run: go test ./internal/notify/service -run '^$' -bench Put4K -cpu 8
func BenchmarkPut4K(b *testing.B) {
	for _, fsName := range []string{"mem", "disk"} {
		for _, c := range []struct {
			name   string
			shards int
			pool   int
		}{{"none", 0, 0}, {"shards=1", 1, 0}, {"shards=11", 11, 0}, {"shards=1/nopool", 1, -1}, {"shards=11/nopool", 11, -1}} {
			b.Run(fsName+"/"+c.name, func(b *testing.B) {
				var fs vfs.FS = vfs.NewMem()
				dir := "/db"
				if fsName == "disk" {
					fs = vfs.Default
					dir = b.TempDir()
					if d := os.Getenv("CAIRN_BENCH_DIR"); d != "" {
						var err error
						if dir, err = os.MkdirTemp(d, "bench"); err != nil {
							b.Fatal(err)
						}
						defer os.RemoveAll(dir)
					}
				}
				st := openStore(b, dir, fs)
				e := newEnvOn(b, st, Options{NumShards: max(c.shards, 1), Queue: queue.Options{PoolMax: c.pool}})
				if c.shards > 0 {
					e.topic(b, "bench", map[string]string{"persistent": "true", "push-endpoint": "http://127.0.0.1:1/"})
					e.configure(b, notifConf(topicConf("n", "bench", "")))
				}
				body := bytes.Repeat([]byte("x"), 4096)
				var n atomic.Int64
				b.SetParallelism(8) // 8 × GOMAXPROCS client goroutines
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						i := n.Add(1)
						_, err := e.drv.PutObject(reqCtx(), driver.PutObjectInput{Bucket: "bk1", Key: fmt.Sprintf("obj-%d", i), Body: bytes.NewReader(body), Size: 4096})
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
				if ops, evs := e.svc.Queues().GroupStats(); ops > 0 {
					b.ReportMetric(float64(evs)/float64(ops), "events/commit-op")
				}
				if c.shards > 0 {
					stt, _ := e.svc.TopicStats(context.Background(), "bench")
					if int(stt.Entries) != b.N {
						b.Fatalf("%d entries for %d PUTs", stt.Entries, b.N)
					}
				}
			})
		}
	}
}

// BenchmarkPutCPU is the write side of a notified 4 KiB PUT in CPU time:
// the real driver and service with deferred commits (linger 50 ms), on
// pebble's in-memory FS, no delivery (entries stay queued). cpu-µs/op is
// the process's CPU (getrusage) per PUT, pebble's flushes and compactions
// and GC included, so it holds under load with -cpu 1; a mode's cost per
// event is its cpu-µs/op minus none's. point-gets/op counts the store's
// point reads (the index shard's header comes from the class cache),
// reserve-ops/op the PUTs that found the reservation pool empty, wal-B/op
// the bytes written to the WAL (every key set or deleted is a record).
// Run: go test ./internal/notify/service -run '^$' -bench PutCPU -cpu 1 -benchtime 20000x -count 5
func BenchmarkPutCPU(b *testing.B) {
	for _, c := range []struct {
		name   string
		shards int
	}{{"none", 0}, {"shards=1", 1}, {"shards=11", 11}} {
		b.Run(c.name, func(b *testing.B) {
			st := openStore(b, "/db", vfs.NewMem())
			// The pool as the gateway sizes it with deferred commits
			// (server.openNotifications).
			e := newEnvOn(b, st, Options{NumShards: max(c.shards, 1), DeferCommits: true,
				Queue: queue.Options{DeferLinger: 50 * time.Millisecond, PoolMax: 2 * queue.DefaultPoolMax}})
			e.svc.SetOwner("gw1", true) // link intents, as a gateway writes them
			if c.shards > 0 {
				e.topic(b, "bench", map[string]string{"persistent": "true", "push-endpoint": "http://127.0.0.1:1/"})
				e.configure(b, notifConf(topicConf("n", "bench", "")))
			}
			body := bytes.Repeat([]byte("x"), 4096)
			put := func(i int) {
				_, err := e.drv.PutObject(reqCtx(), driver.PutObjectInput{Bucket: "bk1", Key: fmt.Sprintf("obj-%08d", i), Body: bytes.NewReader(body), Size: 4096})
				if err != nil {
					b.Fatal(err)
				}
			}
			for i := range 100 { // warms the bucket, the shards and the pools
				put(-1 - i)
			}
			var n atomic.Int64
			g0, r0, w0, c0 := st.PointGets(), e.svc.Queues().ReserveOps(), st.LSMCounters().WALBytes, cpuTime(b)
			b.ReportAllocs()
			b.ResetTimer()
			b.SetParallelism(32) // closed-loop clients, as cairn bench notify
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					put(int(n.Add(1)))
				}
			})
			if c.shards > 0 {
				e.svc.Queues().FlushDeferred(context.Background())
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime(b)-c0)/float64(b.N)/1e3, "cpu-µs/op")
			b.ReportMetric(float64(st.PointGets()-g0)/float64(b.N), "point-gets/op")
			b.ReportMetric(float64(st.LSMCounters().WALBytes-w0)/float64(b.N), "wal-B/op")
			if c.shards > 0 {
				// reserve ops: PUTs that found the pool empty
				b.ReportMetric(float64(e.svc.Queues().ReserveOps()-r0)/float64(b.N), "reserve-ops/op")
				stt, _ := e.svc.TopicStats(context.Background(), "bench")
				if int(stt.Entries) != b.N+100 {
					b.Fatalf("%d entries for %d PUTs", stt.Entries, b.N+100)
				}
			}
		})
	}
}

func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
