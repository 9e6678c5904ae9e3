package accesslog

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// BenchmarkPutLogging is the driver-level cost of bucket logging on a 4 KiB
// PUT, on disk (real syncs), 16 concurrent writers as the workload bench
// uses: off, standard (record buffered), journal (the PUT's syncs
// deferred, the record appended and synced after it, as the response hook
// does).
func BenchmarkPutLogging(b *testing.B) {
	for _, mode := range []string{"off", driver.LoggingStandard, driver.LoggingJournal} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			reg := objstore.NewRegistry()
			cls.RegisterAll(reg)
			bucketindex.Register(reg)
			st, err := embedded.Open(embedded.Options{Dir: b.TempDir(), FS: vfs.Default, Classes: reg})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			d, err := driver.New(ctx, driver.Options{Store: st, GCMinWait: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			for _, bk := range []string{"src", "logs"} {
				if err := d.CreateBucket(ctx, "alice", bk, "", 0); err != nil {
					b.Fatal(err)
				}
			}
			if err := d.UpdateInstance(ctx, "logs", func(inst *driver.Instance) error {
				inst.Access.Policy = fmt.Sprintf(allowPolicy, "", "src")
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			l, err := New(Options{Driver: d, IO: d.LogIO(), BootID: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			l.Start()
			defer l.Close(ctx)
			if mode != "off" {
				if err := l.Put(ctx, "src", &driver.BucketLogging{TargetBucket: "logs", Type: mode}, false); err != nil {
					b.Fatal(err)
				}
			}
			body := bytes.Repeat([]byte("x"), 4096)
			var n atomic.Int64
			b.SetParallelism(8) // 16 goroutines on 2 cores
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := fmt.Sprint("k", n.Add(1))
					pctx := ctx
					if mode == driver.LoggingJournal {
						pctx = l.DeferSyncs(ctx) // as the response hook runs it
					}
					info, err := d.PutObject(pctx, driver.PutObjectInput{Bucket: "src", Key: key, Body: bytes.NewReader(body), Size: 4096})
					if err != nil {
						b.Error(err)
						return
					}
					if cfg, inst := l.Enabled(ctx, "src"); cfg != nil {
						r := &Record{BucketOwner: "alice", Bucket: "src", Time: time.Now(), Operation: "REST.PUT.OBJECT", Key: key,
							ObjectSize: 4096, ETag: info.ETag, RequestURI: "PUT /src/" + key + " HTTP/1.1", HTTPStatus: 200}
						if err := l.Log(pctx, inst, cfg, r); err != nil {
							b.Error(err)
							return
						}
					}
				}
			})
		})
	}
}
