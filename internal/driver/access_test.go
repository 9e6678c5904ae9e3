package driver_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
)

func TestBucketAccessStoredAndCached(t *testing.T) {
	d, _ := newDriver(t)
	ctx := context.Background()
	if err := d.CreateBucket(ctx, "alice", "bkt", "", 0); err != nil {
		t.Fatal(err)
	}
	a1, err := d.BucketAuth(ctx, "bkt")
	if err != nil || a1.Policy != nil || a1.HasPAB || a1.HasOwnership || a1.ACL.Owner.ID != "alice" {
		t.Fatalf("defaults: %+v %v", a1, err)
	}
	if a2, _ := d.BucketAuth(ctx, "bkt"); a2 != a1 {
		t.Fatal("parsed state not cached with the instance")
	}
	doc := `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]}`
	err = d.UpdateBucketAccess(ctx, "bkt", func(_ driver.Instance, a *driver.BucketAccess) error {
		a.Policy = doc
		a.PublicAccessBlock = &authz.PublicAccessBlock{IgnorePublicAcls: true}
		a.Ownership = authz.OwnershipBucketOwnerPreferred
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a3, _ := d.BucketAuth(ctx, "bkt")
	if a3 == a1 || a3.Policy == nil || a3.PolicyText != doc || !a3.PublicAccessBlock.IgnorePublicAcls || a3.Ownership != authz.OwnershipBucketOwnerPreferred {
		t.Fatalf("update not visible: %+v", a3)
	}
	// A failing update changes nothing.
	boom := errors.New("boom")
	if err := d.UpdateBucketAccess(ctx, "bkt", func(_ driver.Instance, a *driver.BucketAccess) error { a.Policy = ""; return boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	d.Invalidate("bkt")
	if a4, _ := d.BucketAuth(ctx, "bkt"); a4.PolicyText != doc {
		t.Fatal("failed update was written")
	}
	// The access state survives the instance being rewritten by others
	// (a reshard's read-modify-write of the layout).
	bi, _ := d.GetBucket(ctx, "bkt")
	inst, ver, err := d.ReadInstance(ctx, bi.ID)
	if err != nil {
		t.Fatal(err)
	}
	inst.Location = "moved"
	if err := d.WriteInstance(ctx, inst, ver); err != nil {
		t.Fatal(err)
	}
	if a5, _ := d.BucketAuth(ctx, "bkt"); a5.PolicyText != doc || a5.Info.Location != "moved" {
		t.Fatalf("after another writer: %+v", a5)
	}
	if err := d.UpdateBucketAccess(ctx, "nope", func(driver.Instance, *driver.BucketAccess) error { return nil }); !errors.Is(err, driver.ErrNoSuchBucket) {
		t.Fatal(err)
	}
}

func TestObjectACLAndOwner(t *testing.T) {
	d, _ := newDriver(t)
	ctx := context.Background()
	d.CreateBucket(ctx, "alice", "bkt", "", 0)
	acl, _ := authz.CannedACL("public-read", authz.Owner{ID: "bob"}, authz.Owner{ID: "alice"})
	oi, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: "k", Body: bytes.NewReader([]byte("v1")), Size: 2,
		Meta: driver.ObjectMeta{ACL: &acl}})
	if err != nil || oi.Owner != "bob" {
		t.Fatalf("put: %+v %v", oi, err)
	}
	h, _ := d.HeadObject(ctx, "bkt", "k")
	if h.Owner != "bob" || h.Meta.ACL == nil || !h.Meta.ACL.IsPublic() {
		t.Fatalf("head: %+v", h)
	}
	l, _ := d.ListObjects(ctx, driver.ListObjectsInput{Bucket: "bkt", MaxKeys: 10})
	if len(l.Objects) != 1 || l.Objects[0].Owner != "bob" {
		t.Fatalf("list owner: %+v", l.Objects)
	}
	// SetObjectACL keeps the owner and the data.
	priv, _ := authz.CannedACL("private", authz.Owner{ID: "mallory"}, authz.Owner{ID: "alice"})
	if err := d.SetObjectACL(ctx, "bkt", "k", "", priv); err != nil {
		t.Fatal(err)
	}
	h, _ = d.HeadObject(ctx, "bkt", "k")
	if h.Owner != "bob" || h.Meta.ACL.IsPublic() || h.ETag != oi.ETag {
		t.Fatalf("after SetObjectACL: %+v", h)
	}
	if string(get(t, d, "bkt", "k", nil)) != "v1" {
		t.Fatal("data changed")
	}
	if err := d.SetObjectACL(ctx, "bkt", "missing", "", priv); !errors.Is(err, driver.ErrNoSuchKey) {
		t.Fatal(err)
	}
	// A copy gets the request's ACL (here none: the bucket owner's).
	c, err := d.CopyObject(ctx, driver.CopyObjectInput{SrcBucket: "bkt", SrcKey: "k", DstBucket: "bkt", DstKey: "c"})
	if err != nil || c.Owner != "alice" || c.Meta.ACL != nil {
		t.Fatalf("copy: %+v %v", c, err)
	}
}

func TestUserEmail(t *testing.T) {
	d, _ := newDriver(t)
	ctx := context.Background()
	if _, err := d.CreateUser(ctx, driver.User{ID: "bob", Email: "Bob@Example.com"}); err != nil {
		t.Fatal(err)
	}
	u, err := d.UserByEmail(ctx, "bob@example.com")
	if err != nil || u.ID != "bob" {
		t.Fatalf("%+v %v", u, err)
	}
	if _, err := d.CreateUser(ctx, driver.User{ID: "bob2", Email: "BOB@example.com"}); !errors.Is(err, driver.ErrUserExists) {
		t.Fatalf("duplicate email: %v", err)
	}
	if _, err := d.GetUser(ctx, "bob2"); !errors.Is(err, driver.ErrNoSuchUser) {
		t.Fatal("refused user left behind")
	}
	if _, err := d.CreateUser(ctx, driver.User{ID: "x", Email: "not-an-email"}); !errors.Is(err, driver.ErrInvalidArgument) {
		t.Fatal(err)
	}
	if err := d.RemoveUser(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.UserByEmail(ctx, "bob@example.com"); !errors.Is(err, driver.ErrNoSuchUser) {
		t.Fatal("email outlived its user")
	}
	if _, err := d.CreateUser(ctx, driver.User{ID: "bob3", Email: "bob@example.com"}); err != nil {
		t.Fatalf("email reusable after removal: %v", err)
	}
}

// The parsed access state is kept across cache reloads of the same
// instance version (refreshed only when the instance changed).
func TestBucketAuthParsedOncePerVersion(t *testing.T) {
	now := time.Now()
	d, _ := newDriverClock(t, func() time.Time { return now })
	ctx := context.Background()
	d.CreateBucket(ctx, "alice", "bkt", "", 0)
	a1, _ := d.BucketAuth(ctx, "bkt")
	now = now.Add(time.Minute) // past the cache TTL: the instance is re-read
	if a2, _ := d.BucketAuth(ctx, "bkt"); a2 != a1 {
		t.Fatal("re-parsed an unchanged instance")
	}
	d.UpdateBucketAccess(ctx, "bkt", func(_ driver.Instance, a *driver.BucketAccess) error {
		a.Ownership = authz.OwnershipBucketOwnerEnforced
		return nil
	})
	if a3, _ := d.BucketAuth(ctx, "bkt"); a3 == a1 || a3.Ownership != authz.OwnershipBucketOwnerEnforced {
		t.Fatal("a changed instance kept the old state")
	}
}

func newDriverClock(t *testing.T, now func() time.Time) (*driver.Driver, objstore.Store) {
	t.Helper()
	st := newMemStore(t)
	d, err := driver.New(context.Background(), driver.Options{Store: st, DefaultShards: 3, GCMinWait: -1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); st.Close() })
	return d, st
}

// Two gateways over one store: an access change made through one applies
// on the other within the instance cache TTL (the documented bound), and
// at once on the first.
func TestBucketAccessAcrossGateways(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	d1, st := newDriverClock(t, clock)
	d2, err := driver.New(context.Background(), driver.Options{Store: st, DefaultShards: 3, GCMinWait: -1, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d2.Close() })
	ctx := context.Background()
	d1.CreateBucket(ctx, "alice", "bkt", "", 0)
	if a, _ := d2.BucketAuth(ctx, "bkt"); a.HasPAB {
		t.Fatal("fresh bucket has a public access block")
	}
	d1.UpdateBucketAccess(ctx, "bkt", func(_ driver.Instance, a *driver.BucketAccess) error {
		a.PublicAccessBlock = &authz.PublicAccessBlock{RestrictPublicBuckets: true}
		return nil
	})
	if a, _ := d1.BucketAuth(ctx, "bkt"); !a.HasPAB {
		t.Fatal("the writing gateway does not see its change")
	}
	now = now.Add(5 * time.Second)
	if a, _ := d2.BucketAuth(ctx, "bkt"); !a.HasPAB {
		t.Fatal("the other gateway still serves the old state after the TTL")
	}
}

// TestVersionACLs: each version has its own ACL; changing the current
// version's ACL leaves older versions alone, and a noncurrent version's
// ACL can be set by id.
func TestVersionACLs(t *testing.T) {
	d, _ := newDriver(t)
	ctx := context.Background()
	if err := d.CreateBucket(ctx, "alice", "vbk", "", 0); err != nil {
		t.Fatal(err)
	}
	if err := d.PutBucketVersioning(ctx, "vbk", driver.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	v1 := put(t, d, "vbk", "k", []byte("old"))
	v2 := put(t, d, "vbk", "k", []byte("new"))
	pub, _ := authz.CannedACL("public-read", authz.Owner{ID: "mallory"}, authz.Owner{ID: "alice"})
	aclOf := func(vid string) *authz.ACL {
		t.Helper()
		oi, err := d.HeadObjectVersion(ctx, "vbk", "k", vid)
		if err != nil {
			t.Fatal(err)
		}
		return oi.Meta.ACL
	}
	// Current ("" and by id) becomes public; v1 stays private.
	if err := d.SetObjectACL(ctx, "vbk", "k", "", pub); err != nil {
		t.Fatal(err)
	}
	if a := aclOf(""); a == nil || !a.IsPublic() || a.Owner.ID != "alice" {
		t.Fatalf("current after SetObjectACL: %+v", a)
	}
	if a := aclOf(v2.VersionID); a == nil || !a.IsPublic() {
		t.Fatalf("current by id: %+v", a)
	}
	if a := aclOf(v1.VersionID); a != nil {
		t.Fatalf("old version's ACL changed: %+v", a)
	}
	// The old version by id; the current stays as it was.
	if err := d.SetObjectACL(ctx, "vbk", "k", v1.VersionID, pub); err != nil {
		t.Fatal(err)
	}
	priv, _ := authz.CannedACL("private", authz.Owner{}, authz.Owner{ID: "alice"})
	if err := d.SetObjectACL(ctx, "vbk", "k", v2.VersionID, priv); err != nil {
		t.Fatal(err)
	}
	if a := aclOf(v1.VersionID); a == nil || !a.IsPublic() {
		t.Fatalf("v1 by id: %+v", a)
	}
	if a := aclOf(""); a == nil || a.IsPublic() {
		t.Fatalf("current after v2 private: %+v", a)
	}
	if oi, rd, err := d.GetObjectVersion(ctx, "vbk", "k", v1.VersionID, nil); err != nil || oi.ETag != v1.ETag {
		t.Fatalf("v1 data: %+v %v", oi, err)
	} else {
		rd.Close()
	}
	if err := d.SetObjectACL(ctx, "vbk", "k", "3", pub); !errors.Is(err, driver.ErrNoSuchVersion) && !errors.Is(err, driver.ErrInvalidVersionID) {
		t.Fatalf("missing version: %v", err)
	}
	dm, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "vbk", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SetObjectACL(ctx, "vbk", "k", dm.VersionID, pub); !errors.Is(err, driver.ErrMethodNotAllowed) {
		t.Fatalf("delete marker: %v", err)
	}
}
