package driver_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// inlineDriver is a driver keeping bodies of up to 1 KiB in their index
// entries (cairn serve's default), with a COLD class in the same store and
// an ARCHIVE class in a store of its own.
func inlineDriver(t *testing.T) (*driver.Driver, *embedded.Store, *embedded.Store) {
	t.Helper()
	d, st, arch, _ := newClassDriverWith(t, func(o *driver.Options) { o.InlineMax = driver.DefaultInline })
	if err := d.CreateBucket(context.Background(), "u", "bkt", "", 0); err != nil {
		t.Fatal(err)
	}
	return d, st, arch
}

func gcRecords(t *testing.T, d *driver.Driver) int {
	t.Helper()
	n, err := d.GCRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestInlineData: bodies up to InlineMax live in their index entry: no
// data object, one point read per GET, nothing for the collector when
// they are replaced or deleted; larger bodies, other classes and
// encrypted bodies keep their data objects; copies, ranges, versions and
// a transition out of the entry read the same bytes.
func TestInlineData(t *testing.T) {
	ctx := context.Background()
	d, st, arch := inlineDriver(t)
	body := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + n) // every byte value, NULs included
		}
		return b
	}
	sizes := map[string]int{"zero": 0, "small": 64, "edge": driver.DefaultInline, "over": driver.DefaultInline + 1}
	for k, n := range sizes {
		put(t, d, "bkt", k, body(n))
	}
	if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: "cold", Body: bytes.NewReader(body(64)), Size: 64,
		Meta: driver.ObjectMeta{StorageClass: "COLD"}}); err != nil {
		t.Fatal(err)
	}
	// One stored body in the default pool ("over"), one in COLD's.
	if got := poolObjects(t, st, driver.PoolData); got != 1 {
		t.Fatalf("default data pool holds %d objects, want 1 (the body over the limit)", got)
	}
	if got := poolObjects(t, st, driver.ClassPool("COLD")); got != 1 {
		t.Fatalf("COLD pool holds %d objects, want 1", got)
	}
	for k, n := range sizes {
		if got := get(t, d, "bkt", k, nil); !bytes.Equal(got, body(n)) {
			t.Fatalf("GET %s: %d bytes differ", k, len(got))
		}
	}
	if got, want := get(t, d, "bkt", "edge", &driver.Range{Start: 100, Length: 300}), body(driver.DefaultInline)[100:400]; !bytes.Equal(got, want) {
		t.Fatalf("ranged GET of an inline body: %d bytes differ", len(got))
	}
	// An inline GET reads one key: the entry.
	g0 := st.PointGets()
	get(t, d, "bkt", "small", nil)
	if got := st.PointGets() - g0; got != 1 {
		t.Errorf("GET of an inline body: %d point reads, want 1", got)
	}
	st0, err := d.BucketStats(ctx, "bkt")
	if err != nil || st0.NumObjects != 5 || st0.Size != uint64(64+driver.DefaultInline+driver.DefaultInline+1+64) {
		t.Fatalf("stats %+v %v", st0, err)
	}

	// Replacing or deleting an inline version leaves nothing to collect;
	// replacing a stored one does.
	put(t, d, "bkt", "small", body(65))
	if err := d.DeleteObject(ctx, "bkt", "zero"); err != nil {
		t.Fatal(err)
	}
	if n := gcRecords(t, d); n != 0 {
		t.Fatalf("%d GC records after replacing and deleting inline bodies, want 0", n)
	}
	if _, _, err := d.GetObject(ctx, "bkt", "zero", nil); !errors.Is(err, driver.ErrNoSuchKey) {
		t.Fatalf("GET of a deleted inline object: %v", err)
	}
	put(t, d, "bkt", "over", body(10))
	if n := gcRecords(t, d); n != 1 {
		t.Fatalf("%d GC records after replacing a stored body, want 1", n)
	}
	d.CollectNow(ctx)
	if got := poolObjects(t, st, driver.PoolData); got != 0 {
		t.Fatalf("default data pool holds %d objects after the collection, want 0", got)
	}
	if got := get(t, d, "bkt", "over", nil); !bytes.Equal(got, body(10)) {
		t.Fatalf("GET after a stored body became inline: %q", got)
	}

	// A copy of an inline source is inline too, with the same bytes.
	if _, err := d.CopyObject(ctx, driver.CopyObjectInput{SrcBucket: "bkt", SrcKey: "edge", DstBucket: "bkt", DstKey: "copy"}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, d, "bkt", "copy", nil); !bytes.Equal(got, body(driver.DefaultInline)) {
		t.Fatal("copy of an inline body differs")
	}
	if got := poolObjects(t, st, driver.PoolData); got != 0 {
		t.Fatalf("the copy wrote %d data objects, want 0", got)
	}

	// Versions: each keeps its own bytes; removing one collects nothing.
	if err := d.PutBucketVersioning(ctx, "bkt", driver.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	v1 := put(t, d, "bkt", "v", []byte("one"))
	v2 := put(t, d, "bkt", "v", []byte("two"))
	v3 := put(t, d, "bkt", "v", []byte("three"))
	if _, b, err := getVersion(t, d, "bkt", "v", v1.VersionID); err != nil || b != "one" {
		t.Fatalf("v1: %q %v", b, err)
	}
	if _, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "bkt", Key: "v", VersionID: v3.VersionID}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, d, "bkt", "v", nil); string(got) != "two" {
		t.Fatalf("current after removing v3: %q", got)
	}
	if n := gcRecords(t, d); n != 0 {
		t.Fatalf("%d GC records after removing an inline version, want 0", n)
	}

	// A transition moves the bytes out of the entry into the class's pool.
	res, err := d.TransitionObject(ctx, driver.TransitionInput{Bucket: "bkt", Key: "v", VersionID: v1.VersionID, StorageClass: "ARCHIVE"})
	if err != nil || !res.Moved || res.Bytes != 3 {
		t.Fatalf("transition: %+v %v", res, err)
	}
	if got := poolObjects(t, arch, driver.ClassPool("ARCHIVE")); got != 1 {
		t.Fatalf("ARCHIVE holds %d objects, want 1", got)
	}
	if oi, b, err := getVersion(t, d, "bkt", "v", v1.VersionID); err != nil || b != "one" || oi.StorageClass != "ARCHIVE" {
		t.Fatalf("v1 after the transition: %+v %q %v", oi, b, err)
	}
	if n := gcRecords(t, d); n != 0 {
		t.Fatalf("%d GC records after moving an inline version, want 0", n)
	}
	if _, b, err := getVersion(t, d, "bkt", "v", v2.VersionID); err != nil || b != "two" {
		t.Fatalf("v2: %q %v", b, err)
	}
}

// TestInlineNotEncrypted: an encrypted small body keeps a data object (its
// reads open packages from stripes), and reads back.
func TestInlineNotEncrypted(t *testing.T) {
	d, _, _ := inlineDriver(t)
	ckey := bytes.Repeat([]byte{7}, 32)
	ctx := sseCtx(&driver.SSESpec{Mode: driver.SSEModeC, CustomerKey: ckey}, ckey, nil)
	if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: "enc", Body: bytes.NewReader([]byte("secret")), Size: 6}); err != nil {
		t.Fatal(err)
	}
	if got := dataObjects(t, d); got != 1 {
		t.Fatalf("an encrypted small body left %d data objects, want 1", got)
	}
	_, rd, err := d.GetObject(ctx, "bkt", "enc", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if b, err := io.ReadAll(rd); err != nil || string(b) != "secret" {
		t.Fatalf("%q %v", b, err)
	}
}
