package bucketindex_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// A GC record carries the time it was written by the caller's clock (the
// collector's due time is that plus gc-min-wait), for every writer:
// overwrite, versioned delete, transition; a record written without one
// (an older gateway's) reads as zero.
func TestGCRecordWritten(t *testing.T) {
	ctx := context.Background()
	ix := newIndex(t, 1)
	now := time.Unix(1_700_000_000, 123).UTC()
	ix.Now = func() time.Time { return now }
	if _, err := ix.LinkVersion(ctx, bucketindex.ModeUnversioned, entry("a", 10, "t1"), bucketindex.VersionCond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.LinkVersion(ctx, bucketindex.ModeUnversioned, entry("a", 10, "t2"), bucketindex.VersionCond{}); err != nil {
		t.Fatal(err) // t1 → GC record
	}
	now = now.Add(time.Minute)
	res, err := ix.LinkVersion(ctx, bucketindex.ModeEnabled, entry("b", 10, "t3"), bucketindex.VersionCond{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.UnlinkVersion(ctx, "b", res.Entry.VersionID, ""); err != nil {
		t.Fatal(err) // t3 → GC record
	}
	now = now.Add(time.Minute)
	moved := bucketindex.Manifest{Runs: []bucketindex.Run{{Prefix: "t2c", Size: 10, StripeSize: 4 << 20}}}
	if err := ix.SetVersionData(ctx, "a", bucketindex.NullVersion, "t2", entry("a", 10, "t2").Manifest, moved, "GLACIER", "t2~tx"); err != nil {
		t.Fatal(err) // t2's data → GC record t2~tx
	}
	// An older gateway's record: a bare manifest.
	old := objstore.NewWriteOp().SetOmap(objstore.KV{Key: "\xffg/t0", Value: []byte(`{"r":[{"p":"t0","s":1,"z":4194304}]}`)})
	if err := ix.IO.Operate(ctx, ix.ShardFor("a"), old); err != nil {
		t.Fatal(err)
	}
	recs, err := ix.PendingGC(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Unix(1_700_000_000, 123)
	want := map[string]time.Time{"t0": {}, "t1": base, "t3": base.Add(time.Minute), "t2~tx": base.Add(2 * time.Minute)}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	for _, r := range recs {
		w, ok := want[r.Tag]
		if !ok || !r.Written.Equal(w) || len(r.Manifest.Runs) != 1 || r.Manifest.Runs[0].Size == 0 {
			t.Errorf("record %s: written %v, manifest %+v; want written %v", r.Tag, r.Written, r.Manifest, w)
		}
	}
	// A plain link (legacy entries) stamps its record too.
	if _, err := ix.Link(ctx, entry("c", 1, "t4"), bucketindex.LinkCond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Unlink(ctx, "c", ""); err != nil {
		t.Fatal(err)
	}
	recs, _ = ix.PendingGCAfter(ctx, 0, "t3", 0)
	if len(recs) != 1 || recs[0].Tag != "t4" || !recs[0].Written.Equal(base.Add(2*time.Minute)) {
		t.Fatalf("unlink's record: %+v", recs)
	}
}
