package driver_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// fanoutStore watches the data pool's OperateMany calls: the first one
// waits (up to a bound) for a second to begin, and the most in flight at
// once is recorded.
type fanoutStore struct {
	objstore.Store
	w *fanoutWatch
}

type fanoutWatch struct {
	mu       sync.Mutex
	inflight int
	max      int
	second   chan struct{} // closed when two calls are first in flight
	once     sync.Once
}

func (s fanoutStore) IOContext(ctx context.Context, pool string) (objstore.IOContext, error) {
	io, err := s.Store.IOContext(ctx, pool)
	if err != nil || pool != driver.PoolData {
		return io, err
	}
	return fanoutIO{io, s.w}, nil
}

type fanoutIO struct {
	objstore.IOContext
	w *fanoutWatch
}

func (f fanoutIO) WithNamespace(ns string) objstore.IOContext {
	return fanoutIO{f.IOContext.WithNamespace(ns), f.w}
}

func (f fanoutIO) OperateMany(ctx context.Context, reqs []objstore.WriteReq) {
	w := f.w
	w.mu.Lock()
	w.inflight++
	w.max = max(w.max, w.inflight)
	if w.inflight == 2 {
		w.once.Do(func() { close(w.second) })
	}
	w.mu.Unlock()
	select { // a lone call goes on after the bound; the test then fails
	case <-w.second:
	case <-time.After(10 * time.Second):
	}
	objstore.OperateMany(ctx, f.IOContext, reqs)
	w.mu.Lock()
	w.inflight--
	w.mu.Unlock()
}

// TestGCRemovalsSideBySide: a collection round sends its data removals
// in several store calls at once. Replaced data is cold at scale, and one
// call reading each removal's keys one after another held the 30M aging's
// collection below the rate the mix replaced data (docs/design/gc.md).
func TestGCRemovalsSideBySide(t *testing.T) {
	ctx := context.Background()
	w := &fanoutWatch{second: make(chan struct{})}
	st := fanoutStore{newMemStore(t), w}
	d, err := driver.New(ctx, driver.Options{Store: st, GCMinWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.CreateBucket(ctx, "o", "fan", "", 3); err != nil {
		t.Fatal(err)
	}
	const n = 128
	for range 2 { // the second round replaces the first: n records
		for i := range n {
			if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "fan", Key: fmt.Sprintf("k%04d", i), Body: bytes.NewReader([]byte("x")), Size: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := d.GCProcess(ctx, true)
	if err != nil || got != n {
		t.Fatalf("collected %d of %d: %v", got, n, err)
	}
	if left, err := d.GCRecords(ctx); err != nil || left != 0 {
		t.Fatalf("%d GC records left: %v", left, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.max < 2 {
		t.Fatalf("at most %d removal call in flight; want them side by side", w.max)
	}
}
