package bucketindex_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

func newIndex(t *testing.T, shards int) bucketindex.Index {
	t.Helper()
	reg := objstore.NewRegistry()
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: "/ix", FS: vfs.NewMem(), Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	st.CreatePool(ctx, "idx")
	io, _ := st.IOContext(ctx, "idx")
	ix := bucketindex.Index{IO: io, BucketID: "b1", Layout: bucketindex.Layout{Gen: 0, NumShards: shards}}
	if err := ix.Init(ctx); err != nil {
		t.Fatal(err)
	}
	return ix
}

func entry(key string, size int64, tag string) bucketindex.Entry {
	return bucketindex.Entry{Key: key, Size: size, ETag: "e-" + tag, Tag: tag,
		Manifest: bucketindex.Manifest{Runs: []bucketindex.Run{{Prefix: tag, Size: size, StripeSize: 4 << 20}}}}
}

func TestLinkUnlinkStatsAndGC(t *testing.T) {
	ctx := context.Background()
	ix := newIndex(t, 3)
	if old, err := ix.Link(ctx, entry("a", 10, "t1"), bucketindex.LinkCond{}); err != nil || old != nil {
		t.Fatalf("first link: %v %v", old, err)
	}
	old, err := ix.Link(ctx, entry("a", 4, "t2"), bucketindex.LinkCond{})
	if err != nil || old == nil || old.Tag != "t1" {
		t.Fatalf("overwrite returns the old entry: %v %v", old, err)
	}
	ix.Link(ctx, entry("b", 7, "t3"), bucketindex.LinkCond{})
	st, _ := ix.Stats(ctx)
	if st.NumObjects != 2 || st.Size != 11 {
		t.Fatalf("stats %+v", st)
	}
	// Conditional links fail with ErrCanceled and change nothing.
	if _, err := ix.Link(ctx, entry("a", 99, "t4"), bucketindex.LinkCond{IfAbsent: true}); !errors.Is(err, objstore.ErrCanceled) {
		t.Fatalf("if-absent: %v", err)
	}
	if _, err := ix.Link(ctx, entry("a", 99, "t4"), bucketindex.LinkCond{IfETag: "nope"}); !errors.Is(err, objstore.ErrCanceled) {
		t.Fatalf("if-etag: %v", err)
	}
	if _, err := ix.Link(ctx, entry("a", 5, "t5"), bucketindex.LinkCond{IfETag: "e-t2"}); err != nil {
		t.Fatalf("matching if-etag: %v", err)
	}
	// Unlink with a stale tag is refused; with none it works.
	if _, err := ix.Unlink(ctx, "b", "other"); !errors.Is(err, objstore.ErrCanceled) {
		t.Fatalf("unlink stale tag: %v", err)
	}
	if old, err := ix.Unlink(ctx, "b", ""); err != nil || old.Tag != "t3" {
		t.Fatalf("unlink: %v %v", old, err)
	}
	if _, err := ix.Unlink(ctx, "b", ""); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("unlink missing: %v", err)
	}
	st, _ = ix.Stats(ctx)
	if st.NumObjects != 1 || st.Size != 5 {
		t.Fatalf("stats after unlink %+v", st)
	}
	// Replaced and removed data was recorded for collection: t1, t2, t3.
	var tags []string
	for s := 0; s < 3; s++ {
		recs, err := ix.PendingGC(ctx, s, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			tags = append(tags, r.Tag)
			if err := bucketindex.GCDone(ctx, ix.IO, r.Shard, r.Tag); err != nil {
				t.Fatal(err)
			}
		}
	}
	sort.Strings(tags)
	if strings.Join(tags, ",") != "t1,t2,t3" {
		t.Fatalf("gc records %v", tags)
	}
	// GC records never show up in listings.
	es, more, err := ix.List(ctx, "", "", 10)
	if err != nil || more || len(es) != 1 || es[0].Key != "a" {
		t.Fatalf("list %v %v %v", es, more, err)
	}
}

func TestClosedShardsRejectWrites(t *testing.T) {
	ctx := context.Background()
	ix := newIndex(t, 2)
	ix.Link(ctx, entry("k", 1, "t1"), bucketindex.LinkCond{})
	if err := ix.SetState(ctx, bucketindex.StateClosed); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Link(ctx, entry("k", 2, "t2"), bucketindex.LinkCond{}); !errors.Is(err, objstore.ErrStale) {
		t.Fatalf("link on closed shard: %v", err)
	}
	if _, err := ix.Unlink(ctx, "k", ""); !errors.Is(err, objstore.ErrStale) {
		t.Fatalf("unlink on closed shard: %v", err)
	}
	// Reads refuse a retired shard too, so a reader re-reads the layout.
	if _, err := ix.Get(ctx, "k"); !errors.Is(err, objstore.ErrStale) {
		t.Fatalf("get on closed shard: %v", err)
	}
	ix.SetState(ctx, bucketindex.StateOpen)
	if _, err := ix.Link(ctx, entry("k", 2, "t2"), bucketindex.LinkCond{}); err != nil {
		t.Fatalf("reopened: %v", err)
	}
	// A generation whose shards do not exist is stale, not empty.
	gone := ix
	gone.Layout.Gen = 7
	if _, err := gone.Link(ctx, entry("k", 2, "t3"), bucketindex.LinkCond{}); !errors.Is(err, objstore.ErrStale) {
		t.Fatalf("missing shard: %v", err)
	}
	if _, err := gone.Get(ctx, "k"); !errors.Is(err, objstore.ErrStale) {
		t.Fatalf("get on missing shard: %v", err)
	}
}

// TestMergedListing compares paged listings over many shards with a sorted
// model, including keys that share prefixes and multi-byte UTF-8.
func TestMergedListing(t *testing.T) {
	ctx := context.Background()
	for _, shards := range []int{1, 7, 64} {
		ix := newIndex(t, shards)
		rnd := rand.New(rand.NewSource(int64(shards)))
		model := map[string]bool{}
		for i := 0; i < 400; i++ {
			k := fmt.Sprintf("%s%d", []string{"a", "a/", "ab", "é", "z~", "Z"}[rnd.Intn(6)], rnd.Intn(1000))
			model[k] = true
			if _, err := ix.Link(ctx, entry(k, 1, fmt.Sprint(i)), bucketindex.LinkCond{}); err != nil {
				t.Fatal(err)
			}
		}
		var keys []string
		for k := range model {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, prefix := range []string{"", "a", "a/", "é"} {
			var want []string
			for _, k := range keys {
				if strings.HasPrefix(k, prefix) {
					want = append(want, k)
				}
			}
			for _, page := range []int{1, 13, 1000} {
				var got []string
				after := ""
				for {
					es, more, err := ix.List(ctx, after, prefix, page)
					if err != nil {
						t.Fatal(err)
					}
					for _, e := range es {
						got = append(got, e.Key)
					}
					if !more {
						break
					}
					after = es[len(es)-1].Key
				}
				if strings.Join(got, "|") != strings.Join(want, "|") {
					t.Fatalf("shards %d prefix %q page %d: got %d keys want %d", shards, prefix, page, len(got), len(want))
				}
			}
		}
	}
}

func TestShardOfIsStable(t *testing.T) {
	// Pinned (FNV-1a 64 mod n): changing the function would misplace every
	// stored entry.
	const golden = 9
	if got := bucketindex.ShardOf("photos/2024/01/img.jpg", 11); got != golden {
		t.Fatalf("ShardOf changed: %d, pinned %d", got, golden)
	}
}
