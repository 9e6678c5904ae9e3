package objstoretest

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// writeSpec builds one request's WriteOp (fresh for each run).
type writeSpec struct {
	oid string
	op  func() *objstore.WriteOp
}

// testWriteMany: OperateMany gives each request what Operate gives it
// alone (results, guard and class failures, absence, bad input, ops on
// one object in order), whatever else is in the batch, and a failing op
// changes neither its object nor the others.
func testWriteMany(t *testing.T, st objstore.Store) {
	base := newPool(t, st)
	alone, many := base.WithNamespace("alone"), base.WithNamespace("many")
	big := bytes.Repeat([]byte("B"), 1<<20) // the embedded store puts it in a blob file
	for _, io := range []objstore.IOContext{alone, many} {
		for _, oid := range []string{"open", "closed", "failing", "counter", "gone", "twice", "blob"} {
			op := objstore.NewWriteOp().WriteFull([]byte("data of "+oid)).
				SetXattr("state", []byte("open")).SetOmap(kv("k", oid))
			operate(t, io, oid, op)
		}
		operate(t, io, "closed", objstore.NewWriteOp().SetXattr("state", []byte("closed")))
	}
	guard := func(op *objstore.WriteOp) *objstore.WriteOp {
		return op.CmpXattr("state", objstore.CmpEQ, []byte("open"))
	}
	specs := []writeSpec{
		{"open", func() *objstore.WriteOp { return guard(objstore.NewWriteOp()).SetOmap(kv("k", "new")) }},
		{"closed", func() *objstore.WriteOp { return guard(objstore.NewWriteOp()).SetOmap(kv("k", "new")) }}, // ErrCanceled
		{"failing", func() *objstore.WriteOp {
			op := objstore.NewWriteOp().SetOmap(kv("before", "1"))
			op.Exec(TestClass, "fail", nil) // ErrBusy, after writing
			return op
		}},
		{"counter", func() *objstore.WriteOp {
			op := objstore.NewWriteOp()
			op.Exec(TestClass, "incr", nil)
			return op
		}},
		{"missing", func() *objstore.WriteOp { return objstore.NewWriteOp().AssertExists().SetOmap(kv("k", "x")) }},
		{"fresh", func() *objstore.WriteOp {
			return objstore.NewWriteOp().Create(true).SetOmapHeader([]byte("h")).SetOmap(kv("a", "1"), kv("b", "2"))
		}},
		{"gone", func() *objstore.WriteOp { return objstore.NewWriteOp().Remove() }},
		{"", func() *objstore.WriteOp { return objstore.NewWriteOp().SetOmap(kv("k", "x")) }}, // ErrInvalid
		// The same object twice: the second op sees the first.
		{"twice", func() *objstore.WriteOp { return guard(objstore.NewWriteOp()).SetXattr("state", []byte("second")) }},
		{"twice", func() *objstore.WriteOp {
			return objstore.NewWriteOp().CmpXattr("state", objstore.CmpEQ, []byte("second")).SetOmap(kv("k", "2"))
		}},
		{"blob", func() *objstore.WriteOp { return guard(objstore.NewWriteOp()).WriteFull(big) }},
		{"nop", func() *objstore.WriteOp { return objstore.NewWriteOp().Create(false) }},
	}
	reqs := make([]objstore.WriteReq, len(specs))
	for i, s := range specs {
		reqs[i] = objstore.WriteReq{OID: s.oid, Op: s.op()}
	}
	objstore.OperateMany(bg, many, reqs)
	for i, s := range specs {
		op := s.op()
		err := alone.Operate(bg, s.oid, op)
		if objstore.Code(err) != objstore.Code(reqs[i].Err) || (err == nil) != (reqs[i].Err == nil) {
			t.Errorf("request %d (%q): batched %v, alone %v", i, s.oid, reqs[i].Err, err)
		}
		if err == nil && reqs[i].Op.Version == 0 {
			t.Errorf("request %d (%q): no version reported", i, s.oid)
		}
	}
	wantErr(t, reqs[1].Err, objstore.ErrCanceled, "batched op with a failed guard")
	wantErr(t, reqs[2].Err, objstore.ErrBusy, "batched op whose class method failed")
	wantErr(t, reqs[4].Err, objstore.ErrNotFound, "batched op asserting a missing object")
	wantErr(t, reqs[7].Err, objstore.ErrInvalid, "batched op with a bad name")
	for _, oid := range []string{"open", "closed", "failing", "counter", "missing", "fresh", "gone", "twice", "blob", "nop"} {
		a, m := snap(t, alone, oid), snap(t, many, oid)
		m.Version = a.Version // versions are per store history
		if !a.equal(m) {
			t.Errorf("object %q: batched %s, alone %s", oid, m, a)
		}
	}
	for i, oid := range []string{"open", "counter", "fresh", "twice", "blob"} {
		s := snap(t, many, oid)
		var last uint64
		for j := range reqs {
			if reqs[j].OID == oid && reqs[j].Err == nil {
				last = reqs[j].Op.Version
			}
		}
		if s.Version != last {
			t.Errorf("%d: object %q at version %d, its last op reported %d", i, oid, s.Version, last)
		}
	}
	if s := snap(t, many, "twice"); len(s.Omap) != 1 || string(s.Omap[0].Value) != "2" {
		t.Fatalf("ops on one object out of order: %s", s)
	}
	objstore.OperateMany(bg, many, nil) // nothing to do

	// Concurrent batches and single ops on the same objects lose no
	// update (each incr is one atomic read-modify-write) and deadlock
	// with neither each other nor batched reads.
	const objs, rounds = 6, 40
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for n := 0; n < rounds; n++ {
				if w == 0 {
					op := objstore.NewWriteOp()
					op.Exec(TestClass, "incr", nil)
					if err := many.Operate(bg, fmt.Sprintf("c%d", n%objs), op); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				// Batches in opposite orders.
				reqs := make([]objstore.WriteReq, objs)
				for i := range reqs {
					oid := fmt.Sprintf("c%d", i)
					if w == 2 {
						oid = fmt.Sprintf("c%d", objs-1-i)
					}
					reqs[i] = objstore.WriteReq{OID: oid, Op: objstore.NewWriteOp()}
					reqs[i].Op.Exec(TestClass, "incr", nil)
				}
				objstore.OperateMany(bg, many, reqs)
				for _, r := range reqs {
					if r.Err != nil {
						t.Error(r.Err)
						return
					}
				}
				rr := make([]objstore.ReadReq, objs)
				for i := range rr {
					rr[i] = objstore.ReadReq{OID: fmt.Sprintf("c%d", i), Op: objstore.NewReadOp()}
					rr[i].Op.GetOmapValues("", "", 0)
				}
				objstore.OperateReadMany(bg, many, rr)
			}
		}(w)
	}
	wg.Wait()
	total := 0
	for i := 0; i < objs; i++ {
		s := snap(t, many, fmt.Sprintf("c%d", i))
		for _, p := range s.Omap {
			if p.Key == "counter" {
				n, _ := strconv.Atoi(string(p.Value))
				total += n
			}
		}
	}
	if want := 2*rounds*objs + rounds; total != want {
		t.Fatalf("counters sum to %d, want %d (lost updates)", total, want)
	}
}
