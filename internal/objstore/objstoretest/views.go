package objstoretest

import (
	"context"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// testViews: a backend either keeps ordered views (objstore.Viewer: a
// member's omap writes below the bound reach the view, atomically with
// the op) or refuses SetView with ErrNotSupported and changes nothing.
func testViews(t *testing.T, st objstore.Store) {
	ctx := context.Background()
	io := newPool(t, st)
	operate(t, io, "m", objstore.NewWriteOp().SetOmap(kv("before", "x")))
	join := objstore.NewWriteOp().SetView("v", "\xff", "").SetOmap(kv("k", "1"), kv("\xffs", "2"))
	err := io.Operate(ctx, "m", join)
	v, ok := io.(objstore.Viewer)
	if !ok {
		if objstore.Code(err) != objstore.ErrNotSupported {
			t.Fatalf("SetView on a backend without views: %v, want ErrNotSupported", err)
		}
		op := objstore.NewReadOp()
		vals := op.GetOmapValues("", "", 0)
		if err := io.OperateRead(ctx, "m", op); err != nil || len(vals.Pairs) != 1 {
			t.Fatalf("the refused op changed the object: %v %v", vals.Pairs, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	operate(t, io, "m", objstore.NewWriteOp().SetOmap(kv("k2", "3")).RmOmapKeys("k"))
	kvs, more, err := v.ReadView(ctx, "v", "", "", 0)
	if err != nil || more || len(kvs) != 1 || kvs[0].Key != "k2" || string(kvs[0].Value) != "3" {
		t.Fatalf("view = %v more %v, %v; want [k2=3]", kvs, more, err)
	}
}
