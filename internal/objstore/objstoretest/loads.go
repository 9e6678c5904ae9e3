package objstoretest

import (
	"context"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// testLoads: on a backend that loads omaps in bulk (objstore.OmapLoader),
// a committed load shows in the objects' omaps beside their own keys, and
// a load whose guard fails shows nothing. Backends without loads skip.
func testLoads(t *testing.T, st objstore.Store) {
	ctx := context.Background()
	io := newPool(t, st)
	ld, ok := io.(objstore.OmapLoader)
	if !ok {
		t.Skip("backend has no omap loads")
	}
	operate(t, io, "a", objstore.NewWriteOp().SetOmap(kv("own", "x")).SetXattr("e", []byte("2")))
	operate(t, io, "b", objstore.NewWriteOp().Create(false))
	load := func(epoch uint64, pairs ...[2]string) error {
		l, err := ld.NewOmapLoad(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Abort()
		if err := l.Guard("a", objstore.NewReadOp().CmpXattrU64("e", objstore.CmpEQ, epoch)); err != nil {
			t.Fatal(err)
		}
		for _, p := range pairs {
			oid, k := p[0], p[1]
			if err := l.Add(oid, k, []byte(oid+k)); err != nil {
				t.Fatal(err)
			}
		}
		return l.Commit(ctx)
	}
	if err := load(1, [2]string{"a", "k1"}, [2]string{"b", "k1"}); objstore.Code(err) != objstore.ErrCanceled {
		t.Fatalf("a load whose guard fails: %v, want ErrCanceled", err)
	}
	if err := load(2, [2]string{"a", "k1"}, [2]string{"b", "k1"}, [2]string{"a", "k2"}); err != nil {
		t.Fatal(err)
	}
	for oid, want := range map[string][]string{"a": {"k1", "k2", "own"}, "b": {"k1"}} {
		op := objstore.NewReadOp()
		vals := op.GetOmapValues("", "", 0)
		if err := io.OperateRead(ctx, oid, op); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range vals.Pairs {
			got = append(got, p.Key)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: omap keys %q, want %q", oid, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: omap keys %q, want %q", oid, got, want)
			}
		}
	}
}
