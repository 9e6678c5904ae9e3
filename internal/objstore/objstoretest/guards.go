package objstoretest

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

func testGuards(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	// Guards on a missing object.
	wantErr(t, io.Operate(bg, "o", objstore.NewWriteOp().AssertExists().Create(false)), objstore.ErrNotFound, "assert_exists on missing")
	wantErr(t, io.Operate(bg, "o", objstore.NewWriteOp().AssertVersion(1).Create(false)), objstore.ErrCanceled, "assert_version 1 on missing")
	v1 := operate(t, io, "o", objstore.NewWriteOp().AssertVersion(0).WriteFull([]byte("a")).SetXattr("x", []byte("b")).SetOmap(kv("k", "m")))

	operate(t, io, "o", objstore.NewWriteOp().AssertExists().AssertVersion(v1).Append([]byte("b")))
	s, _ := stat(t, io, "o")
	wantErr(t, io.Operate(bg, "o", objstore.NewWriteOp().AssertVersion(v1).Append([]byte("c"))), objstore.ErrCanceled, "stale assert_version")
	wantErr(t, io.Operate(bg, "o", objstore.NewWriteOp().AssertVersion(0).Append([]byte("c"))), objstore.ErrCanceled, "assert_version 0 on existing")
	wantErr(t, io.Operate(bg, "o", objstore.NewWriteOp().Create(true)), objstore.ErrExists, "exclusive create")

	for _, c := range []struct {
		op   objstore.CmpOp
		v    string
		pass bool
	}{
		{objstore.CmpEQ, "m", true}, {objstore.CmpEQ, "n", false}, {objstore.CmpNE, "n", true}, {objstore.CmpNE, "m", false},
		{objstore.CmpGT, "l", true}, {objstore.CmpGT, "m", false}, {objstore.CmpGTE, "m", true}, {objstore.CmpGTE, "mm", false},
		{objstore.CmpLT, "n", true}, {objstore.CmpLT, "m", false}, {objstore.CmpLTE, "m", true}, {objstore.CmpLTE, "", false},
	} {
		err := io.Operate(bg, "o", objstore.NewWriteOp().OmapCmp("k", c.op, []byte(c.v)).SetXattr("seen", nil))
		what := fmt.Sprintf("omap_cmp stored %q op %d operand %q", "m", c.op, c.v)
		if c.pass && err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !c.pass {
			wantErr(t, err, objstore.ErrCanceled, what)
		}
	}
	// A missing omap key compares as empty.
	operate(t, io, "o", objstore.NewWriteOp().OmapCmp("absent", objstore.CmpEQ, nil).SetXattr("seen", nil))
	wantErr(t, io.Operate(bg, "o", objstore.NewWriteOp().OmapCmp("absent", objstore.CmpEQ, []byte("x")).SetXattr("seen", nil)),
		objstore.ErrCanceled, "omap_cmp on absent key against x")
	operate(t, io, "o", objstore.NewWriteOp().OmapCmp("absent", objstore.CmpLT, []byte("x")).SetXattr("seen", nil))

	// A guard after a write step observes it.
	operate(t, io, "o", objstore.NewWriteOp().SetXattr("g", []byte("new")).CmpXattr("g", objstore.CmpEQ, []byte("new")))
	operate(t, io, "o", objstore.NewWriteOp().SetOmap(kv("g", "1")).OmapCmp("g", objstore.CmpEQ, []byte("1")))
	v := operate(t, io, "o", objstore.NewWriteOp().Append([]byte("z")))
	wantErr(t, io.Operate(bg, "o", objstore.NewWriteOp().Remove().AssertExists()), objstore.ErrNotFound, "assert_exists after remove")
	if s2, ok := stat(t, io, "o"); !ok || s2.Version != v || s2.Version <= s.Version {
		t.Fatalf("failed op changed the object: %+v exists=%v", s2, ok)
	}
}

func testCmpXattrMatrix(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	operate(t, io, "o", objstore.NewWriteOp().SetXattr("s", []byte("mid")).SetXattr("n", []byte("42")).
		SetXattr("bad", []byte("4x2")).SetXattr("empty", nil))
	type tc struct {
		name  string
		op    objstore.CmpOp
		u64   bool
		bytes string
		num   uint64
		pass  bool
	}
	cases := []tc{
		{"s", objstore.CmpEQ, false, "mid", 0, true}, {"s", objstore.CmpEQ, false, "mi", 0, false},
		{"s", objstore.CmpNE, false, "mi", 0, true}, {"s", objstore.CmpNE, false, "mid", 0, false},
		{"s", objstore.CmpGT, false, "mi", 0, true}, {"s", objstore.CmpGT, false, "mid", 0, false},
		{"s", objstore.CmpGTE, false, "mid", 0, true}, {"s", objstore.CmpGTE, false, "mie", 0, false},
		{"s", objstore.CmpLT, false, "n", 0, true}, {"s", objstore.CmpLT, false, "mid", 0, false},
		{"s", objstore.CmpLTE, false, "mid", 0, true}, {"s", objstore.CmpLTE, false, "mic", 0, false},
		// Missing xattr compares as the empty string.
		{"missing", objstore.CmpEQ, false, "", 0, true}, {"missing", objstore.CmpLT, false, "a", 0, true},
		{"missing", objstore.CmpGT, false, "", 0, false}, {"missing", objstore.CmpNE, false, "a", 0, true},
		// u64: numeric, not lexical ("42" > "100" lexically).
		{"n", objstore.CmpEQ, true, "", 42, true}, {"n", objstore.CmpEQ, true, "", 41, false},
		{"n", objstore.CmpNE, true, "", 41, true}, {"n", objstore.CmpNE, true, "", 42, false},
		{"n", objstore.CmpGT, true, "", 41, true}, {"n", objstore.CmpGT, true, "", 42, false},
		{"n", objstore.CmpGTE, true, "", 42, true}, {"n", objstore.CmpGTE, true, "", 100, false},
		{"n", objstore.CmpLT, true, "", 100, true}, {"n", objstore.CmpLT, true, "", 42, false},
		{"n", objstore.CmpLTE, true, "", 42, true}, {"n", objstore.CmpLTE, true, "", 9, false},
		// Missing or empty is 0.
		{"missing", objstore.CmpEQ, true, "", 0, true}, {"missing", objstore.CmpGT, true, "", 0, false},
		{"empty", objstore.CmpEQ, true, "", 0, true}, {"empty", objstore.CmpLT, true, "", 1, true},
	}
	for _, c := range cases {
		op := objstore.NewWriteOp()
		if c.u64 {
			op.CmpXattrU64(c.name, c.op, c.num)
		} else {
			op.CmpXattr(c.name, c.op, []byte(c.bytes))
		}
		op.SetOmap(kv("seen", "1"))
		err := io.Operate(bg, "o", op)
		what := fmt.Sprintf("cmpxattr %q op=%d u64=%v operand=%q/%d", c.name, c.op, c.u64, c.bytes, c.num)
		if c.pass && err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !c.pass {
			wantErr(t, err, objstore.ErrCanceled, what)
		}
	}
	before := snap(t, io, "o")
	wantErr(t, io.Operate(bg, "o", objstore.NewWriteOp().CmpXattrU64("bad", objstore.CmpEQ, 42).SetXattr("z", nil)),
		objstore.ErrInvalid, "u64 cmp of an unparsable value")
	if after := snap(t, io, "o"); !after.equal(before) {
		t.Fatalf("failed cmpxattr changed the object")
	}
}

func testReadOpGuards(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	v := operate(t, io, "o", objstore.NewWriteOp().SetXattr("a", []byte("1")).SetOmap(kv("k", "v")))
	op := objstore.NewReadOp().AssertExists().AssertVersion(v).CmpXattr("a", objstore.CmpEQ, []byte("1")).
		CmpXattrU64("a", objstore.CmpEQ, 1).OmapCmp("k", objstore.CmpEQ, []byte("v"))
	x := op.GetXattr("a")
	readOp(t, io, "o", op)
	if string(x.Value) != "1" {
		t.Fatalf("read after guards: %q", x.Value)
	}
	for name, op := range map[string]*objstore.ReadOp{
		"assert_version": objstore.NewReadOp().AssertVersion(v + 1),
		"cmpxattr":       objstore.NewReadOp().CmpXattr("a", objstore.CmpNE, []byte("1")),
		"omap_cmp":       objstore.NewReadOp().OmapCmp("k", objstore.CmpGT, []byte("v")),
	} {
		op.GetXattrs()
		wantErr(t, io.OperateRead(bg, "o", op), objstore.ErrCanceled, "read op "+name)
	}
	op = objstore.NewReadOp().AssertExists()
	wantErr(t, io.OperateRead(bg, "missing", op), objstore.ErrNotFound, "read op assert_exists on missing")
	op = objstore.NewReadOp()
	op.GetOmapValues("", "", 0)
	wantErr(t, io.OperateRead(bg, "missing", op), objstore.ErrNotFound, "omap read on missing")
}

// testAtomicity: a failure at any position of a WriteOp changes nothing.
func testAtomicity(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	big := pattern(1<<20+100, 11)
	writes := []func(*objstore.WriteOp){
		func(op *objstore.WriteOp) { op.WriteFull([]byte("replaced")) },
		func(op *objstore.WriteOp) { op.Append([]byte("appended")) },
		func(op *objstore.WriteOp) { op.Write([]byte("W"), 70000) },
		func(op *objstore.WriteOp) { op.Truncate(2) },
		func(op *objstore.WriteOp) { op.SetXattr("x1", []byte("new")).SetXattr("fresh", []byte("1")) },
		func(op *objstore.WriteOp) { op.RmXattr("x2") },
		func(op *objstore.WriteOp) { op.SetOmap(kv("o1", "new"), kv("fresh", "1")) },
		func(op *objstore.WriteOp) { op.RmOmapKeys("o2") },
		func(op *objstore.WriteOp) { op.OmapRmRange("o", "p") },
		func(op *objstore.WriteOp) { op.OmapClear() },
		func(op *objstore.WriteOp) { op.SetOmapHeader([]byte("new header")) },
		func(op *objstore.WriteOp) { op.WriteFull(big) },
		func(op *objstore.WriteOp) { op.Exec(TestClass, "incr", nil) },
		func(op *objstore.WriteOp) { op.Remove() },
		func(op *objstore.WriteOp) { op.Create(false).SetXattr("after-remove", nil) },
	}
	failures := map[string]func(*objstore.WriteOp){
		"cmpxattr": func(op *objstore.WriteOp) { op.CmpXattr("never", objstore.CmpEQ, []byte("x")) },
		// A version no object reaches: RADOS user versions are per-PG
		// counters, so a real object may well be at version 1.
		"assert_version": func(op *objstore.WriteOp) { op.AssertVersion(1 << 62) },
		"omap_cmp":       func(op *objstore.WriteOp) { op.OmapCmp("never", objstore.CmpGT, []byte("x")) },
		"exec_fail":      func(op *objstore.WriteOp) { op.Exec(TestClass, "fail", nil) },
		"exec_unknown":   func(op *objstore.WriteOp) { op.Exec(TestClass, "no_such_method", nil) },
		"create_excl":    func(op *objstore.WriteOp) { op.Create(true).SetXattr("z", nil) },
		"remove_twice":   func(op *objstore.WriteOp) { op.Remove().Remove() },
	}
	base := func(oid string, large bool) snapshot {
		op := objstore.NewWriteOp().WriteFull(pattern(200000, 1)).SetXattr("x1", []byte("old")).SetXattr("x2", []byte("old")).
			SetOmap(kv("o1", "old"), kv("o2", "old"), kv("counter", "5")).SetOmapHeader([]byte("old header"))
		if large {
			op.WriteFull(big[:len(big)-50])
		}
		operate(t, io, oid, op)
		return snap(t, io, oid)
	}
	n := 0
	for fname, fail := range failures {
		for pos := 0; pos <= len(writes); pos++ {
			oid := fmt.Sprintf("%s-%d", fname, pos)
			before := base(oid, pos%3 == 0)
			op := objstore.NewWriteOp()
			for i := 0; i < pos; i++ {
				writes[i](op)
			}
			// Past the Remove (writes[13]), re-create so create_excl fails.
			if fname == "create_excl" && pos == 14 {
				writes[14](op)
			}
			fail(op)
			for i := pos; i < len(writes); i++ {
				writes[i](op)
			}
			if err := io.Operate(bg, oid, op); err == nil {
				t.Fatalf("%s at %d: op succeeded", fname, pos)
			}
			if after := snap(t, io, oid); !after.equal(before) {
				t.Fatalf("%s at step %d changed the object:\nbefore %v\nafter  %v", fname, pos, before, after)
			}
			n++
		}
	}
	// A failing op on a missing object does not create it.
	for fname, fail := range failures {
		op := objstore.NewWriteOp().WriteFull([]byte("x")).SetOmap(kv("k", "v"))
		fail(op)
		if fname == "create_excl" {
			continue // the object exists at that point only within the op
		}
		if err := io.Operate(bg, "absent-"+fname, op); err == nil {
			t.Fatalf("%s on a missing object: op succeeded", fname)
		}
		if _, ok := stat(t, io, "absent-"+fname); ok {
			t.Fatalf("failed %s created the object", fname)
		}
	}
	if n < 20 {
		t.Fatalf("only %d atomicity cases ran", n)
	}
}

// testNoLostUpdates: version-guarded read-modify-write from many
// goroutines loses nothing.
func testNoLostUpdates(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	workers, per := 16, 50
	if testing.Short() {
		workers, per = 8, 20
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; {
				op := objstore.NewReadOp()
				s := op.Stat()
				x := op.GetXattrOptional("n")
				if err := io.OperateRead(bg, "counter", op); err != nil && objstore.Code(err) != objstore.ErrNotFound {
					errs <- err
					return
				}
				n := uint64(0)
				if x.Found {
					n, _ = strconv.ParseUint(string(x.Value), 10, 64)
				}
				err := io.Operate(bg, "counter", objstore.NewWriteOp().AssertVersion(s.Stat.Version).
					SetXattr("n", []byte(strconv.FormatUint(n+1, 10))))
				switch objstore.Code(err) {
				case 0:
					i++
				case objstore.ErrCanceled:
				default:
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	op := objstore.NewReadOp()
	x := op.GetXattr("n")
	readOp(t, io, "counter", op)
	if got, want := string(x.Value), strconv.Itoa(workers*per); got != want {
		t.Fatalf("counter = %s, want %s: lost updates", got, want)
	}
}
