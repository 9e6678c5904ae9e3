// Package objstoretest is the conformance suite every objstore backend
// runs: one test body, every implementation (see nats-server's store
// tests). A backend's test calls RunCore with a Factory.
package objstoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Factory returns a fresh store for one subtest. It must have been opened
// with a registry on which RegisterTestClasses was called, and should be
// closed by the factory's t.Cleanup. Stores may be shared between subtests
// (a real cluster): every subtest uses pools of its own.
type Factory func(t *testing.T) objstore.Store

// RunCore runs the core conformance suite against the backend.
func RunCore(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, st objstore.Store)
	}{
		{"Data", testData},
		{"DataModel", testDataModel},
		{"RemoveRecreate", testRemoveRecreate},
		{"CreateSemantics", testCreateSemantics},
		{"FreshWrite", testFreshWrite},
		{"Xattrs", testXattrs},
		{"Omap", testOmap},
		{"OmapOddKeysPaging", testOmapOddKeys},
		{"Stat", testStat},
		{"Guards", testGuards},
		{"CmpXattrMatrix", testCmpXattrMatrix},
		{"ReadOpGuards", testReadOpGuards},
		{"ReadMany", testReadMany},
		{"WriteMany", testWriteMany},
		{"Views", testViews},
		{"Loads", testLoads},
		{"Atomicity", testAtomicity},
		{"NoLostUpdates", testNoLostUpdates},
		{"Exec", testExec},
		{"ExecCache", testExecCache},
		{"Listing", testListing},
		{"Pools", testPools},
		{"BadInput", testBadInput},
		{"ConcurrentObjects", testConcurrentObjects},
		{"AtomicWrite", testAtomicWrite},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, f(t))
		})
	}
}

var poolSeq atomic.Int64

// newPool creates a pool unique to the test and returns its default
// namespace.
func newPool(t *testing.T, st objstore.Store) objstore.IOContext {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("t.%s.%d", strings.NewReplacer("/", ".", " ", "_").Replace(t.Name()), poolSeq.Add(1))
	if len(name) > objstore.MaxPoolNameLen {
		name = name[len(name)-objstore.MaxPoolNameLen:]
	}
	if err := st.CreatePool(ctx, name); err != nil {
		t.Fatalf("CreatePool(%q): %v", name, err)
	}
	t.Cleanup(func() { st.DeletePool(context.Background(), name) })
	io, err := st.IOContext(ctx, name)
	if err != nil {
		t.Fatalf("IOContext(%q): %v", name, err)
	}
	return io
}

var bg = context.Background()

func operate(t *testing.T, io objstore.IOContext, oid string, op *objstore.WriteOp) uint64 {
	t.Helper()
	if err := io.Operate(bg, oid, op); err != nil {
		t.Fatalf("Operate(%q): %v", oid, err)
	}
	return op.Version
}

func readOp(t *testing.T, io objstore.IOContext, oid string, op *objstore.ReadOp) {
	t.Helper()
	if err := io.OperateRead(bg, oid, op); err != nil {
		t.Fatalf("OperateRead(%q): %v", oid, err)
	}
}

// wantErr checks that err is an *objstore.Error carrying code.
func wantErr(t *testing.T, err error, code objstore.Errno, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got nil error, want %v", what, code)
	}
	if !errors.Is(err, code) {
		t.Fatalf("%s: got %v (code %d), want %v (%d)", what, err, objstore.Code(err), code, code)
	}
	var oe *objstore.Error
	if !errors.As(err, &oe) {
		t.Fatalf("%s: error %v (%T) is not an *objstore.Error", what, err, err)
	}
}

func kv(k, v string) objstore.KV { return objstore.KV{Key: k, Value: []byte(v)} }

// snapshot is everything observable about one object.
type snapshot struct {
	Exists  bool
	Version uint64
	Size    int64
	Data    []byte
	Xattrs  []objstore.KV
	Omap    []objstore.KV
	Header  []byte
}

func snap(t *testing.T, io objstore.IOContext, oid string) snapshot {
	t.Helper()
	op := objstore.NewReadOp()
	st := op.Stat()
	if err := io.OperateRead(bg, oid, op); err != nil {
		t.Fatalf("stat %q: %v", oid, err)
	}
	if !st.Exists {
		return snapshot{}
	}
	op = objstore.NewReadOp()
	st = op.Stat()
	rd := op.Read(0, 0)
	xs := op.GetXattrs()
	om := op.GetOmapValues("", "", 0)
	hd := op.GetOmapHeader()
	readOp(t, io, oid, op)
	return snapshot{true, st.Stat.Version, st.Stat.Size, rd.Data, xs.Attrs, om.Pairs, hd.Header}
}

func (a snapshot) equal(b snapshot) bool {
	return a.Exists == b.Exists && a.Version == b.Version && a.Size == b.Size &&
		bytes.Equal(a.Data, b.Data) && kvsEqual(a.Xattrs, b.Xattrs) &&
		kvsEqual(a.Omap, b.Omap) && bytes.Equal(a.Header, b.Header)
}

func (a snapshot) String() string {
	d := a.Data
	if len(d) > 32 {
		d = d[:32]
	}
	return fmt.Sprintf("{exists=%v v=%d size=%d data=%q xattrs=%s omap=%s header=%q}",
		a.Exists, a.Version, a.Size, d, kvsString(a.Xattrs), kvsString(a.Omap), a.Header)
}

func kvsEqual(a, b []objstore.KV) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

func kvsString(kvs []objstore.KV) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, kv := range kvs {
		if i > 0 {
			sb.WriteByte(' ')
		}
		v := kv.Value
		if len(v) > 16 {
			v = v[:16]
		}
		fmt.Fprintf(&sb, "%q=%q", kv.Key, v)
	}
	sb.WriteByte(']')
	return sb.String()
}

func wantKVs(t *testing.T, what string, got []objstore.KV, want ...objstore.KV) {
	t.Helper()
	if !kvsEqual(got, want) {
		t.Fatalf("%s: got %s, want %s", what, kvsString(got), kvsString(want))
	}
}

func wantData(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		if len(got) != len(want) {
			t.Fatalf("%s: got %d bytes, want %d", what, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: first difference at byte %d: got %#x, want %#x", what, i, got[i], want[i])
			}
		}
	}
}

// readAll returns the object's data.
func readAll(t *testing.T, io objstore.IOContext, oid string) []byte {
	t.Helper()
	op := objstore.NewReadOp()
	r := op.Read(0, 0)
	readOp(t, io, oid, op)
	return r.Data
}

func stat(t *testing.T, io objstore.IOContext, oid string) (objstore.Stat, bool) {
	t.Helper()
	op := objstore.NewReadOp()
	s := op.Stat()
	readOp(t, io, oid, op)
	return s.Stat, s.Exists
}
