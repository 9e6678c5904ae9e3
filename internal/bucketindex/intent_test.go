package bucketindex_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// A link carrying an intent keeps the shard's class cache: the next link
// reads no more from the store than after a link without one (the intent
// used to be a plain SetOmap, which dropped the cache, so every notified
// PUT read the shard's header again). Intents are still stored and found.
func TestIntentKeepsShardCache(t *testing.T) {
	ctx := context.Background()
	reg := objstore.NewRegistry()
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: "/ix", FS: vfs.NewMem(), Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.CreatePool(ctx, "idx")
	io, _ := st.IOContext(ctx, "idx")
	ix := bucketindex.Index{IO: io, BucketID: "b1", Layout: bucketindex.Layout{NumShards: 1}}
	if err := ix.Init(ctx); err != nil {
		t.Fatal(err)
	}
	n := 0
	link := func(intent bool) uint64 {
		t.Helper()
		n++
		var c bucketindex.VersionCond
		if intent {
			c.Intent = []byte(`{"n":` + strconv.Itoa(n) + `}`)
		}
		before := st.PointGets()
		if _, err := ix.LinkVersion(ctx, "", entry("k"+strconv.Itoa(n), 1, "t"+strconv.Itoa(n)), c); err != nil {
			t.Fatal(err)
		}
		return st.PointGets() - before
	}
	link(false) // warms the shard's caches
	link(false)
	plain := link(false)
	link(true)
	if got := link(true); got != plain {
		t.Fatalf("a link after a link with an intent made %d point reads, after one without %d", got, plain)
	}
	recs, err := ix.Intents(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Tag != "t4" || string(recs[0].Data) != `{"n":4}` || recs[1].Tag != "t5" || string(recs[1].Data) != `{"n":5}` {
		t.Fatalf("intents %+v", recs)
	}
	// A link that fails stores no intent.
	if _, err := ix.LinkVersion(ctx, "", entry("k1", 1, "t9"), bucketindex.VersionCond{IfAbsent: true, Intent: []byte("x")}); err == nil {
		t.Fatal("if-absent link of an existing key succeeded")
	}
	if recs, _ := ix.Intents(ctx, 0); len(recs) != 2 {
		t.Fatalf("a failed link left an intent: %+v", recs)
	}
	// Removing intents keeps the cache too (it was a plain RmOmapKeys,
	// after which the next link read the shard's state again).
	link(false)
	if err := bucketindex.RemoveIntents(ctx, io, bucketindex.ShardOID("b1", 0, 0), "t4", "nosuch"); err != nil {
		t.Fatal(err)
	}
	if got := link(false); got != plain {
		t.Fatalf("a link after an intent removal made %d point reads, after a link %d", got, plain)
	}
	if recs, _ := ix.Intents(ctx, 0); len(recs) != 1 || recs[0].Tag != "t5" {
		t.Fatalf("intents after removing t4: %+v", recs)
	}
	if err := bucketindex.RemoveIntents(ctx, io, bucketindex.ShardOID("b1", 0, 1)); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("removal on a missing shard: %v, want ErrNotFound", err)
	}
}
