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
