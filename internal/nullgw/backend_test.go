package nullgw

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/driver"
)

func md5hex(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestObjects(t *testing.T) {
	ctx := context.Background()
	b := New()
	u, err := b.CreateUser(ctx, driver.User{ID: "alice"})
	if err != nil || len(u.Keys) != 1 {
		t.Fatal(u, err)
	}
	if got, sk, err := b.LookupAccessKey(ctx, u.Keys[0].AccessKey); err != nil || got.ID != "alice" || sk != u.Keys[0].SecretKey {
		t.Fatal(got, sk, err)
	}
	if _, _, err := b.LookupAccessKey(ctx, "nope"); !errors.Is(err, driver.ErrInvalidAccessKey) {
		t.Fatal(err)
	}
	if err := b.CreateBucket(ctx, "alice", "bkt", "", 0); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateBucket(ctx, "alice", "bkt", "", 0); !errors.Is(err, driver.ErrBucketOwnedByYou) {
		t.Fatal(err)
	}
	if err := b.CreateBucket(ctx, "bob", "bkt", "", 0); !errors.Is(err, driver.ErrBucketExists) {
		t.Fatal(err)
	}

	put := func(key, body string, size int64) (driver.ObjectInfo, error) {
		return b.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: key, Body: strings.NewReader(body), Size: size,
			Meta: driver.ObjectMeta{ContentType: "text/plain"}})
	}
	info, err := put("a/1", "hello", 5)
	if err != nil || info.ETag != md5hex("hello") || info.Size != 5 || info.Owner != "alice" {
		t.Fatal(info, err)
	}
	if _, err := put("a/2", "short", 9); !errors.Is(err, driver.ErrIncompleteBody) {
		t.Fatal(err)
	}
	// A body read error (a failed signature or checksum at EOF) aborts.
	bad := io.MultiReader(strings.NewReader("x"), errReader{})
	if _, err := b.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: "a/3", Body: bad, Size: -1}); err == nil {
		t.Fatal("read error ignored")
	}
	if _, err := b.HeadObject(ctx, "bkt", "a/3"); !errors.Is(err, driver.ErrNoSuchKey) {
		t.Fatal("failed PUT left an object:", err)
	}
	if _, err := b.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: "a/1", Body: strings.NewReader("x"), Size: 1, IfNoneMatch: "*"}); !errors.Is(err, driver.ErrPreconditionFailed) {
		t.Fatal(err)
	}

	got, rc, err := b.GetObject(ctx, "bkt", "a/1", &driver.Range{Start: 1, Length: 3})
	if err != nil || got.ETag != info.ETag || got.Meta.ContentType != "text/plain" {
		t.Fatal(got, err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != "\x00\x00\x00" {
		t.Fatalf("GET body %q", data)
	}

	for i := 0; i < 5; i++ {
		if _, err := put(fmt.Sprintf("b/%d", i), "x", 1); err != nil {
			t.Fatal(err)
		}
	}
	res, err := b.ListObjects(ctx, driver.ListObjectsInput{Bucket: "bkt", Delimiter: "/", MaxKeys: 10})
	if err != nil || len(res.CommonPrefixes) != 2 || len(res.Objects) != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = b.ListObjects(ctx, driver.ListObjectsInput{Bucket: "bkt", Prefix: "b/", StartAfter: "b/1", MaxKeys: 2})
	if err != nil || len(res.Objects) != 2 || res.Objects[0].Key != "b/2" || !res.IsTruncated || res.NextMarker != "b/3" {
		t.Fatalf("%+v %v", res, err)
	}
	if err := b.DeleteObject(ctx, "bkt", "b/2"); err != nil {
		t.Fatal(err)
	}
	res, _ = b.ListObjects(ctx, driver.ListObjectsInput{Bucket: "bkt", Prefix: "b/", MaxKeys: 100})
	if len(res.Objects) != 4 {
		t.Fatalf("after delete: %+v", res)
	}
	if err := b.DeleteBucket(ctx, "bkt"); !errors.Is(err, driver.ErrBucketNotEmpty) {
		t.Fatal(err)
	}
	st, err := b.BucketStats(ctx, "bkt")
	if err != nil || st.NumObjects != 5 || st.Size != 9 {
		t.Fatalf("%+v %v", st, err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("bad signature") }

func TestMultipart(t *testing.T) {
	ctx := context.Background()
	b := New()
	if err := b.CreateBucket(ctx, "alice", "bkt", "", 0); err != nil {
		t.Fatal(err)
	}
	id, err := b.CreateMultipartUpload(ctx, "bkt", "big", driver.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	p1 := strings.Repeat("a", driver.MinPartSize)
	i1, err := b.UploadPart(ctx, "bkt", "big", id, 1, strings.NewReader(p1), int64(len(p1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	i2, err := b.UploadPart(ctx, "bkt", "big", id, 2, strings.NewReader("tail"), 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.CompleteMultipartUpload(ctx, "bkt", "big", id, []driver.CompletePart{{PartNumber: 2, ETag: i2.ETag}, {PartNumber: 1, ETag: i1.ETag}}, driver.ObjectChecksum{}); !errors.Is(err, driver.ErrInvalidPartOrder) {
		t.Fatal(err)
	}
	info, err := b.CompleteMultipartUpload(ctx, "bkt", "big", id, []driver.CompletePart{{PartNumber: 1, ETag: i1.ETag}, {PartNumber: 2, ETag: `"` + i2.ETag + `"`}}, driver.ObjectChecksum{})
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := hex.DecodeString(i1.ETag)
	r2, _ := hex.DecodeString(i2.ETag)
	want := md5.Sum(append(r1, r2...))
	if info.ETag != hex.EncodeToString(want[:])+"-2" || info.Size != int64(len(p1))+4 || info.Parts != 2 {
		t.Fatalf("%+v", info)
	}
	if _, err := b.ListParts(ctx, "bkt", "big", id, 0, 10); !errors.Is(err, driver.ErrNoSuchUpload) {
		t.Fatal(err)
	}
}
