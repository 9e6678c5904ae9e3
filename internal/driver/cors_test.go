package driver_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cairn-s3/cairn/internal/driver"
)

func TestBucketCORSStoredInInstance(t *testing.T) {
	d, st := newDriver(t)
	ctx := context.Background()
	if err := d.CreateBucket(ctx, "u1", "web", "", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.GetBucketCORS(ctx, "web"); !errors.Is(err, driver.ErrNoSuchCORSConfiguration) {
		t.Fatalf("fresh bucket: %v", err)
	}
	age := 30
	rules := []driver.CORSRule{{ID: "r", AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET"}, ExposeHeaders: []string{"ETag"}, MaxAgeSeconds: &age}}
	if err := d.PutBucketCORS(ctx, "web", rules); err != nil {
		t.Fatal(err)
	}
	got, err := d.GetBucketCORS(ctx, "web")
	if err != nil || len(got) != 1 || got[0].ID != "r" || *got[0].MaxAgeSeconds != 30 || got[0].ExposeHeaders[0] != "ETag" {
		t.Fatalf("%+v %v", got, err)
	}
	// Another gateway on the same store reads it from the instance.
	d2, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 7, GCMinWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if got, err := d2.GetBucketCORS(ctx, "web"); err != nil || got[0].AllowedOrigins[0] != "*" {
		t.Fatalf("second driver: %+v %v", got, err)
	}
	// The rest of the instance is untouched: objects still land.
	put(t, d, "web", "k", []byte("v"))
	if err := d.PutBucketCORS(ctx, "web", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.GetBucketCORS(ctx, "web"); !errors.Is(err, driver.ErrNoSuchCORSConfiguration) {
		t.Fatalf("after delete: %v", err)
	}
	if err := d.PutBucketCORS(ctx, "nope", rules); !errors.Is(err, driver.ErrNoSuchBucket) {
		t.Fatalf("missing bucket: %v", err)
	}
}
