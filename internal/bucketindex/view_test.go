package bucketindex_test

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// TestViewListsAsTheMerge: after random links, overwrites and unlinks,
// the view holds exactly the shards' entries, and every listing (start
// after, prefix, page size) reads the same from the view as from the
// merge over the shards; a shard that writes without its membership makes
// CheckView report the key.
func TestViewListsAsTheMerge(t *testing.T) {
	ctx := context.Background()
	ix := newIndex(t, 1) // re-initialised below with a view
	ix.BucketID, ix.Layout = "bv", bucketindex.Layout{NumShards: 7, View: true}
	if err := ix.Init(ctx); err != nil {
		t.Fatal(err)
	}
	merge := ix
	merge.Layout.View = false
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 1500; i++ {
		k := fmt.Sprintf("%c/%03d", 'a'+rng.Intn(4), rng.Intn(300))
		if rng.Intn(4) == 0 {
			ix.Unlink(ctx, k, "") // absent keys are fine
			continue
		}
		if _, err := ix.Link(ctx, entry(k, int64(rng.Intn(100)), fmt.Sprint(i)), bucketindex.LinkCond{}); err != nil {
			t.Fatal(err)
		}
	}
	if diff, err := ix.CheckView(ctx, 0); err != nil || len(diff) != 0 {
		t.Fatalf("view differs at %q (%v)", diff, err)
	}
	keys := func(es []bucketindex.Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Key+"/"+e.ETag)
		}
		return out
	}
	for _, c := range []struct {
		after, prefix string
		max           int
	}{{"", "", 1000}, {"", "", 7}, {"b/1", "", 50}, {"", "c/", 1000}, {"c/2", "c/", 3}, {"zz", "", 10}, {"", "q", 10}} {
		v, vmore, err := ix.List(ctx, c.after, c.prefix, c.max)
		if err != nil {
			t.Fatal(err)
		}
		m, mmore, err := merge.List(ctx, c.after, c.prefix, c.max)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(keys(v), keys(m)) || vmore != mmore {
			t.Fatalf("%+v: view %d keys more %v, merge %d more %v", c, len(v), vmore, len(m), mmore)
		}
		for _, x := range []bucketindex.Index{ix, merge} {
			it, err := x.NewIter(ctx, c.after, c.prefix, c.max)
			if err != nil {
				t.Fatal(err)
			}
			var walked []bucketindex.Entry
			for {
				e, ok, err := it.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !ok || len(walked) == c.max {
					break
				}
				walked = append(walked, *e)
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			if got := keys(walked); !slices.Equal(got, keys(m)) {
				t.Fatalf("%+v: iterator (view %v) %d keys, merge %d", c, x.Layout.View, len(got), len(m))
			}
		}
	}
	// A delimiter's walk (Peek, skip past each "common prefix" of the
	// first letter and digit) reads the same from the view, which skips
	// with a seek, as from the merge.
	all, _, err := merge.List(ctx, "", "", 10000)
	if err != nil {
		t.Fatal(err)
	}
	for _, after := range []string{"", "a/1", "b/", "b/0\xff", "b/250", "d/3"} {
		var want []string
		for _, e := range all {
			if e.Key > after && (len(want) == 0 || !strings.HasPrefix(e.Key, want[len(want)-1])) {
				want = append(want, e.Key[:3])
			}
		}
		for _, x := range []bucketindex.Index{ix, merge} {
			it, err := x.NewIter(ctx, after, "", 100)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for {
				k, ok, err := it.Peek(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				if len(got)%2 == 1 { // taken, not only peeked
					if e, ok, err := it.Next(ctx); !ok || err != nil || e.Key != k {
						t.Fatalf("Next after Peek %q: %q %v %v", k, e.Key, ok, err)
					}
				}
				got = append(got, k[:3])
				it.SkipPast(k[:3] + "\xff")
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("after %q (view %v): prefixes %q, want %q", after, x.Layout.View, got, want)
			}
		}
	}
	// A shard that left the view: its next write shows.
	k := "d/new"
	if err := ix.IO.Operate(ctx, ix.ShardFor(k), objstore.NewWriteOp().SetView("", "", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Link(ctx, entry(k, 1, "late"), bucketindex.LinkCond{}); err != nil {
		t.Fatal(err)
	}
	if diff, err := ix.CheckView(ctx, 0); err != nil || !slices.Equal(diff, []string{k}) {
		t.Fatalf("CheckView = %q, %v; want [%s]", diff, err, k)
	}
	// A stale key too (removed from the shard while it was out), then the
	// shard rejoins and FixView restates both from the shards.
	gone, _, err := ix.List(ctx, "", "", 1)
	if err != nil || len(gone) != 1 {
		t.Fatal(err)
	}
	if err := ix.IO.Operate(ctx, ix.ShardFor(gone[0].Key), objstore.NewWriteOp().SetView("", "", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Unlink(ctx, gone[0].Key, ""); err != nil {
		t.Fatal(err)
	}
	want := []string{gone[0].Key, k}
	if diff, err := ix.CheckView(ctx, 0); err != nil || !slices.Equal(diff, want) {
		t.Fatalf("CheckView = %q, %v; want %q", diff, err, want)
	}
	if err := ix.JoinView(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ix.FixView(ctx, want); err != nil {
		t.Fatal(err)
	}
	if diff, err := ix.CheckView(ctx, 0); err != nil || len(diff) != 0 {
		t.Fatalf("after FixView: %q, %v", diff, err)
	}
}

// TestBuildViewUnderWrites: a layout without a view gets one while links
// and unlinks go on, and it then lists exactly as the merge.
func TestBuildViewUnderWrites(t *testing.T) {
	ctx := context.Background()
	ix := newIndex(t, 5)
	for i := 0; i < 3000; i++ {
		if _, err := ix.Link(ctx, entry(fmt.Sprintf("k/%04d", i), 1, fmt.Sprint(i)), bucketindex.LinkCond{}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewSource(9))
		for i := 0; i < 2000; i++ {
			k := fmt.Sprintf("k/%04d", rng.Intn(4000))
			if rng.Intn(3) == 0 {
				ix.Unlink(ctx, k, "")
			} else if _, err := ix.Link(ctx, entry(k, 2, fmt.Sprint("w", i)), bucketindex.LinkCond{}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	if err := ix.BuildView(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	ix.Layout.View = true
	if diff, err := ix.CheckView(ctx, 0); err != nil || len(diff) != 0 {
		t.Fatalf("built view differs at %d keys %.200q (%v)", len(diff), diff, err)
	}
}

// TestViewHoldsListingFields: the view keeps each entry's listing fields
// only (ListingProjection), and a view written before projections (whole
// entries, as a shard that joined without one writes) still lists and
// checks clean beside projected values.
func TestViewHoldsListingFields(t *testing.T) {
	ctx := context.Background()
	ix := newIndex(t, 1)
	ix.BucketID, ix.Layout = "bp", bucketindex.Layout{NumShards: 3, View: true}
	if err := ix.Init(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := ix.Link(ctx, entry(fmt.Sprintf("k%02d", i), int64(i), fmt.Sprint("tag", i)), bucketindex.LinkCond{}); err != nil {
			t.Fatal(err)
		}
	}
	v := ix.IO.(objstore.Viewer)
	kvs, _, err := v.ReadView(ctx, ix.BucketID, "", "", 0)
	if err != nil || len(kvs) != 20 {
		t.Fatalf("view: %d keys, %v", len(kvs), err)
	}
	for _, kv := range kvs {
		if strings.Contains(string(kv.Value), `"m":`) || strings.Contains(string(kv.Value), `"g":`) {
			t.Fatalf("view keeps a manifest or tag: %s", kv.Value)
		}
	}
	// A shard joined as before projections: its writes reach the view whole.
	k := "k05x"
	if err := ix.IO.Operate(ctx, ix.ShardFor(k), objstore.NewWriteOp().SetView(ix.BucketID, "\xff", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Link(ctx, entry(k, 5, "whole"), bucketindex.LinkCond{}); err != nil {
		t.Fatal(err)
	}
	kvs, _, err = v.ReadView(ctx, ix.BucketID, "k05", "", 1)
	if err != nil || len(kvs) != 1 || kvs[0].Key != k || !strings.Contains(string(kvs[0].Value), `"m":`) {
		t.Fatalf("whole value in the view: %v, %v", kvs, err)
	}
	if diff, err := ix.CheckView(ctx, 0); err != nil || len(diff) != 0 {
		t.Fatalf("mixed view differs at %q (%v)", diff, err)
	}
	merge := ix
	merge.Layout.View = false
	got, _, err := ix.List(ctx, "", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := merge.List(ctx, "", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("view lists %+v\nmerge lists %+v", got, want)
	}
}
