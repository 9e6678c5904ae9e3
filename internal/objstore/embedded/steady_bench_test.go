package embedded_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// BenchmarkSteadyPut measures what a small PUT costs the store at steady
// state, compaction included: b.N PUTs (one in ten a DELETE) of random
// keys out of b.N/3 through the real driver on a real directory (run it
// with TMPDIR on tmpfs), then a settle that waits until pebble owes no
// compaction, so the CPU of the compactions the load caused is counted.
// CPU is the process's (getrusage: load on the machine does not inflate
// it); bytes are the store's counters. After the settle it times GETs and
// HEADs of random keys by CPU as well. The memtable is 4 MiB so that the
// load passes through several levels (a 64 MiB memtable needs ~16x the
// PUTs for the same shape).
//
//	go test -c -o emb.test ./internal/objstore/embedded
//	./emb.test -test.run '^$' -test.bench 'SteadyPut/size=4KiB/sep=off$' -test.benchtime 100000x
//
// The arms: sep=off|1KiB (Options.ValueSeparation), cc=2
// (Options.CompactionConcurrency); size=64B is the scale bench's objects.
func BenchmarkSteadyPut(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"4KiB", 4 << 10}, {"64B", 64}} {
		for _, arm := range []struct {
			name    string
			sep, cc int
		}{{"sep=off", -1, 1}, {"sep=1KiB", 1 << 10, 1}, {"sep=off,cc=2", -1, 2}, {"sep=1KiB,cc=2", 1 << 10, 2}} {
			b.Run("size="+size.name+"/"+arm.name, func(b *testing.B) {
				steadyPut(b, size.n, embedded.Options{ValueSeparation: arm.sep, CompactionConcurrency: arm.cc})
			})
		}
	}
}

var blobWait = flag.Duration("blobwait", 0, "BenchmarkSteadyPut: after the settle, wait this long for blob file rewrites before reading space amplification")

func steadyPut(b *testing.B, size int, opts embedded.Options) {
	ctx := driver.WithRequest(context.Background(), driver.RequestMeta{RequestID: "r", Principal: "alice"})
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	opts.Dir, opts.Classes, opts.MemTableSize = b.TempDir(), reg, 4<<20
	st, err := embedded.Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	d, err := driver.New(ctx, driver.Options{Store: st, GCMinWait: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if err := d.CreateBucket(ctx, "alice", "bkt", "", 0); err != nil {
		b.Fatal(err)
	}
	keys := max(b.N/3, 1)
	key := func(i int) string { return fmt.Sprintf("obj-%08d", i) }
	bodies := make([][]byte, 64) // random: compression must not flatter either arm
	for i := range bodies {
		bodies[i] = make([]byte, size)
		for j := range bodies[i] {
			bodies[i][j] = byte(rand.Uint32())
		}
	}
	c0, k0 := cpuNanos(b), st.LSMCounters()
	t0 := time.Now()
	var seq atomic.Int64
	b.ResetTimer()
	b.SetParallelism(8) // 16 closed-loop clients on 2 CPUs
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(uint64(seq.Add(1)), 7))
		for pb.Next() {
			k := key(r.IntN(keys))
			if r.IntN(10) == 0 {
				if err := d.DeleteObject(ctx, "bkt", k); err != nil && !errors.Is(err, driver.ErrNoSuchKey) {
					b.Error(err)
					return
				}
				continue
			}
			body := bodies[r.IntN(len(bodies))]
			if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: k, Body: bytes.NewReader(body), Size: int64(size)}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	load := time.Since(t0)
	c1 := cpuNanos(b)
	time.Sleep(time.Second) // the driver's GC of replaced data (due at once)
	settled, wait := settle(b, st, 10*time.Minute)
	c2, k2, ls := cpuNanos(b), st.LSMCounters(), st.LSMStats()
	n := float64(b.N)
	per := func(a, z uint64) float64 { return float64(z-a) / n }
	b.ReportMetric(float64(c2-c0)/n/1e3, "cpu-µs/op")
	b.ReportMetric(float64(c2-c1)/n/1e3, "settle-cpu-µs/op")
	b.ReportMetric(per(k0.WALBytes, k2.WALBytes), "wal-B/op")
	b.ReportMetric(per(k0.FlushedBytes, k2.FlushedBytes), "flushed-B/op")
	b.ReportMetric(per(k0.CompactedBytes, k2.CompactedBytes), "compacted-B/op")
	b.ReportMetric(per(k0.BlobFlushedBytes, k2.BlobFlushedBytes), "blob-flushed-B/op")
	b.ReportMetric(per(k0.BlobCompactedBytes, k2.BlobCompactedBytes), "blob-compacted-B/op")
	b.ReportMetric(per(k0.BlobRewrittenBytes, k2.BlobRewrittenBytes), "blob-rewritten-B/op")
	b.ReportMetric(wait.Seconds(), "settle-s")
	b.ReportMetric(load.Seconds(), "load-s")
	b.ReportMetric(float64(ls.TablesBytes+ls.BlobFileBytes)/1e6, "disk-MB")
	b.ReportMetric(float64(ls.BlobFileBytes)/1e6, "blob-MB")
	if ls.BlobLiveValueBytes > 0 {
		b.ReportMetric(float64(ls.BlobValueBytes)/float64(ls.BlobLiveValueBytes), "blob-space-amp")
	}
	b.ReportMetric(float64(ls.DebtBytes)/1e6, "debt-left-MB")
	b.ReportMetric(float64(ls.L0Sublevels), "l0-sublevels")
	if !settled {
		b.Errorf("compactions still running after %v", wait)
	}
	if *blobWait > 0 {
		// pebble picks blob file rewrites only when it schedules work (after
		// a flush or compaction), so a trickle of new 4 KiB objects (50/s)
		// keeps it looking, as a live gateway's writes would.
		body := bodies[0][:min(size, 4<<10)]
		for i, t1 := 0, time.Now(); time.Since(t1) < *blobWait; i++ {
			if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: fmt.Sprintf("trickle-%08d", i), Body: bytes.NewReader(body), Size: int64(len(body))}); err != nil {
				b.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		settle(b, st, 10*time.Minute)
		k3, ls3 := st.LSMCounters(), st.LSMStats()
		b.ReportMetric(float64(k3.BlobRewrittenBytes-k2.BlobRewrittenBytes)/1e6, "wait-rewritten-MB")
		b.ReportMetric(float64(ls3.TablesBytes+ls3.BlobFileBytes)/1e6, "wait-disk-MB")
		if ls3.BlobLiveValueBytes > 0 {
			b.ReportMetric(float64(ls3.BlobValueBytes)/float64(ls3.BlobLiveValueBytes), "wait-blob-space-amp")
		}
	}

	// Reads of a settled store, by CPU: GET (whole body) and HEAD.
	const reads = 20000
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, size)
	var found int
	c3 := cpuNanos(b)
	for range reads {
		_, body, err := d.GetObject(ctx, "bkt", key(r.IntN(keys)), nil)
		if errors.Is(err, driver.ErrNoSuchKey) {
			continue
		} else if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(body, buf); err != nil {
			b.Fatal(err)
		}
		body.Close()
		found++
	}
	c4 := cpuNanos(b)
	for range reads {
		if _, err := d.HeadObject(ctx, "bkt", key(r.IntN(keys))); err != nil && !errors.Is(err, driver.ErrNoSuchKey) {
			b.Fatal(err)
		}
	}
	c5 := cpuNanos(b)
	b.ReportMetric(float64(c4-c3)/reads/1e3, "get-cpu-µs/op")
	b.ReportMetric(float64(c5-c4)/reads/1e3, "head-cpu-µs/op")
	b.ReportMetric(float64(found)/reads, "get-hit")
}

// settle waits, up to max, until pebble has started no flush or
// compaction for 2 s and runs none. Not "until the debt is 0": pebble
// counts every L0 byte as debt while Lbase has data, yet leaves L0 alone
// below its compaction threshold (4 files), so a quiet store can owe
// megabytes forever.
func settle(b *testing.B, st *embedded.Store, max time.Duration) (bool, time.Duration) {
	t0 := time.Now()
	quiet, last := 0, int64(-1)
	for i := 0; time.Since(t0) < max; i++ {
		ls, c := st.LSMStats(), st.LSMCounters()
		if i%50 == 49 {
			b.Logf("settling: debt %d B, %d compactions running, flushes %d/%d", ls.DebtBytes, ls.CompactionsRunning, c.FlushesDone, c.FlushesBegun)
		}
		idle := ls.CompactionsRunning == 0 && c.FlushesBegun == c.FlushesDone && c.CompactionsBegun == c.CompactionsDone
		if n := c.CompactionsBegun + c.FlushesBegun; idle && n == last {
			if quiet++; quiet == 10 {
				return true, time.Since(t0)
			}
		} else {
			quiet, last = 0, n
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false, time.Since(t0)
}

func cpuNanos(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
