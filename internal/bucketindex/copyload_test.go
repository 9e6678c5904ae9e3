package bucketindex_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// TestCopyLoadChunks loads a source generation into a target in two
// chunks with a replay between them (as a reshard's loaded copy does): a
// key a chunk would move backwards is refused, nothing may be staged
// between a chunk's ingest and its stats, the second chunk leaves what
// the replay wrote for the first chunk's keys alone, and the stats add up.
func TestCopyLoadChunks(t *testing.T) {
	ctx := context.Background()
	src := newIndex(t, 2)
	for i := 0; i < 40; i++ {
		if _, err := src.Link(ctx, entry(fmt.Sprintf("k%02d", i), int64(i+1), fmt.Sprint("t", i)), bucketindex.LinkCond{}); err != nil {
			t.Fatal(err)
		}
	}
	var all []objstore.KV
	for s := 0; s < 2; s++ {
		kvs, _, err := src.RawEntries(ctx, s, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, kvs...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Key < all[j].Key })
	const epoch = 5
	dst := bucketindex.Index{IO: src.IO, BucketID: src.BucketID, Layout: bucketindex.Layout{Gen: 1, NumShards: 3}}
	if err := dst.InitFenced(ctx, epoch); err != nil {
		t.Fatal(err)
	}
	load, err := dst.NewCopyLoad(ctx, epoch)
	if err != nil || load == nil {
		t.Fatalf("new load: %v %v", load, err)
	}
	defer load.Abort()
	add := func(kvs []objstore.KV) {
		t.Helper()
		for _, kv := range kvs {
			if err := load.Add(bucketindex.PlaceOf(kv.Key, 3), kv); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(all[:20])
	if load.Staged() != 20 {
		t.Fatalf("staged %d, want 20", load.Staged())
	}
	if err := load.Ingest(ctx); err != nil {
		t.Fatal(err)
	}
	if err := load.Add(bucketindex.PlaceOf(all[20].Key, 3), all[20]); !errors.Is(err, objstore.ErrInvalid) {
		t.Fatalf("add between ingest and stats: %v", err)
	}
	if err := load.AddStats(ctx); err != nil {
		t.Fatal(err)
	}
	// A key of the first chunk again: refused, the load keeps order per
	// shard across chunks.
	back := all[19]
	if err := load.Add(bucketindex.PlaceOf(back.Key, 3), back); !errors.Is(err, objstore.ErrInvalid) {
		t.Fatalf("key %q again in a later chunk: %v", back.Key, err)
	}
	// The replay of the first chunk's range removes one of its keys.
	gone := all[3].Key
	if err := dst.Replay(ctx, bucketindex.PlaceOf(gone, 3), epoch, []bucketindex.RawLogRecord{{Seq: 1, Op: 'u', Key: gone}}); err != nil {
		t.Fatal(err)
	}
	add(all[20:])
	if err := load.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for s := 0; s < 3; s++ {
		kvs, _, err := dst.RawEntries(ctx, s, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range kvs {
			if bucketindex.PlaceOf(kv.Key, 3) != s {
				t.Fatalf("key %q in shard %d", kv.Key, s)
			}
			got = append(got, kv.Key)
		}
	}
	if len(got) != 39 {
		t.Fatalf("target holds %d keys, want 39: %v", len(got), got)
	}
	for _, k := range got {
		if k == gone {
			t.Fatalf("key %q removed by the replay came back", gone)
		}
	}
	st, err := dst.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.NumObjects != 39 || st.Size != 40*41/2-4 {
		t.Fatalf("target stats %+v, want 39 objects, %d bytes", st, 40*41/2-4)
	}
	// A fence raised meanwhile (another owner) stops the next chunk.
	if err := dst.SetShardState(ctx, 2, bucketindex.StateChange{To: bucketindex.StateOpen, Epoch: epoch + 1}); err != nil {
		t.Fatal(err)
	}
	load2, _ := dst.NewCopyLoad(ctx, epoch)
	defer load2.Abort()
	if err := load2.Add(0, objstore.KV{Key: "zz", Value: all[0].Value}); err != nil {
		t.Fatal(err)
	}
	if err := load2.Commit(ctx); !errors.Is(err, objstore.ErrCanceled) {
		t.Fatalf("fenced chunk: %v", err)
	}
}
