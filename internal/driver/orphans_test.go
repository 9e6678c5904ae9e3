package driver_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// crashRig runs a driver whose failpoints "crash" (panic out of the
// request, skipping every later step) and restarts a fresh driver on the
// same store, as a gateway killed at that step and started again.
type crashRig struct {
	t     *testing.T
	st    objstore.Store
	d     *driver.Driver
	point atomic.Pointer[string]
	left  atomic.Int64
}

type crashed struct{ point string }

func newCrashRig(t *testing.T) *crashRig {
	t.Helper()
	st := newMemStore(t)
	r := &crashRig{t: t, st: st}
	r.open()
	t.Cleanup(func() { r.d.Close(); st.Close() })
	if err := r.d.CreateBucket(context.Background(), "alice", "bkt", "", 3); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *crashRig) open() {
	d, err := driver.New(context.Background(), driver.Options{Store: r.st, DefaultShards: 3, GCMinWait: time.Hour,
		Failpoint: func(p string) {
			if a := r.point.Load(); a != nil && *a == p && r.left.Add(-1) == 0 {
				r.point.Store(nil)
				panic(crashed{p})
			}
		}})
	if err != nil {
		r.t.Fatal(err)
	}
	r.d = d
}

// crash runs op and requires it to stop at the nth hit of point; then the
// driver restarts.
func (r *crashRig) crash(point string, nth int, op func(d *driver.Driver) error) {
	r.t.Helper()
	r.left.Store(int64(nth))
	r.point.Store(&point)
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(crashed); !ok {
					panic(v)
				}
			} else {
				r.t.Fatalf("no crash at %s:%d", point, nth)
			}
		}()
		_ = op(r.d)
	}()
	r.d.Close()
	r.open()
}

// recover does what a restarted gateway and an operator do: queue the
// index's GC records, collect them all, then scan for orphans.
func (r *crashRig) recover() driver.OrphanReport {
	r.t.Helper()
	ctx := context.Background()
	if _, err := r.d.GCProcess(ctx, true); err != nil {
		r.t.Fatal(err)
	}
	rep, err := r.d.ScanOrphans(ctx, driver.OrphanOptions{Remove: true})
	if err != nil {
		r.t.Fatal(err)
	}
	return rep
}

// drain deletes every object and upload of bucket b, collects, and
// requires the data pool to be empty: nothing leaked, nothing shared.
func (r *crashRig) drain() {
	r.t.Helper()
	ctx := context.Background()
	res, err := r.d.ListObjects(ctx, driver.ListObjectsInput{Bucket: "bkt", MaxKeys: 1000})
	if err != nil {
		r.t.Fatal(err)
	}
	for _, o := range res.Objects {
		if err := r.d.DeleteObject(ctx, "bkt", o.Key); err != nil {
			r.t.Fatal(err)
		}
	}
	ups, err := r.d.ListMultipartUploads(ctx, driver.ListUploadsInput{Bucket: "bkt"})
	if err != nil {
		r.t.Fatal(err)
	}
	for _, u := range ups.Uploads {
		if err := r.d.AbortMultipartUpload(ctx, "bkt", u.Key, u.UploadID); err != nil {
			r.t.Fatal(err)
		}
	}
	r.d.CollectNow(ctx)
	if n := dataObjects(r.t, r.d); n != 0 {
		r.t.Fatalf("%d data objects left after deleting everything", n)
	}
}

func putBytes(d *driver.Driver, key string, body []byte) error {
	_, err := d.PutObject(context.Background(), driver.PutObjectInput{Bucket: "bkt", Key: key, Body: bytes.NewReader(body), Size: int64(len(body))})
	return err
}

func startUpload(t *testing.T, d *driver.Driver, key string, parts ...[]byte) (string, []driver.CompletePart) {
	t.Helper()
	ctx := context.Background()
	id, err := d.CreateMultipartUpload(ctx, "bkt", key, driver.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	var cps []driver.CompletePart
	for i, p := range parts {
		pi, err := d.UploadPart(ctx, "bkt", key, id, i+1, bytes.NewReader(p), int64(len(p)), nil)
		if err != nil {
			t.Fatal(err)
		}
		cps = append(cps, driver.CompletePart{PartNumber: i + 1, ETag: pi.ETag})
	}
	return id, cps
}

// TestOrphanCrashPoints kills a write at each step between data and its
// record and requires GC plus the orphan scan to bring the data pool back
// to exactly the live data (drain then finds nothing left), with every
// live object intact.
func TestOrphanCrashPoints(t *testing.T) {
	ctx := context.Background()
	big := bytes.Repeat([]byte("s"), 2*driver.StripeSize+100) // three stripes
	mid := bytes.Repeat([]byte("m"), 100<<10)                 // one stripe, written before the link
	partA := bytes.Repeat([]byte("a"), driver.MinPartSize)
	partB := []byte("part b")
	for _, tc := range []struct {
		name    string
		point   string
		nth     int
		prep    func(t *testing.T, d *driver.Driver) any
		op      func(d *driver.Driver, st any) error
		after   func(d *driver.Driver, st any) error // after the restart, before recovery
		live    map[string][]byte                    // key → content after recovery
		orphans bool                                 // the scan must find some (GC alone leaks)
	}{
		{name: "put before link", point: "put-after-data", nth: 1,
			op: func(d *driver.Driver, _ any) error { return putBytes(d, "k", mid) }, orphans: true},
		// A small body commits with its link (objstore.AtomicWriter):
		// before the link nothing is written, nothing is orphaned.
		{name: "small put before link", point: "put-after-data", nth: 1,
			op: func(d *driver.Driver, _ any) error { return putBytes(d, "k", []byte("new")) }},
		{name: "put mid-run", point: "data-stripe", nth: 2,
			op: func(d *driver.Driver, _ any) error { return putBytes(d, "k", big) }, orphans: true},
		{name: "overwrite before link", point: "put-after-data", nth: 1,
			prep: func(t *testing.T, d *driver.Driver) any { return putBytes(d, "k", []byte("old")) },
			op:   func(d *driver.Driver, _ any) error { return putBytes(d, "k", big) },
			live: map[string][]byte{"k": []byte("old")}, orphans: true},
		{name: "overwrite after link", point: "after-link", nth: 1,
			prep: func(t *testing.T, d *driver.Driver) any { return putBytes(d, "k", big) },
			op:   func(d *driver.Driver, _ any) error { return putBytes(d, "k", []byte("new")) },
			live: map[string][]byte{"k": []byte("new")}},
		{name: "delete after unlink", point: "after-unlink", nth: 1,
			prep: func(t *testing.T, d *driver.Driver) any { return putBytes(d, "k", big) },
			op:   func(d *driver.Driver, _ any) error { return d.DeleteObject(ctx, "bkt", "k") }},
		{name: "gc after remove", point: "gc-after-remove", nth: 1,
			prep: func(t *testing.T, d *driver.Driver) any {
				putBytes(d, "k", big)
				return d.DeleteObject(ctx, "bkt", "k")
			},
			op: func(d *driver.Driver, _ any) error { _, err := d.GCProcess(ctx, true); return err }},
		{name: "copy before link", point: "put-after-data", nth: 1,
			prep: func(t *testing.T, d *driver.Driver) any { return putBytes(d, "src", mid) },
			op: func(d *driver.Driver, _ any) error {
				_, err := d.CopyObject(ctx, driver.CopyObjectInput{SrcBucket: "bkt", SrcKey: "src", DstBucket: "bkt", DstKey: "dst"})
				return err
			},
			live: map[string][]byte{"src": mid}, orphans: true},
		{name: "part before record", point: "part-after-data", nth: 1,
			prep: func(t *testing.T, d *driver.Driver) any { id, _ := startUpload(t, d, "m"); return id },
			op: func(d *driver.Driver, st any) error {
				_, err := d.UploadPart(ctx, "bkt", "m", st.(string), 1, bytes.NewReader(partA), int64(len(partA)), nil)
				return err
			}, orphans: true},
		{name: "part replaced before old removed", point: "part-after-swap", nth: 1,
			prep: func(t *testing.T, d *driver.Driver) any { id, _ := startUpload(t, d, "m", partA); return id },
			op: func(d *driver.Driver, st any) error {
				_, err := d.UploadPart(ctx, "bkt", "m", st.(string), 1, bytes.NewReader(partB), int64(len(partB)), nil)
				return err
			}, orphans: true},
		{name: "create upload half done", point: "create-upload", nth: 1,
			op: func(d *driver.Driver, _ any) error {
				_, err := d.CreateMultipartUpload(ctx, "bkt", "m", driver.ObjectMeta{})
				return err
			}},
		{name: "complete after link", point: "after-link", nth: 1,
			prep: func(t *testing.T, d *driver.Driver) any {
				id, cps := startUpload(t, d, "m", partA, partB)
				return []any{id, cps[:1]} // part 2 is left out: unused
			},
			op: func(d *driver.Driver, st any) error {
				a := st.([]any)
				_, err := d.CompleteMultipartUpload(ctx, "bkt", "m", a[0].(string), a[1].([]driver.CompletePart), driver.ObjectChecksum{})
				return err
			},
			live: map[string][]byte{"m": partA}, orphans: true},
		{name: "abort after complete linked", point: "after-link", nth: 1,
			prep: func(t *testing.T, d *driver.Driver) any {
				id, cps := startUpload(t, d, "m", partA, partB)
				return []any{id, cps[:1]}
			},
			op: func(d *driver.Driver, st any) error {
				a := st.([]any)
				_, err := d.CompleteMultipartUpload(ctx, "bkt", "m", a[0].(string), a[1].([]driver.CompletePart), driver.ObjectChecksum{})
				return err
			},
			// The client gives up on the upload: the completed object
			// keeps its part, the unused one goes with the abort.
			after: func(d *driver.Driver, st any) error {
				return d.AbortMultipartUpload(ctx, "bkt", "m", st.([]any)[0].(string))
			},
			live: map[string][]byte{"m": partA}},
		{name: "complete before drop", point: "complete-before-drop", nth: 1,
			prep: func(t *testing.T, d *driver.Driver) any {
				id, cps := startUpload(t, d, "m", partA, partB)
				return []any{id, cps}
			},
			op: func(d *driver.Driver, st any) error {
				a := st.([]any)
				_, err := d.CompleteMultipartUpload(ctx, "bkt", "m", a[0].(string), a[1].([]driver.CompletePart), driver.ObjectChecksum{})
				return err
			},
			live: map[string][]byte{"m": append(append([]byte{}, partA...), partB...)}},
		{name: "drop half done", point: "drop-upload", nth: 1,
			prep: func(t *testing.T, d *driver.Driver) any { id, _ := startUpload(t, d, "m", partB); return id },
			op:   func(d *driver.Driver, st any) error { return d.AbortMultipartUpload(ctx, "bkt", "m", st.(string)) }},
		{name: "abort between parts", point: "abort-part", nth: 2,
			prep: func(t *testing.T, d *driver.Driver) any { id, _ := startUpload(t, d, "m", partA, partB); return id },
			op:   func(d *driver.Driver, st any) error { return d.AbortMultipartUpload(ctx, "bkt", "m", st.(string)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newCrashRig(t)
			var st any
			if tc.prep != nil {
				st = tc.prep(t, r.d)
			}
			r.crash(tc.point, tc.nth, func(d *driver.Driver) error { return tc.op(d, st) })
			if tc.after != nil {
				if err := tc.after(r.d, st); err != nil {
					t.Fatal(err)
				}
			}
			// Within the grace period nothing is touched.
			if rep, err := r.d.ScanOrphans(ctx, driver.OrphanOptions{MinAge: time.Hour, Remove: true}); err != nil || rep.Removed != 0 || rep.StaleUploads+rep.Uploads != 0 {
				t.Fatalf("scan within min-age: %+v, %v", rep, err)
			}
			rep := r.recover()
			if tc.orphans && rep.Removed == 0 {
				t.Fatalf("the scan found no orphan: %+v", rep)
			}
			if !tc.orphans && rep.Removed != 0 {
				t.Fatalf("the scan removed data GC should have: %+v", rep)
			}
			for k, want := range tc.live {
				if got := get(t, r.d, "bkt", k, nil); !bytes.Equal(got, want) {
					t.Fatalf("%s: %d bytes, want %d", k, len(got), len(want))
				}
			}
			// A second scan finds nothing more.
			if rep, err := r.d.ScanOrphans(ctx, driver.OrphanOptions{}); err != nil || rep.Orphans != 0 {
				t.Fatalf("second scan: %+v, %v", rep, err)
			}
			r.drain()
		})
	}
}

// TestOrphanHeadless: stripes whose head a removal already took (a scan
// or a collection cut short) are found without an owner record.
func TestOrphanHeadless(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t)
	r.crash("put-after-data", 1, func(d *driver.Driver) error {
		return putBytes(d, "k", bytes.Repeat([]byte("h"), driver.StripeSize+1))
	})
	oids, _, err := r.d.DataIO().ListObjects(ctx, "", 10)
	if err != nil || len(oids) != 2 {
		t.Fatalf("data objects %v, %v", oids, err)
	}
	if err := r.d.DataIO().Operate(ctx, oids[0], objstore.NewWriteOp().Remove()); err != nil {
		t.Fatal(err)
	}
	rep := r.recover()
	if rep.Removed != 1 || len(rep.Objects) != 1 || rep.Objects[0].Reason != driver.OrphanHeadless {
		t.Fatalf("report %+v", rep)
	}
	r.drain()
}

// TestOrphanScanKeepsLiveData: a scan over many live objects, versions,
// GC records and in-progress uploads removes nothing.
func TestOrphanScanKeepsLiveData(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t)
	for i := 0; i < 20; i++ {
		if err := putBytes(r.d, fmt.Sprintf("k%d", i%7), []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	startUpload(t, r.d, "m", partOf('x'), partOf('y'))
	if err := r.d.PutBucketVersioning(ctx, "bkt", driver.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		putBytes(r.d, "v", []byte(fmt.Sprint(i)))
	}
	before := dataObjects(t, r.d)
	rep, err := r.d.ScanOrphans(ctx, driver.OrphanOptions{Remove: true})
	if err != nil || rep.Orphans != 0 || rep.Removed != 0 || rep.Examined != before {
		t.Fatalf("scan of live data: %+v (%d objects), %v", rep, before, err)
	}
}

func partOf(c byte) []byte { return bytes.Repeat([]byte{c}, driver.MinPartSize) }

// TestOrphanScanFindsMovedGCRecords: a reshard puts GC records on the
// shard of their tag, not of their key; replaced data they name is not an
// orphan (a GET of the old version may still be reading it).
func TestOrphanScanFindsMovedGCRecords(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t)
	putBytes(r.d, "k", []byte("old"))
	putBytes(r.d, "k", []byte("new")) // the old run now has a GC record (gc-min-wait 1h)
	inst, err := r.d.Instance(ctx, "bkt")
	if err != nil {
		t.Fatal(err)
	}
	ix := bucketindex.Index{IO: r.d.IndexIO(), BucketID: inst.ID, Layout: inst.Layout}
	home := bucketindex.ShardOf("k", inst.Layout.NumShards)
	recs, err := ix.GCRecords(ctx, home)
	if err != nil || len(recs) != 1 {
		t.Fatalf("gc records on the key's shard: %v, %v", recs, err)
	}
	other := (home + 1) % inst.Layout.NumShards
	if err := ix.PutGCRecords(ctx, other, recs); err != nil {
		t.Fatal(err)
	}
	if err := bucketindex.GCDone(ctx, r.d.IndexIO(), ix.ShardOID(home), recs[0].Key[len("\xffg/"):]); err != nil {
		t.Fatal(err)
	}
	if rep, err := r.d.ScanOrphans(ctx, driver.OrphanOptions{Remove: true}); err != nil || rep.Orphans != 0 {
		t.Fatalf("replaced data with a moved GC record taken for an orphan: %+v, %v", rep, err)
	}
	r.recover()
	r.drain()
}
