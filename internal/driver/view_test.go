package driver_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/cairn-s3/cairn/internal/driver"
)

// TestIndexViewMatchesShards: versioned, suspended and plain writes,
// delete markers, version deletes and overwrites all keep the bucket's
// ordered view equal to its shards' entries, and the listing (read from
// the view) shows the current objects only.
func TestIndexViewMatchesShards(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t)
	if err := d.CreateBucket(ctx, "u", "vwb", "", 0); err != nil {
		t.Fatal(err)
	}
	check := func(step string) {
		t.Helper()
		if view, diff, err := d.CheckIndexView(ctx, "vwb", 10); err != nil || !view || len(diff) > 0 {
			t.Fatalf("%s: view differs at %q (%v)", step, diff, err)
		}
	}
	for i := 0; i < 40; i++ {
		put(t, d, "vwb", fmt.Sprintf("plain/%02d", i), []byte("p"))
	}
	check("plain")
	if err := d.PutBucketVersioning(ctx, "vwb", driver.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 0; i < 30; i++ {
		oi := put(t, d, "vwb", fmt.Sprintf("ver/%02d", i%10), []byte(fmt.Sprint(i)))
		ids = append(ids, oi.VersionID)
	}
	for i := 0; i < 5; i++ {
		if err := d.DeleteObject(ctx, "vwb", fmt.Sprintf("ver/%02d", i)); err != nil { // delete markers
			t.Fatal(err)
		}
	}
	// Delete the current versions of ver/05..09 by id.
	for i, id := range ids[25:] {
		if _, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "vwb", Key: fmt.Sprintf("ver/%02d", 5+i), VersionID: id}); err != nil {
			t.Fatal(err)
		}
	}
	check("versioned")
	if err := d.PutBucketVersioning(ctx, "vwb", driver.VersioningSuspended); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		put(t, d, "vwb", fmt.Sprintf("ver/%02d", i), []byte("null"))
		put(t, d, "vwb", fmt.Sprintf("plain/%02d", i), []byte("over"))
	}
	for i := 10; i < 20; i++ {
		if err := d.DeleteObject(ctx, "vwb", fmt.Sprintf("plain/%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	check("suspended")
	res, err := d.ListObjects(ctx, driver.ListObjectsInput{Bucket: "vwb", MaxKeys: 1000})
	if err != nil {
		t.Fatal(err)
	}
	// plain/00..39 less the 10 delete markers, ver/00..09 (null versions).
	if len(res.Objects) != 40 || res.IsTruncated {
		t.Fatalf("listed %d objects (truncated %v), want 40", len(res.Objects), res.IsTruncated)
	}
}

// TestFixIndexViewBuildsOne: a bucket made without a view (an older
// gateway, or bucket-index-view off) gets one from `bucket check --fix`
// while PUTs and DELETEs go on; its listings then read the view, which
// matches the shards, and a second fix finds nothing to do.
func TestFixIndexViewBuildsOne(t *testing.T) {
	ctx := context.Background()
	st := newMemStore(t)
	old, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 5, GCMinWait: -1, NoIndexView: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.CreateBucket(ctx, "u", "oldb", "", 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		put(t, old, "oldb", fmt.Sprintf("k/%03d", i), []byte("x"))
	}
	old.Close()
	d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 5, GCMinWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if view, _, err := d.CheckIndexView(ctx, "oldb", 0); err != nil || view {
		t.Fatalf("an old bucket has a view (%v)", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 300; i++ {
			k := fmt.Sprintf("k/%03d", (i*7)%600)
			if i%3 == 0 {
				if err := d.DeleteObject(ctx, "oldb", k); err != nil {
					t.Error(err)
				}
				continue
			}
			put(t, d, "oldb", k, []byte("y"))
		}
	}()
	fix, err := d.FixIndexView(ctx, "oldb")
	<-done
	if err != nil || !fix.Built {
		t.Fatalf("fix: %+v %v", fix, err)
	}
	view, diff, err := d.CheckIndexView(ctx, "oldb", 0)
	if err != nil || !view || len(diff) > 0 {
		t.Fatalf("after the build: view %v, differs at %q (%v)", view, diff, err)
	}
	st2, err := d.BucketStats(ctx, "oldb")
	if err != nil || !st2.IndexView {
		t.Fatalf("stats: %+v %v", st2, err)
	}
	res, err := d.ListObjects(ctx, driver.ListObjectsInput{Bucket: "oldb", MaxKeys: 1000})
	if err != nil || uint64(len(res.Objects)) != st2.NumObjects {
		t.Fatalf("listed %d, stats say %d (%v)", len(res.Objects), st2.NumObjects, err)
	}
	if fix, err := d.FixIndexView(ctx, "oldb"); err != nil || fix.Built || fix.Fixed != 0 {
		t.Fatalf("second fix: %+v %v", fix, err)
	}
}
