package clstest

import (
	"errors"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/lock"
	"github.com/cairn-s3/cairn/internal/cls/version"
	"github.com/cairn-s3/cairn/internal/objstore"
)

func is(t *testing.T, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

func testLock(t *testing.T, e *env) {
	a := lock.Options{Name: "lease", Type: lock.Exclusive, Cookie: "ca", Locker: "gw-a", Duration: 30 * time.Second}
	b := lock.Options{Name: "lease", Type: lock.Exclusive, Cookie: "cb", Locker: "gw-b", Duration: 30 * time.Second}
	is(t, lock.Lock(e.ctx, e.io, "o", a), nil) // creates the object
	is(t, lock.Lock(e.ctx, e.io, "o", a), objstore.ErrExists)
	is(t, lock.Lock(e.ctx, e.io, "o", b), objstore.ErrBusy)
	in, err := lock.GetInfo(e.ctx, e.io, "o", "lease")
	is(t, err, nil)
	if in.Type != lock.Exclusive || len(in.Lockers) != 1 || in.Lockers[0].Locker != "gw-a" ||
		!in.Lockers[0].Expiration.Equal(e.clock.Now().Add(30*time.Second)) {
		t.Fatalf("info %+v", in)
	}
	// Renewal extends from the renewal time.
	e.clock.Advance(20 * time.Second)
	ar := a
	ar.Renew = true
	is(t, lock.Lock(e.ctx, e.io, "o", ar), nil)
	e.clock.Advance(20 * time.Second)
	assert := func(cookie string) error {
		op := objstore.NewReadOp()
		lock.AssertLocked(op, "lease", cookie, lock.Exclusive)
		return e.io.OperateRead(e.ctx, "o", op)
	}
	is(t, assert("ca"), nil)
	is(t, assert("cb"), objstore.ErrCanceled)
	// Expiry: the hold lapses at its expiration, on the injected clock.
	e.clock.Advance(10 * time.Second)
	is(t, assert("ca"), objstore.ErrCanceled)
	am := a
	am.MustRenew = true
	is(t, lock.Lock(e.ctx, e.io, "o", am), objstore.ErrNotFound)
	is(t, lock.Unlock(e.ctx, e.io, "o", "lease", "ca"), objstore.ErrNotFound)
	is(t, lock.Lock(e.ctx, e.io, "o", b), nil)
	is(t, lock.BreakLock(e.ctx, e.io, "o", "lease", "gw-a", "cb"), objstore.ErrNotFound)
	is(t, lock.BreakLock(e.ctx, e.io, "o", "lease", "gw-b", "cb"), nil)
	in, err = lock.GetInfo(e.ctx, e.io, "o", "lease")
	if err != nil || len(in.Lockers) != 0 {
		t.Fatalf("after break: %+v %v", in, err)
	}
	// Forever locks survive any clock jump and a restart.
	forever := lock.Options{Name: "f", Type: lock.Exclusive, Cookie: "c"}
	is(t, lock.Lock(e.ctx, e.io, "o", forever), nil)
	e.clock.Advance(1000 * time.Hour)
	e.reopen()
	op := objstore.NewReadOp()
	lock.AssertLocked(op, "f", "c", 0)
	is(t, e.io.OperateRead(e.ctx, "o", op), nil)
	names, err := lock.ListLocks(e.ctx, e.io, "o")
	if err != nil || len(names) != 1 || names[0] != "f" {
		t.Fatalf("list_locks %q %v", names, err)
	}
	is(t, lock.Unlock(e.ctx, e.io, "o", "f", "c"), nil)
	_, err = lock.GetInfo(e.ctx, e.io, "missing", "x")
	is(t, err, objstore.ErrNotFound)
}

func testLockShared(t *testing.T, e *env) {
	s := func(cookie, tag string) lock.Options {
		return lock.Options{Name: "s", Type: lock.Shared, Cookie: cookie, Tag: tag, Duration: time.Minute}
	}
	is(t, lock.Lock(e.ctx, e.io, "o", s("1", "t")), nil)
	is(t, lock.Lock(e.ctx, e.io, "o", s("2", "t")), nil)
	is(t, lock.Lock(e.ctx, e.io, "o", s("3", "u")), objstore.ErrBusy)
	is(t, lock.Lock(e.ctx, e.io, "o", lock.Options{Name: "s", Type: lock.Exclusive, Cookie: "x"}), objstore.ErrBusy)
	in, err := lock.GetInfo(e.ctx, e.io, "o", "s")
	if err != nil || in.Type != lock.Shared || in.Tag != "t" || len(in.Lockers) != 2 {
		t.Fatalf("info %+v %v", in, err)
	}
	op := objstore.NewReadOp()
	lock.AssertLocked(op, "s", "2", lock.Exclusive)
	is(t, e.io.OperateRead(e.ctx, "o", op), objstore.ErrCanceled)
	e.clock.Advance(time.Minute)
	is(t, lock.Lock(e.ctx, e.io, "o", lock.Options{Name: "s", Type: lock.Exclusive, Cookie: "x"}), nil)
}

// testLockFencing: an op guarded by a lease that lapsed (and was taken by
// another holder) changes nothing, not even the object's version.
func testLockFencing(t *testing.T, e *env) {
	old := lock.Options{Name: "lease", Type: lock.Exclusive, Cookie: "old", Duration: 10 * time.Second}
	is(t, lock.Lock(e.ctx, e.io, "o", old), nil)
	ok := objstore.NewWriteOp()
	lock.AssertLocked(ok, "lease", "old", lock.Exclusive)
	ok.SetOmap(objstore.KV{Key: "k1", Value: []byte("v")})
	is(t, e.io.Operate(e.ctx, "o", ok), nil)

	e.clock.Advance(11 * time.Second)
	is(t, lock.Lock(e.ctx, e.io, "o", lock.Options{Name: "lease", Type: lock.Exclusive, Cookie: "new", Duration: time.Minute}), nil)
	before := e.stat("o")
	op := objstore.NewWriteOp()
	lock.AssertLocked(op, "lease", "old", lock.Exclusive)
	op.SetOmap(objstore.KV{Key: "k2", Value: []byte("v")})
	op.RmOmapKeys("k1")
	op.Append([]byte("data"))
	version.AddInc(op)
	is(t, e.io.Operate(e.ctx, "o", op), objstore.ErrCanceled)
	after := e.stat("o")
	if after.Version != before.Version || after.Size != before.Size {
		t.Fatalf("fenced op changed the object: %+v → %+v", before, after)
	}
	if kv := e.omap("o"); len(kv) != 1 || kv[0].Key != "k1" {
		t.Fatalf("fenced op changed the omap: %v", kv)
	}
	// Guard after the writes in the op fences just as well.
	op = objstore.NewWriteOp()
	op.SetOmap(objstore.KV{Key: "k3", Value: nil})
	lock.AssertLocked(op, "lease", "old", 0)
	is(t, e.io.Operate(e.ctx, "o", op), objstore.ErrCanceled)
	if kv := e.omap("o"); len(kv) != 1 {
		t.Fatalf("late guard leaked a write: %v", kv)
	}
}

func testVersion(t *testing.T, e *env) {
	_, err := version.Read(e.ctx, e.io, "v")
	is(t, err, objstore.ErrNotFound)
	v1, err := version.Inc(e.ctx, e.io, "v")
	is(t, err, nil)
	if v1.Ver != 1 || v1.Tag == "" {
		t.Fatalf("inc: %+v", v1)
	}
	got, err := version.Read(e.ctx, e.io, "v")
	if err != nil || got != v1 {
		t.Fatalf("read %+v %v", got, err)
	}
	is(t, version.CheckVersion(e.ctx, e.io, "v", version.CondEQ, v1), nil)
	is(t, version.CheckVersion(e.ctx, e.io, "v", version.CondGT, v1), objstore.ErrCanceled)
	is(t, version.CheckVersion(e.ctx, e.io, "v", version.CondTagEQ, version.Version{Tag: "other"}), objstore.ErrCanceled)
	// A read-modify-write guarded by the version: the loser changes nothing.
	w := func(v version.Version, val string) error {
		op := objstore.NewWriteOp()
		version.AddInc(op, version.Check{Cond: version.CondEQ, Ver: v})
		op.WriteFull([]byte(val))
		return e.io.Operate(e.ctx, "v", op)
	}
	is(t, w(v1, "first"), nil)
	is(t, w(v1, "second"), objstore.ErrCanceled)
	op := objstore.NewReadOp()
	r := op.Read(0, 0)
	is(t, e.io.OperateRead(e.ctx, "v", op), nil)
	if string(r.Data) != "first" {
		t.Fatalf("data %q", r.Data)
	}
	is(t, version.Set(e.ctx, e.io, "v", version.Version{Ver: 100, Tag: "t"}), nil)
	e.reopen()
	v, err := version.Inc(e.ctx, e.io, "v", version.Check{Cond: version.CondGE, Ver: version.Version{Ver: 100}})
	if err != nil || v != (version.Version{Ver: 101, Tag: "t"}) {
		t.Fatalf("inc after set: %+v %v", v, err)
	}
}
