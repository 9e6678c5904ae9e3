package lcproc_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/lcproc"
	"github.com/cairn-s3/cairn/internal/lifecycle"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// TestKeysSplitAcrossPages: with listing pages of 2 versions, a key's
// versions arrive over several pages; the processor must still decide
// them together (NewerNoncurrentVersions counts across pages) and apply
// the current-version rule only to the newest.
func TestKeysSplitAcrossPages(t *testing.T) {
	ctx := context.Background()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: "/d", FS: vfs.NewMem(), Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 3, GCMinWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.CreateBucket(ctx, "u", "pages", "", 0); err != nil {
		t.Fatal(err)
	}
	if err := d.PutBucketVersioning(ctx, "pages", driver.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	put := func(key string, n int) {
		for i := 0; i < n; i++ {
			body := []byte(fmt.Sprint(key, i))
			if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "pages", Key: key, Body: bytes.NewReader(body), Size: int64(len(body))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	put("a", 5)
	put("b", 3)
	put("c/x", 1)
	doc := []byte(`<LifecycleConfiguration><Rule><ID>nc</ID><Status>Enabled</Status><Filter><Prefix></Prefix></Filter>` +
		`<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>2</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>` +
		`<Rule><ID>c</ID><Status>Enabled</Status><Filter><Prefix>c/</Prefix></Filter><Expiration><Days>1</Days></Expiration></Rule></LifecycleConfiguration>`)
	if _, err := lifecycle.Parse(doc); err != nil {
		t.Fatal(err)
	}
	if err := d.PutBucketLifecycle(ctx, "pages", doc); err != nil {
		t.Fatal(err)
	}
	later := func() time.Time { return time.Now().Add(10 * 24 * time.Hour) }
	logIO, err := st.IOContext(ctx, driver.PoolLog)
	if err != nil {
		t.Fatal(err)
	}
	w, err := lifecycle.NewWorker(lifecycle.Config{
		IO:        logIO.WithNamespace(lifecycle.Namespace),
		Processor: &lcproc.Processor{Driver: d, Day: lifecycle.Day, Page: 2, Now: later},
		Owner:     "gw", Shards: 2, Now: later,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Register(ctx, "pages"); err != nil {
		t.Fatal(err)
	}
	if n := w.RunOnce(ctx); n != 1 {
		t.Fatalf("passes completed: %d", n)
	}
	res, err := d.ListObjectVersions(ctx, driver.ListVersionsInput{Bucket: "pages", MaxKeys: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range res.Versions {
		s := v.Key
		if v.DeleteMarker {
			s += "[dm]"
		}
		got = append(got, s)
	}
	// a: latest + 2 newest noncurrent; b: all 3; c/x: a marker over its
	// only version (now noncurrent since the marker: not due yet).
	want := "a a a b b b c/x[dm] c/x"
	if strings.Join(got, " ") != want {
		t.Fatalf("versions %q, want %q", strings.Join(got, " "), want)
	}
	stt, err := w.Get(ctx, "pages")
	if err != nil {
		t.Fatal(err)
	}
	if stt.State != "COMPLETE" || stt.Examined != 9 || stt.Expired != 3 {
		t.Fatalf("status %+v", stt)
	}
}
