package driver_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/cairn-s3/cairn/internal/driver"
)

func TestTenantNames(t *testing.T) {
	for id, ok := range map[string]bool{
		"alice": true, "t1$alice": true, "t-1_x$a.b@c": true,
		"$alice": false, "t1$": false, "t/1$alice": false, "t1$a$b": false, "t:1$a": false,
		"t1$RGW00000000000000001": false,
		// An account id names an account's topic namespace, never a tenant.
		"RGW00000000000000001$alice": false,
	} {
		if got := driver.ValidUserID(id); got != ok {
			t.Errorf("ValidUserID(%q) = %v", id, got)
		}
	}
	for ref, want := range map[string]string{
		"bkt": "t0/bkt", "t1:bkt": "t1/bkt", "t1/bkt": "t1/bkt", ":bkt": "bkt",
		"bad.t:bkt": "", "t1:b:k": "", "RGW00000000000000001:bkt": "",
	} {
		got, ok := driver.ParseBucketRef(ref, "t0")
		if (want == "") == ok || (ok && got != want) {
			t.Errorf("ParseBucketRef(%q) = %q, %v; want %q", ref, got, ok, want)
		}
	}
	for name, ok := range map[string]bool{"bkt": true, "t1/bkt": true, "t1/": false, "/bkt": false, "t.1/bkt": false, "t1/b/k": false} {
		if got := driver.ValidBucketName(name); got != ok {
			t.Errorf("ValidBucketName(%q) = %v", name, got)
		}
	}
}

// TestTenantBuckets: the same bucket name is free in every tenant, each
// bucket with its own objects, listed under its owner only.
func TestTenantBuckets(t *testing.T) {
	d, _ := newDriver(t)
	ctx := context.Background()
	for _, id := range []string{"alice", "t1$alice", "t2$alice"} {
		if _, err := d.CreateUser(ctx, driver.User{ID: id}); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
	for _, b := range []struct{ owner, name string }{{"alice", "bkt"}, {"t1$alice", "t1/bkt"}, {"t2$alice", "t2/bkt"}} {
		if err := d.CreateBucket(ctx, b.owner, b.name, "", 0); err != nil {
			t.Fatalf("create %s: %v", b.name, err)
		}
		if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: b.name, Key: "k", Body: bytes.NewReader([]byte(b.name)), Size: int64(len(b.name))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.CreateBucket(ctx, "t2$alice", "t1/bkt", "", 0); !errors.Is(err, driver.ErrBucketExists) {
		t.Errorf("t1/bkt again: %v", err)
	}
	for _, name := range []string{"bkt", "t1/bkt", "t2/bkt"} {
		_, rc, err := d.GetObject(ctx, name, "k", nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if string(got) != name {
			t.Errorf("%s/k = %q", name, got)
		}
	}
	bs, err := d.ListBuckets(ctx, "t1$alice")
	if err != nil || len(bs) != 1 || bs[0].Name != "t1/bkt" || bs[0].Owner != "t1$alice" {
		t.Errorf("t1$alice's buckets: %+v, %v", bs, err)
	}
}
