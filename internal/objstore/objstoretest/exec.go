package objstoretest

import (
	"strconv"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

func testExec(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	// A method sees the op's earlier steps, and later steps see the method.
	op := objstore.NewWriteOp().WriteFull([]byte("abc")).SetOmap(kv("k", "staged"))
	statOut := op.Exec(TestClass, "stat", nil)
	omapOut := op.Exec(TestClass, "get_omap", []byte("k"))
	appOut := op.Exec(TestClass, "append", []byte("de"))
	op.CmpXattr("m", objstore.CmpEQ, nil)
	op.Exec(TestClass, "set_xattr", []byte("m=1"))
	op.CmpXattr("m", objstore.CmpEQ, []byte("1"))
	operate(t, io, "o", op)
	if string(statOut.Out) != "true 3" || string(omapOut.Out) != "staged" || string(appOut.Out) != "5" {
		t.Fatalf("method outputs: stat=%q omap=%q append=%q", statOut.Out, omapOut.Out, appOut.Out)
	}
	wantData(t, "data after exec", readAll(t, io, "o"), []byte("abcde"))

	// Many keys at once: the stored ones, the op's own staged writes and
	// removals, missing and repeated keys; sorted by key.
	operate(t, io, "o", objstore.NewWriteOp().SetOmap(kv("a", "1"), kv("c", "3"), kv("e", "5")))
	op = objstore.NewWriteOp().SetOmap(kv("b", "new")).RmOmapKeys("c")
	keysOut := op.Exec(TestClass, "get_omap_keys", []byte("e c b zz a e k"))
	operate(t, io, "o", op)
	if got, want := string(keysOut.Out), "a=1;b=new;e=5;k=staged;"; got != want {
		t.Fatalf("GetOmapValsByKeys in a write op: %q, want %q", got, want)
	}
	rop0 := objstore.NewReadOp()
	keysOut = rop0.Exec(TestClass, "get_omap_keys", []byte("c b a"))
	if err := io.OperateRead(bg, "o", rop0); err != nil {
		t.Fatal(err)
	}
	if got, want := string(keysOut.Out), "a=1;b=new;"; got != want {
		t.Fatalf("GetOmapValsByKeys in a read op: %q, want %q", got, want)
	}
	// On a missing object the method sees no object.
	op = objstore.NewWriteOp()
	statOut = op.Exec(TestClass, "stat", nil)
	operate(t, io, "missing", op)
	if string(statOut.Out) != "false 0" {
		t.Fatalf("stat on missing: %q", statOut.Out)
	}
	if _, ok := stat(t, io, "missing"); ok {
		t.Fatal("a read-only method created the object")
	}

	// A failing method rolls the whole op back, including earlier steps.
	before := snap(t, io, "o")
	op = objstore.NewWriteOp().SetXattr("before", []byte("1")).Append([]byte("zz"))
	op.Exec(TestClass, "fail", nil)
	wantErr(t, io.Operate(bg, "o", op), objstore.ErrBusy, "failing method")
	if after := snap(t, io, "o"); !after.equal(before) {
		t.Fatalf("failing method changed the object:\n%v\n%v", before, after)
	}

	// Unknown class or method: ErrNotSupported, nothing written.
	for _, cm := range [][2]string{{"no_such_class", "x"}, {TestClass, "no_such_method"}} {
		op = objstore.NewWriteOp().SetXattr("u", nil)
		op.Exec(cm[0], cm[1], nil)
		wantErr(t, io.Operate(bg, "o", op), objstore.ErrNotSupported, "unknown "+cm[0]+"."+cm[1])
		rop := objstore.NewReadOp()
		rop.Exec(cm[0], cm[1], nil)
		wantErr(t, io.OperateRead(bg, "o", rop), objstore.ErrNotSupported, "read unknown "+cm[0]+"."+cm[1])
	}
	if after := snap(t, io, "o"); !after.equal(before) {
		t.Fatal("unknown method changed the object")
	}

	// A read op may run read methods, not write methods.
	rop := objstore.NewReadOp()
	echo := rop.Exec(TestClass, "echo", []byte("hi"))
	rd := rop.Exec(TestClass, "read", nil)
	readOp(t, io, "o", rop)
	if string(echo.Out) != "hi" || string(rd.Out) != "abcde" {
		t.Fatalf("read-op exec: echo=%q read=%q", echo.Out, rd.Out)
	}
	rop = objstore.NewReadOp()
	rop.Exec(TestClass, "set_xattr", []byte("ro=1"))
	wantErr(t, io.OperateRead(bg, "o", rop), objstore.ErrInvalid, "write method in a read op")
	// A method registered read-only cannot write, in either kind of op.
	rop = objstore.NewReadOp()
	rop.Exec(TestClass, "sneaky_write", nil)
	if err := io.OperateRead(bg, "o", rop); err == nil {
		t.Fatal("read-only method wrote in a read op")
	}
	op = objstore.NewWriteOp()
	op.Exec(TestClass, "sneaky_write", nil)
	if err := io.Operate(bg, "o", op); err == nil {
		t.Fatal("read-only method wrote in a write op")
	}
	if after := snap(t, io, "o"); !after.equal(before) {
		t.Fatal("a refused write changed the object")
	}

	// Now is one value per op.
	op = objstore.NewWriteOp()
	n1 := op.Exec(TestClass, "now", nil)
	op.SetXattr("t", nil)
	n2 := op.Exec(TestClass, "now", nil)
	operate(t, io, "o", op)
	if string(n1.Out) != string(n2.Out) || len(n1.Out) == 0 {
		t.Fatalf("Now differs within one op: %s vs %s", n1.Out, n2.Out)
	}
}

// testExecCache: a cache entry may be missing, but never stale.
func testExecCache(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	incr := func(extra func(*objstore.WriteOp)) (string, error) {
		op := objstore.NewWriteOp()
		out := op.Exec(TestClass, "incr", nil)
		if extra != nil {
			extra(op)
		}
		err := io.Operate(bg, "c", op)
		return string(out.Out), err
	}
	want := func(n int) {
		t.Helper()
		got, err := incr(nil)
		if err != nil || got != strconv.Itoa(n) {
			t.Fatalf("incr = %q, %v; want %d", got, err, n)
		}
	}
	want(1)
	want(2)
	want(3)
	// A plain write changes the counter behind the class's back.
	operate(t, io, "c", objstore.NewWriteOp().SetOmap(kv("counter", "100")))
	want(101)
	// A failed op publishes nothing.
	if _, err := incr(func(op *objstore.WriteOp) { op.CmpXattr("never", objstore.CmpEQ, []byte("x")) }); err == nil {
		t.Fatal("guarded incr succeeded")
	}
	want(102)
	// Two increments in one op.
	op := objstore.NewWriteOp()
	op.Exec(TestClass, "incr", nil)
	o2 := op.Exec(TestClass, "incr", nil)
	operate(t, io, "c", op)
	if string(o2.Out) != "104" {
		t.Fatalf("second incr in one op = %q", o2.Out)
	}
	// Plain step in the same op as the method.
	if got, err := incr(func(op *objstore.WriteOp) { op.SetOmap(kv("counter", "7")) }); err != nil || got != "105" {
		t.Fatalf("incr+set = %q, %v", got, err)
	}
	want(8)
	// Remove and re-create.
	operate(t, io, "c", objstore.NewWriteOp().Remove())
	want(1)
	operate(t, io, "c", objstore.NewWriteOp().WriteFull([]byte("x")).SetOmap(kv("counter", "50")))
	want(51)

	cacheGet := func(slot string) string {
		rop := objstore.NewReadOp()
		g := rop.Exec(TestClass, "cache_get", []byte(slot))
		readOp(t, io, "c", rop)
		return string(g.Out)
	}
	setOp := func(v string) *objstore.WriteOp {
		op := objstore.NewWriteOp()
		op.Exec(TestClass, "cache_set", []byte("s="+v))
		return op
	}
	operate(t, io, "c", setOp("1"))
	if g := cacheGet("s"); g != "1" && g != "<miss>" {
		t.Fatalf("cache = %q, want 1 or a miss", g)
	}
	operate(t, io, "c", objstore.NewWriteOp().SetXattr("p", nil))
	if g := cacheGet("s"); g != "<miss>" {
		t.Fatalf("cache after a plain write = %q, want a miss", g)
	}
	operate(t, io, "c", setOp("2").SetXattr("p", nil))
	if g := cacheGet("s"); g != "<miss>" {
		t.Fatalf("cache staged by an op with a plain write = %q, want a miss", g)
	}
	if err := io.Operate(bg, "c", setOp("3").AssertVersion(1<<62)); err == nil {
		t.Fatal("guard passed")
	}
	if g := cacheGet("s"); g != "<miss>" {
		t.Fatalf("cache staged by a failed op = %q, want a miss", g)
	}
	// A read op may publish a cache entry too.
	rop := objstore.NewReadOp()
	rop.Exec(TestClass, "cache_set", []byte("r=9"))
	readOp(t, io, "c", rop)
	if g := cacheGet("r"); g != "9" && g != "<miss>" {
		t.Fatalf("cache from read op = %q", g)
	}
}
