package objstoretest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// readSpec adds steps to a ReadOp and returns a rendering of their
// results, so a batched read can be compared with the same read alone.
type readSpec struct {
	oid   string
	steps func(op *objstore.ReadOp) func() string
}

func omapPage(startAfter, prefix string, max int) func(*objstore.ReadOp) func() string {
	return func(op *objstore.ReadOp) func() string {
		vs := op.GetOmapValues(startAfter, prefix, max)
		return func() string { return fmt.Sprintf("%s more=%v", kvsString(vs.Pairs), vs.More) }
	}
}

// testReadMany: OperateReadMany gives each request what OperateRead gives
// it alone (results, guard failures, absence, bad input), whatever else is
// in the batch, and never a torn view of one object.
func testReadMany(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	// Objects whose names prefix each other ("a", "ab"), with omap,
	// xattrs, header and data, so a read that strays out of its object
	// shows up.
	for _, oid := range []string{"a", "ab", "b", "c"} {
		op := objstore.NewWriteOp().WriteFull([]byte("data of "+oid)).
			SetXattr("state", []byte("open")).SetXattr("z", []byte(oid)).
			SetOmapHeader([]byte("hdr " + oid))
		for i := 0; i < 20; i++ {
			op.SetOmap(kv(fmt.Sprintf("k%02d", i), oid+fmt.Sprint(i)))
		}
		operate(t, io, oid, op)
	}
	operate(t, io, "c", objstore.NewWriteOp().SetXattr("state", []byte("closed")))
	other := io.WithNamespace("other")
	operate(t, other, "a", objstore.NewWriteOp().SetOmap(kv("k00", "other ns")))

	guarded := func(page func(*objstore.ReadOp) func() string) func(*objstore.ReadOp) func() string {
		return func(op *objstore.ReadOp) func() string {
			op.CmpXattr("state", objstore.CmpNE, []byte("closed"))
			return page(op)
		}
	}
	specs := []readSpec{
		{"a", guarded(omapPage("", "", 5))},
		{"ab", guarded(omapPage("k03", "", 4))},
		{"b", guarded(omapPage("", "k1", 0))},
		{"c", guarded(omapPage("", "", 5))}, // closed: ErrCanceled
		{"a", omapPage("k18", "", 10)},      // the same object twice
		{"missing", omapPage("", "", 5)},    // ErrNotFound
		{"missing", func(op *objstore.ReadOp) func() string {
			s := op.Stat()
			return func() string { return fmt.Sprint(s.Exists) }
		}},
		{"", omapPage("", "", 1)}, // ErrInvalid
		{"b", func(op *objstore.ReadOp) func() string {
			h := op.GetOmapHeader()
			x := op.GetXattrs()
			ks := op.GetOmapKeys("k17", 0)
			bk := op.GetOmapValuesByKeys("k05", "nope", "k01")
			g := op.GetXattr("z")
			return func() string {
				return fmt.Sprintf("%s %s %v %s %s", h.Header, kvsString(x.Attrs), ks.Keys, kvsString(bk.Pairs), g.Value)
			}
		}},
		{"ab", func(op *objstore.ReadOp) func() string { // data and a class method
			d := op.Read(0, 4)
			e := op.Exec(TestClass, "get_omap", []byte("k07"))
			s := op.Stat()
			return func() string { return fmt.Sprintf("%s %s %d", d.Data, e.Out, s.Stat.Size) }
		}},
		{"a", func(op *objstore.ReadOp) func() string {
			op.GetXattr("absent")
			return func() string { return "" }
		}},
	}
	render := func(r func() string, err error) string {
		if err != nil {
			return fmt.Sprintf("error code %d", objstore.Code(err))
		}
		return r()
	}
	want := make([]string, len(specs))
	for i, s := range specs {
		op := objstore.NewReadOp()
		r := s.steps(op)
		want[i] = render(r, io.OperateRead(bg, s.oid, op))
	}
	if want[6] != "false" {
		t.Fatalf("stat of a missing object alone: %s", want[6])
	}
	reqs := make([]objstore.ReadReq, len(specs))
	rs := make([]func() string, len(specs))
	for i, s := range specs {
		reqs[i].OID, reqs[i].Op = s.oid, objstore.NewReadOp()
		rs[i] = s.steps(reqs[i].Op)
	}
	objstore.OperateReadMany(bg, io, reqs)
	for i := range specs {
		if got := render(rs[i], reqs[i].Err); got != want[i] {
			t.Errorf("request %d (%q): batched %q, alone %q", i, specs[i].oid, got, want[i])
		}
	}
	wantErr(t, reqs[3].Err, objstore.ErrCanceled, "batched read of a guarded object")
	wantErr(t, reqs[5].Err, objstore.ErrNotFound, "batched read of a missing object")
	wantErr(t, reqs[7].Err, objstore.ErrInvalid, "batched read with a bad name")
	wantErr(t, reqs[10].Err, objstore.ErrNotFound, "batched read of a missing xattr")
	if !strings.HasPrefix(want[0], `["k00"="a0" `) || !strings.HasPrefix(want[1], `["k04"="ab4" `) {
		t.Fatalf("reference reads: %q / %q", want[0], want[1])
	}
	// Reads see every write acknowledged before they start.
	operate(t, io, "b", objstore.NewWriteOp().SetOmap(kv("k10", "new")))
	reqs = []objstore.ReadReq{{OID: "b", Op: objstore.NewReadOp()}}
	vs := reqs[0].Op.GetOmapValuesByKeys("k10")
	objstore.OperateReadMany(bg, io, reqs)
	if reqs[0].Err != nil || kvsString(vs.Pairs) != `["k10"="new"]` {
		t.Fatalf("read after write: %s %v", kvsString(vs.Pairs), reqs[0].Err)
	}
	objstore.OperateReadMany(bg, io, nil) // nothing to do

	// Under concurrent writes each object is read whole: every write sets
	// two keys to the same value, so a torn read sees them differ.
	const objs = 8
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				v := fmt.Sprint(n)
				op := objstore.NewWriteOp().SetOmap(kv("p", v), kv("q", v))
				if err := io.Operate(bg, fmt.Sprintf("w%d", n%objs), op); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for round := 0; round < 50; round++ {
		reqs := make([]objstore.ReadReq, objs)
		steps := make([]*objstore.OmapValsStep, objs)
		for i := range reqs {
			reqs[i].OID, reqs[i].Op = fmt.Sprintf("w%d", i), objstore.NewReadOp()
			steps[i] = reqs[i].Op.GetOmapValues("", "", 0)
		}
		objstore.OperateReadMany(bg, io, reqs)
		for i, r := range reqs {
			if r.Err != nil && !errors.Is(r.Err, objstore.ErrNotFound) {
				t.Fatalf("w%d: %v", i, r.Err)
			}
			if p := steps[i].Pairs; r.Err == nil && (len(p) != 2 || string(p[0].Value) != string(p[1].Value)) {
				t.Fatalf("w%d: torn read %s", i, kvsString(p))
			}
		}
	}
	stop.Store(true)
	wg.Wait()
}
