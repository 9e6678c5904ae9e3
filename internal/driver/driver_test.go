package driver_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// newMemStore is an embedded store in memory with the classes the driver
// uses; the caller closes it.
func newMemStore(t testing.TB) objstore.Store {
	t.Helper()
	// CheckFresh: every stripe the driver calls fresh must be new.
	return openStore(t, embedded.Options{Dir: "/d", FS: vfs.NewMem(), CheckFresh: true})
}

// openStore opens an embedded store with o and the driver's classes.
func openStore(t testing.TB, o embedded.Options) *embedded.Store {
	t.Helper()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	o.Classes = reg
	st, err := embedded.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func newDriver(t *testing.T) (*driver.Driver, objstore.Store) {
	t.Helper()
	st := newMemStore(t)
	d, err := driver.New(context.Background(), driver.Options{Store: st, DefaultShards: 7, GCMinWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); st.Close() })
	return d, st
}

func put(t *testing.T, d *driver.Driver, bucket, key string, body []byte) driver.ObjectInfo {
	t.Helper()
	oi, err := d.PutObject(context.Background(), driver.PutObjectInput{Bucket: bucket, Key: key, Body: bytes.NewReader(body), Size: int64(len(body))})
	if err != nil {
		t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
	return oi
}

func get(t *testing.T, d *driver.Driver, bucket, key string, rng *driver.Range) []byte {
	t.Helper()
	_, rd, err := d.GetObject(context.Background(), bucket, key, rng)
	if err != nil {
		t.Fatalf("get %s/%s: %v", bucket, key, err)
	}
	defer rd.Close()
	b, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dataObjects counts objects in the data pool: what GC must bring back down.
func dataObjects(t *testing.T, d *driver.Driver) int {
	t.Helper()
	n, marker := 0, ""
	for {
		oids, more, err := d.DataIO().ListObjects(context.Background(), marker, 1000)
		if err != nil {
			t.Fatal(err)
		}
		n += len(oids)
		if !more {
			return n
		}
		marker = oids[len(oids)-1]
	}
}

func TestPutGetOverwriteDeleteCollectsData(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t)
	if err := d.CreateBucket(ctx, "alice", "bkt1", "", 0); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), (driver.StripeSize*2+1000)/16)
	put(t, d, "bkt1", "big", big)
	if got := get(t, d, "bkt1", "big", nil); !bytes.Equal(got, big) {
		t.Fatalf("big object differs (%d vs %d bytes)", len(got), len(big))
	}
	if got := get(t, d, "bkt1", "big", &driver.Range{Start: driver.StripeSize - 3, Length: 6}); !bytes.Equal(got, big[driver.StripeSize-3:driver.StripeSize+3]) {
		t.Fatalf("range across stripes: %q", got)
	}
	if n := dataObjects(t, d); n != 3 {
		t.Fatalf("3 stripes expected, %d data objects", n)
	}
	put(t, d, "bkt1", "big", []byte("small now"))
	d.CollectNow(ctx)
	if n := dataObjects(t, d); n != 1 {
		t.Fatalf("overwrite left %d data objects, want 1", n)
	}
	st, err := d.BucketStats(ctx, "bkt1")
	if err != nil || st.NumObjects != 1 || st.Size != 9 || st.NumShards != 7 {
		t.Fatalf("stats %+v %v", st, err)
	}
	if err := d.DeleteObject(ctx, "bkt1", "big"); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteObject(ctx, "bkt1", "big"); err != nil {
		t.Fatalf("deleting a missing key must succeed: %v", err)
	}
	d.CollectNow(ctx)
	if n := dataObjects(t, d); n != 0 {
		t.Fatalf("delete left %d data objects", n)
	}
	if _, err := d.HeadObject(ctx, "bkt1", "big"); !errors.Is(err, driver.ErrNoSuchKey) {
		t.Fatalf("head deleted: %v", err)
	}
	if err := d.DeleteBucket(ctx, "bkt1"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.GetBucket(ctx, "bkt1"); !errors.Is(err, driver.ErrNoSuchBucket) {
		t.Fatalf("bucket after delete: %v", err)
	}
}

func TestFailedPutWritesNothing(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t)
	d.CreateBucket(ctx, "alice", "bkt1", "", 0)
	put(t, d, "bkt1", "k", []byte("old"))
	boom := errors.New("checksum mismatch at EOF")
	body := io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("x"), 5<<20)), iotest.ErrReader(boom))
	_, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt1", Key: "k", Body: body, Size: -1})
	if !errors.Is(err, boom) {
		t.Fatalf("want body error, got %v", err)
	}
	_, err = d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt1", Key: "k", Body: strings.NewReader("short"), Size: 10})
	if !errors.Is(err, driver.ErrIncompleteBody) {
		t.Fatalf("short body: %v", err)
	}
	if got := get(t, d, "bkt1", "k", nil); string(got) != "old" {
		t.Fatalf("failed PUT changed the object: %q", got)
	}
	if n := dataObjects(t, d); n != 1 {
		t.Fatalf("failed PUTs left %d data objects", n)
	}
}

func TestConditionalPut(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t)
	d.CreateBucket(ctx, "alice", "bkt1", "", 0)
	_, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt1", Key: "k", Body: strings.NewReader("1"), Size: 1, IfNoneMatch: "*"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt1", Key: "k", Body: strings.NewReader("2"), Size: 1, IfNoneMatch: "*"})
	if !errors.Is(err, driver.ErrPreconditionFailed) {
		t.Fatalf("if-none-match on existing key: %v", err)
	}
	if got := get(t, d, "bkt1", "k", nil); string(got) != "1" {
		t.Fatalf("got %q", got)
	}
}

func TestBucketsAndUsers(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t)
	u, err := d.CreateUser(ctx, driver.User{ID: "alice"})
	if err != nil || len(u.Keys) != 1 || len(u.Keys[0].AccessKey) != 20 || len(u.Keys[0].SecretKey) != 40 {
		t.Fatalf("create user: %+v %v", u, err)
	}
	if _, err := d.CreateUser(ctx, driver.User{ID: "alice"}); !errors.Is(err, driver.ErrUserExists) {
		t.Fatalf("dup user: %v", err)
	}
	if _, err := d.CreateUser(ctx, driver.User{ID: "bob", Keys: u.Keys}); !errors.Is(err, driver.ErrKeyExists) {
		t.Fatalf("dup key: %v", err)
	}
	if _, err := d.GetUser(ctx, "bob"); !errors.Is(err, driver.ErrNoSuchUser) {
		t.Fatalf("failed create must leave no user: %v", err)
	}
	got, secret, err := d.LookupAccessKey(ctx, u.Keys[0].AccessKey)
	if err != nil || got.ID != "alice" || secret != u.Keys[0].SecretKey {
		t.Fatalf("lookup: %v %v", got, err)
	}
	for _, name := range []string{"ab", "UPPER", "-x-", "a..b", "192.168.1.1", strings.Repeat("a", 64)} {
		if err := d.CreateBucket(ctx, "alice", name, "", 0); !errors.Is(err, driver.ErrInvalidBucketName) {
			t.Errorf("bucket %q: %v", name, err)
		}
	}
	d.CreateBucket(ctx, "alice", "shared-name", "", 0)
	if err := d.CreateBucket(ctx, "alice", "shared-name", "", 0); !errors.Is(err, driver.ErrBucketOwnedByYou) {
		t.Fatalf("%v", err)
	}
	if err := d.CreateBucket(ctx, "bob", "shared-name", "", 0); !errors.Is(err, driver.ErrBucketExists) {
		t.Fatalf("%v", err)
	}
	if err := d.CreateBucket(ctx, "bob", "presharded", "", 101); err != nil {
		t.Fatal(err)
	}
	if st, _ := d.BucketStats(ctx, "presharded"); st.NumShards != 101 {
		t.Fatalf("pre-sharding: %d", st.NumShards)
	}
	bs, _ := d.ListBuckets(ctx, "alice")
	if len(bs) != 1 || bs[0].Name != "shared-name" {
		t.Fatalf("alice's buckets %+v", bs)
	}
	if err := d.RemoveUser(ctx, "alice"); !errors.Is(err, driver.ErrNotEmptyUserBuckets) {
		t.Fatalf("remove user with buckets: %v", err)
	}
	put(t, d, "shared-name", "x", []byte("y"))
	if err := d.DeleteBucket(ctx, "shared-name"); !errors.Is(err, driver.ErrBucketNotEmpty) {
		t.Fatalf("delete non-empty: %v", err)
	}
	// The failed delete reopened the shards: writes work again.
	put(t, d, "shared-name", "z", []byte("y"))
}

// TestListingMatchesModel lists random keys with random prefixes,
// delimiters and page sizes and compares with a sorted-slice model.
func TestListingMatchesModel(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t)
	d.CreateBucket(ctx, "alice", "lbkt", "", 0)
	rnd := rand.New(rand.NewSource(1))
	parts := []string{"a", "b", "ab", "a/b", "c/", "/", "d", "é", "z"}
	model := map[string]bool{}
	for i := 0; i < 300; i++ {
		var sb strings.Builder
		for j := 0; j < 1+rnd.Intn(4); j++ {
			sb.WriteString(parts[rnd.Intn(len(parts))])
		}
		k := sb.String()
		model[k] = true
		put(t, d, "lbkt", k, []byte(k))
	}
	keys := make([]string, 0, len(model))
	for k := range model {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for trial := 0; trial < 60; trial++ {
		prefix := []string{"", "a", "a/", "ab", "z", "é"}[rnd.Intn(6)]
		delim := []string{"", "/", "b"}[rnd.Intn(3)]
		page := 1 + rnd.Intn(40)
		// Model.
		var want []string
		seen := map[string]bool{}
		for _, k := range keys {
			if !strings.HasPrefix(k, prefix) {
				continue
			}
			if delim != "" {
				if i := strings.Index(k[len(prefix):], delim); i >= 0 {
					cp := k[:len(prefix)+i+len(delim)]
					if !seen[cp] {
						seen[cp] = true
						want = append(want, "P:"+cp)
					}
					continue
				}
			}
			want = append(want, "K:"+k)
		}
		// Driver, paged.
		var got []string
		marker := ""
		for pages := 0; ; pages++ {
			if pages > 1000 {
				t.Fatal("listing does not terminate")
			}
			res, err := d.ListObjects(ctx, driver.ListObjectsInput{Bucket: "lbkt", Prefix: prefix, Delimiter: delim, StartAfter: marker, MaxKeys: page})
			if err != nil {
				t.Fatal(err)
			}
			var merged []string
			for _, o := range res.Objects {
				merged = append(merged, "K:"+o.Key)
			}
			for _, p := range res.CommonPrefixes {
				merged = append(merged, "P:"+p)
			}
			sort.Slice(merged, func(i, j int) bool { return merged[i][2:] < merged[j][2:] })
			if len(merged) > page {
				t.Fatalf("page of %d > max %d", len(merged), page)
			}
			got = append(got, merged...)
			if !res.IsTruncated {
				break
			}
			marker = res.NextMarker
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("prefix %q delim %q page %d:\n got %v\nwant %v", prefix, delim, page, got, want)
		}
	}
}

func TestMultipart(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t)
	d.CreateBucket(ctx, "alice", "mpbkt", "", 0)
	id, err := d.CreateMultipartUpload(ctx, "mpbkt", "obj", driver.ObjectMeta{ContentType: "x/y"})
	if err != nil {
		t.Fatal(err)
	}
	p1 := bytes.Repeat([]byte("a"), driver.MinPartSize)
	p2 := []byte("tail")
	var parts []driver.CompletePart
	for i, p := range [][]byte{p1, p2} {
		pi, err := d.UploadPart(ctx, "mpbkt", "obj", id, i+1, bytes.NewReader(p), int64(len(p)), nil)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, driver.CompletePart{PartNumber: i + 1, ETag: pi.ETag})
	}
	// Replace part 2; the first upload's data must be collected.
	pi, err := d.UploadPart(ctx, "mpbkt", "obj", id, 2, strings.NewReader("TAIL"), 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.CompleteMultipartUpload(ctx, "mpbkt", "obj", id, parts, driver.ObjectChecksum{}); !errors.Is(err, driver.ErrInvalidPart) {
		t.Fatalf("stale part etag: %v", err)
	}
	parts[1].ETag = pi.ETag
	if _, err := d.CompleteMultipartUpload(ctx, "mpbkt", "obj", id, []driver.CompletePart{parts[1], parts[0]}, driver.ObjectChecksum{}); !errors.Is(err, driver.ErrInvalidPartOrder) {
		t.Fatalf("order: %v", err)
	}
	ups, _ := d.ListMultipartUploads(ctx, driver.ListUploadsInput{Bucket: "mpbkt"})
	if len(ups.Uploads) != 1 || ups.Uploads[0].UploadID != id {
		t.Fatalf("uploads %+v", ups)
	}
	oi, err := d.CompleteMultipartUpload(ctx, "mpbkt", "obj", id, parts, driver.ObjectChecksum{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(oi.ETag, "-2") || oi.Size != int64(len(p1)+4) || oi.Meta.ContentType != "x/y" {
		t.Fatalf("completed %+v", oi)
	}
	if got := get(t, d, "mpbkt", "obj", nil); !bytes.Equal(got, append(append([]byte{}, p1...), "TAIL"...)) {
		t.Fatal("content differs")
	}
	ups, _ = d.ListMultipartUploads(ctx, driver.ListUploadsInput{Bucket: "mpbkt"})
	if len(ups.Uploads) != 0 {
		t.Fatalf("upload still listed after complete")
	}
	// Only the object's two runs remain: p1 (2 stripes) and TAIL.
	if n := dataObjects(t, d); n != 3 {
		t.Fatalf("%d data objects after complete, want 3", n)
	}
	// Abort removes parts.
	id2, _ := d.CreateMultipartUpload(ctx, "mpbkt", "other", driver.ObjectMeta{})
	d.UploadPart(ctx, "mpbkt", "other", id2, 1, strings.NewReader("zz"), 2, nil)
	if err := d.AbortMultipartUpload(ctx, "mpbkt", "other", id2); err != nil {
		t.Fatal(err)
	}
	if n := dataObjects(t, d); n != 3 {
		t.Fatalf("%d data objects after abort", n)
	}
	if _, err := d.ListParts(ctx, "mpbkt", "other", id2, 0, 0); !errors.Is(err, driver.ErrNoSuchUpload) {
		t.Fatalf("aborted: %v", err)
	}
}
