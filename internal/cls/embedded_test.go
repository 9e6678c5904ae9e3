package cls_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/cls/clstest"
	"github.com/cairn-s3/cairn/internal/cls/guardlog"
	"github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestEmbedded runs the class suite against the embedded backend on an
// in-memory filesystem; reopening keeps the data and empties class caches.
func TestEmbedded(t *testing.T) {
	clstest.Run(t, func(t *testing.T, reg *objstore.Registry, now func() time.Time) func() objstore.Store {
		fs := vfs.NewMem()
		return func() objstore.Store {
			s, err := embedded.Open(embedded.Options{Dir: "/store", FS: fs, Classes: reg, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}

func memStore(b *testing.B) objstore.IOContext {
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	st, err := embedded.Open(embedded.Options{Dir: "/store", FS: vfs.NewMem(), Classes: reg})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ctx := context.Background()
	if err := st.CreatePool(ctx, "p"); err != nil {
		b.Fatal(err)
	}
	io, err := st.IOContext(ctx, "p")
	if err != nil {
		b.Fatal(err)
	}
	return io
}

// BenchmarkQueueReserveCommit is the per-PUT cost of a persistent
// notification: reserve, commit a 1 KiB event, with periodic removal.
func BenchmarkQueueReserveCommit(b *testing.B) {
	ctx := context.Background()
	io := memStore(b)
	if err := queue.Init(ctx, io, "q", 1<<40); err != nil {
		b.Fatal(err)
	}
	ev := make([]byte, 1024)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id, err := queue.Reserve(ctx, io, "q", 4096, 1)
		if err != nil {
			b.Fatal(err)
		}
		ms, err := queue.Commit(ctx, io, "q", id, ev)
		if err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 {
			if _, err := queue.RemoveUpTo(ctx, io, "q", ms[0]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLogAppend compares a guarded append with a plain one (in memory,
// so it measures CPU, not syncs).
func BenchmarkLogAppend(b *testing.B) {
	ctx := context.Background()
	data := make([]byte, 4096)
	b.Run("plain", func(b *testing.B) {
		io := memStore(b)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if i%100000 == 0 {
				b.StopTimer()
				if err := io.Operate(ctx, "l", objstore.NewWriteOp().Truncate(0)); err != nil && i > 0 {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			if err := io.Operate(ctx, "l", objstore.NewWriteOp().Append(data)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("guarded", func(b *testing.B) {
		io := memStore(b)
		if _, err := guardlog.Seal(ctx, io, "l", 1); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := guardlog.Append(ctx, io, "l", 1, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkQueueCommitOp is one deferred commit op as the gateway runs it
// (notify/queue runGroup): 16 commits of ~800-byte records and 16 refill
// reserves in one op, on reservations made beforehand. ns/op / 16 is the
// class and store CPU per event (in memory: no sync).
// "steps": a commit and a reserve step per event; "batch": one
// commit_batch call.
func BenchmarkQueueCommitOp(b *testing.B) {
	b.Run("steps", func(b *testing.B) { benchCommitOp(b, false) })
	b.Run("batch", func(b *testing.B) { benchCommitOp(b, true) })
}

func benchCommitOp(b *testing.B, batch bool) {
	const n = 16
	ctx := context.Background()
	io := memStore(b)
	if err := queue.Init(ctx, io, "q", 1<<40); err != nil {
		b.Fatal(err)
	}
	ids := make([]uint64, n)
	for i := range ids {
		id, err := queue.Reserve(ctx, io, "q", 4096, 1)
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = id
	}
	ev := make([]byte, 800)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if batch {
			op := objstore.NewWriteOp()
			cs := make([]queue.BatchCommit, n)
			for j, id := range ids {
				cs[j] = queue.BatchCommit{ID: id, Entries: [][]byte{ev}}
			}
			st := queue.AddCommitBatch(op, cs, n, 4096, 1)
			if err := io.Operate(ctx, "q", op); err != nil {
				b.Fatal(err)
			}
			ms, err := st.Markers()
			if err != nil {
				b.Fatal(err)
			}
			if ids, err = st.ReserveIDs(); err != nil || len(ids) != n {
				b.Fatal(err, len(ids))
			}
			if i%64 == 63 {
				if _, err := queue.RemoveUpTo(ctx, io, "q", ms[n-1][0]); err != nil {
					b.Fatal(err)
				}
			}
			continue
		}
		op := objstore.NewWriteOp()
		steps := make([]queue.CommitStep, n)
		for j, id := range ids {
			steps[j] = queue.AddCommit(op, id, ev)
		}
		refills := make([]queue.ReserveStep, n)
		for j := range refills {
			refills[j] = queue.AddReserve(op, 4096, 1)
		}
		if err := io.Operate(ctx, "q", op); err != nil {
			b.Fatal(err)
		}
		var last string
		for _, s := range steps {
			ms, err := s.Markers()
			if err != nil {
				b.Fatal(err)
			}
			last = ms[0]
		}
		for j, s := range refills {
			id, err := s.ID()
			if err != nil {
				b.Fatal(err)
			}
			ids[j] = id
		}
		if i%64 == 63 {
			if _, err := queue.RemoveUpTo(ctx, io, "q", last); err != nil {
				b.Fatal(err)
			}
		}
	}
}
