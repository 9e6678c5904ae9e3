package driver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// rtStore counts the object-layer round trips the driver makes, per pool,
// namespace and kind, as the RADOS backend pays them: it hides the
// embedded store's extensions (atomic multi-object commits, ordered views,
// batches, syncs), so the driver takes the paths it takes on Ceph.
type rtStore struct {
	objstore.Store
	c *rtCounts
}

type rtCounts struct {
	mu sync.Mutex
	m  map[string]int // "pool/ns read|write"
}

func (c *rtCounts) add(pool, ns, kind string) {
	c.mu.Lock()
	c.m[pool+"/"+ns+" "+kind]++
	c.mu.Unlock()
}

func (c *rtCounts) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.m
	c.m = map[string]int{}
	return m
}

func (s rtStore) IOContext(ctx context.Context, pool string) (objstore.IOContext, error) {
	io, err := s.Store.IOContext(ctx, pool)
	if err != nil {
		return nil, err
	}
	return rtIO{io, s.c}, nil
}

type rtIO struct {
	io objstore.IOContext
	c  *rtCounts
}

func (r rtIO) Pool() string      { return r.io.Pool() }
func (r rtIO) Namespace() string { return r.io.Namespace() }
func (r rtIO) WithNamespace(ns string) objstore.IOContext {
	return rtIO{r.io.WithNamespace(ns), r.c}
}

func (r rtIO) Operate(ctx context.Context, oid string, op *objstore.WriteOp) error {
	r.c.add(r.io.Pool(), r.io.Namespace(), "write")
	return r.io.Operate(ctx, oid, op)
}

func (r rtIO) OperateRead(ctx context.Context, oid string, op *objstore.ReadOp) error {
	r.c.add(r.io.Pool(), r.io.Namespace(), "read")
	return r.io.OperateRead(ctx, oid, op)
}

func (r rtIO) ListObjects(ctx context.Context, marker string, max int) ([]string, bool, error) {
	r.c.add(r.io.Pool(), r.io.Namespace(), "list")
	return r.io.ListObjects(ctx, marker, max)
}

func fmtCounts(m map[string]int, n int) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, "  %-45s %6.2f\n", k, float64(m[k])/float64(n))
	}
	return b.String()
}

// TestRoundTripsPerRequest holds the object-layer round trips of the
// requests the Ceph benchmark runs (docs/design/rados-backend.md, "Round
// trips per S3 operation"): a PUT of a new key is one data write and one
// index write and reads nothing; a PUT over an existing key the same; a
// GET one index read and one data read; a HEAD one index read. Bucket
// instance, access and user state come from caches.
func TestRoundTripsPerRequest(t *testing.T) {
	ctx := context.Background()
	counts := &rtCounts{m: map[string]int{}}
	inner := newMemStore(t)
	st := rtStore{inner, counts}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// A stopped clock: cached state never expires mid-test, and replaced
	// data is never due for collection (no background round trips).
	d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 3, GCMinWait: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); inner.Close() })
	if _, err := d.CreateUser(ctx, driver.User{ID: "u"}); err != nil {
		t.Fatal(err)
	}
	if err := d.CreateBucket(ctx, "u", "rt-bucket", "", 0); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("x"), 4096)
	putN := func(from, n int) {
		for i := from; i < from+n; i++ {
			if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "rt-bucket", Key: "k" + strconv.Itoa(i), Body: bytes.NewReader(body), Size: int64(len(body))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	putN(0, 10) // warms the caches
	counts.take()
	const n = 20
	want := func(what string, got map[string]int, exp map[string]int) {
		t.Helper()
		ok := len(got) == len(exp)
		for k, v := range exp {
			ok = ok && got[k] == v*n
		}
		if !ok {
			t.Errorf("%s: round trips per request:\n%swant:\n%s", what, fmtCounts(got, n), fmtCounts(exp, 1))
		}
	}
	putN(10, n)
	want("PUT new key", counts.take(), map[string]int{
		"default.rgw.buckets.data/ write":  1, // the stripe
		"default.rgw.buckets.index/ write": 1, // the link
	})
	putN(10, n)
	want("PUT over a key", counts.take(), map[string]int{
		"default.rgw.buckets.data/ write":  1,
		"default.rgw.buckets.index/ write": 1,
	})
	for i := 10; i < 10+n; i++ {
		_, rd, err := d.GetObject(ctx, "rt-bucket", "k"+strconv.Itoa(i), nil)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(rd); err != nil || !bytes.Equal(b, body) {
			t.Fatalf("GET k%d: %d bytes, %v", i, len(b), err)
		}
		rd.Close()
	}
	want("GET", counts.take(), map[string]int{
		"default.rgw.buckets.index/ read": 1, // the entry (its manifest)
		"default.rgw.buckets.data/ read":  1, // the stripe
	})
	for i := 10; i < 10+n; i++ {
		if _, err := d.HeadObject(ctx, "rt-bucket", "k"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	want("HEAD", counts.take(), map[string]int{"default.rgw.buckets.index/ read": 1})
}
