package bucketindex_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	json "github.com/goccy/go-json"
)

// BenchmarkListPage times one 1,000-key page of Index.List, of the
// driver's path (Index.NewIter + Next) and of Index.ListVersions, from the
// start, under a middle
// prefix and after a mid-bucket marker, on the embedded store on disk
// (under TMPDIR) holding the same CAIRN_LIST_BENCH_ENTRIES entries
// (default 1,000,000) spread over 11 to 1021 shards. Keys are the scale
// benchmark's (o/<16 hex digits>); entries are written with the reshard
// copy path, 1,000 per class call, so a fill takes seconds. Run with
// -cpu 1 (see docs/bench/scale.md, "List page vs shard count").
func BenchmarkListPage(b *testing.B) {
	n := 1_000_000
	if v, _ := strconv.Atoi(os.Getenv("CAIRN_LIST_BENCH_ENTRIES")); v > 0 {
		n = v
	}
	for _, shards := range []int{11, 47, 127, 307, 1021} {
		b.Run(fmt.Sprintf("shards=%d", shards), func(b *testing.B) {
			ix := fillListIndex(b, shards, n)
			ix.Layout.View = false // the merge over shards
			cases := []struct{ name, after, prefix string }{
				{"start", "", ""},
				{"prefix", "", "o/8"},
				{"token", "o/4", ""},
			}
			ctx := context.Background()
			for _, c := range cases {
				b.Run(c.name+"/list", func(b *testing.B) {
					b.ReportAllocs()
					defer reportCPU(b)()
					for b.Loop() {
						es, more, err := ix.List(ctx, c.after, c.prefix, 1000)
						if err != nil || len(es) != 1000 || !more {
							b.Fatalf("%d entries, more %v: %v", len(es), more, err)
						}
					}
				})
				b.Run(c.name+"/versions", func(b *testing.B) {
					b.ReportAllocs()
					defer reportCPU(b)()
					for b.Loop() {
						// The entries are legacy (unversioned): listed as
						// null versions.
						vs, more, err := ix.ListVersions(ctx, bucketindex.VersionMark{Key: c.after}, c.prefix, 1000)
						if err != nil || len(vs) != 1000 || !more {
							b.Fatalf("%d versions, more %v: %v", len(vs), more, err)
						}
					}
				})
				b.Run(c.name+"/iter", func(b *testing.B) {
					b.ReportAllocs()
					defer reportCPU(b)()
					for b.Loop() {
						// As driver.ListObjects without a delimiter.
						it, err := ix.NewIter(ctx, c.after, c.prefix, 1000)
						if err != nil {
							b.Fatal(err)
						}
						for i := 0; i < 1000; i++ {
							if _, ok, err := it.Next(ctx); !ok || err != nil {
								b.Fatalf("entry %d: %v %v", i, ok, err)
							}
						}
						if err := it.Close(); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// fillListIndex opens a store under TMPDIR (removed when b ends) with one
// bucket index of shards shards holding n entries.
func fillListIndex(b *testing.B, shards, n int) bucketindex.Index {
	b.Helper()
	dir, err := os.MkdirTemp("", "listbench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	reg := objstore.NewRegistry()
	bucketindex.Register(reg)
	// CAIRN_LIST_BENCH_TABLE_KB shrinks pebble's tables, so the small
	// store has as many tables per shard as a large one (at the scale
	// run's 5M objects, 47 shards and ~3 GB of LSM, a shard's entries
	// span tables of their own on the lower levels).
	kb, _ := strconv.Atoi(os.Getenv("CAIRN_LIST_BENCH_TABLE_KB"))
	st, err := embedded.Open(embedded.Options{Dir: dir, Classes: reg, TargetFileSize: int64(kb) << 10})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ctx := context.Background()
	if err := st.CreatePool(ctx, "idx"); err != nil {
		b.Fatal(err)
	}
	io, _ := st.IOContext(ctx, "idx")
	// With the ordered view: the copy path's writes keep it too.
	ix := bucketindex.Index{IO: io, BucketID: "7f3c2a1e-bench.1", Layout: bucketindex.Layout{NumShards: shards, View: true}}
	if err := ix.Init(ctx); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	batches := make([][]objstore.KV, shards)
	flush := func(s int) {
		if err := ix.CopyIn(ctx, s, 0, batches[s]); err != nil {
			b.Fatal(err)
		}
		batches[s] = batches[s][:0]
	}
	z := uint64(0x9e3779b97f4a7c15)
	for i := 0; i < n; i++ {
		z = splitmix(z)
		key := fmt.Sprintf("o/%016x", z)
		v, err := json.Marshal(benchEntry(key, i))
		if err != nil {
			b.Fatal(err)
		}
		s := bucketindex.ShardOf(key, shards)
		batches[s] = append(batches[s], objstore.KV{Key: key, Value: v})
		if len(batches[s]) == 1000 {
			flush(s)
		}
	}
	for s := range batches {
		if len(batches[s]) > 0 {
			flush(s)
		}
	}
	if err := objstore.Sync(ctx, io); err != nil {
		b.Fatal(err)
	}
	// Let compactions settle, so they do not bill the pages' CPU time:
	// until there is no debt, or (small tables keep some debt that no
	// compaction pays) none has run for a second.
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
	b.Logf("filled %d entries on %d shards in %s; LSM %+v", n, shards, time.Since(t0).Round(time.Millisecond), st.LSMStats())
	return ix
}

// reportCPU reports the process's CPU time (user + system) per op, which
// stays meaningful on a loaded machine where ns/op (wall time) does not.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func splitmix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// benchEntry is an entry as a plain PUT of a small object links it.
func benchEntry(key string, i int) bucketindex.Entry {
	tag := fmt.Sprintf("7f3c2a1e-bench.1_%016x", uint64(i)*0x9e3779b97f4a7c15)
	return bucketindex.Entry{
		Key: key, Size: 4096, ETag: fmt.Sprintf("%032x", uint64(i)), Tag: tag,
		ModTime: time.Unix(1764150000+int64(i), 0).UTC(), Owner: "testuser",
		Manifest: bucketindex.Manifest{Runs: []bucketindex.Run{{Prefix: tag, Size: 4096, StripeSize: 4 << 20}}},
		Meta:     json.RawMessage(`{"ct":"application/octet-stream"}`),
	}
}

// BenchmarkListShardCost times the driver's ordered page (Index.NewIter
// sized by PageSize, then 1,000 Next calls, as driver.ListObjects without
// a delimiter) after a random start-after, on the same
// CAIRN_LIST_BENCH_ENTRIES entries (default 1,000,000) over 11 to 401
// shards: the slope of cpu-ns/op over the shard count is what one more
// shard costs a page (issue 24 item 3; docs/design/listing.md). Run with
// -cpu 1, and with CAIRN_LIST_BENCH_TABLE_KB=256 for a large store's
// table layout. "merge" reads every shard, "view" the bucket's ordered
// view (the same store).
func BenchmarkListShardCost(b *testing.B) {
	n := 1_000_000
	if v, _ := strconv.Atoi(os.Getenv("CAIRN_LIST_BENCH_ENTRIES")); v > 0 {
		n = v
	}
	ctx := context.Background()
	for _, shards := range []int{11, 47, 101, 211, 401} {
		b.Run(fmt.Sprintf("shards=%d", shards), func(b *testing.B) {
			filled := fillListIndex(b, shards, n)
			for _, view := range []bool{false, true} {
				ix := filled
				ix.Layout.View = view
				b.Run(map[bool]string{false: "merge", true: "view"}[view], func(b *testing.B) { benchPages(b, ctx, ix, nil) })
			}
		})
	}
}

// benchPages lists 1,000-key pages after random start-afters, recording
// each page's latency in lat when it is not nil.
func benchPages(b *testing.B, ctx context.Context, ix bucketindex.Index, lat *[]time.Duration) {
	z := uint64(42)
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		z = splitmix(z)
		// Below the top of the key space, so a page is full.
		after := fmt.Sprintf("o/%016x", z>>1)
		t0 := time.Now()
		it, err := ix.NewIter(ctx, after, "", 1000)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < 1000; i++ {
			if _, ok, err := it.Next(ctx); !ok || err != nil {
				b.Fatalf("entry %d after %s: %v %v", i, after, ok, err)
			}
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
		if lat != nil {
			*lat = append(*lat, time.Since(t0))
		}
	}
}

// BenchmarkListUnderWrites times 1,000-key pages after random start-afters
// while 16 writers link entries as fast as they can (synced, as PUTs do),
// on CAIRN_LIST_BENCH_ENTRIES entries (default 200,000) over 11 shards on
// disk (TMPDIR): "merge" reads every shard, "view" the ordered view.
// Reports the pages' median latency (p50-ms), which includes waiting for
// the syncs of the writes a page saw, beside CPU per page.
func BenchmarkListUnderWrites(b *testing.B) {
	n := 200_000
	if v, _ := strconv.Atoi(os.Getenv("CAIRN_LIST_BENCH_ENTRIES")); v > 0 {
		n = v
	}
	ctx := context.Background()
	filled := fillListIndex(b, 11, n)
	for _, view := range []bool{false, true} {
		ix := filled
		ix.Layout.View = view
		b.Run(map[bool]string{false: "merge", true: "view"}[view], func(b *testing.B) {
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := 0; w < 16; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					z := uint64(w + 1000)
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						z = splitmix(z)
						e := benchEntry(fmt.Sprintf("o/%016x", z), i)
						if _, err := ix.Link(ctx, e, bucketindex.LinkCond{}); err != nil {
							b.Error(err)
							return
						}
					}
				}(w)
			}
			var lat []time.Duration
			benchPages(b, ctx, ix, &lat)
			close(stop)
			wg.Wait()
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			}
		})
	}
}

// BenchmarkVersionsDelimiter times a version listing's page of 1,000
// common prefixes (the keys' first three hex digits, o/xxx) over
// CAIRN_LIST_BENCH_ENTRIES legacy entries (default 300,000) on 11 and 101
// shards, after a random marker: "restart" merges every shard again after
// each prefix (ListVersions from the prefix's end, as the driver did),
// "iter" skips with one VersionIter (only the cursors whose page ends
// inside the prefix read again). Run with -cpu 1.
func BenchmarkVersionsDelimiter(b *testing.B) {
	n := 300_000
	if v, _ := strconv.Atoi(os.Getenv("CAIRN_LIST_BENCH_ENTRIES")); v > 0 {
		n = v
	}
	ctx := context.Background()
	for _, shards := range []int{11, 101} {
		b.Run(fmt.Sprintf("shards=%d", shards), func(b *testing.B) {
			ix := fillListIndex(b, shards, n)
			marker := func(z uint64) string { return fmt.Sprintf("o/%03x\xff", z%0x900) }
			b.Run("restart", func(b *testing.B) {
				z := uint64(42)
				b.ReportAllocs()
				defer reportCPU(b)()
				for b.Loop() {
					z = splitmix(z)
					mark := bucketindex.VersionMark{Key: marker(z)}
					for cps := 0; cps < 1000; cps++ {
						vs, _, err := ix.ListVersions(ctx, mark, "", 100)
						if err != nil || len(vs) == 0 {
							b.Fatalf("prefix %d: %d versions, %v", cps, len(vs), err)
						}
						mark = bucketindex.VersionMark{Key: vs[0].Key[:5] + "\xff"}
					}
				}
			})
			b.Run("iter", func(b *testing.B) {
				z := uint64(42)
				b.ReportAllocs()
				defer reportCPU(b)()
				for b.Loop() {
					z = splitmix(z)
					it, err := ix.NewVersionIter(ctx, bucketindex.VersionMark{Key: marker(z)}, "", 100)
					if err != nil {
						b.Fatal(err)
					}
					for cps := 0; cps < 1000; cps++ {
						k, ok := it.Peek()
						if !ok {
							b.Fatalf("prefix %d: end", cps)
						}
						if err := it.SkipPast(ctx, k[:5]+"\xff"); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		})
	}
}
