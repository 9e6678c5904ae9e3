package bucketindex_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// TestSetVersionMetaAndUnlinkGuard: metadata changes in place on the
// record and the bare head (current version only), guarded by the metadata
// read; unlink_version with the guard refuses once the metadata changed.
func TestSetVersionMetaAndUnlinkGuard(t *testing.T) {
	ctx := context.Background()
	ix := newIndex(t, 2)
	link := func(tag, meta string) bucketindex.Entry {
		e := entry("k", 10, tag)
		e.Meta = []byte(meta)
		r, err := ix.LinkVersion(ctx, bucketindex.ModeEnabled, e, bucketindex.VersionCond{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Entry
	}
	v1 := link("t1", `{"a":1}`)
	v2 := link("t2", `{"a":2}`)

	// Wrong old metadata: ErrCanceled; wrong tag: ErrNotFound.
	if err := ix.SetVersionMeta(ctx, "k", v1.VersionID, "t1", []byte(`{"a":9}`), []byte(`{"b":1}`)); !errors.Is(err, objstore.ErrCanceled) {
		t.Fatalf("stale meta: %v", err)
	}
	if err := ix.SetVersionMeta(ctx, "k", v1.VersionID, "t2", []byte(`{"a":1}`), []byte(`{"b":1}`)); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("wrong tag: %v", err)
	}
	// A noncurrent version: its record changes, the bare head does not.
	if err := ix.SetVersionMeta(ctx, "k", v1.VersionID, "t1", []byte(`{"a":1}`), []byte(`{"b":1}`)); err != nil {
		t.Fatal(err)
	}
	if e, _ := ix.GetVersion(ctx, "k", v1.VersionID); string(e.Meta) != `{"b":1}` {
		t.Fatalf("v1 meta %s", e.Meta)
	}
	if e, _ := ix.Get(ctx, "k"); string(e.Meta) != `{"a":2}` || e.VersionID != v2.VersionID {
		t.Fatalf("bare head changed: %s %s", e.VersionID, e.Meta)
	}
	// The current version: both.
	if err := ix.SetVersionMeta(ctx, "k", v2.VersionID, "t2", []byte(`{"a":2}`), []byte(`{"lh":"ON"}`)); err != nil {
		t.Fatal(err)
	}
	if e, _ := ix.Get(ctx, "k"); string(e.Meta) != `{"lh":"ON"}` {
		t.Fatalf("bare meta %s", e.Meta)
	}
	if e, _ := ix.GetVersion(ctx, "k", v2.VersionID); string(e.Meta) != `{"lh":"ON"}` {
		t.Fatalf("record meta %s", e.Meta)
	}
	st0, _ := ix.Stats(ctx)
	// Unlink guarded by the metadata checked before the hold was set: refused.
	_, err := ix.UnlinkVersionIf(ctx, "k", v2.VersionID, bucketindex.UnlinkCond{CheckMeta: true, IfMeta: []byte(`{"a":2}`)})
	if !errors.Is(err, objstore.ErrCanceled) {
		t.Fatalf("guarded unlink after a change: %v", err)
	}
	if st, _ := ix.Stats(ctx); st != st0 {
		t.Fatalf("refused unlink changed stats: %+v -> %+v", st0, st)
	}
	if _, err := ix.UnlinkVersionIf(ctx, "k", v2.VersionID, bucketindex.UnlinkCond{CheckMeta: true, IfMeta: []byte(`{"lh":"ON"}`)}); err != nil {
		t.Fatal(err)
	}
	if e, _ := ix.Get(ctx, "k"); e.VersionID != v1.VersionID || string(e.Meta) != `{"b":1}` {
		t.Fatalf("promoted %s %s", e.VersionID, e.Meta)
	}
	// A legacy entry (never-versioned bucket) is the null version.
	l := entry("legacy", 5, "t9")
	l.Meta = []byte(`{}`)
	if _, err := ix.LinkVersion(ctx, bucketindex.ModeUnversioned, l, bucketindex.VersionCond{}); err != nil {
		t.Fatal(err)
	}
	if err := ix.SetVersionMeta(ctx, "legacy", bucketindex.NullVersion, "t9", []byte(`{}`), []byte(`{"tg":{"x":"y"}}`)); err != nil {
		t.Fatal(err)
	}
	if e, _ := ix.Get(ctx, "legacy"); string(e.Meta) != `{"tg":{"x":"y"}}` {
		t.Fatalf("legacy meta %s", e.Meta)
	}
}

// TestUnversionedLinkSeesRecords: the link skips the scan for a key's
// version records only when the shard's stats say it holds none, so a
// gateway with a stale unversioned view of a versioned key still stacks a
// new version on the records (the old one is kept, not collected), and a
// shard whose records are all gone goes back to bare entries.
func TestUnversionedLinkSeesRecords(t *testing.T) {
	ctx := context.Background()
	ix := newIndex(t, 1)
	v1, err := ix.LinkVersion(ctx, bucketindex.ModeEnabled, entry("a", 10, "t1"), bucketindex.VersionCond{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ix.LinkVersion(ctx, bucketindex.ModeUnversioned, entry("a", 7, "t2"), bucketindex.VersionCond{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Entry.Seq != 2 || r.Entry.VersionID != bucketindex.NullVersion || len(r.Freed) != 0 {
		t.Fatalf("stale unversioned link over a record: seq %d id %q freed %d", r.Entry.Seq, r.Entry.VersionID, len(r.Freed))
	}
	if e, err := ix.GetVersion(ctx, "a", v1.Entry.VersionID); err != nil || e.Tag != "t1" {
		t.Fatalf("older version lost: %+v %v", e, err)
	}
	// Another key on the same shard: records exist, its link still scans
	// and, finding none for its key, writes a bare entry.
	if r, err := ix.LinkVersion(ctx, bucketindex.ModeUnversioned, entry("b", 3, "t3"), bucketindex.VersionCond{}); err != nil || r.Entry.Seq != 0 {
		t.Fatalf("b: %+v %v", r.Entry, err)
	}
	for _, id := range []string{v1.Entry.VersionID, bucketindex.NullVersion} {
		if _, err := ix.UnlinkVersionIf(ctx, "a", id, bucketindex.UnlinkCond{}); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := ix.Stats(ctx)
	if st.NumObjects != 1 || st.NumVersions != 1 {
		t.Fatalf("stats after removing a's versions: %+v", st)
	}
	if r, err := ix.LinkVersion(ctx, bucketindex.ModeUnversioned, entry("a", 5, "t4"), bucketindex.VersionCond{}); err != nil || r.Entry.Seq != 0 {
		t.Fatalf("a again: %+v %v", r.Entry, err)
	}
}
