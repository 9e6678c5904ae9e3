package objstoretest

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

func pattern(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func testData(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	operate(t, io, "o", objstore.NewWriteOp().WriteFull([]byte("hello world")))
	wantData(t, "read all", readAll(t, io, "o"), []byte("hello world"))

	ranges := []struct {
		off, n int64
		want   string
	}{
		{0, 5, "hello"}, {6, 0, "world"}, {6, 100, "world"}, {10, 1, "d"},
		{11, 0, ""}, {11, 5, ""}, {100, 5, ""}, {0, 11, "hello world"},
	}
	for _, r := range ranges {
		op := objstore.NewReadOp()
		rd := op.Read(r.off, r.n)
		readOp(t, io, "o", op)
		wantData(t, "read range", rd.Data, []byte(r.want))
	}

	// Write past the end zero-fills the gap; write inside overwrites.
	operate(t, io, "o", objstore.NewWriteOp().Write([]byte("XY"), 14))
	wantData(t, "gap write", readAll(t, io, "o"), []byte("hello world\x00\x00\x00XY"))
	operate(t, io, "o", objstore.NewWriteOp().Write([]byte("W"), 6))
	operate(t, io, "o", objstore.NewWriteOp().Append([]byte("!")))
	wantData(t, "overwrite+append", readAll(t, io, "o"), []byte("hello World\x00\x00\x00XY!"))

	// Truncate shrinks; extending again exposes zeros, not the old bytes.
	operate(t, io, "o", objstore.NewWriteOp().Truncate(5))
	wantData(t, "truncate", readAll(t, io, "o"), []byte("hello"))
	operate(t, io, "o", objstore.NewWriteOp().Truncate(8))
	wantData(t, "extend", readAll(t, io, "o"), []byte("hello\x00\x00\x00"))
	if s, _ := stat(t, io, "o"); s.Size != 8 {
		t.Fatalf("size after extend = %d, want 8", s.Size)
	}

	// WriteFull replaces, also with something shorter and with nothing.
	operate(t, io, "o", objstore.NewWriteOp().WriteFull([]byte("ab")))
	wantData(t, "write_full shorter", readAll(t, io, "o"), []byte("ab"))
	operate(t, io, "o", objstore.NewWriteOp().WriteFull(nil))
	if s, ok := stat(t, io, "o"); !ok || s.Size != 0 {
		t.Fatalf("after empty write_full: exists=%v size=%d", ok, s.Size)
	}

	// Several data steps in one op apply in order.
	operate(t, io, "multi", objstore.NewWriteOp().WriteFull([]byte("abc")).Append([]byte("def")).
		Write([]byte("Z"), 1).Truncate(5).Append([]byte("!")))
	wantData(t, "multi-step", readAll(t, io, "multi"), []byte("aZcde!"))

	// Large data across chunk boundaries, sizes around common thresholds.
	for _, n := range []int{64<<10 - 1, 64 << 10, 64<<10 + 1, 1<<20 - 1, 1 << 20, 3<<20 + 17} {
		data := pattern(n, uint64(n))
		operate(t, io, "big", objstore.NewWriteOp().WriteFull(data))
		wantData(t, "caller's buffer after Operate", data, pattern(n, uint64(n)))
		wantData(t, "big write_full", readAll(t, io, "big"), data)
		op := objstore.NewReadOp()
		rd := op.Read(int64(n/2-3), 70000)
		readOp(t, io, "big", op)
		wantData(t, "big range", rd.Data, data[n/2-3:min(n, n/2-3+70000)])
	}
	// Partial changes to a large object (backends may copy on write).
	data := pattern(2<<20, 99)
	operate(t, io, "big2", objstore.NewWriteOp().WriteFull(data))
	patch := bytes.Repeat([]byte{0xAB}, 100000)
	operate(t, io, "big2", objstore.NewWriteOp().Write(patch, 65000))
	copy(data[65000:], patch)
	operate(t, io, "big2", objstore.NewWriteOp().Append([]byte("tail")))
	data = append(data, "tail"...)
	wantData(t, "patched big", readAll(t, io, "big2"), data)
	operate(t, io, "big2", objstore.NewWriteOp().Truncate(300001))
	wantData(t, "truncated big", readAll(t, io, "big2"), data[:300001])
	// A large write_full followed by a partial write in the same op.
	data = pattern(1<<20+5, 5)
	operate(t, io, "big3", objstore.NewWriteOp().WriteFull(data).Write([]byte("zz"), 10))
	copy(data[10:], "zz")
	wantData(t, "write_full+write in one op", readAll(t, io, "big3"), data)
}

// testDataModel applies random data steps and compares with a byte slice.
func testDataModel(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	r := rand.New(rand.NewPCG(1, 2))
	var model []byte
	iters := 120
	if testing.Short() {
		iters = 40
	}
	for i := 0; i < iters; i++ {
		op := objstore.NewWriteOp()
		steps := 1 + r.IntN(3)
		for j := 0; j < steps; j++ {
			n := r.IntN(200 << 10)
			if r.IntN(20) == 0 {
				n = 1<<20 + r.IntN(1<<20)
			}
			switch r.IntN(5) {
			case 0:
				d := pattern(n, r.Uint64())
				op.WriteFull(d)
				model = append(model[:0:0], d...)
			case 1:
				d := pattern(r.IntN(100<<10), r.Uint64())
				op.Append(d)
				model = append(model, d...)
			case 2:
				d := pattern(r.IntN(100<<10), r.Uint64())
				off := r.IntN(len(model) + 70000)
				op.Write(d, int64(off))
				if end := off + len(d); end > len(model) {
					model = append(model, make([]byte, end-len(model))...)
				}
				copy(model[off:], d)
			case 3:
				sz := r.IntN(len(model) + 100000)
				op.Truncate(int64(sz))
				if sz <= len(model) {
					model = model[:sz]
				} else {
					model = append(model, make([]byte, sz-len(model))...)
				}
			case 4:
				op.SetXattr("i", []byte{byte(i)})
			}
		}
		operate(t, io, "m", op)
		if i%5 == 0 || i == iters-1 {
			wantData(t, "model", readAll(t, io, "m"), model)
			off, n := r.IntN(len(model)+1), r.IntN(200000)
			rop := objstore.NewReadOp()
			rd := rop.Read(int64(off), int64(n))
			readOp(t, io, "m", rop)
			end := len(model)
			if n > 0 && off+n < end {
				end = off + n
			}
			wantData(t, "model range", rd.Data, model[off:end])
		}
	}
}

func testRemoveRecreate(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	v1 := operate(t, io, "o", objstore.NewWriteOp().WriteFull([]byte("data")).SetXattr("a", []byte("1")).
		SetOmap(kv("k", "v")).SetOmapHeader([]byte("hdr")))
	v2 := operate(t, io, "o", objstore.NewWriteOp().Remove())
	if _, ok := stat(t, io, "o"); ok {
		t.Fatal("object exists after remove")
	}
	op := objstore.NewReadOp()
	op.Read(0, 0)
	wantErr(t, io.OperateRead(bg, "o", op), objstore.ErrNotFound, "read removed object")
	wantErr(t, io.Operate(bg, "o", objstore.NewWriteOp().Remove()), objstore.ErrNotFound, "remove missing object")

	v3 := operate(t, io, "o", objstore.NewWriteOp().SetXattr("b", []byte("2")))
	s := snap(t, io, "o")
	if s.Size != 0 || len(s.Data) != 0 || len(s.Omap) != 0 || len(s.Header) != 0 {
		t.Fatalf("re-created object kept old state: %v", s)
	}
	wantKVs(t, "xattrs after re-create", s.Xattrs, kv("b", "2"))
	if !(v1 < v3) || s.Version != v3 || (v2 != 0 && !(v1 < v2 && v2 < v3)) {
		t.Fatalf("versions not increasing across remove/re-create: %d, %d, %d (stat %d)", v1, v2, v3, s.Version)
	}
	// Remove and re-create within one op: later steps see no object.
	v4 := operate(t, io, "o", objstore.NewWriteOp().Remove().AssertVersion(0).Create(true).Append([]byte("new")))
	s = snap(t, io, "o")
	if !bytes.Equal(s.Data, []byte("new")) || len(s.Xattrs) != 0 || s.Version != v4 || v4 <= v3 {
		t.Fatalf("remove+create in one op: %v (v4=%d v3=%d)", s, v4, v3)
	}
	// Remove of a large object (its data may live outside the key space).
	operate(t, io, "big", objstore.NewWriteOp().WriteFull(pattern(2<<20, 3)))
	operate(t, io, "big", objstore.NewWriteOp().Remove())
	operate(t, io, "big", objstore.NewWriteOp().Create(true))
	if d := readAll(t, io, "big"); len(d) != 0 {
		t.Fatalf("re-created large object has %d bytes", len(d))
	}
}

// testCreateSemantics: which steps create a missing object, which need one.
func testCreateSemantics(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	creators := map[string]*objstore.WriteOp{
		"create":        objstore.NewWriteOp().Create(false),
		"create_excl":   objstore.NewWriteOp().Create(true),
		"write_full":    objstore.NewWriteOp().WriteFull([]byte("x")),
		"write":         objstore.NewWriteOp().Write([]byte("x"), 3),
		"append":        objstore.NewWriteOp().Append([]byte("x")),
		"truncate":      objstore.NewWriteOp().Truncate(4),
		"setxattr":      objstore.NewWriteOp().SetXattr("a", nil),
		"omap_set":      objstore.NewWriteOp().SetOmap(kv("k", "")),
		"omap_set_hdr":  objstore.NewWriteOp().SetOmapHeader([]byte("h")),
		"write_full_0":  objstore.NewWriteOp().WriteFull(nil),
		"create+append": objstore.NewWriteOp().Create(true).Append(nil),
	}
	for name, op := range creators {
		operate(t, io, name, op)
		if _, ok := stat(t, io, name); !ok {
			t.Fatalf("%s did not create the object", name)
		}
	}
	if s, _ := stat(t, io, "write"); s.Size != 4 {
		t.Fatalf("write at 3 on a missing object: size %d, want 4", s.Size)
	}
	if s, _ := stat(t, io, "truncate"); s.Size != 4 {
		t.Fatalf("truncate(4) on a missing object: size %d, want 4", s.Size)
	}
	// Steps that remove things need the object (ENOENT, as RADOS).
	needers := map[string]*objstore.WriteOp{
		"rmxattr":       objstore.NewWriteOp().RmXattr("a"),
		"omap_rm_keys":  objstore.NewWriteOp().RmOmapKeys("k"),
		"omap_rm_range": objstore.NewWriteOp().OmapRmRange("a", "b"),
		"omap_clear":    objstore.NewWriteOp().OmapClear(),
		"remove":        objstore.NewWriteOp().Remove(),
		"assert_exists": objstore.NewWriteOp().AssertExists().SetXattr("a", nil),
	}
	for name, op := range needers {
		wantErr(t, io.Operate(bg, "missing-"+name, op), objstore.ErrNotFound, name+" on a missing object")
		if _, ok := stat(t, io, "missing-"+name); ok {
			t.Fatalf("failed %s created the object", name)
		}
	}
	// Exclusive create of an existing object.
	wantErr(t, io.Operate(bg, "create", objstore.NewWriteOp().Create(true)), objstore.ErrExists, "exclusive create")
	operate(t, io, "create", objstore.NewWriteOp().Create(false))
	// On an existing object, removing a missing xattr or key is fine.
	operate(t, io, "setxattr", objstore.NewWriteOp().RmXattr("nope").RmOmapKeys("nope").OmapRmRange("a", "z").OmapClear())
}

// testFreshWrite: a Fresh op of blind writes creates the object exactly as
// without the hint; a Fresh op with any step that needs the object's state
// is rejected whole (ErrInvalid) and creates nothing. What happens to an
// existing object is unspecified, so it is not tested here.
func testFreshWrite(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	data := pattern(100_000, 7) // more than one embedded chunk
	op := objstore.NewWriteOp().Create(false).WriteFull(data).SetXattr("a", []byte("1")).
		SetOmap(kv("k", "v")).SetOmapHeader([]byte("h"))
	op.Fresh = true
	v := operate(t, io, "fresh", op)
	if v == 0 {
		t.Fatal("fresh write: version 0")
	}
	plain := objstore.NewWriteOp().Create(false).WriteFull(data).SetXattr("a", []byte("1")).
		SetOmap(kv("k", "v")).SetOmapHeader([]byte("h"))
	operate(t, io, "plain", plain)
	a, b := snap(t, io, "fresh"), snap(t, io, "plain")
	if a.Version != v {
		t.Fatalf("fresh write: stat version %d, Operate said %d", a.Version, v)
	}
	if a.Version, b.Version = 0, 0; !a.equal(b) {
		t.Fatalf("fresh write left %v, the same op without the hint %v", a, b)
	}
	// A later plain op on the object sees it whole.
	operate(t, io, "fresh", objstore.NewWriteOp().AssertVersion(v).Truncate(10))
	wantData(t, "truncated fresh object", readAll(t, io, "fresh"), data[:10])

	rejected := map[string]*objstore.WriteOp{
		"assert_exists":  objstore.NewWriteOp().AssertExists().WriteFull(nil),
		"assert_version": objstore.NewWriteOp().AssertVersion(0).WriteFull(nil),
		"cmpxattr":       objstore.NewWriteOp().CmpXattr("a", objstore.CmpEQ, nil).WriteFull(nil),
		"omap_cmp":       objstore.NewWriteOp().OmapCmp("k", objstore.CmpEQ, nil).WriteFull(nil),
		"create_excl":    objstore.NewWriteOp().Create(true),
		"write":          objstore.NewWriteOp().Write([]byte("x"), 3),
		"append":         objstore.NewWriteOp().Append([]byte("x")),
		"truncate":       objstore.NewWriteOp().Truncate(4),
		"remove":         objstore.NewWriteOp().Remove(),
		"rmxattr":        objstore.NewWriteOp().RmXattr("a"),
		"omap_rm_keys":   objstore.NewWriteOp().RmOmapKeys("k"),
		"omap_clear":     objstore.NewWriteOp().OmapClear(),
	}
	ex := objstore.NewWriteOp().WriteFull(nil)
	ex.Exec(TestClass, "echo", nil)
	rejected["exec"] = ex
	for name, op := range rejected {
		op.Fresh = true
		wantErr(t, io.Operate(bg, "fresh-"+name, op), objstore.ErrInvalid, "fresh "+name)
		if _, ok := stat(t, io, "fresh-"+name); ok {
			t.Fatalf("rejected fresh %s created the object", name)
		}
	}
}
