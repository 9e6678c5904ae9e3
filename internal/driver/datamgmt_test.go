package driver_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objectlock"
)

// recNotifier records committed events (a fake for unit tests; the real
// persistent path is exercised in tests/).
type recNotifier struct {
	mu     sync.Mutex
	events []string
}

type recRes struct {
	n    *recNotifier
	name string
}

func (n *recNotifier) Reserve(_ context.Context, ev driver.PendingEvent) (driver.Reservation, error) {
	return &recRes{n: n, name: ev.EventName}, nil
}

func (r *recRes) Commit(_ context.Context, oi driver.ObjectInfo) error {
	r.n.mu.Lock()
	r.n.events = append(r.n.events, r.name+" "+oi.Key+" "+oi.VersionID)
	r.n.mu.Unlock()
	return nil
}

func (r *recRes) Abort(context.Context) {}

func newNotifiedDriver(t *testing.T) (*driver.Driver, *recNotifier) {
	t.Helper()
	st := newMemStore(t)
	n := &recNotifier{}
	d, err := driver.New(context.Background(), driver.Options{Store: st, DefaultShards: 3, GCMinWait: -1, Notifier: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); st.Close() })
	return d, n
}

func TestTaggingPerVersionWithEvents(t *testing.T) {
	ctx := context.Background()
	d, n := newNotifiedDriver(t)
	if err := d.CreateBucket(ctx, "u", "tbk", "", 0); err != nil {
		t.Fatal(err)
	}
	if err := d.PutBucketVersioning(ctx, "tbk", driver.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	v1 := put(t, d, "tbk", "k", []byte("1"))
	v2 := put(t, d, "tbk", "k", []byte("2"))
	n.events = nil
	if _, err := d.PutObjectTagging(ctx, "tbk", "k", v1.VersionID, map[string]string{"a": "1"}); err != nil {
		t.Fatal(err)
	}
	if oi, _ := d.GetObjectTagging(ctx, "tbk", "k", ""); len(oi.Meta.Tags) != 0 || oi.VersionID != v2.VersionID {
		t.Fatalf("current version got tags: %+v", oi)
	}
	if oi, _ := d.GetObjectTagging(ctx, "tbk", "k", v1.VersionID); oi.Meta.Tags["a"] != "1" {
		t.Fatalf("v1 tags: %+v", oi.Meta.Tags)
	}
	if _, err := d.DeleteObjectTagging(ctx, "tbk", "k", v1.VersionID); err != nil {
		t.Fatal(err)
	}
	want := []string{"ObjectTagging:Put k " + v1.VersionID, "ObjectTagging:Delete k " + v1.VersionID}
	if len(n.events) != 2 || n.events[0] != want[0] || n.events[1] != want[1] {
		t.Fatalf("events %q, want %q", n.events, want)
	}
	// Copy: the source's tags unless REPLACE.
	if _, err := d.PutObjectTagging(ctx, "tbk", "k", "", map[string]string{"src": "y"}); err != nil {
		t.Fatal(err)
	}
	c1, err := d.CopyObject(ctx, driver.CopyObjectInput{SrcBucket: "tbk", SrcKey: "k", DstBucket: "tbk", DstKey: "c1"})
	if err != nil || c1.Meta.Tags["src"] != "y" {
		t.Fatalf("copy kept %v (%v)", c1.Meta.Tags, err)
	}
	c2, err := d.CopyObject(ctx, driver.CopyObjectInput{SrcBucket: "tbk", SrcKey: "k", DstBucket: "tbk", DstKey: "c2",
		ReplaceTags: true, Meta: driver.ObjectMeta{Tags: map[string]string{"new": "z"}}})
	if err != nil || len(c2.Meta.Tags) != 1 || c2.Meta.Tags["new"] != "z" {
		t.Fatalf("copy replaced %v (%v)", c2.Meta.Tags, err)
	}
}

func TestObjectLockInTheDriver(t *testing.T) {
	ctx := context.Background()
	d, n := newNotifiedDriver(t)
	if err := d.CreateBucketWith(ctx, "u", "lbk", "", 0, true); err != nil {
		t.Fatal(err)
	}
	if err := d.PutBucketVersioning(ctx, "lbk", driver.VersioningSuspended); !errors.Is(err, driver.ErrInvalidBucketState) {
		t.Fatalf("suspend on a lock bucket: %v", err)
	}
	days := 1
	if err := d.PutObjectLockConfiguration(ctx, "lbk", &objectlock.DefaultRetention{Mode: objectlock.Governance, Days: &days}); err != nil {
		t.Fatal(err)
	}
	v := put(t, d, "lbk", "k", []byte("x"))
	if v.Meta.LockMode != objectlock.Governance || v.Meta.RetainUntil().Before(time.Now().Add(23*time.Hour)) {
		t.Fatalf("default retention not applied: %+v", v.Meta)
	}
	before := versions(t, d, "lbk")
	n.events = nil
	_, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "lbk", Key: "k", VersionID: v.VersionID})
	var le *objectlock.Error
	if !errors.As(err, &le) || le.Code != "AccessDenied" {
		t.Fatalf("delete of a retained version: %v", err)
	}
	if got := versions(t, d, "lbk"); got != before || len(n.events) != 0 {
		t.Fatalf("refusal changed something: %s -> %s, events %q", before, got, n.events)
	}
	// Legal hold beats bypass.
	if _, err := d.PutObjectLegalHold(ctx, "lbk", "k", v.VersionID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "lbk", Key: "k", VersionID: v.VersionID, BypassGovernance: true}); !errors.As(err, &le) {
		t.Fatalf("delete under legal hold with bypass: %v", err)
	}
	if _, err := d.PutObjectLegalHold(ctx, "lbk", "k", v.VersionID, false); err != nil {
		t.Fatal(err)
	}
	// No version id: a marker, allowed.
	if r, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "lbk", Key: "k"}); err != nil || !r.DeleteMarker {
		t.Fatalf("marker on a lock bucket: %+v %v", r, err)
	}
	// Governance with bypass: removed.
	if _, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "lbk", Key: "k", VersionID: v.VersionID, BypassGovernance: true}); err != nil {
		t.Fatal(err)
	}
	// Lock headers on a bucket without lock.
	if err := d.CreateBucket(ctx, "u", "plain", "", 0); err != nil {
		t.Fatal(err)
	}
	_, err = d.PutObject(ctx, driver.PutObjectInput{Bucket: "plain", Key: "k", Body: bytes.NewReader(nil), Size: 0,
		Meta: driver.ObjectMeta{LegalHold: "ON"}})
	if !errors.Is(err, driver.ErrNoLockConfig) {
		t.Fatalf("lock header on a plain bucket: %v", err)
	}
	if _, err := d.GetObjectLockConfiguration(ctx, "plain"); !errors.Is(err, driver.ErrNoSuchLockConfig) {
		t.Fatalf("lock config of a plain bucket: %v", err)
	}
}

func TestLifecycleEventFirst(t *testing.T) {
	ctx := context.Background()
	d, n := newNotifiedDriver(t)
	if err := d.CreateBucket(ctx, "u", "ebk", "", 0); err != nil {
		t.Fatal(err)
	}
	oi := put(t, d, "ebk", "k", []byte("x"))
	n.events = nil
	// A precondition that fails emits nothing, even with EventFirst.
	_, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "ebk", Key: "k", IfMatch: "nope",
		EventName: "ObjectLifecycle:Expiration:Current", EventFirst: true})
	if !errors.Is(err, driver.ErrPreconditionFailed) || len(n.events) != 0 {
		t.Fatalf("failed precondition: %v, events %q", err, n.events)
	}
	if _, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "ebk", Key: "k", IfMatch: oi.ETag,
		EventName: "ObjectLifecycle:Expiration:Current", EventFirst: true}); err != nil {
		t.Fatal(err)
	}
	if len(n.events) != 1 || n.events[0] != "ObjectLifecycle:Expiration:Current k " {
		t.Fatalf("events %q", n.events)
	}
	if _, err := d.HeadObject(ctx, "ebk", "k"); !errors.Is(err, driver.ErrNoSuchKey) {
		t.Fatalf("expired object still there: %v", err)
	}
}
