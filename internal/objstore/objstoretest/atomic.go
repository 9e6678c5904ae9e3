package objstoretest

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// testAtomicWrite: OperateAtomic (backends with objstore.AtomicWriter;
// the others skip) applies ops on objects of several pools and namespaces
// all or none, reports the failing op's own error, refuses bad groups
// whole, and neither loses updates nor deadlocks beside Operate.
func testAtomicWrite(t *testing.T, st objstore.Store) {
	data := newPool(t, st)
	index := newPool(t, st).WithNamespace("ix")
	aw := objstore.Atomic(data, index)
	if aw == nil {
		t.Skip("backend has no atomic multi-object write")
	}
	operate(t, index, "shard", objstore.NewWriteOp().SetXattr("state", []byte("open")).SetOmap(kv("old", "1")))
	before := snap(t, index, "shard")

	big := bytes.Repeat([]byte("B"), 1<<20) // a blob file in the embedded store
	stripe := func(oid string, body []byte) objstore.AtomicReq {
		op := objstore.NewWriteOp().WriteFull(body).SetXattr("owner", []byte("o"))
		op.DeferSync, op.Fresh = true, true
		return objstore.AtomicReq{IO: data, OID: oid, Op: op}
	}
	link := func(key string, guard string) objstore.AtomicReq {
		op := objstore.NewWriteOp().CmpXattr("state", objstore.CmpEQ, []byte(guard))
		op.Exec(TestClass, "incr", nil)
		op.SetOmap(kv(key, "linked"))
		return objstore.AtomicReq{IO: index, OID: "shard", Op: op}
	}

	// A failing op (a guard, a class method failing after it wrote, a
	// missing object) leaves every object as it was.
	failing := []struct {
		name string
		reqs []objstore.AtomicReq
		code objstore.Errno
	}{
		{"guard", []objstore.AtomicReq{stripe("s1", []byte("x")), link("k1", "closed")}, objstore.ErrCanceled},
		{"guard first", []objstore.AtomicReq{link("k1", "closed"), stripe("s1", big)}, objstore.ErrCanceled},
		{"class", func() []objstore.AtomicReq {
			op := objstore.NewWriteOp().SetOmap(kv("before", "1"))
			op.Exec(TestClass, "fail", nil)
			return []objstore.AtomicReq{stripe("s1", []byte("x")), {IO: index, OID: "shard", Op: op}}
		}(), objstore.ErrBusy},
		{"absent", []objstore.AtomicReq{stripe("s1", []byte("x")),
			{IO: index, OID: "nothing", Op: objstore.NewWriteOp().AssertExists().SetOmap(kv("k", "v"))}}, objstore.ErrNotFound},
		{"twice", []objstore.AtomicReq{stripe("s1", []byte("x")), link("k1", "open"), link("k2", "open")}, objstore.ErrInvalid},
		{"bad name", []objstore.AtomicReq{stripe("s1", []byte("x")), {IO: index, OID: "", Op: objstore.NewWriteOp().SetOmap(kv("k", "v"))}}, objstore.ErrInvalid},
	}
	for _, f := range failing {
		wantErr(t, aw.OperateAtomic(bg, f.reqs), f.code, f.name)
		if _, ok := stat(t, data, "s1"); ok {
			t.Fatalf("%s: the data object was written by a failed group", f.name)
		}
		if after := snap(t, index, "shard"); !after.equal(before) {
			t.Fatalf("%s: shard changed by a failed group: %s, was %s", f.name, after, before)
		}
	}

	// Success: every op applied, each with its new version.
	for i, body := range [][]byte{[]byte("small"), big} {
		reqs := []objstore.AtomicReq{link(fmt.Sprint("k", i), "open"), stripe(fmt.Sprint("s", i), body)}
		if err := aw.OperateAtomic(bg, reqs); err != nil {
			t.Fatalf("group %d: %v", i, err)
		}
		s, ok := stat(t, data, fmt.Sprint("s", i))
		if !ok || s.Version != reqs[1].Op.Version || reqs[1].Op.Version == 0 {
			t.Fatalf("group %d: stripe %v exists=%v, op version %d", i, s, ok, reqs[1].Op.Version)
		}
		wantData(t, "stripe", readAll(t, data, fmt.Sprint("s", i)), body)
		if v, _ := stat(t, index, "shard"); v.Version != reqs[0].Op.Version {
			t.Fatalf("group %d: shard version %d, op reported %d", i, v.Version, reqs[0].Op.Version)
		}
	}
	wantKVs(t, "shard omap", snap(t, index, "shard").Omap, kv("counter", "2"), kv("k0", "linked"), kv("k1", "linked"), kv("old", "1"))

	// Deferred (every op DeferSync): visible at once, durable by a Sync.
	d := stripe("d", []byte("deferred"))
	l := link("kd", "open")
	l.Op.DeferSync = true
	if err := aw.OperateAtomic(bg, []objstore.AtomicReq{d, l}); err != nil {
		t.Fatal(err)
	}
	if err := objstore.Sync(bg, data); err != nil {
		t.Fatal(err)
	}
	wantData(t, "deferred stripe", readAll(t, data, "d"), []byte("deferred"))

	// Concurrent groups in both orders and Operates on the shared objects:
	// no deadlock, no lost update.
	const workers, rounds = 4, 40
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for n := 0; n < rounds; n++ {
				incr := func(io objstore.IOContext, oid string) objstore.AtomicReq {
					op := objstore.NewWriteOp()
					op.Exec(TestClass, "incr", nil)
					return objstore.AtomicReq{IO: io, OID: oid, Op: op}
				}
				if w == 3 {
					op := objstore.NewWriteOp()
					op.Exec(TestClass, "incr", nil)
					if err := index.Operate(bg, "c", op); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				reqs := []objstore.AtomicReq{incr(data, "c"), incr(index, "c"), stripe(fmt.Sprintf("w%d.%d", w, n), []byte("x"))}
				if w == 1 {
					reqs[0], reqs[1] = reqs[1], reqs[0]
				}
				if err := aw.OperateAtomic(bg, reqs); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	count := func(io objstore.IOContext) int {
		for _, p := range snap(t, io, "c").Omap {
			if p.Key == "counter" {
				n, _ := strconv.Atoi(string(p.Value))
				return n
			}
		}
		return 0
	}
	if got, want := count(data), (workers-1)*rounds; got != want {
		t.Fatalf("data counter %d, want %d", got, want)
	}
	if got, want := count(index), workers*rounds; got != want {
		t.Fatalf("index counter %d, want %d", got, want)
	}
}
