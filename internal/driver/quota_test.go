package driver_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
)

func putErr(d *driver.Driver, bucket, key string, body []byte, size int64) error {
	_, err := d.PutObject(context.Background(), driver.PutObjectInput{Bucket: bucket, Key: key, Body: bytes.NewReader(body), Size: size})
	return err
}

// TestQuotaBucketAndUser drives both scopes through one driver with a
// long stats TTL: the local admission counters alone must keep the view
// exact, and a delete must be seen at the next check.
func TestQuotaBucketAndUser(t *testing.T) {
	ctx := context.Background()
	d := newDriverOpts(t, driver.Options{QuotaStatsTTL: time.Hour})
	if _, err := d.CreateUser(ctx, driver.User{ID: "alice"}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"q-a", "q-b"} {
		if err := d.CreateBucket(ctx, "alice", b, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	// Bucket qa: at most 2 objects.
	if _, err := d.SetQuota(ctx, driver.QuotaScopeBucket, "alice", "q-a", func(q *driver.Quota) { q.Enabled, q.MaxObjects = true, 2 }); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if err := putErr(d, "q-a", k, []byte("x"), 1); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	if err := putErr(d, "q-a", "c", []byte("x"), 1); !errors.Is(err, driver.ErrQuotaExceeded) {
		t.Fatalf("third object: %v, want ErrQuotaExceeded", err)
	}
	if _, err := d.HeadObject(ctx, "q-a", "c"); !errors.Is(err, driver.ErrNoSuchKey) {
		t.Fatalf("refused object exists: %v", err)
	}
	if err := d.DeleteObject(ctx, "q-a", "a"); err != nil {
		t.Fatal(err)
	}
	if err := putErr(d, "q-a", "c", []byte("x"), 1); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	// User alice: at most 10 bytes over both buckets; unknown sizes are
	// checked once the body is read.
	if _, err := d.SetQuota(ctx, driver.QuotaScopeUser, "alice", "", func(q *driver.Quota) { q.Enabled, q.MaxSize = true, 10 }); err != nil {
		t.Fatal(err)
	}
	if err := putErr(d, "q-b", "big", []byte("123456789"), -1); !errors.Is(err, driver.ErrQuotaExceeded) {
		t.Fatalf("9 bytes on top of 2: %v", err)
	}
	if _, err := d.HeadObject(ctx, "q-b", "big"); !errors.Is(err, driver.ErrNoSuchKey) {
		t.Fatalf("refused object exists: %v", err)
	}
	if err := putErr(d, "q-b", "ok", []byte("1234567"), 7); err != nil {
		t.Fatalf("7 bytes on top of 2: %v", err)
	}
	if err := putErr(d, "q-b", "one", []byte("12"), 2); !errors.Is(err, driver.ErrQuotaExceeded) {
		t.Fatalf("2 more bytes at 9: %v", err)
	}
	// Disabled: anything goes.
	if _, err := d.SetQuota(ctx, driver.QuotaScopeUser, "alice", "", func(q *driver.Quota) { q.Enabled = false }); err != nil {
		t.Fatal(err)
	}
	if err := putErr(d, "q-b", "one", []byte("12"), 2); err != nil {
		t.Fatalf("quota disabled: %v", err)
	}
	q, err := d.GetQuota(ctx, driver.QuotaScopeUser, "alice", "")
	if err != nil || q.Enabled || q.MaxSize != 10 || q.MaxSizeKB != 1 || q.MaxObjects != -1 {
		t.Fatalf("get quota: %+v %v", q, err)
	}
}

// TestQuotaUserTemplateAndDefaults: a user's bucket-quota template covers
// buckets without their own; gateway defaults reach new users and buckets.
func TestQuotaUserTemplateAndDefaults(t *testing.T) {
	ctx := context.Background()
	d := newDriverOpts(t, driver.Options{
		DefaultUserQuota:   driver.Quota{Enabled: true, MaxSize: -1, MaxObjects: 3},
		DefaultBucketQuota: driver.Quota{Enabled: true, MaxSize: 100, MaxObjects: -1},
	})
	u, err := d.CreateUser(ctx, driver.User{ID: "bob"})
	if err != nil || u.UserQuota == nil || u.UserQuota.MaxObjects != 3 {
		t.Fatalf("default user quota: %+v %v", u.UserQuota, err)
	}
	if err := d.CreateBucket(ctx, "bob", "b-b", "", 0); err != nil {
		t.Fatal(err)
	}
	if err := putErr(d, "b-b", "k", make([]byte, 101), 101); !errors.Is(err, driver.ErrQuotaExceeded) {
		t.Fatalf("default bucket quota: %v", err)
	}
	for i := 0; i < 3; i++ {
		if err := putErr(d, "b-b", strings.Repeat("k", i+1), []byte("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := putErr(d, "b-b", "more", []byte("x"), 1); !errors.Is(err, driver.ErrQuotaExceeded) {
		t.Fatalf("default user quota (3 objects): %v", err)
	}
	// Template: a user without defaults gets a 1-object bucket quota.
	d2 := newDriverOpts(t, driver.Options{})
	if _, err := d2.CreateUser(ctx, driver.User{ID: "carol"}); err != nil {
		t.Fatal(err)
	}
	if err := d2.CreateBucket(ctx, "carol", "c-b", "", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := d2.SetQuota(ctx, driver.QuotaScopeBucket, "carol", "", func(q *driver.Quota) { q.Enabled, q.MaxObjects = true, 1 }); err != nil {
		t.Fatal(err)
	}
	if err := putErr(d2, "c-b", "1", nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := putErr(d2, "c-b", "2", nil, 0); !errors.Is(err, driver.ErrQuotaExceeded) {
		t.Fatalf("template quota: %v", err)
	}
}

// TestQuotaOverwriteCredit: an overwrite is admitted as a new object (as
// RGW checks it), and once linked the replaced version is credited, so
// the bytes it freed are usable at once.
func TestQuotaOverwriteCredit(t *testing.T) {
	ctx := context.Background()
	d := newDriverOpts(t, driver.Options{QuotaStatsTTL: time.Hour})
	if _, err := d.CreateUser(ctx, driver.User{ID: "dan"}); err != nil {
		t.Fatal(err)
	}
	if err := d.CreateBucket(ctx, "dan", "d-b", "", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SetQuota(ctx, driver.QuotaScopeBucket, "", "d-b", func(q *driver.Quota) { q.Enabled, q.MaxSize = true, 10 }); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		key  string
		size int
		ok   bool
	}{
		{"k", 6, true},
		{"k", 5, false}, // 6 + 5 admitted before the old 6 is credited
		{"k", 4, true},  // 6 + 4; then 4 stored
		{"j", 6, true},  // 10
		{"z", 1, false},
	}
	for i, s := range steps {
		err := putErr(d, "d-b", s.key, make([]byte, s.size), int64(s.size))
		if s.ok != (err == nil) || (err != nil && !errors.Is(err, driver.ErrQuotaExceeded)) {
			t.Fatalf("step %d (%s, %d bytes): %v, want ok=%v", i, s.key, s.size, err, s.ok)
		}
	}
	st, err := d.BucketStats(ctx, "d-b")
	if err != nil || st.VersionsSize != 10 {
		t.Fatalf("stats %+v %v: want 10 bytes stored", st, err)
	}
}

// TestQuotaConcurrentAdmission: concurrent writers through one driver
// never take a bucket past its quota, at any stats TTL (0 reads the stats
// at every check, shared among concurrent checks), and the quota can be
// filled exactly.
func TestQuotaConcurrentAdmission(t *testing.T) {
	for _, ttl := range []time.Duration{0, time.Hour} {
		ctx := context.Background()
		d := newDriverOpts(t, driver.Options{QuotaStatsTTL: ttl})
		if _, err := d.CreateUser(ctx, driver.User{ID: "eve"}); err != nil {
			t.Fatal(err)
		}
		if err := d.CreateBucket(ctx, "eve", "e-b", "", 0); err != nil {
			t.Fatal(err)
		}
		if _, err := d.SetQuota(ctx, driver.QuotaScopeBucket, "", "e-b", func(q *driver.Quota) { q.Enabled, q.MaxObjects = true, 10 }); err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 32)
		for i := 0; i < 32; i++ {
			go func() { errs <- putErr(d, "e-b", "k"+strconv.Itoa(i), []byte("x"), 1) }()
		}
		ok := 0
		for i := 0; i < 32; i++ {
			switch err := <-errs; {
			case err == nil:
				ok++
			case !errors.Is(err, driver.ErrQuotaExceeded):
				t.Fatal(err)
			}
		}
		if ok > 10 {
			t.Fatalf("ttl %v: %d concurrent writes admitted past a quota of 10", ttl, ok)
		}
		// Near the limit a concurrent check may refuse conservatively (a
		// write counted twice while the stats were read); once settled,
		// the quota fills exactly.
		for i := 0; ; i++ {
			err := putErr(d, "e-b", "s"+strconv.Itoa(i), []byte("x"), 1)
			if errors.Is(err, driver.ErrQuotaExceeded) {
				break
			}
			if err != nil || i > 10 {
				t.Fatalf("sequential fill: %v after %d", err, i)
			}
		}
		st, err := d.BucketStats(ctx, "e-b")
		if err != nil || st.NumVersions != 10 {
			t.Fatalf("ttl %v: %d stored (%v); want exactly 10", ttl, st.NumVersions, err)
		}
	}
}
