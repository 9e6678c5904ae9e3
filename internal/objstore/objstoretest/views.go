package objstoretest

import (
	"context"
	"fmt"
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
	testViewCursor(t, io, v)
}

// testViewCursor: OpenView walks the keys after startAfter under prefix
// in order, SeekAfter skips forward (never back), Close succeeds once.
func testViewCursor(t *testing.T, io objstore.IOContext, v objstore.Viewer) {
	ctx := context.Background()
	operate(t, io, "c", objstore.NewWriteOp().SetView("cv", "", "").SetOmap(
		kv("a/1", "1"), kv("a/2", "2"), kv("b/1", "3"), kv("b/2", "4"), kv("b/3", "5"), kv("c/1", "6")))
	operate(t, io, "c", objstore.NewWriteOp().SetOmap(kv("x", "7")))
	walk := func(after, prefix string, skip map[string]string) []string {
		t.Helper()
		vc, err := v.OpenView(ctx, "cv", after, prefix)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for vc.Valid() {
			k := string(vc.Key())
			got = append(got, k+"="+string(vc.Value()))
			if to, ok := skip[k]; ok {
				vc.SeekAfter(to)
			} else {
				vc.Next()
			}
		}
		if err := vc.Close(); err != nil {
			t.Fatal(err)
		}
		if err := vc.Close(); err == nil {
			t.Fatal("a second Close succeeded")
		}
		return got
	}
	for _, c := range []struct {
		after, prefix string
		skip          map[string]string
		want          string
	}{
		{"", "", nil, "[a/1=1 a/2=2 b/1=3 b/2=4 b/3=5 c/1=6 x=7]"},
		{"a/2", "", nil, "[b/1=3 b/2=4 b/3=5 c/1=6 x=7]"},
		{"a/1", "b/", nil, "[b/1=3 b/2=4 b/3=5]"},
		{"b/2", "b/", nil, "[b/3=5]"},
		{"", "d", nil, "[]"},
		{"", "", map[string]string{"a/1": "a/\xff", "b/1": "b/2"}, "[a/1=1 b/1=3 b/3=5 c/1=6 x=7]"},
		{"", "b/", map[string]string{"b/1": "z"}, "[b/1=3]"},
	} {
		if got := fmt.Sprint(walk(c.after, c.prefix, c.skip)); got != c.want {
			t.Errorf("walk after %q prefix %q skip %v = %s, want %s", c.after, c.prefix, c.skip, got, c.want)
		}
	}
}
