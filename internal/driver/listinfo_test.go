package driver_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
)

// A listing shows an object's ACL owner (not the bucket's) without
// decoding the rest of its metadata, also when "acl" only appears in a
// value.
func TestListObjectsOwnerFromACL(t *testing.T) {
	d, _ := newDriver(t)
	ctx := context.Background()
	if err := d.CreateBucket(ctx, "alice", "lbkt", "", 3); err != nil {
		t.Fatal(err)
	}
	for _, in := range []driver.PutObjectInput{
		{Key: "a", Meta: driver.ObjectMeta{ACL: &authz.ACL{Owner: authz.Owner{ID: "bob"}}}},
		{Key: "b", Meta: driver.ObjectMeta{ContentType: `"acl"`, UserMeta: map[string]string{"acl": "x"}}},
		{Key: "c"},
	} {
		in.Bucket, in.Body = "lbkt", bytes.NewReader(nil)
		if _, err := d.PutObject(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	res, err := d.ListObjects(ctx, driver.ListObjectsInput{Bucket: "lbkt", MaxKeys: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "bob", "b": "alice", "c": "alice"}
	if len(res.Objects) != 3 {
		t.Fatalf("%d objects", len(res.Objects))
	}
	for _, o := range res.Objects {
		if o.Owner != want[o.Key] || o.Size != 0 || o.ETag == "" || o.ModTime.IsZero() {
			t.Errorf("%s: owner %q (want %q), %+v", o.Key, o.Owner, want[o.Key], o)
		}
	}
}
