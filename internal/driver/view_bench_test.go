package driver_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/cairn-s3/cairn/internal/driver"
)

// BenchmarkPutIndexView is the driver's 4 KiB PUT, 16 at a time, into a
// bucket with and without the ordered index view (the view is one more
// key per index write): cpu-µs/op is the process's CPU per PUT, which
// holds on a loaded machine. Run with -cpu 1.
func BenchmarkPutIndexView(b *testing.B) {
	for _, view := range []bool{false, true} {
		b.Run(map[bool]string{false: "merge", true: "view"}[view], func(b *testing.B) {
			ctx := context.Background()
			d := newDriverOpts(b, driver.Options{NoIndexView: !view})
			if err := d.CreateBucket(ctx, "u", "bench-v", "", 0); err != nil {
				b.Fatal(err)
			}
			body := make([]byte, 4096)
			var wg sync.WaitGroup
			next := make(chan int)
			for w := 0; w < 16; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						in := driver.PutObjectInput{Bucket: "bench-v", Key: fmt.Sprintf("o/%016x", uint64(i)*0x9e3779b97f4a7c15), Body: bytes.NewReader(body), Size: 4096}
						if _, err := d.PutObject(ctx, in); err != nil {
							b.Error(err)
						}
					}
				}()
			}
			b.ReportAllocs()
			c0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				next <- i
			}
			close(next)
			wg.Wait()
			b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/1e3, "cpu-µs/op")
		})
	}
}
