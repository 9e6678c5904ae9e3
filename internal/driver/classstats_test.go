package driver_test

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/cairn-s3/cairn/internal/driver"
)

// TestBucketStatsByClass: bucket stats split the counters by storage
// class through PUT, overwrite, copy, multipart, transitions of current
// and noncurrent versions, and deletes.
func TestBucketStatsByClass(t *testing.T) {
	ctx := context.Background()
	d, _, _, _ := newClassDriver(t)
	if err := d.CreateBucket(ctx, "u", "bkt", "", 0); err != nil {
		t.Fatal(err)
	}
	putClass := func(key string, n int, class string) driver.ObjectInfo {
		t.Helper()
		oi, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: key, Body: bytes.NewReader(make([]byte, n)), Size: int64(n),
			Meta: driver.ObjectMeta{StorageClass: class}})
		if err != nil {
			t.Fatal(err)
		}
		return oi
	}
	check := func(what string, want map[string]driver.ClassUsage) {
		t.Helper()
		st, err := d.BucketStats(ctx, "bkt")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(st.StorageClasses, want) {
			t.Fatalf("%s: classes %+v\nwant %+v", what, st.StorageClasses, want)
		}
		var sum driver.ClassUsage
		for _, c := range want {
			sum.NumObjects += c.NumObjects
			sum.Size += c.Size
			sum.NumVersions += c.NumVersions
			sum.VersionsSize += c.VersionsSize
		}
		if sum != (driver.ClassUsage{NumObjects: st.NumObjects, Size: st.Size, NumVersions: st.NumVersions, VersionsSize: st.VersionsSize}) {
			t.Fatalf("%s: classes sum to %+v, totals %+v", what, sum, st)
		}
		if main := st.Usage["rgw.main"]; main.NumObjects != st.NumVersions || main.Size != st.VersionsSize || main.SizeKB != (st.VersionsSize+1023)/1024 {
			t.Fatalf("%s: usage %+v", what, st.Usage)
		}
	}
	check("empty", map[string]driver.ClassUsage{})
	putClass("a", 10, "COLD")
	putClass("b", 20, "")
	putClass("c", 30, "ARCHIVE")
	check("puts", map[string]driver.ClassUsage{
		"STANDARD": {1, 20, 1, 20}, "COLD": {1, 10, 1, 10}, "ARCHIVE": {1, 30, 1, 30}})
	putClass("a", 5, "ARCHIVE") // overwrite into another class
	check("overwrite", map[string]driver.ClassUsage{
		"STANDARD": {1, 20, 1, 20}, "ARCHIVE": {2, 35, 2, 35}})
	if _, err := d.CopyObject(ctx, driver.CopyObjectInput{SrcBucket: "bkt", SrcKey: "c", DstBucket: "bkt", DstKey: "c", StorageClass: "COLD"}); err != nil {
		t.Fatal(err)
	}
	check("copy in place", map[string]driver.ClassUsage{
		"STANDARD": {1, 20, 1, 20}, "ARCHIVE": {1, 5, 1, 5}, "COLD": {1, 30, 1, 30}})
	id, err := d.CreateMultipartUpload(ctx, "bkt", "mp", driver.ObjectMeta{StorageClass: "COLD"})
	if err != nil {
		t.Fatal(err)
	}
	p1, err := d.UploadPart(ctx, "bkt", "mp", id, 1, bytes.NewReader(make([]byte, 7)), 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.CompleteMultipartUpload(ctx, "bkt", "mp", id, []driver.CompletePart{{PartNumber: 1, ETag: p1.ETag}}, driver.ObjectChecksum{}); err != nil {
		t.Fatal(err)
	}
	if res, err := d.TransitionObject(ctx, driver.TransitionInput{Bucket: "bkt", Key: "b", StorageClass: "COLD"}); err != nil || !res.Moved {
		t.Fatalf("transition: %+v %v", res, err)
	}
	check("multipart and transition", map[string]driver.ClassUsage{
		"ARCHIVE": {1, 5, 1, 5}, "COLD": {3, 57, 3, 57}})
	for _, k := range []string{"a", "c", "mp"} {
		if err := d.DeleteObject(ctx, "bkt", k); err != nil {
			t.Fatal(err)
		}
	}
	check("deletes", map[string]driver.ClassUsage{"COLD": {1, 20, 1, 20}})

	// Versioned: a noncurrent version moves alone; a delete marker is a
	// STANDARD version of size 0.
	if err := d.PutBucketVersioning(ctx, "bkt", driver.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	v1 := putClass("v", 100, "")
	putClass("v", 1, "")
	if res, err := d.TransitionObject(ctx, driver.TransitionInput{Bucket: "bkt", Key: "v", VersionID: v1.VersionID, StorageClass: "ARCHIVE"}); err != nil || !res.Moved {
		t.Fatalf("noncurrent transition: %+v %v", res, err)
	}
	check("noncurrent transition", map[string]driver.ClassUsage{
		"COLD": {1, 20, 1, 20}, "STANDARD": {1, 1, 1, 1}, "ARCHIVE": {0, 0, 1, 100}})
	if err := d.DeleteObject(ctx, "bkt", "v"); err != nil {
		t.Fatal(err)
	}
	check("delete marker", map[string]driver.ClassUsage{
		"COLD": {1, 20, 1, 20}, "STANDARD": {0, 0, 2, 1}, "ARCHIVE": {0, 0, 1, 100}})
	if _, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "bkt", Key: "v", VersionID: v1.VersionID}); err != nil {
		t.Fatal(err)
	}
	check("noncurrent version deleted", map[string]driver.ClassUsage{
		"COLD": {1, 20, 1, 20}, "STANDARD": {0, 0, 2, 1}})
}
