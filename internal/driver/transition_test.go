package driver_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// newClassDriver has STANDARD, COLD (a pool of the main store) and
// ARCHIVE (a store of its own, as a separate data directory).
func newClassDriver(t *testing.T) (*driver.Driver, objstore.Store, objstore.Store, *recNotifier) {
	t.Helper()
	d, st, arch, n := newClassDriverWith(t, nil)
	return d, st, arch, n
}

// newClassDriverWith is newClassDriver with tweak applied to the options.
func newClassDriverWith(t *testing.T, tweak func(*driver.Options)) (*driver.Driver, *embedded.Store, *embedded.Store, *recNotifier) {
	t.Helper()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: "/d", FS: vfs.NewMem(), Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	arch, err := embedded.Open(embedded.Options{Dir: "/a", FS: vfs.NewMem(), Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	n := &recNotifier{}
	o := driver.Options{Store: st, DefaultShards: 3, GCMinWait: -1, Notifier: n,
		StorageClasses: []driver.StorageClass{{Name: "COLD"}, {Name: "ARCHIVE", Store: arch}}}
	if tweak != nil {
		tweak(&o)
	}
	d, err := driver.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); arch.Close(); st.Close() })
	return d, st, arch, n
}

func poolObjects(t *testing.T, st objstore.Store, pool string) int {
	t.Helper()
	io, err := st.IOContext(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	oids, _, err := io.ListObjects(context.Background(), "", 10000)
	if err != nil {
		t.Fatal(err)
	}
	return len(oids)
}

func TestStorageClassPlacement(t *testing.T) {
	ctx := context.Background()
	d, st, arch, _ := newClassDriver(t)
	if err := d.CreateBucket(ctx, "u", "bkt", "", 0); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("cold"), 3<<20) // 12 MiB: three stripes
	oi, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: "c", Body: bytes.NewReader(data), Size: int64(len(data)),
		Meta: driver.ObjectMeta{StorageClass: "COLD"}})
	if err != nil || oi.StorageClass != "COLD" {
		t.Fatalf("put COLD: %+v %v", oi, err)
	}
	put(t, d, "bkt", "s", []byte("standard"))
	if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: "a", Body: bytes.NewReader([]byte("x")), Size: 1,
		Meta: driver.ObjectMeta{StorageClass: "ARCHIVE"}}); err != nil {
		t.Fatal(err)
	}
	if got := poolObjects(t, st, driver.ClassPool("COLD")); got != 3 {
		t.Errorf("COLD pool holds %d objects, want 3 stripes", got)
	}
	if got := poolObjects(t, st, driver.PoolData); got != 1 {
		t.Errorf("default pool holds %d objects, want 1", got)
	}
	if got := poolObjects(t, arch, driver.ClassPool("ARCHIVE")); got != 1 {
		t.Errorf("ARCHIVE store holds %d objects, want 1", got)
	}
	if got := get(t, d, "bkt", "c", &driver.Range{Start: 4<<20 - 2, Length: 8}); !bytes.Equal(got, data[4<<20-2:4<<20+6]) {
		t.Errorf("range across COLD stripes: %q", got)
	}
	if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: "x", Body: bytes.NewReader(nil), Size: 0,
		Meta: driver.ObjectMeta{StorageClass: "GLACIER"}}); !errors.Is(err, driver.ErrInvalidStorageClass) {
		t.Fatalf("unconfigured class: %v", err)
	}
	res, err := d.ListObjects(ctx, driver.ListObjectsInput{Bucket: "bkt", MaxKeys: 10})
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]string{}
	for _, o := range res.Objects {
		classes[o.Key] = o.StorageClass
	}
	if classes["a"] != "ARCHIVE" || classes["c"] != "COLD" || classes["s"] != "" {
		t.Fatalf("listed classes %v", classes)
	}
	// Multipart: parts go to the class's pool, the object gets the class.
	id, err := d.CreateMultipartUpload(ctx, "bkt", "mp", driver.ObjectMeta{StorageClass: "COLD"})
	if err != nil {
		t.Fatal(err)
	}
	part := bytes.Repeat([]byte("p"), driver.MinPartSize)
	p1, err := d.UploadPart(ctx, "bkt", "mp", id, 1, bytes.NewReader(part), int64(len(part)), nil)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := d.ListParts(ctx, "bkt", "mp", id, 0, 10)
	if err != nil || lp.Upload.StorageClass != "COLD" {
		t.Fatalf("ListParts upload %+v %v", lp.Upload, err)
	}
	mp, err := d.CompleteMultipartUpload(ctx, "bkt", "mp", id, []driver.CompletePart{{PartNumber: 1, ETag: p1.ETag}}, driver.ObjectChecksum{})
	if err != nil || mp.StorageClass != "COLD" {
		t.Fatalf("complete: %+v %v", mp, err)
	}
	if got := poolObjects(t, st, driver.ClassPool("COLD")); got != 5 {
		t.Errorf("COLD pool holds %d objects after the multipart object, want 5", got)
	}
	// Copy in place to change the class; the old data is collected.
	cp, err := d.CopyObject(ctx, driver.CopyObjectInput{SrcBucket: "bkt", SrcKey: "c", DstBucket: "bkt", DstKey: "c", StorageClass: "STANDARD"})
	if err != nil || cp.StorageClass != "" {
		t.Fatalf("copy to STANDARD: %+v %v", cp, err)
	}
	d.CollectNow(ctx)
	if got := poolObjects(t, st, driver.ClassPool("COLD")); got != 2 {
		t.Errorf("COLD pool holds %d objects after the copy, want 2", got)
	}
	if got := get(t, d, "bkt", "c", nil); !bytes.Equal(got, data) {
		t.Error("copied data differs")
	}
}

func TestTransitionObject(t *testing.T) {
	ctx := context.Background()
	d, st, arch, n := newClassDriver(t)
	if err := d.CreateBucket(ctx, "u", "bkt", "", 0); err != nil {
		t.Fatal(err)
	}
	if err := d.PutBucketVersioning(ctx, "bkt", driver.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 512<<10) // 8 MiB: two stripes
	v1 := put(t, d, "bkt", "k", data)
	v2 := put(t, d, "bkt", "k", []byte("new"))
	// A reader holding the old manifest finishes after the move.
	_, rd, err := d.GetObjectVersion(ctx, "bkt", "k", v1.VersionID, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.events = nil
	tin := driver.TransitionInput{Bucket: "bkt", Key: "k", VersionID: v1.VersionID, StorageClass: "ARCHIVE",
		IfETag: v1.ETag, EventNames: []string{"ObjectLifecycle:Transition:NonCurrent"}}
	res, err := d.TransitionObject(ctx, tin)
	if err != nil || !res.Moved || res.Bytes != int64(len(data)) {
		t.Fatalf("transition: %+v %v", res, err)
	}
	old, err := io.ReadAll(rd)
	if err != nil || !bytes.Equal(old, data) {
		t.Fatalf("reader of the old manifest: %d bytes, %v", len(old), err)
	}
	if len(n.events) != 1 || n.events[0] != "ObjectLifecycle:Transition:NonCurrent k "+v1.VersionID {
		t.Fatalf("events %q", n.events)
	}
	d.CollectNow(ctx)
	if got := poolObjects(t, arch, driver.ClassPool("ARCHIVE")); got != 2 {
		t.Errorf("ARCHIVE holds %d objects, want 2 stripes", got)
	}
	if got := poolObjects(t, st, driver.PoolData); got != 1 {
		t.Errorf("default pool holds %d objects, want only v2's", got)
	}
	oi, body, err := getVersion(t, d, "bkt", "k", v1.VersionID)
	if err != nil || body != string(data) || oi.StorageClass != "ARCHIVE" || oi.ETag != v1.ETag || oi.VersionID != v1.VersionID {
		t.Fatalf("v1 after the move: %+v, %d bytes, %v", oi, len(body), err)
	}
	if cur, _ := d.HeadObject(ctx, "bkt", "k"); cur.VersionID != v2.VersionID || cur.StorageClass != "" {
		t.Fatalf("current version %+v", cur)
	}
	// Again: already there, nothing copied.
	if res, err := d.TransitionObject(ctx, tin); err != nil || res.Moved {
		t.Fatalf("second transition: %+v %v", res, err)
	}
	// A changed version is left alone.
	tin.VersionID, tin.IfETag, tin.StorageClass = "", v1.ETag, "COLD"
	if _, err := d.TransitionObject(ctx, tin); !errors.Is(err, driver.ErrPreconditionFailed) {
		t.Fatalf("transition of a replaced version: %v", err)
	}
	if got := poolObjects(t, st, driver.ClassPool("COLD")); got != 0 {
		t.Errorf("a refused transition left %d objects in COLD", got)
	}
	tin.StorageClass = "GLACIER"
	if _, err := d.TransitionObject(ctx, tin); !errors.Is(err, driver.ErrInvalidStorageClass) {
		t.Fatalf("transition to an unconfigured class: %v", err)
	}
}

func TestTransitionEncrypted(t *testing.T) {
	ctx := context.Background()
	d, st, _, _ := newClassDriver(t)
	if err := d.CreateBucket(ctx, "u", "bkt", "", 0); err != nil {
		t.Fatal(err)
	}
	ckey := bytes.Repeat([]byte{7}, 32)
	cctx := sseCtx(&driver.SSESpec{Mode: driver.SSEModeC, CustomerKey: ckey}, ckey, nil)
	data := bytes.Repeat([]byte("secret!"), 1<<20)
	if _, err := d.PutObject(cctx, driver.PutObjectInput{Bucket: "bkt", Key: "e", Body: bytes.NewReader(data), Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	// The move needs no key: the stored packages are copied.
	if res, err := d.TransitionObject(ctx, driver.TransitionInput{Bucket: "bkt", Key: "e", StorageClass: "COLD"}); err != nil || !res.Moved {
		t.Fatalf("transition: %+v %v", res, err)
	}
	d.CollectNow(ctx)
	if got := poolObjects(t, st, driver.PoolData); got != 0 {
		t.Errorf("default pool holds %d objects after the move", got)
	}
	got, err := readBoth(t, cctx, d, "e", &driver.Range{Start: 65536 - 3, Length: 5 << 20})
	if err != nil || !bytes.Equal(got, data[65536-3:65536-3+5<<20]) {
		t.Fatalf("range of the moved encrypted object: %d bytes, %v", len(got), err)
	}
}

// TestOrphanScanCoversClassPools: the orphan scan lists every storage
// class's pool (a crash between a transition's copy and its switch leaves
// the copy there), including a class kept in a store of its own, and
// keeps the live data of each.
func TestOrphanScanCoversClassPools(t *testing.T) {
	ctx := context.Background()
	d, st, arch, _ := newClassDriver(t)
	if err := d.CreateBucket(ctx, "u", "bkt", "", 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"COLD", "ARCHIVE"} {
		if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: c, Body: bytes.NewReader([]byte(c)), Size: int64(len(c)),
			Meta: driver.ObjectMeta{StorageClass: c}}); err != nil {
			t.Fatal(err)
		}
	}
	// An unreferenced copy beside each live object: same owner record,
	// a run name no entry names.
	for _, p := range []struct {
		st    objstore.Store
		class string
	}{{st, "COLD"}, {arch, "ARCHIVE"}} {
		io, err := p.st.IOContext(ctx, driver.ClassPool(p.class))
		if err != nil {
			t.Fatal(err)
		}
		oids, _, err := io.ListObjects(ctx, "", 10)
		if err != nil || len(oids) != 1 {
			t.Fatalf("%s pool: %v %v", p.class, oids, err)
		}
		op := objstore.NewReadOp()
		ow := op.GetXattr("cairn.owner")
		if err := io.OperateRead(ctx, oids[0], op); err != nil {
			t.Fatal(err)
		}
		if err := io.Operate(ctx, "zzorphan"+p.class, objstore.NewWriteOp().WriteFull([]byte("copy")).SetXattr("cairn.owner", ow.Value)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := d.ScanOrphans(ctx, driver.OrphanOptions{Remove: true})
	if err != nil || rep.Removed != 2 || rep.Orphans != 2 {
		t.Fatalf("scan: %+v %v", rep, err)
	}
	if got := poolObjects(t, st, driver.ClassPool("COLD")); got != 1 {
		t.Errorf("COLD pool holds %d objects after the scan, want 1", got)
	}
	if got := poolObjects(t, arch, driver.ClassPool("ARCHIVE")); got != 1 {
		t.Errorf("ARCHIVE store holds %d objects after the scan, want 1", got)
	}
	for _, c := range []string{"COLD", "ARCHIVE"} {
		if got := get(t, d, "bkt", c, nil); string(got) != c {
			t.Errorf("%s reads %q after the scan", c, got)
		}
	}
}
