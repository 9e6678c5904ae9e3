package driver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// BenchmarkPutObjectDeep is the driver's 4 KiB PUT on a store that already
// holds many objects, so pebble's point reads of a new key pass several
// LSM levels (issue 24's fill slope). The store lives in
// $CAIRN_BENCH_DEEP_DIR (on tmpfs: keep it off the disk other benchmarks
// use) and is filled once with $CAIRN_BENCH_DEEP_OBJECTS objects (default
// 1,500,000): a data object of 64 bytes each and its index entry, written
// in batches straight to the shards (the shard stats do not count them, so
// no reshard starts). cpu-µs/op is the process's CPU time per PUT
// (getrusage, pebble's compactions included), gets/op pebble point reads.
func BenchmarkPutObjectDeep(b *testing.B) {
	dir := os.Getenv("CAIRN_BENCH_DEEP_DIR")
	if dir == "" {
		b.Skip("CAIRN_BENCH_DEEP_DIR not set")
	}
	n := benchEnvInt(b, "CAIRN_BENCH_DEEP_OBJECTS", 1_500_000)
	ctx := context.Background()
	st, d := openDeep(b, embedded.Options{Dir: dir}, n)
	const bucket = "deep"
	body := make([]byte, 4096)
	var seq atomic.Int64
	run := time.Now().UnixNano()
	gets := func() uint64 {
		if pg, ok := any(st).(interface{ PointGets() uint64 }); ok {
			return pg.PointGets()
		}
		return 0
	}
	b.ReportAllocs()
	b.SetParallelism(16) // with -cpu 1: 16 PUTs at a time, as warp does
	c0, g0 := cpuTime(), gets()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := fmt.Sprintf("p/%x/%d", run, seq.Add(1))
			if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: bucket, Key: key, Body: bytes.NewReader(body), Size: 4096}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/1e3, "cpu-µs/op")
	b.ReportMetric(float64(gets()-g0)/float64(b.N), "gets/op")
}

// fillDeep creates the bucket and n objects of 64 bytes in it.
func fillDeep(b *testing.B, ctx context.Context, st objstore.Store, d *driver.Driver, bucket string, n int) {
	if _, err := d.CreateUser(ctx, driver.User{ID: "u"}); err != nil {
		b.Fatal(err)
	}
	if err := d.CreateBucket(ctx, "u", bucket, "", 0); err != nil {
		b.Fatal(err)
	}
	inst, err := d.Instance(ctx, bucket)
	if err != nil {
		b.Fatal(err)
	}
	x := driver.IndexFor(d, inst)
	data, err := st.IOContext(ctx, driver.PoolData)
	if err != nil {
		b.Fatal(err)
	}
	const batch = 1000
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	work := make(chan int)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := make([]byte, 64)
			for from := range work {
				perShard := map[string][]objstore.KV{}
				for i := from; i < min(from+batch, n); i++ {
					key := fmt.Sprintf("o/%016x", uint64(i)*0x9e3779b97f4a7c15)
					tag := "fill_" + strconv.Itoa(i)
					op := objstore.NewWriteOp().WriteFull(body).SetXattr("cairn.owner", []byte(inst.ID+"/"+key))
					op.DeferSync = true
					if err := data.Operate(ctx, tag, op); err != nil {
						errs <- err
						return
					}
					e := bucketindex.Entry{Key: key, Size: 64, ETag: "e", ModTime: time.Unix(0, 0).UTC(), Owner: "u", Tag: tag,
						Manifest: bucketindex.Manifest{Runs: []bucketindex.Run{{Prefix: tag, Size: 64, StripeSize: driver.StripeSize}}}}
					v, _ := json.Marshal(e)
					oid := x.ShardFor(key)
					perShard[oid] = append(perShard[oid], objstore.KV{Key: key, Value: v})
				}
				for oid, kvs := range perShard {
					if err := x.IO.Operate(ctx, oid, objstore.NewWriteOp().SetOmap(kvs...)); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	start := time.Now()
	for from := 0; from < n; from += batch {
		select {
		case err := <-errs:
			b.Fatal(err)
		case work <- from:
		}
		if from%(100*batch) == 0 {
			b.Logf("fill: %d objects, %v", from, time.Since(start).Round(time.Second))
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchEnvInt is the integer in environment variable name, or def when it
// is unset; a malformed value fails the benchmark.
func benchEnvInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return n
}

// openDeep opens the deep benchmarks' store with o and a driver on it,
// filling bucket "deep" with n objects (fillDeep) unless it exists; both
// close when b ends.
func openDeep(b *testing.B, o embedded.Options, n int) (*embedded.Store, *driver.Driver) {
	ctx := context.Background()
	st := openStore(b, o)
	d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 11, GCMinWait: -1})
	if err != nil {
		st.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close(); st.Close() })
	if _, err := d.Instance(ctx, "deep"); err != nil {
		fillDeep(b, ctx, st, d, "deep", n)
	}
	return st, d
}
