package bucketindex_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// TestSetVersionData: a transition switches a version's manifest and
// class (record and, when current, bare head) and hands the old manifest
// to GC under its own tag, guarded by the write tag and the manifest
// copied; stats do not change.
func TestSetVersionData(t *testing.T) {
	ctx := context.Background()
	ix := newIndex(t, 1)
	link := func(e bucketindex.Entry) bucketindex.Entry {
		r, err := ix.LinkVersion(ctx, bucketindex.ModeEnabled, e, bucketindex.VersionCond{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Entry
	}
	v1 := link(entry("k", 10, "t1"))
	v2 := link(entry("k", 20, "t2"))
	st0, _ := ix.Stats(ctx)
	moved := bucketindex.Manifest{Runs: []bucketindex.Run{{Prefix: "c1", Size: 10, StripeSize: 4 << 20, Pool: "cold"}}}
	if err := ix.SetVersionData(ctx, "k", v1.VersionID, "t2", v1.Manifest, moved, "COLD", "t1~tx"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("wrong tag: %v", err)
	}
	if err := ix.SetVersionData(ctx, "k", v1.VersionID, "t1", moved, moved, "COLD", "t1~tx"); !errors.Is(err, objstore.ErrCanceled) {
		t.Fatalf("stale manifest: %v", err)
	}
	if err := ix.SetVersionData(ctx, "k", v1.VersionID, "t1", v1.Manifest, moved, "COLD", "t1"); !errors.Is(err, objstore.ErrInvalid) {
		t.Fatalf("GC tag = write tag: %v", err)
	}
	if err := ix.SetVersionData(ctx, "k", v1.VersionID, "t1", v1.Manifest, moved, "COLD", "t1~tx"); err != nil {
		t.Fatal(err)
	}
	e, _ := ix.GetVersion(ctx, "k", v1.VersionID)
	if e.Class != "COLD" || e.Manifest.Runs[0].Pool != "cold" || e.ETag != v1.ETag || e.VersionID != v1.VersionID {
		t.Fatalf("v1 after the switch: %+v", e)
	}
	if cur, _ := ix.Get(ctx, "k"); cur.VersionID != v2.VersionID || cur.Class != "" {
		t.Fatalf("bare head changed: %+v", cur)
	}
	// The current version: record and bare head.
	moved2 := bucketindex.Manifest{Runs: []bucketindex.Run{{Prefix: "c2", Size: 20, StripeSize: 4 << 20, Pool: "cold"}}}
	if err := ix.SetVersionData(ctx, "k", v2.VersionID, "t2", v2.Manifest, moved2, "COLD", "t2~ty"); err != nil {
		t.Fatal(err)
	}
	if cur, _ := ix.Get(ctx, "k"); cur.Class != "COLD" || cur.Manifest.Runs[0].Prefix != "c2" {
		t.Fatalf("bare head after the switch: %+v", cur)
	}
	if st, _ := ix.Stats(ctx); st != st0 {
		t.Fatalf("stats changed: %+v -> %+v", st0, st)
	}
	recs, err := ix.PendingGC(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range recs {
		got[r.Tag] = r.Manifest.Runs[0].Prefix
	}
	if len(got) != 2 || got["t1~tx"] != "t1" || got["t2~ty"] != "t2" {
		t.Fatalf("GC records %v", got)
	}
}
