package server

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// TestOrphanJobLease: of two gateways' jobs, one takes the interval's
// lease and the other finds it busy; the holder's scan removes an orphan.
func TestOrphanJobLease(t *testing.T) {
	ctx := context.Background()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: "/d", FS: vfs.NewMem(), Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := driver.New(ctx, driver.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	logIO, err := st.IOContext(ctx, driver.PoolLog)
	if err != nil {
		t.Fatal(err)
	}
	// Data whose bucket is gone: an orphan.
	if err := d.DataIO().Operate(ctx, "tag0_1", objstore.NewWriteOp().WriteFull([]byte("x")).SetXattr("cairn.owner", []byte("gone/k"))); err != nil {
		t.Fatal(err)
	}
	job := func(owner string) *orphanJob {
		return &orphanJob{d: d, io: logIO.WithNamespace(orphanNS), every: time.Hour, minAge: 0, owner: owner, log: slog.Default()}
	}
	a, b := job("gw-a"), job("gw-b")
	if !a.take(ctx) {
		t.Fatal("first gateway did not get the lease")
	}
	if b.take(ctx) || a.take(ctx) {
		t.Fatal("the lease was taken twice within one interval")
	}
	// A job whose lease is free scans at its first tick.
	j := job("gw-a")
	j.io, j.tick = logIO.WithNamespace("gc-test"), 10*time.Millisecond
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); j.run(rctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		op := objstore.NewReadOp()
		s := op.Stat()
		if err := d.DataIO().OperateRead(ctx, "tag0_1", op); err != nil {
			t.Fatal(err)
		}
		if !s.Exists {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the scan did not remove the orphan")
		}
		time.Sleep(20 * time.Millisecond) // polling the outcome, not a sync
	}
}
