package driver_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
)

// Two drivers on one store stand for two gateways: a key removed through
// one stops working at once there and within the cache TTL on the other.
func TestAccessKeyCache(t *testing.T) {
	ctx := context.Background()
	st := newMemStore(t)
	defer st.Close()
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	open := func() *driver.Driver {
		d, err := driver.New(ctx, driver.Options{Store: st, GCMinWait: -1, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	a, b := open(), open()
	u, err := a.CreateUser(ctx, driver.User{ID: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	ak, sk := u.Keys[0].AccessKey, u.Keys[0].SecretKey
	for _, d := range []*driver.Driver{a, b, a, b} { // second round from the cache
		got, secret, err := d.LookupAccessKey(ctx, ak)
		if err != nil || got.ID != "carol" || secret != sk {
			t.Fatalf("lookup: %+v %q %v", got, secret, err)
		}
	}
	if _, _, err := a.LookupAccessKey(ctx, "NOSUCHKEY"); !errors.Is(err, driver.ErrInvalidAccessKey) {
		t.Fatalf("unknown key: %v", err)
	}
	if err := a.RemoveUser(ctx, "carol"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.LookupAccessKey(ctx, ak); !errors.Is(err, driver.ErrInvalidAccessKey) {
		t.Fatalf("removed key on the removing driver: %v", err)
	}
	// b still trusts its cached entry until the TTL passes.
	if _, _, err := b.LookupAccessKey(ctx, ak); err != nil {
		t.Fatalf("cached key on the other driver: %v", err)
	}
	now.Add(int64(6 * time.Second))
	if _, _, err := b.LookupAccessKey(ctx, ak); !errors.Is(err, driver.ErrInvalidAccessKey) {
		t.Fatalf("removed key after the TTL: %v", err)
	}
	// Re-created with the same key: works at once (misses are not cached).
	if _, err := a.CreateUser(ctx, driver.User{ID: "carol2", Keys: []driver.Key{{AccessKey: ak, SecretKey: "another-secret"}}}); err != nil {
		t.Fatal(err)
	}
	if got, secret, err := b.LookupAccessKey(ctx, ak); err != nil || got.ID != "carol2" || secret != "another-secret" {
		t.Fatalf("re-created key: %+v %q %v", got, secret, err)
	}
}
