package driver_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
)

func newDriverOpts(t testing.TB, opts driver.Options) *driver.Driver {
	t.Helper()
	st := newMemStore(t)
	opts.Store, opts.GCMinWait = st, -1
	d, err := driver.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); st.Close() })
	return d
}

// TestMaxBuckets: the gateway default applies to users without their own
// max_buckets; a user's value overrides it (0 unlimited, negative none);
// deleting a bucket frees a slot.
func TestMaxBuckets(t *testing.T) {
	ctx := context.Background()
	d := newDriverOpts(t, driver.Options{DefaultShards: 1, MaxBuckets: 3})
	one, zero, none := 1, 0, -1
	for _, u := range []driver.User{{ID: "dflt"}, {ID: "one", MaxBuckets: &one}, {ID: "unl", MaxBuckets: &zero}, {ID: "none", MaxBuckets: &none}} {
		if _, err := d.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	create := func(owner string, i int) error {
		return d.CreateBucket(ctx, owner, fmt.Sprintf("%s-b%d", owner, i), "", 0)
	}
	for i := 0; i < 3; i++ {
		if err := create("dflt", i); err != nil {
			t.Fatal(err)
		}
	}
	if err := create("dflt", 3); !errors.Is(err, driver.ErrTooManyBuckets) {
		t.Fatalf("4th bucket over the default of 3: %v", err)
	}
	if err := d.DeleteBucket(ctx, "dflt-b0"); err != nil {
		t.Fatal(err)
	}
	if err := create("dflt", 3); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	if err := create("one", 0); err != nil {
		t.Fatal(err)
	}
	if err := create("one", 1); !errors.Is(err, driver.ErrTooManyBuckets) {
		t.Fatalf("user limit 1: %v", err)
	}
	for i := 0; i < 5; i++ {
		if err := create("unl", i); err != nil {
			t.Fatalf("unlimited user: %v", err)
		}
	}
	if err := create("none", 0); !errors.Is(err, driver.ErrTooManyBuckets) {
		t.Fatalf("negative limit: %v", err)
	}
	if bs, _ := d.ListBuckets(ctx, "dflt"); len(bs) != 3 {
		t.Fatalf("dflt owns %d buckets", len(bs))
	}
}

// countingStore counts OperateRead calls on the bucket index pool.
type countingStore struct {
	objstore.Store
	reads *atomic.Int64
}

func (s countingStore) IOContext(ctx context.Context, pool string) (objstore.IOContext, error) {
	io, err := s.Store.IOContext(ctx, pool)
	if err != nil || pool != "default.rgw.buckets.index" {
		return io, err
	}
	return countingIO{io, s.reads}, nil
}

type countingIO struct {
	objstore.IOContext
	reads *atomic.Int64
}

func (c countingIO) WithNamespace(ns string) objstore.IOContext {
	return countingIO{c.IOContext.WithNamespace(ns), c.reads}
}

func (c countingIO) OperateRead(ctx context.Context, oid string, op *objstore.ReadOp) error {
	c.reads.Add(1)
	return c.IOContext.OperateRead(ctx, oid, op)
}

func (c countingIO) Sync(ctx context.Context) error { return objstore.Sync(ctx, c.IOContext) }

// TestListingWorkIsBounded: on a bucket with the most shards a user may
// ask for, a delimiter listing over many common prefixes costs about one
// read per shard (before: one full merge per prefix, ~1999 reads each),
// and paging still returns everything once.
func TestListingWorkIsBounded(t *testing.T) {
	ctx := context.Background()
	st := newMemStore(t)
	reads := &atomic.Int64{}
	d, err := driver.New(ctx, driver.Options{Store: countingStore{st, reads}, GCMinWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); st.Close() })
	const shards = 1999
	if err := d.CreateBucket(ctx, "u", "wide", "", shards); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for i := 0; i < 40; i++ {
		for j := 0; j < 2; j++ {
			put(t, d, "wide", fmt.Sprintf("dir%03d/k%d", i, j), []byte("x"))
		}
		want[fmt.Sprintf("dir%03d/", i)] = true
	}
	for i := 0; i < 10; i++ {
		put(t, d, "wide", fmt.Sprintf("top%d", i), []byte("x"))
		want[fmt.Sprintf("top%d", i)] = true
	}
	// One read per shard, plus a few refills: skipping a prefix does not
	// start a new merge.
	bound := int64(shards + 64)
	got := map[string]bool{}
	marker, pages := "", 0
	for {
		reads.Store(0)
		res, err := d.ListObjects(ctx, driver.ListObjectsInput{Bucket: "wide", Delimiter: "/", StartAfter: marker, MaxKeys: 1000})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if n := reads.Load(); n > bound {
			t.Fatalf("page %d: %d shard reads, bound %d", pages, n, bound)
		}
		for _, p := range res.CommonPrefixes {
			if got[p] {
				t.Fatalf("%s listed twice", p)
			}
			got[p] = true
		}
		for _, o := range res.Objects {
			if got[o.Key] {
				t.Fatalf("%s listed twice", o.Key)
			}
			got[o.Key] = true
		}
		if !res.IsTruncated {
			break
		}
		if res.NextMarker == "" || res.NextMarker == marker || pages > 500 {
			t.Fatalf("no progress: marker %q → %q", marker, res.NextMarker)
		}
		marker = res.NextMarker
	}
	if len(got) != len(want) {
		t.Fatalf("listed %d entries over %d pages, want %d", len(got), pages, len(want))
	}
	t.Logf("%d prefixes and keys in %d pages, each at most %d shard reads", len(got), pages, bound)

	// max-keys above S3's limit is capped, however the driver is called.
	reads.Store(0)
	res, err := d.ListObjects(ctx, driver.ListObjectsInput{Bucket: "wide", MaxKeys: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != 90 || res.IsTruncated || reads.Load() > bound {
		t.Fatalf("plain listing: %d objects, truncated %v, %d reads", len(res.Objects), res.IsTruncated, reads.Load())
	}
	// A page that ends exactly at the last key, or one before it, knows
	// whether more follow from its own merge: one round of reads.
	for _, tc := range []struct {
		max   int
		trunc bool
	}{{90, false}, {89, true}} {
		reads.Store(0)
		res, err := d.ListObjects(ctx, driver.ListObjectsInput{Bucket: "wide", MaxKeys: tc.max})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Objects) != tc.max || res.IsTruncated != tc.trunc || reads.Load() > shards+16 {
			t.Fatalf("max-keys %d: %d objects, truncated %v, %d reads", tc.max, len(res.Objects), res.IsTruncated, reads.Load())
		}
	}
}

// TestListingReadBudget: when skipping prefixes costs reads beyond the
// budget, pages end early but truncated, always make progress, and
// together list everything exactly once.
func TestListingReadBudget(t *testing.T) {
	ctx := context.Background()
	// The merge over shards (a view reads all 901 keys in one page).
	d := newDriverOpts(t, driver.Options{DefaultShards: 7, ListShardReadBudget: 1, NoIndexView: true})
	if err := d.CreateBucket(ctx, "u", "budget", "", 0); err != nil {
		t.Fatal(err)
	}
	// 300 keys per prefix: more than a shard's page (2*100/7+8 = 36) on
	// every shard, so each skip refills.
	for p := 0; p < 3; p++ {
		for k := 0; k < 300; k++ {
			put(t, d, "budget", fmt.Sprintf("p%d/k%03d", p, k), nil)
		}
	}
	put(t, d, "budget", "z", nil)
	var got []string
	marker, pages := "", 0
	for {
		pages++
		res, err := d.ListObjects(ctx, driver.ListObjectsInput{Bucket: "budget", Delimiter: "/", StartAfter: marker, MaxKeys: 1000})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res.CommonPrefixes...)
		for _, o := range res.Objects {
			got = append(got, o.Key)
		}
		if !res.IsTruncated {
			break
		}
		if res.NextMarker == marker || pages > 10 {
			t.Fatalf("no progress at %q", marker)
		}
		marker = res.NextMarker
	}
	if fmt.Sprint(got) != "[p0/ p1/ p2/ z]" || pages < 3 {
		t.Fatalf("listed %v in %d pages (the budget should end pages early)", got, pages)
	}
}
