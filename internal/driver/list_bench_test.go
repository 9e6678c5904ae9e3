package driver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// BenchmarkListObjects times the driver's ListObjects page of 1,000 keys
// (issue 24 item 3: CPU per listed key) over a bucket of
// CAIRN_LIST_BENCH_ENTRIES objects (default 300,000) under o/ plus 32,000
// under d/<4 digits>/ (2,000 common prefixes of 16 keys), listed from its
// ordered index view, on an embedded store under TMPDIR (or a kept one in
// CAIRN_LIST_BENCH_DIR, filled once) with a block cache of
// CAIRN_LIST_BENCH_CACHE_MB (default 8) MiB, much smaller than the view,
// so blocks miss as at scale. Pages: "start", "token" (a random
// start-after, as the scale benchmark's continuation), "prefix" (o/8) and
// "delimiter" (d/ with "/" after a random marker: 1,000 common prefixes).
// cpu-µs/op is the process's CPU per page (getrusage): run with -cpu 1.
func BenchmarkListObjects(b *testing.B) {
	n := 300_000
	if v, _ := strconv.Atoi(os.Getenv("CAIRN_LIST_BENCH_ENTRIES")); v > 0 {
		n = v
	}
	cacheMB := 8
	if v, _ := strconv.Atoi(os.Getenv("CAIRN_LIST_BENCH_CACHE_MB")); v > 0 {
		cacheMB = v
	}
	dir := os.Getenv("CAIRN_LIST_BENCH_DIR")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "listobjects"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	ctx := context.Background()
	st := openStore(b, embedded.Options{Dir: dir, CacheSize: int64(cacheMB) << 20})
	b.Cleanup(func() { st.Close() })
	d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 11, GCMinWait: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	const bucket = "listbench"
	if _, err := d.Instance(ctx, bucket); err != nil {
		fillListBucket(b, ctx, st, d, bucket, n)
	}
	cases := []struct {
		name              string
		prefix, delimiter string
		after             func(z uint64) string
	}{
		{"start", "", "", func(uint64) string { return "" }},
		// Below the top of o/, so a page is full.
		{"token", "", "", func(z uint64) string { return fmt.Sprintf("o/%016x", z>>1) }},
		{"prefix", "o/8", "", func(uint64) string { return "" }},
		{"delimiter", "d/", "/", func(z uint64) string { return fmt.Sprintf("d/%04d/", z%900) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			z := uint64(42)
			keys := 0
			b.ReportAllocs()
			c0 := cpuTime()
			for b.Loop() {
				z = splitmix(z)
				lr, err := d.ListObjects(ctx, driver.ListObjectsInput{Bucket: bucket, Prefix: c.prefix, Delimiter: c.delimiter, StartAfter: c.after(z), MaxKeys: 1000})
				if got := len(lr.Objects) + len(lr.CommonPrefixes); err != nil || got != 1000 || !lr.IsTruncated {
					b.Fatalf("%d entries, truncated %v: %v", got, lr.IsTruncated, err)
				}
				keys += 1000
			}
			cpu := float64(cpuTime() - c0)
			b.ReportMetric(cpu/float64(b.N)/1e3, "cpu-µs/op")
			b.ReportMetric(cpu/float64(keys), "cpu-ns/key")
		})
	}
}

// fillListBucket creates the bucket and its index entries (as a plain PUT
// of 4 KiB links them; no data objects: a listing reads none), written
// straight to the shards, which keep the view.
func fillListBucket(b *testing.B, ctx context.Context, st *embedded.Store, d *driver.Driver, bucket string, n int) {
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
	t0 := time.Now()
	perShard := map[string][]objstore.KV{}
	add := func(key string, i int) {
		tag := fmt.Sprintf("%s_%016x", inst.ID, uint64(i)*0x9e3779b97f4a7c15)
		e := bucketindex.Entry{
			Key: key, Size: 4096, ETag: fmt.Sprintf("%032x", uint64(i)), Tag: tag, Seq: uint64(i + 1),
			ModTime: time.Unix(1764150000+int64(i), 123456789).UTC(), Owner: "u",
			Manifest: bucketindex.Manifest{Runs: []bucketindex.Run{{Prefix: tag, Size: 4096, StripeSize: driver.StripeSize}}},
			Meta:     json.RawMessage(`{"ct":"binary/octet-stream","ck":{"CRC64NVME":"AAAAAAAAAAA="},"ckt":"FULL_OBJECT"}`),
		}
		v, err := json.Marshal(e)
		if err != nil {
			b.Fatal(err)
		}
		oid := x.ShardFor(key)
		perShard[oid] = append(perShard[oid], objstore.KV{Key: key, Value: v})
		if len(perShard[oid]) == 1000 {
			if err := x.IO.Operate(ctx, oid, objstore.NewWriteOp().SetOmap(perShard[oid]...)); err != nil {
				b.Fatal(err)
			}
			perShard[oid] = perShard[oid][:0]
		}
	}
	z := uint64(0x9e3779b97f4a7c15)
	for i := 0; i < n; i++ {
		z = splitmix(z)
		add(fmt.Sprintf("o/%016x", z), i)
	}
	for i := 0; i < 32_000; i++ {
		add(fmt.Sprintf("d/%04d/%016x", i%2000, uint64(i)*0x9e3779b97f4a7c15), n+i)
	}
	for oid, kvs := range perShard {
		if len(kvs) > 0 {
			if err := x.IO.Operate(ctx, oid, objstore.NewWriteOp().SetOmap(kvs...)); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := objstore.Sync(ctx, x.IO); err != nil {
		b.Fatal(err)
	}
	// Let compactions settle, so they do not bill the pages' CPU: until
	// there is no debt, or none has run for a second (some debt is never
	// paid).
	idle, last := 0, -1
	for end := time.Now().Add(5 * time.Minute); time.Now().Before(end) && idle < 10; time.Sleep(100 * time.Millisecond) {
		l := st.LSMStats()
		if l.DebtBytes == 0 && l.CompactionsRunning == 0 {
			break
		}
		if l.CompactionsRunning == 0 && int(l.Compactions) == last {
			idle++
		} else {
			idle = 0
		}
		last = int(l.Compactions)
	}
	b.Logf("filled %d entries in %s; LSM %+v", n+32_000, time.Since(t0).Round(time.Millisecond), st.LSMStats())
}

func splitmix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
