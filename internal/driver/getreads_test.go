package driver_test

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestGetPointReads: a GET of a small object reads two keys from the store,
// its index entry and its data's one chunk (not the data object's meta:
// the chunk shows it exists and holds the range), and a HEAD reads one,
// the index entry; an encrypted object's GET too. The shard's meta and
// state come from the class cache (docs/bench/scale.md, "Stop 37").
func TestGetPointReads(t *testing.T) {
	ctx := context.Background()
	body := []byte("sixty-four bytes of a small object, as the scale benchmark's are")
	check := func(t *testing.T, d *driver.Driver, st objstore.Store, bucket string, enc bool) {
		gets := func() uint64 { return st.(*embedded.Store).PointGets() }
		for i := range 30 {
			if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: bucket, Key: "k" + strconv.Itoa(i), Body: bytes.NewReader(body), Size: int64(len(body))}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 10 {
			key := "k" + strconv.Itoa(i)
			g0 := gets()
			if info, err := d.HeadObject(ctx, bucket, key); err != nil || info.Size != int64(len(body)) || (info.Meta.SSE != nil) != enc {
				t.Fatal(info.Size, info.Meta.SSE, err)
			}
			if got := gets() - g0; got != 1 {
				t.Errorf("HEAD %s: %d point reads, want 1", key, got)
			}
			g0 = gets()
			_, rc, err := d.GetObject(ctx, bucket, key, nil)
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(data, body) {
				t.Fatalf("GET %s: %q, %v", key, data, err)
			}
			if got := gets() - g0; got != 2 {
				t.Errorf("GET %s: %d point reads, want 2", key, got)
			}
			g0 = gets()
			_, rc, err = d.GetObject(ctx, bucket, key, &driver.Range{Start: 10, Length: 20})
			if err != nil {
				t.Fatal(err)
			}
			data, err = io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(data, body[10:30]) {
				t.Fatalf("ranged GET %s: %q, %v", key, data, err)
			}
			if got := gets() - g0; got != 2 {
				t.Errorf("ranged GET %s: %d point reads, want 2", key, got)
			}
		}
	}
	t.Run("plain", func(t *testing.T) {
		d, st := readsDriver(t)
		check(t, d, st, "reads-b", false)
	})
	t.Run("sse", func(t *testing.T) {
		d, st, _ := newSSEDriver(t, true)
		check(t, d, st, "bkt", true)
	})
}

// TestHeadPointReadsReopened: on a store just opened, where no write has
// cached an index shard's meta yet, the first read of the shard caches it,
// and every later HEAD reads one key.
func TestHeadPointReadsReopened(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	open := func() (*embedded.Store, *driver.Driver) {
		st := openStore(t, embedded.Options{Dir: "/d", FS: fs})
		d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 1, GCMinWait: -1, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		return st, d
	}
	st, d := open()
	if _, err := d.CreateUser(ctx, driver.User{ID: "u"}); err != nil {
		t.Fatal(err)
	}
	if err := d.CreateBucket(ctx, "u", "reads-b", "", 0); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "reads-b", Key: "k" + strconv.Itoa(i), Body: bytes.NewReader([]byte("small")), Size: 5}); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	st.Close()
	st, d = open()
	t.Cleanup(func() { d.Close(); st.Close() })
	if _, err := d.HeadObject(ctx, "reads-b", "k0"); err != nil { // the bucket, the shard
		t.Fatal(err)
	}
	for i := 1; i < 10; i++ {
		g0 := st.PointGets()
		if _, err := d.HeadObject(ctx, "reads-b", "k"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		if got := st.PointGets() - g0; got != 1 {
			t.Errorf("HEAD k%d: %d point reads, want 1", i, got)
		}
	}
}
