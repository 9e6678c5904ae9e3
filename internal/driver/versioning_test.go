package driver_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/driver"
)

func getVersion(t *testing.T, d *driver.Driver, bucket, key, vid string) (driver.ObjectInfo, string, error) {
	t.Helper()
	oi, rd, err := d.GetObjectVersion(context.Background(), bucket, key, vid, nil)
	if err != nil {
		return oi, "", err
	}
	defer rd.Close()
	b, err := io.ReadAll(rd)
	return oi, string(b), err
}

func versions(t *testing.T, d *driver.Driver, bucket string) string {
	t.Helper()
	res, err := d.ListObjectVersions(context.Background(), driver.ListVersionsInput{Bucket: bucket, MaxKeys: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var w []string
	for _, v := range res.Versions {
		s := v.Key
		if v.VersionID == "null" {
			s += "(null)"
		}
		if v.DeleteMarker {
			s += "[dm]"
		}
		if v.IsLatest {
			s += "*"
		}
		w = append(w, s)
	}
	return strings.Join(w, " ")
}

func TestVersioningWalkthrough(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t)
	if err := d.CreateBucket(ctx, "u", "vbk", "", 0); err != nil {
		t.Fatal(err)
	}
	if st, _ := d.GetBucketVersioning(ctx, "vbk"); st != "" {
		t.Fatalf("new bucket versioning %q", st)
	}
	// An unversioned object: no version id; it becomes the null version.
	if oi := put(t, d, "vbk", "k", []byte("v0")); oi.VersionID != "" {
		t.Fatalf("unversioned put has version %q", oi.VersionID)
	}
	if err := d.PutBucketVersioning(ctx, "vbk", "Bogus"); !errors.Is(err, driver.ErrMalformedXML) {
		t.Fatalf("bad status: %v", err)
	}
	if err := d.PutBucketVersioning(ctx, "vbk", driver.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	v1 := put(t, d, "vbk", "k", []byte("v1"))
	v2 := put(t, d, "vbk", "k", []byte("v2"))
	if v1.VersionID == "" || v1.VersionID == "null" || v2.VersionID <= "" || v2.VersionID >= v1.VersionID {
		t.Fatalf("version ids %q %q must be opaque and sort newest first", v1.VersionID, v2.VersionID)
	}
	if got := versions(t, d, "vbk"); got != "k* k k(null)" {
		t.Fatalf("versions %q", got)
	}
	for vid, want := range map[string]string{"": "v2", v1.VersionID: "v1", "null": "v0"} {
		if _, body, err := getVersion(t, d, "vbk", "k", vid); err != nil || body != want {
			t.Fatalf("get %q: %q %v", vid, body, err)
		}
	}
	// A delete writes a marker; GET then says NoSuchKey with the marker.
	dr, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "vbk", Key: "k"})
	if err != nil || !dr.DeleteMarker || dr.VersionID == "" {
		t.Fatalf("delete: %+v %v", dr, err)
	}
	var dm *driver.DeleteMarkerError
	if _, _, err := getVersion(t, d, "vbk", "k", ""); !errors.As(err, &dm) || !errors.Is(err, driver.ErrNoSuchKey) || dm.VersionID != dr.VersionID {
		t.Fatalf("get behind marker: %v", err)
	}
	if _, _, err := getVersion(t, d, "vbk", "k", dr.VersionID); !errors.Is(err, driver.ErrMethodNotAllowed) {
		t.Fatalf("get of the marker by id: %v", err)
	}
	if res, _ := d.ListObjects(ctx, driver.ListObjectsInput{Bucket: "vbk", MaxKeys: 10}); len(res.Objects) != 0 {
		t.Fatalf("listing shows %v", res.Objects)
	}
	// Unknown and malformed ids.
	if _, _, err := getVersion(t, d, "vbk", "k", strings.Repeat("0", 32)); !errors.Is(err, driver.ErrNoSuchVersion) {
		t.Fatalf("unknown version: %v", err)
	}
	if _, _, err := getVersion(t, d, "vbk", "k", "nope"); !errors.Is(err, driver.ErrInvalidVersionID) {
		t.Fatalf("malformed version: %v", err)
	}
	// Removing the marker brings v2 back.
	if dr2, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "vbk", Key: "k", VersionID: dr.VersionID}); err != nil || !dr2.DeleteMarker {
		t.Fatalf("remove marker: %+v %v", dr2, err)
	}
	if _, body, err := getVersion(t, d, "vbk", "k", ""); err != nil || body != "v2" {
		t.Fatalf("after removing the marker: %q %v", body, err)
	}
	// Suspended: writes and deletes replace the null version.
	if err := d.PutBucketVersioning(ctx, "vbk", driver.VersioningSuspended); err != nil {
		t.Fatal(err)
	}
	if oi := put(t, d, "vbk", "k", []byte("s1")); oi.VersionID != "null" {
		t.Fatalf("suspended put version %q", oi.VersionID)
	}
	if got := versions(t, d, "vbk"); got != "k(null)* k k" {
		t.Fatalf("suspended versions %q", got)
	}
	for i := 0; i < 3; i++ {
		if dr, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "vbk", Key: "k"}); err != nil || dr.VersionID != "null" {
			t.Fatalf("suspended delete: %+v %v", dr, err)
		}
	}
	if got := versions(t, d, "vbk"); got != "k(null)[dm]* k k" {
		t.Fatalf("suspended deletes pile up: %q", got)
	}
	st, err := d.BucketStats(ctx, "vbk")
	if err != nil || st.NumObjects != 0 || st.NumVersions != 3 || st.VersionsSize != 4 || st.Versioning != "Suspended" {
		t.Fatalf("stats %+v %v", st, err)
	}
	// Deleting every version frees every data object.
	for _, id := range []string{"null", v1.VersionID, v2.VersionID} {
		if _, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "vbk", Key: "k", VersionID: id}); err != nil {
			t.Fatal(err)
		}
	}
	d.CollectNow(ctx)
	if n := dataObjects(t, d); n != 0 {
		t.Fatalf("%d data objects left", n)
	}
	if err := d.DeleteBucket(ctx, "vbk"); err != nil {
		t.Fatalf("delete emptied bucket: %v", err)
	}
}

func TestVersionedConditionalWrites(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t)
	for _, b := range []string{"plain", "vers"} {
		if err := d.CreateBucket(ctx, "u", b, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.PutBucketVersioning(ctx, "vers", driver.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"plain", "vers"} {
		p := func(body, ifNoneMatch, ifMatch string) (driver.ObjectInfo, error) {
			return d.PutObject(ctx, driver.PutObjectInput{Bucket: b, Key: "k", Body: strings.NewReader(body), Size: int64(len(body)), IfNoneMatch: ifNoneMatch, IfMatch: ifMatch})
		}
		if _, err := p("a", "", "*"); !errors.Is(err, driver.ErrNoSuchKey) {
			t.Fatalf("%s: If-Match * on absent: %v", b, err)
		}
		first, err := p("a", "*", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p("b", "*", ""); !errors.Is(err, driver.ErrPreconditionFailed) {
			t.Fatalf("%s: If-None-Match * on present: %v", b, err)
		}
		if _, err := p("b", "", `"0000"`); !errors.Is(err, driver.ErrPreconditionFailed) {
			t.Fatalf("%s: If-Match wrong etag: %v", b, err)
		}
		if _, err := p("b", "", `"`+first.ETag+`"`); err != nil {
			t.Fatalf("%s: If-Match right etag: %v", b, err)
		}
		if _, err := p("c", "", "*"); err != nil {
			t.Fatalf("%s: If-Match *: %v", b, err)
		}
		if _, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: b, Key: "k", IfMatch: first.ETag}); !errors.Is(err, driver.ErrPreconditionFailed) {
			t.Fatalf("%s: delete If-Match stale etag: %v", b, err)
		}
		cur, _ := d.HeadObject(ctx, b, "k")
		if _, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: b, Key: "k", IfMatch: cur.ETag}); err != nil {
			t.Fatalf("%s: delete If-Match current etag: %v", b, err)
		}
		if _, err := d.HeadObject(ctx, b, "k"); !errors.Is(err, driver.ErrNoSuchKey) {
			t.Fatalf("%s: after conditional delete: %v", b, err)
		}
	}
}

func TestCompleteMultipartRetryAndConditions(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t)
	if err := d.CreateBucket(ctx, "u", "mbk", "", 0); err != nil {
		t.Fatal(err)
	}
	if err := d.PutBucketVersioning(ctx, "mbk", driver.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	upload := func() (string, []driver.CompletePart) {
		id, err := d.CreateMultipartUpload(ctx, "mbk", "k", driver.ObjectMeta{})
		if err != nil {
			t.Fatal(err)
		}
		pi, err := d.UploadPart(ctx, "mbk", "k", id, 1, strings.NewReader("part"), 4, nil)
		if err != nil {
			t.Fatal(err)
		}
		return id, []driver.CompletePart{{PartNumber: 1, ETag: pi.ETag}}
	}
	id, parts := upload()
	first, err := d.CompleteMultipartUpload(ctx, "mbk", "k", id, parts, driver.ObjectChecksum{})
	if err != nil {
		t.Fatal(err)
	}
	// The reply was lost: the retry gets the same object and version.
	again, err := d.CompleteMultipartUpload(ctx, "mbk", "k", id, parts, driver.ObjectChecksum{})
	if err != nil || again.ETag != first.ETag || again.VersionID != first.VersionID {
		t.Fatalf("retried complete: %+v %v (first %+v)", again, err, first)
	}
	if got := versions(t, d, "mbk"); got != "k*" {
		t.Fatalf("versions after retry %q", got)
	}
	// If-None-Match: * at link time.
	id2, parts2 := upload()
	if _, err := d.CompleteMultipartUploadCond(ctx, "mbk", "k", id2, parts2, driver.ObjectChecksum{}, driver.Conditions{IfNoneMatch: "*"}); !errors.Is(err, driver.ErrPreconditionFailed) {
		t.Fatalf("complete If-None-Match on present: %v", err)
	}
	if _, err := d.CompleteMultipartUploadCond(ctx, "mbk", "k", id2, parts2, driver.ObjectChecksum{}, driver.Conditions{IfMatch: `"nope"`}); !errors.Is(err, driver.ErrPreconditionFailed) {
		t.Fatalf("complete If-Match wrong: %v", err)
	}
	if _, err := d.CompleteMultipartUploadCond(ctx, "mbk", "k", id2, parts2, driver.ObjectChecksum{}, driver.Conditions{IfMatch: first.ETag}); err != nil {
		t.Fatalf("complete If-Match right: %v", err)
	}
}

// A slow first upload of a part that finishes after its retry must not
// replace the retry's part (the client completes with the retry's ETag).
func TestSlowPartUploadDoesNotReplaceItsRetry(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t)
	if err := d.CreateBucket(ctx, "u", "pbk", "", 0); err != nil {
		t.Fatal(err)
	}
	id, err := d.CreateMultipartUpload(ctx, "pbk", "k", driver.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	slow := make(chan error, 1)
	go func() {
		_, err := d.UploadPart(ctx, "pbk", "k", id, 1, pr, 4, nil)
		slow <- err
	}()
	if _, err := pw.Write([]byte("ol")); err != nil { // the slow upload has begun
		t.Fatal(err)
	}
	retry, err := d.UploadPart(ctx, "pbk", "k", id, 1, bytes.NewReader([]byte("new!")), 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	pw.Write([]byte("d!"))
	pw.Close()
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	oi, err := d.CompleteMultipartUpload(ctx, "pbk", "k", id, []driver.CompletePart{{PartNumber: 1, ETag: retry.ETag}}, driver.ObjectChecksum{})
	if err != nil {
		t.Fatalf("complete with the retry's part: %v", err)
	}
	if got := get(t, d, "pbk", "k", nil); string(got) != "new!" || oi.Size != 4 {
		t.Fatalf("object %q", got)
	}
}

// A bucket whose only remains are noncurrent versions and a delete marker
// is not empty.
func TestBucketWithVersionsIsNotEmpty(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t)
	if err := d.CreateBucket(ctx, "u", "nb1", "", 0); err != nil {
		t.Fatal(err)
	}
	if err := d.PutBucketVersioning(ctx, "nb1", driver.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	v := put(t, d, "nb1", "k", []byte("x"))
	dr, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "nb1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteBucket(ctx, "nb1"); !errors.Is(err, driver.ErrBucketNotEmpty) {
		t.Fatalf("delete bucket with versions: %v", err)
	}
	for _, id := range []string{v.VersionID, dr.VersionID} {
		if _, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "nb1", Key: "k", VersionID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.DeleteBucket(ctx, "nb1"); err != nil {
		t.Fatalf("delete emptied bucket: %v", err)
	}
}

// An upload whose Complete linked a version but crashed before its
// clean-up keeps its parts on Abort even after newer versions of the key
// hid that version.
func TestAbortKeepsPartsOfANoncurrentCompletedVersion(t *testing.T) {
	ctx := context.Background()
	crash := false
	d := newDriverWith(t, func(o *driver.Options) {
		o.Failpoint = func(p string) {
			if crash && p == "after-link" {
				panic("crash after link")
			}
		}
	})
	if err := d.CreateBucket(ctx, "u", "abk", "", 0); err != nil {
		t.Fatal(err)
	}
	if err := d.PutBucketVersioning(ctx, "abk", driver.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	id, err := d.CreateMultipartUpload(ctx, "abk", "k", driver.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	pi, err := d.UploadPart(ctx, "abk", "k", id, 1, strings.NewReader("part"), 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Complete links the version, then "crashes" before its clean-up.
	crash = true
	func() {
		defer func() { _ = recover() }()
		d.CompleteMultipartUpload(ctx, "abk", "k", id, []driver.CompletePart{{PartNumber: 1, ETag: pi.ETag}}, driver.ObjectChecksum{})
	}()
	crash = false
	mp, err := d.HeadObject(ctx, "abk", "k")
	if err != nil || mp.Size != 4 {
		t.Fatalf("the completed version: %+v %v", mp, err)
	}
	put(t, d, "abk", "k", []byte("newer"))
	if err := d.AbortMultipartUpload(ctx, "abk", "k", id); err != nil {
		t.Fatal(err)
	}
	d.CollectNow(ctx)
	if _, body, err := getVersion(t, d, "abk", "k", mp.VersionID); err != nil || body != "part" {
		t.Fatalf("the completed version after abort: %q %v", body, err)
	}
}

func newDriverWith(t *testing.T, mod func(*driver.Options)) *driver.Driver {
	t.Helper()
	st := newMemStore(t)
	o := driver.Options{Store: st, DefaultShards: 7, GCMinWait: -1}
	mod(&o)
	d, err := driver.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); st.Close() })
	return d
}
