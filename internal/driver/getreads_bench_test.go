package driver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// BenchmarkGetObjectDeep is the driver's HEAD and GET (the whole body) of
// random 64-byte objects in a settled store of many, filled as
// BenchmarkPutObjectDeep's (fillDeep): $CAIRN_BENCH_GET_DIR (on tmpfs),
// filled once with $CAIRN_BENCH_DEEP_OBJECTS (default 200,000) objects over
// 11 shards, with small memtables and tables so that they sit in several
// levels. Runs that compare builds should each read a copy of one filled
// and settled directory (reads may trigger compactions).
// $CAIRN_BENCH_GET_CACHE_MB bounds pebble's block cache (default the
// store's), so that, as at scale, not every block stays cached.
// Sub-benchmarks: readonly/* before any write (the shards' metas not yet
// cached by a write, as after a restart), then, after a PUT to every shard
// (the scale run's PUTs keep them cached), head and get. cpu-µs/op is the
// process's CPU time per op (getrusage), gets/op pebble point reads.
func BenchmarkGetObjectDeep(b *testing.B) {
	dir := os.Getenv("CAIRN_BENCH_GET_DIR")
	if dir == "" {
		b.Skip("CAIRN_BENCH_GET_DIR not set")
	}
	n := benchEnvInt(b, "CAIRN_BENCH_DEEP_OBJECTS", 200_000)
	o := embedded.Options{Dir: dir, MemTableSize: 8 << 20, TargetFileSize: 512 << 10}
	if mb := benchEnvInt(b, "CAIRN_BENCH_GET_CACHE_MB", 0); mb > 0 {
		o.CacheSize = int64(mb) << 20
	}
	ctx := context.Background()
	st, d := openDeep(b, o, n)
	const bucket = "deep"
	// Compactions settled (none running or begun for a second), so they
	// are not in the figure.
	for last, quiet := int64(-1), 0; quiet < 20; time.Sleep(50 * time.Millisecond) {
		m := st.LSMStats()
		if m.CompactionsRunning == 0 && m.Compactions == last {
			quiet++
		} else {
			quiet = 0
		}
		last = m.Compactions
	}
	key := func() string { return fmt.Sprintf("o/%016x", uint64(rand.IntN(n))*0x9e3779b97f4a7c15) }
	head := func() error {
		_, err := d.HeadObject(ctx, bucket, key())
		return err
	}
	get := func() error {
		_, rc, err := d.GetObject(ctx, bucket, key(), nil)
		if err != nil {
			return err
		}
		defer rc.Close()
		if m, err := io.Copy(io.Discard, rc); err != nil || m != 64 {
			return fmt.Errorf("read %d bytes: %v", m, err)
		}
		return nil
	}
	run := func(name string, op func() error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			c0, g0 := cpuTime(), st.PointGets()
			for b.Loop() {
				if err := op(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/1e3, "cpu-µs/op")
			b.ReportMetric(float64(st.PointGets()-g0)/float64(b.N), "gets/op")
		})
	}
	run("readonly/head", head)
	run("readonly/get", get)
	inst, err := d.Instance(ctx, bucket)
	if err != nil {
		b.Fatal(err)
	}
	x := driver.IndexFor(d, inst)
	warm := map[string]bool{}
	for i := 0; len(warm) < 11 && i < 10000; i++ {
		k := "warm/" + strconv.Itoa(i)
		if s := x.ShardFor(k); !warm[s] {
			warm[s] = true
			if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: bucket, Key: k, Body: bytes.NewReader(make([]byte, 64)), Size: 64}); err != nil {
				b.Fatal(err)
			}
		}
	}
	run("head", head)
	run("get", get)
}
