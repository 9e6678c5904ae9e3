package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/cls/lock"
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
		sc := &orphanScans{d: d, io: logIO.WithNamespace(orphanNS), owner: owner, lease: time.Minute}
		return &orphanJob{scans: sc, every: time.Hour, minAge: 0, log: slog.Default()}
	}
	a, b := job("gw-a"), job("gw-b")
	if !a.take(ctx, false) {
		t.Fatal("first gateway did not get the lease")
	}
	if b.take(ctx, false) || a.take(ctx, false) {
		t.Fatal("the lease was taken twice within one interval")
	}
	// A job whose lease is free scans at its first tick.
	j := job("gw-a")
	j.scans.io, j.tick = logIO.WithNamespace("gc-test"), 10*time.Millisecond
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

// orphanRig is a store on a clock the test moves, a driver, and n data
// objects whose bucket is gone (orphans).
type orphanRig struct {
	mu  sync.Mutex
	now time.Time
	d   *driver.Driver
	io  objstore.IOContext // the scans' lock namespace
}

func (r *orphanRig) clock() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

func (r *orphanRig) advance(d time.Duration) {
	r.mu.Lock()
	r.now = r.now.Add(d)
	r.mu.Unlock()
}

func (r *orphanRig) scans(owner string) *orphanScans {
	return &orphanScans{d: r.d, io: r.io, owner: owner, lease: time.Minute, now: r.clock}
}

// left counts the data objects still there.
func (r *orphanRig) left(t *testing.T) int {
	t.Helper()
	oids, _, err := r.d.DataIO().ListObjects(context.Background(), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	return len(oids)
}

func newOrphanRig(t *testing.T, n int) *orphanRig {
	t.Helper()
	ctx := context.Background()
	r := &orphanRig{now: time.Unix(1_700_000_000, 0)}
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: "/d", FS: vfs.NewMem(), Classes: reg, Now: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if r.d, err = driver.New(ctx, driver.Options{Store: st, Now: r.clock}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.d.Close() })
	logIO, err := st.IOContext(ctx, driver.PoolLog)
	if err != nil {
		t.Fatal(err)
	}
	r.io = logIO.WithNamespace(orphanNS)
	for i := range n {
		oid := fmt.Sprintf("tag%02d_1", i)
		if err := r.d.DataIO().Operate(ctx, oid, objstore.NewWriteOp().WriteFull([]byte("x")).SetXattr("cairn.owner", []byte("gone/k"))); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// TestOrphanScanRenewsItsLease: a scan that runs for many times its lease
// keeps it throughout (no second scan can start) and finishes its work.
func TestOrphanScanRenewsItsLease(t *testing.T) {
	ctx := context.Background()
	r := newOrphanRig(t, 20)
	a, b := r.scans("gw-a"), r.scans("gw-b")
	l, err := a.take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	rep, err := r.d.ScanOrphans(ctx, driver.OrphanOptions{Remove: true, Hold: func(ctx context.Context) error {
		// Each step of the scan takes a third of the lease and more.
		r.advance(25 * time.Second)
		steps++
		if lb, err := b.take(ctx); !errors.Is(err, objstore.ErrBusy) {
			if lb != nil {
				b.release(lb)
			}
			t.Fatalf("after %v of scanning a second scan could start (err %v)", time.Duration(steps)*25*time.Second, err)
		}
		return l.Hold(ctx)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed != 20 || r.left(t) != 0 {
		t.Fatalf("removed %d, %d left; want 20, 0", rep.Removed, r.left(t))
	}
	if time.Duration(steps)*25*time.Second < 10*time.Minute {
		t.Fatalf("the scan lasted only %d steps: the test proves nothing", steps)
	}
	a.release(l)
	if lb, err := b.take(ctx); err != nil {
		t.Fatalf("after the scan the lease stayed held: %v", err)
	} else {
		b.release(lb)
	}
}

// TestOrphanScanStopsWhenLeaseLost: a scanner stalled past its lease
// while another gateway took it over removes nothing more.
func TestOrphanScanStopsWhenLeaseLost(t *testing.T) {
	ctx := context.Background()
	r := newOrphanRig(t, 20)
	a, b := r.scans("gw-a"), r.scans("gw-b")
	l, err := a.take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	calls, removedBefore := 0, -1
	rep, err := a.scan(ctx, l, driver.OrphanOptions{Remove: true})
	if err != nil || rep.Removed != 20 {
		t.Fatalf("first scan: %+v, %v", rep, err)
	}
	for i := range 20 {
		if err := r.d.DataIO().Operate(ctx, fmt.Sprintf("tag%02d_1", i), objstore.NewWriteOp().WriteFull([]byte("x")).SetXattr("cairn.owner", []byte("gone/k"))); err != nil {
			t.Fatal(err)
		}
	}
	var lb *lock.Lease
	rep, err = r.d.ScanOrphans(ctx, driver.OrphanOptions{Remove: true, Hold: func(ctx context.Context) error {
		calls++
		if calls == 10 {
			// The scanner stalls past its lease; gw-b starts its own scan.
			r.advance(2 * time.Minute)
			var err error
			if lb, err = b.take(ctx); err != nil {
				t.Fatalf("the lapsed lease could not be taken: %v", err)
			}
			removedBefore = 20 - r.left(t)
		}
		return l.Hold(ctx)
	}})
	if !errors.Is(err, lock.ErrLost) {
		t.Fatalf("scan after losing its lease: %v, want lock.ErrLost", err)
	}
	if removedBefore < 0 || 20-r.left(t) != removedBefore || rep.Removed != removedBefore {
		t.Fatalf("removed %d (report %d) with %d removed when the lease was lost", 20-r.left(t), rep.Removed, removedBefore)
	}
	// The admin API refuses a scan while gw-b's runs.
	req := httptest.NewRequest(http.MethodDelete, "/admin/orphans?min-age=0s", nil)
	if err := adminOrphans(a, 0, httptest.NewRecorder(), req); !errors.Is(err, driver.ErrSlowDown) {
		t.Fatalf("orphans rm during another scan: %v, want SlowDown", err)
	}
	b.release(lb)
	if err := adminOrphans(a, 0, httptest.NewRecorder(), req); err != nil {
		t.Fatalf("orphans rm once the other scan ended: %v", err)
	}
	if n := r.left(t); n != 0 {
		t.Fatalf("%d orphans left after orphans rm", n)
	}
}
