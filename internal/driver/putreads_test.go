package driver_test

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestPutPointReads: a plain PUT of a new key reads one key from the
// store, the index entry it may replace: the stripe is written fresh and
// the shard's meta, state and header come from the class cache
// (docs/bench/putcpu.md, "Store reads per PUT").
func TestPutPointReads(t *testing.T) {
	ctx := context.Background()
	d, st := readsDriver(t)
	body := make([]byte, 4096)
	putN := func(from, n int) {
		for i := from; i < from+n; i++ {
			if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "reads-b", Key: "k" + strconv.Itoa(i), Body: bytes.NewReader(body), Size: 4096}); err != nil {
				t.Fatal(err)
			}
		}
	}
	putN(0, 5) // warms the bucket and the shard's caches
	before := st.PointGets()
	putN(5, 20)
	if got := st.PointGets() - before; got != 20 {
		t.Fatalf("20 PUTs of new keys made %d point reads, want 20", got)
	}
}

// readsDriver is a driver on an in-memory store with one user and the
// one-shard bucket "reads-b", for the tests that count a request's store
// reads.
func readsDriver(t *testing.T) (*driver.Driver, *embedded.Store) {
	t.Helper()
	ctx := context.Background()
	st := openStore(t, embedded.Options{Dir: "/d", FS: vfs.NewMem()})
	// A stopped clock: the bucket's cached instance never expires mid-test.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 1, GCMinWait: -1, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); st.Close() })
	if _, err := d.CreateUser(ctx, driver.User{ID: "u"}); err != nil {
		t.Fatal(err)
	}
	if err := d.CreateBucket(ctx, "u", "reads-b", "", 0); err != nil {
		t.Fatal(err)
	}
	return d, st
}
