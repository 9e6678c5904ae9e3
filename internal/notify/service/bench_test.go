package service

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

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
