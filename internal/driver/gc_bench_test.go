package driver_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// BenchmarkGCCollect is the collector's cost per replaced object: b.N
// overwrites of 64-byte objects (the scale run's aging) are made outside
// the timer, then one GCProcess collects all of them. cpu-µs/record is the
// process's CPU time (getrusage) per collected record, put-cpu-µs the same
// for the overwrites (their ratio holds on a loaded machine better than
// either); run with -cpu 1.
// The store is an embedded one in $TMPDIR (keep it on tmpfs).
func BenchmarkGCCollect(b *testing.B) {
	b.StopTimer()
	ctx := context.Background()
	st := openStore(b, embedded.Options{Dir: b.TempDir()})
	defer st.Close()
	d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 11, GCMinWait: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if err := d.CreateBucket(ctx, "u", "gcbench", "", 0); err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 64)
	const keys = 1000
	put := func(i int) {
		key := fmt.Sprintf("k/%04d", i%keys)
		if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "gcbench", Key: key, Body: bytes.NewReader(body), Size: int64(len(body))}); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < keys; i++ {
		put(i)
	}
	p0 := cpuTime()
	for i := 0; i < b.N; i++ {
		put(i)
	}
	putCPU := cpuTime() - p0
	b.ReportAllocs()
	c0 := cpuTime()
	b.StartTimer()
	n, err := d.GCProcess(ctx, true)
	b.StopTimer()
	if err != nil || n != b.N {
		b.Fatalf("collected %d (%v), want %d", n, err, b.N)
	}
	gcCPU := cpuTime() - c0
	b.ReportMetric(float64(gcCPU)/float64(b.N)/1e3, "cpu-µs/record")
	b.ReportMetric(float64(putCPU)/float64(b.N)/1e3, "put-cpu-µs")
	b.ReportMetric(float64(gcCPU)/float64(putCPU), "gc/put")
}

// BenchmarkGCCollectShards collects the replaced data of b.N overwrites
// spread over a 1,021-shard bucket, on a store on disk (each shard's
// record clear is a synced write): records collected per second, what
// bounds the aging's GC backlog at scale (docs/bench/scale.md, stop 36).
func BenchmarkGCCollectShards(b *testing.B) {
	ctx := context.Background()
	st := openStore(b, embedded.Options{Dir: b.TempDir()})
	d, err := driver.New(ctx, driver.Options{Store: st, GCMinWait: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { d.Close(); st.Close() }()
	if err := d.CreateBucket(ctx, "o", "gcb", "", 1021); err != nil {
		b.Fatal(err)
	}
	body := []byte("x")
	for range 2 { // the second round replaces the first: b.N records
		for i := range b.N {
			if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "gcb", Key: fmt.Sprintf("k%07d", i), Body: bytes.NewReader(body), Size: 1}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	t0 := time.Now()
	n, err := d.GCProcess(ctx, true)
	if err != nil || n < b.N {
		b.Fatalf("collected %d of %d: %v", n, b.N, err)
	}
	b.ReportMetric(float64(n)/time.Since(t0).Seconds(), "records/s")
}
