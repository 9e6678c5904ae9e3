//go:build linux

package delivery

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	clsq "github.com/cairn-s3/cairn/internal/cls/queue"
	nq "github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// BenchmarkShardOps is the delivery's two store ops on a shard, alone and
// in the calling thread's CPU time (so other load on the machine does not
// count): list 32 entries after a marker, and remove_markers for those 32
// (the acknowledged batch of one pipelined exchange), and the same for 8
// and 128 entries, which splits an op's fixed cost from its cost per
// entry. Each round commits the entries first (not measured), so the
// memtable grows as it does under a stream. list-µs/op and remove-µs/op
// are per op.
// Run: go test ./internal/notify/delivery -run '^$' -bench ShardOps -cpu 1
func BenchmarkShardOps(b *testing.B) {
	for _, n := range []int{8, 32, 128} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) { benchShardOps(b, n) })
	}
}

func benchShardOps(b *testing.B, batch int) {
	e := newEnvOn(b, embedded.Options{Dir: b.TempDir(), FS: vfs.Default})
	tp := e.createTopic("ops", "http://127.0.0.1:1/", 1, nil)
	oid := nq.ShardOID(nq.Name("", tp.Name), 0)
	io := e.q.IO()
	data := benchRecord(b, 0)
	commit := func() {
		for range batch {
			r, err := e.q.Reserve(e.ctx, nq.Name("", tp.Name), 0, uint64(len(data)))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.Commit(e.ctx, data); err != nil {
				b.Fatal(err)
			}
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var listNs, rmNs int64
	marker := clsq.Marker("")
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		commit()
		b.StartTimer()
		t0 := threadCPU()
		res, err := clsq.List(e.ctx, io, oid, marker, batch)
		t1 := threadCPU()
		if err != nil || len(res.Entries) != batch {
			b.Fatalf("list: %d entries, %v", len(res.Entries), err)
		}
		ms := make([]clsq.Marker, len(res.Entries))
		for i, en := range res.Entries {
			ms[i] = en.Marker
		}
		t2 := threadCPU()
		n, err := clsq.RemoveMarkers(e.ctx, io, oid, ms...)
		t3 := threadCPU()
		if err != nil || n != batch {
			b.Fatalf("remove: %d, %v", n, err)
		}
		marker = res.Next
		listNs += t1 - t0
		rmNs += t3 - t2
	}
	b.ReportMetric(float64(listNs)/float64(b.N)/1e3, "list-µs/op")
	b.ReportMetric(float64(rmNs)/float64(b.N)/1e3, "remove-µs/op")
}

// threadCPU is the calling thread's CPU time in ns (the goroutine is
// locked to it).
func threadCPU() int64 {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		panic(fmt.Sprint("clock_gettime: ", errno))
	}
	return ts.Nano()
}

// BenchmarkStatsOp is the delivery scan's stats call on a shard whose
// first `removed` entries were delivered and removed (their deletions still
// in the memtable, as between compactions in a stream), with 8 live
// entries after them: from the queue's start (how the scan asked before
// round 10) and past the owner's bound (GetStatsAfter). stats-µs/op is the
// calling thread's CPU per call.
// Run: go test ./internal/notify/delivery -run '^$' -bench StatsOp -cpu 1
func BenchmarkStatsOp(b *testing.B) {
	for _, removed := range []int{1000, 10000} {
		for _, from := range []string{"start", "bound"} {
			b.Run(fmt.Sprintf("removed=%d/from=%s", removed, from), func(b *testing.B) { benchStatsOp(b, removed, from == "bound") })
		}
	}
}

func benchStatsOp(b *testing.B, removed int, bound bool) {
	e := newEnvOn(b, embedded.Options{Dir: b.TempDir(), FS: vfs.Default})
	tp := e.createTopic("stats", "http://127.0.0.1:1/", 1, nil)
	oid := nq.ShardOID(nq.Name("", tp.Name), 0)
	io := e.q.IO()
	data := benchRecord(b, 0)
	for range removed + 8 {
		r, err := e.q.Reserve(e.ctx, nq.Name("", tp.Name), 0, uint64(len(data)))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Commit(e.ctx, data); err != nil {
			b.Fatal(err)
		}
	}
	var after clsq.Marker
	for after == "" || removed > 0 {
		res, err := clsq.List(e.ctx, io, oid, after, min(removed, 500))
		if err != nil {
			b.Fatal(err)
		}
		ms := make([]clsq.Marker, len(res.Entries))
		for i, en := range res.Entries {
			ms[i] = en.Marker
		}
		if _, err := clsq.RemoveMarkers(e.ctx, io, oid, ms...); err != nil {
			b.Fatal(err)
		}
		after, removed = res.Next, removed-len(ms)
	}
	if !bound {
		after = ""
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ns int64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t0 := threadCPU()
		st, err := clsq.GetStatsAfter(e.ctx, io, oid, after)
		ns += threadCPU() - t0
		if err != nil || st.Entries != 8 || st.Oldest.IsZero() {
			b.Fatalf("stats %+v, %v", st, err)
		}
	}
	b.ReportMetric(float64(ns)/float64(b.N)/1e3, "stats-µs/op")
}
