package embedded

import (
	"context"
	"errors"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/objstoretest"
)

// The meta cached after class ops must follow every plain op in between:
// a method and a version guard after a plain write, a removal and a
// recreate must see the object as it is.
func TestMetaCacheFollowsPlainWrites(t *testing.T) {
	ctx := context.Background()
	s := openMem(t, testRegistry())
	if err := s.CreatePool(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	io, err := s.IOContext(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	// stat asks a class method in a write op (the path that trusts the
	// cache) how it sees the object.
	stat := func() string {
		t.Helper()
		op := objstore.NewWriteOp()
		ex := op.Exec(objstoretest.TestClass, "stat", nil)
		if err := io.Operate(ctx, "o", op); err != nil {
			t.Fatal(err)
		}
		return string(ex.Out)
	}
	exec := func(method string, in []byte) *objstore.WriteOp {
		op := objstore.NewWriteOp()
		op.Exec(objstoretest.TestClass, method, in)
		return op
	}
	write := func(op *objstore.WriteOp) uint64 {
		t.Helper()
		if err := io.Operate(ctx, "o", op); err != nil {
			t.Fatal(err)
		}
		return op.Version
	}

	v1 := write(exec("append", []byte("abc")))
	if got := stat(); got != "true 3" {
		t.Fatalf("after class append: %q", got)
	}
	v2 := write(objstore.NewWriteOp().WriteFull([]byte("0123456789")))
	if v2 <= v1 {
		t.Fatalf("plain write version %d after %d", v2, v1)
	}
	if got := stat(); got != "true 10" {
		t.Fatalf("class method after a plain write sees %q, want size 10", got)
	}
	if err := io.Operate(ctx, "o", objstore.NewWriteOp().AssertVersion(v1).SetXattr("a", nil)); err == nil {
		t.Fatalf("guard on the cached (old) version %d passed", v1)
	}
	if err := io.Operate(ctx, "o", objstore.NewWriteOp().AssertVersion(v2).SetXattr("a", nil)); err != nil {
		t.Fatalf("guard on the current version %d: %v", v2, err)
	}
	v3 := write(exec("append", []byte("x")))
	if got := stat(); got != "true 11" {
		t.Fatalf("after a second class append: %q", got)
	}
	write(objstore.NewWriteOp().Remove())
	if got := stat(); got != "false 0" {
		t.Fatalf("class method after remove sees %q", got)
	}
	v4 := write(exec("append", []byte("yz")))
	if v4 <= v3 {
		t.Fatalf("recreated object version %d, want > %d", v4, v3)
	}
	if got := stat(); got != "true 2" {
		t.Fatalf("after recreate: %q", got)
	}
	// A failed class op applies nothing and must not poison the cache.
	if err := io.Operate(ctx, "o", exec("fail", nil)); err == nil {
		t.Fatal("fail method succeeded")
	}
	if got := stat(); got != "true 2" {
		t.Fatalf("after a failed op: %q", got)
	}
}

// The xattrs cached with a class-cached meta must follow every write: a
// class method's and a plain op's xattr changes, a removal, and writes
// that leave the xattrs alone (which carry them over).
func TestXattrCacheFollowsWrites(t *testing.T) {
	ctx := context.Background()
	s := openMem(t, testRegistry())
	if err := s.CreatePool(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	io, err := s.IOContext(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	write := func(op *objstore.WriteOp) {
		t.Helper()
		if err := io.Operate(ctx, "o", op); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(method, in string) *objstore.WriteOp {
		op := objstore.NewWriteOp()
		op.Exec(objstoretest.TestClass, method, []byte(in))
		return op
	}
	// get reads xattr s twice (alone and batched) and a guard on it.
	get := func() string {
		t.Helper()
		op := objstore.NewReadOp()
		x := op.GetXattrOptional("s")
		if err := io.OperateRead(ctx, "o", op); errors.Is(err, objstore.ErrNotFound) {
			return "no object"
		} else if err != nil {
			t.Fatal(err)
		}
		reqs := []objstore.ReadReq{{OID: "o", Op: objstore.NewReadOp()}}
		bx := reqs[0].Op.GetXattrOptional("s")
		guard := objstore.ReadReq{OID: "o", Op: objstore.NewReadOp().CmpXattr("s", objstore.CmpEQ, x.Value)}
		reqs = append(reqs, guard)
		objstore.OperateReadMany(ctx, io, reqs)
		if reqs[0].Err != nil || reqs[1].Err != nil || bx.Found != x.Found || string(bx.Value) != string(x.Value) {
			t.Fatalf("batched read %q %v (%v, guard %v), alone %q %v", bx.Value, bx.Found, reqs[0].Err, reqs[1].Err, x.Value, x.Found)
		}
		if !x.Found {
			return "-"
		}
		return string(x.Value)
	}
	steps := []struct {
		op   *objstore.WriteOp
		want string
	}{
		{exec("set_xattr", "s=open"), "open"},
		{exec("append", "a"), "open"}, // carried over
		{exec("set_xattr", "s=closed"), "closed"},
		{exec("append", "b"), "closed"},
		{objstore.NewWriteOp().SetXattr("s", []byte("plain")), "plain"},
		{exec("append", "c"), "plain"},
		{objstore.NewWriteOp().RmXattr("s"), "-"},
		{exec("set_xattr", "s=again"), "again"},
		{exec("append", "d"), "again"},
		{func() *objstore.WriteOp { // removed and recreated in one class op
			op := objstore.NewWriteOp().Remove()
			op.Exec(objstoretest.TestClass, "append", []byte("f"))
			return op
		}(), "-"},
		{exec("set_xattr", "s=again"), "again"},
		{objstore.NewWriteOp().Remove(), "no object"},
		{exec("append", "e"), "-"},
		{exec("set_xattr", "s=new"), "new"},
	}
	// guarded checks a write op's guard on s (read from the cache when
	// warm, through the op's batch once a step of it touched xattrs).
	guarded := func(i int, want string) {
		t.Helper()
		if want == "-" || want == "no object" {
			return
		}
		ok := objstore.NewWriteOp().CmpXattr("s", objstore.CmpEQ, []byte(want))
		ok.Exec(objstoretest.TestClass, "echo", nil)
		stale := objstore.NewWriteOp().CmpXattr("s", objstore.CmpEQ, []byte(want+"-stale"))
		stale.Exec(objstoretest.TestClass, "echo", nil)
		inOp := exec("set_xattr", "s="+want+"-in-op")
		inOp.CmpXattr("s", objstore.CmpEQ, []byte(want+"-in-op"))
		inOp.Exec(objstoretest.TestClass, "set_xattr", []byte("s="+want))
		inOp.CmpXattr("s", objstore.CmpEQ, []byte(want))
		if err := io.Operate(ctx, "o", ok); err != nil {
			t.Fatalf("step %d: guard on %q: %v", i, want, err)
		}
		// Right after ok warmed the cache (a failed op drops it).
		if err := io.Operate(ctx, "o", inOp); err != nil {
			t.Fatalf("step %d: guards after the op's own xattr writes: %v", i, err)
		}
		if err := io.Operate(ctx, "o", stale); !errors.Is(err, objstore.ErrCanceled) {
			t.Fatalf("step %d: stale guard: %v", i, err)
		}
	}
	for i, st := range steps {
		write(st.op)
		guarded(i, st.want)
		if got := get(); got != st.want {
			t.Fatalf("step %d: xattr s = %q, want %q", i, got, st.want)
		}
		if got := get(); got != st.want { // now from the cache
			t.Fatalf("step %d, second read: xattr s = %q, want %q", i, got, st.want)
		}
	}
}

// A read guarded by an xattr caches the object's meta (and, through it,
// its xattrs), so the next such read makes one point read, the omap key's;
// plain writes of the xattr, a removal and a recreate between reads are
// seen as they are.
func TestGuardedReadCachesMeta(t *testing.T) {
	s := openMem(t, testRegistry())
	io := mustIO(t, s, "p")
	guarded := func() ([]objstore.KV, uint64, error) {
		op := objstore.NewReadOp()
		op.CmpXattr("state", objstore.CmpNE, []byte("closed"))
		st := op.GetOmapValuesByKeys("k")
		g0 := s.PointGets()
		err := io.OperateRead(bg, "shard", op)
		return st.Pairs, s.PointGets() - g0, err
	}
	mustOp(t, io, "shard", objstore.NewWriteOp().SetXattr("state", []byte("open")).SetOmap(objstore.KV{Key: "k", Value: []byte("1")}))
	if kvs, gets, err := guarded(); err != nil || len(kvs) != 1 || gets != 2 {
		t.Fatalf("first read: %v, %d point reads (want 2: meta, omap; the xattrs a scan), %v", kvs, gets, err)
	}
	if kvs, gets, err := guarded(); err != nil || len(kvs) != 1 || gets != 1 {
		t.Fatalf("second read: %v, %d point reads, want 1, %v", kvs, gets, err)
	}
	mustOp(t, io, "shard", objstore.NewWriteOp().SetXattr("state", []byte("closed")))
	if _, _, err := guarded(); objstore.Code(err) != objstore.ErrCanceled {
		t.Fatalf("after closing: %v, want ErrCanceled", err)
	}
	mustOp(t, io, "shard", objstore.NewWriteOp().SetXattr("state", []byte("open")).SetOmap(objstore.KV{Key: "k", Value: []byte("2")}))
	if kvs, _, err := guarded(); err != nil || len(kvs) != 1 || string(kvs[0].Value) != "2" {
		t.Fatalf("reopened: %v, %v", kvs, err)
	}
	mustOp(t, io, "shard", objstore.NewWriteOp().Remove())
	if _, _, err := guarded(); objstore.Code(err) != objstore.ErrNotFound {
		t.Fatalf("after removal: %v, want ErrNotFound", err)
	}
	mustOp(t, io, "shard", objstore.NewWriteOp().SetXattr("state", []byte("closed")))
	if _, _, err := guarded(); objstore.Code(err) != objstore.ErrCanceled {
		t.Fatalf("recreated closed: %v, want ErrCanceled", err)
	}
	// Through OperateReadMany (a listing page over the shards) too.
	mustOp(t, io, "shard2", objstore.NewWriteOp().SetXattr("state", []byte("open")).SetOmap(objstore.KV{Key: "k", Value: []byte("3")}))
	many := func() (uint64, error) {
		reqs := make([]objstore.ReadReq, 2)
		for i := range reqs {
			op := objstore.NewReadOp()
			op.CmpXattr("state", objstore.CmpNE, []byte("closed"))
			op.GetOmapValuesByKeys("k")
			reqs[i] = objstore.ReadReq{OID: []string{"shard2", "shard3"}[i], Op: op}
		}
		mustOp(t, io, "shard3", objstore.NewWriteOp().SetXattr("state", []byte("open")))
		g0 := s.PointGets()
		objstore.OperateReadMany(bg, io, reqs)
		return s.PointGets() - g0, errors.Join(reqs[0].Err, reqs[1].Err)
	}
	if gets, err := many(); err != nil || gets != 4 {
		t.Fatalf("first read of two: %d point reads (want 4: metas, omap keys), %v", gets, err)
	}
	if gets, err := many(); err != nil || gets != 3 {
		// shard3 was written in between (a plain write clears its meta).
		t.Fatalf("second read of two: %d point reads, want 3, %v", gets, err)
	}

	// A stat through the cached meta agrees with the object.
	mustOp(t, io, "shard", objstore.NewWriteOp().SetXattr("state", []byte("open")).WriteFull([]byte("abc")))
	guarded()
	op := objstore.NewReadOp()
	st := op.Stat()
	if err := io.OperateRead(bg, "shard", op); err != nil || st.Stat.Size != 3 {
		t.Fatalf("stat: %+v %v", st.Stat, err)
	}
}
