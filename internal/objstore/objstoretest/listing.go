package objstoretest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

func listAll(t *testing.T, io objstore.IOContext, page int) []string {
	t.Helper()
	var out []string
	marker := ""
	for i := 0; ; i++ {
		oids, more, err := io.ListObjects(bg, marker, page)
		if err != nil {
			t.Fatalf("ListObjects(%q, %d): %v", marker, page, err)
		}
		if page > 0 && len(oids) > page {
			t.Fatalf("ListObjects returned %d > max %d", len(oids), page)
		}
		out = append(out, oids...)
		if !more {
			return out
		}
		if len(oids) == 0 {
			t.Fatal("ListObjects: more=true with an empty page")
		}
		marker = oids[len(oids)-1]
		if i > 10000 {
			t.Fatal("listing does not end")
		}
	}
}

func testListing(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	if got := listAll(t, io, 10); len(got) != 0 {
		t.Fatalf("empty pool lists %q", got)
	}
	nsA := io.WithNamespace("a")
	nsAB := io.WithNamespace("a\x01b")
	if nsA.Namespace() != "a" || nsA.Pool() != io.Pool() || io.Namespace() != "" {
		t.Fatal("WithNamespace handle reports the wrong pool or namespace")
	}
	var want, wantA []string
	for i := 0; i < 53; i++ {
		oid := fmt.Sprintf("obj%02d", i)
		if i%5 == 0 {
			oid += "\xff"
		}
		if i%7 == 0 {
			oid = "a/" + oid
		}
		want = append(want, oid)
		operate(t, io, oid, objstore.NewWriteOp().Create(true))
	}
	for _, oid := range []string{"obj01", "zzz", "a", "\x01"} {
		wantA = append(wantA, oid)
		operate(t, nsA, oid, objstore.NewWriteOp().SetXattr("ns", []byte("a")))
	}
	operate(t, nsAB, "only-in-a\x01b", objstore.NewWriteOp().Create(true))
	sort.Strings(want)
	sort.Strings(wantA)
	for _, page := range []int{0, 1, 7, 53, 100} {
		if got := listAll(t, io, page); !slices.Equal(got, want) {
			t.Fatalf("list page %d:\n got %q\nwant %q", page, got, want)
		}
	}
	if got := listAll(t, nsA, 3); !slices.Equal(got, wantA) {
		t.Fatalf("namespace a lists %q, want %q", got, wantA)
	}
	if got := listAll(t, nsAB, 3); !slices.Equal(got, []string{"only-in-a\x01b"}) {
		t.Fatalf("namespace a\\x01b lists %q", got)
	}
	// Same name, different namespaces: different objects.
	op := objstore.NewReadOp()
	x := op.GetXattrOptional("ns")
	readOp(t, io, "obj01", op)
	if x.Found {
		t.Fatal("namespace a's xattr visible in the default namespace")
	}
	// A marker that is not an object name.
	oids, more, err := io.ListObjects(bg, "obj2", 3)
	if err != nil || !more || !slices.Equal(oids, []string{"obj20\xff", "obj22", "obj23"}) {
		t.Fatalf("list after obj2: %q more=%v err=%v", oids, more, err)
	}
	oids, more, err = io.ListObjects(bg, want[len(want)-1], 3)
	if err != nil || more || len(oids) != 0 {
		t.Fatalf("list after last: %q more=%v err=%v", oids, more, err)
	}
	// Removed objects leave the listing.
	operate(t, io, want[0], objstore.NewWriteOp().Remove())
	if got := listAll(t, io, 10); !slices.Equal(got, want[1:]) {
		t.Fatalf("after remove: %q", got)
	}
	if _, _, err := io.ListObjects(bg, "", -1); objstore.Code(err) != objstore.ErrInvalid {
		t.Fatalf("negative max: %v", err)
	}
}

func testPools(t *testing.T, st objstore.Store) {
	ctx := context.Background()
	name := fmt.Sprintf("t.pools.%d", poolSeq.Add(1))
	names := []string{name + ".b", name + ".a", name + ".c"}
	for _, n := range names {
		if err := st.CreatePool(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.DeletePool(context.Background(), n) })
	}
	wantErr(t, st.CreatePool(ctx, names[0]), objstore.ErrExists, "duplicate pool")
	pools, err := st.ListPools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !sort.StringsAreSorted(pools) {
		t.Fatalf("pools not sorted: %q", pools)
	}
	var mine []string
	for _, p := range pools {
		if strings.HasPrefix(p, name+".") {
			mine = append(mine, p)
		}
	}
	if !slices.Equal(mine, []string{name + ".a", name + ".b", name + ".c"}) {
		t.Fatalf("ListPools: %q", mine)
	}
	io, err := st.IOContext(ctx, names[1])
	if err != nil {
		t.Fatal(err)
	}
	other, _ := st.IOContext(ctx, names[0])
	operate(t, io, "o", objstore.NewWriteOp().WriteFull(pattern(2<<20, 1)).SetOmap(kv("k", "v")))
	operate(t, io.WithNamespace("ns"), "o2", objstore.NewWriteOp().WriteFull([]byte("x")))
	operate(t, other, "o", objstore.NewWriteOp().WriteFull([]byte("other")))

	if err := st.DeletePool(ctx, names[1]); err != nil {
		t.Fatal(err)
	}
	wantErr(t, st.DeletePool(ctx, names[1]), objstore.ErrNotFound, "delete deleted pool")
	_, err = st.IOContext(ctx, names[1])
	wantErr(t, err, objstore.ErrNotFound, "IOContext of deleted pool")
	_, err = st.IOContext(ctx, "no-such-pool")
	wantErr(t, err, objstore.ErrNotFound, "IOContext of missing pool")
	// A handle from before the deletion fails.
	wantErr(t, io.Operate(bg, "o", objstore.NewWriteOp().Create(false)), objstore.ErrNotFound, "write to deleted pool")
	// Re-created pool of the same name is empty.
	if err := st.CreatePool(ctx, names[1]); err != nil {
		t.Fatal(err)
	}
	io2, err := st.IOContext(ctx, names[1])
	if err != nil {
		t.Fatal(err)
	}
	if got := listAll(t, io2, 0); len(got) != 0 {
		t.Fatalf("re-created pool lists %q", got)
	}
	if got := listAll(t, io2.WithNamespace("ns"), 0); len(got) != 0 {
		t.Fatalf("re-created pool's namespace lists %q", got)
	}
	if _, ok := stat(t, io2, "o"); ok {
		t.Fatal("object survived pool deletion")
	}
	wantData(t, "other pool untouched", readAll(t, other, "o"), []byte("other"))
	for _, bad := range []string{"", "a\x00b", strings.Repeat("p", objstore.MaxPoolNameLen+1)} {
		wantErr(t, st.CreatePool(ctx, bad), objstore.ErrInvalid, fmt.Sprintf("CreatePool(%q)", bad))
	}
}

func testBadInput(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	operate(t, io, "o", objstore.NewWriteOp().WriteFull([]byte("keep")).SetXattr("a", []byte("1")))
	before := snap(t, io, "o")
	good := func() *objstore.WriteOp { return objstore.NewWriteOp().SetXattr("good", []byte("1")) }
	longOid := strings.Repeat("o", objstore.MaxObjectNameLen+1)
	// Bad object names and namespaces.
	for _, oid := range []string{"", "a\x00b", longOid} {
		wantErr(t, io.Operate(bg, oid, good()), objstore.ErrInvalid, fmt.Sprintf("Operate(%.10q)", oid))
		op := objstore.NewReadOp()
		op.Stat()
		wantErr(t, io.OperateRead(bg, oid, op), objstore.ErrInvalid, fmt.Sprintf("OperateRead(%.10q)", oid))
	}
	operate(t, io, strings.Repeat("o", objstore.MaxObjectNameLen), good())
	badNS := io.WithNamespace("n\x00s")
	wantErr(t, badNS.Operate(bg, "x", good()), objstore.ErrInvalid, "NUL namespace")
	_, _, err := badNS.ListObjects(bg, "", 0)
	wantErr(t, err, objstore.ErrInvalid, "list NUL namespace")
	wantErr(t, io.WithNamespace(strings.Repeat("n", objstore.MaxNamespaceLen+1)).Operate(bg, "x", good()), objstore.ErrInvalid, "long namespace")

	cases := []struct {
		name string
		op   *objstore.WriteOp
		code objstore.Errno
	}{
		{"empty op", objstore.NewWriteOp(), objstore.ErrInvalid},
		{"empty xattr name", good().SetXattr("", nil), objstore.ErrInvalid},
		{"NUL xattr name", good().SetXattr("a\x00", nil), objstore.ErrInvalid},
		{"long xattr name", good().SetXattr(strings.Repeat("x", objstore.MaxXattrNameLen+1), nil), objstore.ErrInvalid},
		{"big xattr value", good().SetXattr("v", make([]byte, objstore.MaxXattrValueLen+1)), objstore.ErrTooBig},
		{"empty omap key", good().SetOmap(kv("", "v")), objstore.ErrInvalid},
		{"NUL omap key", good().SetOmap(kv("a\x00b", "v")), objstore.ErrInvalid},
		{"long omap key", good().SetOmap(kv(strings.Repeat("k", objstore.MaxOmapKeyLen+1), "v")), objstore.ErrInvalid},
		{"big omap value", good().SetOmap(objstore.KV{Key: "k", Value: make([]byte, objstore.MaxOmapValueLen+1)}), objstore.ErrTooBig},
		{"big omap header", good().SetOmapHeader(make([]byte, objstore.MaxOmapValueLen+1)), objstore.ErrTooBig},
		{"rm NUL omap key", good().RmOmapKeys("ok", "a\x00"), objstore.ErrInvalid},
		{"omap_cmp NUL key", good().OmapCmp("\x00", objstore.CmpEQ, nil), objstore.ErrInvalid},
		{"rm range end<start", good().OmapRmRange("b", "a"), objstore.ErrInvalid},
		{"negative offset", good().Write([]byte("x"), -1), objstore.ErrInvalid},
		{"negative truncate", good().Truncate(-1), objstore.ErrInvalid},
		{"write past max size", good().Write([]byte("x"), objstore.MaxObjectSize), objstore.ErrTooBig},
		{"truncate past max size", good().Truncate(objstore.MaxObjectSize + 1), objstore.ErrTooBig},
		{"bad cmp op", good().CmpXattr("a", 0, nil), objstore.ErrInvalid},
		{"bad cmp op 7", good().OmapCmp("a", 7, nil), objstore.ErrInvalid},
		{"exec empty class", func() *objstore.WriteOp { o := good(); o.Exec("", "m", nil); return o }(), objstore.ErrInvalid},
		{"read step in write op", &objstore.WriteOp{Steps: []objstore.Step{&objstore.SetXattr{Name: "g"}, &objstore.StatStep{}}}, objstore.ErrInvalid},
	}
	for _, c := range cases {
		wantErr(t, io.Operate(bg, "o", c.op), c.code, c.name)
		wantErr(t, io.Operate(bg, "fresh", c.op), c.code, c.name+" (missing object)")
	}
	if after := snap(t, io, "o"); !after.equal(before) {
		t.Fatalf("bad input changed the object:\n%v\n%v", before, after)
	}
	if _, ok := stat(t, io, "fresh"); ok {
		t.Fatal("bad input created an object")
	}
	// Bad read ops.
	for name, op := range map[string]*objstore.ReadOp{
		"empty":          objstore.NewReadOp(),
		"negative read":  func() *objstore.ReadOp { o := objstore.NewReadOp(); o.Read(-1, 1); return o }(),
		"negative max":   func() *objstore.ReadOp { o := objstore.NewReadOp(); o.GetOmapValues("", "", -1); return o }(),
		"NUL xattr name": func() *objstore.ReadOp { o := objstore.NewReadOp(); o.GetXattr("\x00"); return o }(),
		"write step":     {Steps: []objstore.Step{&objstore.SetXattr{Name: "x"}}},
	} {
		wantErr(t, io.OperateRead(bg, "o", op), objstore.ErrInvalid, "read op: "+name)
	}
}

func testConcurrentObjects(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	workers, per := 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			oid := fmt.Sprintf("obj-%d", w)
			for i := 0; i < per; i++ {
				op := objstore.NewWriteOp().Append([]byte{byte(i)}).SetOmap(kv(fmt.Sprintf("k%03d", i), "v")).
					SetXattr("last", []byte(fmt.Sprint(i)))
				if err := io.Operate(bg, oid, op); err != nil {
					errs <- err
					return
				}
				if i%10 == 0 {
					if _, _, err := io.ListObjects(bg, "", 0); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := 0; w < workers; w++ {
		s := snap(t, io, fmt.Sprintf("obj-%d", w))
		if s.Size != int64(per) || len(s.Omap) != per || string(s.Xattrs[0].Value) != fmt.Sprint(per-1) {
			t.Fatalf("object %d: %v", w, s)
		}
		for i, b := range s.Data {
			if int(b) != i {
				t.Fatalf("object %d: byte %d = %d", w, i, b)
			}
		}
	}
}
