package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openIO(t *testing.T, clock *testClock) objstore.IOContext {
	t.Helper()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	st, err := embedded.Open(embedded.Options{Dir: "/db", FS: vfs.NewMem(), Classes: reg, Now: clock.Now,
		MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.CreatePool(context.Background(), "default.rgw.log"); err != nil {
		t.Fatal(err)
	}
	io, err := st.IOContext(context.Background(), "default.rgw.log")
	if err != nil {
		t.Fatal(err)
	}
	return io.WithNamespace(Namespace)
}

// recorder is a Processor over a fake bucket of keys k000..k(n-1): it
// records every key it examines, by bucket, and can be told to die after
// a number of keys (a crash mid-pass).
type recorder struct {
	mu      sync.Mutex
	n       int
	seen    map[string][]string
	dieAt   atomic.Int64 // die after this many keys in one call (0 = never)
	started chan string
}

func newRecorder(n int) *recorder { return &recorder{n: n, seen: map[string][]string{}} }

var errCrash = errors.New("simulated crash")

func (r *recorder) ProcessBucket(ctx context.Context, bucket, marker string, p *Progress) error {
	count := 0
	for i := 0; i < r.n; i++ {
		k := fmt.Sprintf("k%03d", i)
		if k <= marker {
			continue
		}
		if d := r.dieAt.Load(); d > 0 && int64(count) >= d {
			return errCrash
		}
		r.mu.Lock()
		r.seen[bucket] = append(r.seen[bucket], k)
		r.mu.Unlock()
		count++
		if err := p.Examined(1, k); err != nil {
			return err
		}
	}
	return nil
}

func (r *recorder) count(bucket string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen[bucket])
}

func newWorker(t *testing.T, io objstore.IOContext, owner string, p Processor, clock *testClock) *Worker {
	t.Helper()
	w, err := NewWorker(Config{IO: io, Processor: p, Owner: owner, Shards: 4, Day: time.Hour,
		Lease: time.Minute, CheckpointEvery: 10, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestEachBucketOncePerDayAcrossGateways(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC)}
	io := openIO(t, clock)
	rec := newRecorder(25)
	w0 := newWorker(t, io, "gw0", rec, clock)
	w1 := newWorker(t, io, "gw1", rec, clock)
	ctx := context.Background()
	buckets := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for _, b := range buckets {
		if err := w0.Register(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, w := range []*Worker{w0, w1} {
		wg.Add(1)
		go func() { defer wg.Done(); w.RunOnce(ctx) }()
	}
	wg.Wait()
	// A second round the same day does nothing.
	w0.RunOnce(ctx)
	w1.RunOnce(ctx)
	for _, b := range buckets {
		if got := rec.count(b); got != 25 {
			t.Fatalf("bucket %s examined %d keys, want 25 (once)", b, got)
		}
	}
	sts, err := w0.List(ctx)
	if err != nil || len(sts) != len(buckets) {
		t.Fatalf("List = %d entries, %v", len(sts), err)
	}
	for _, st := range sts {
		if st.State != "COMPLETE" || st.Examined != 25 {
			t.Fatalf("status %+v", st)
		}
	}
	// Next day: processed again, once.
	clock.Add(time.Hour)
	w1.RunOnce(ctx)
	w0.RunOnce(ctx)
	for _, b := range buckets {
		if got := rec.count(b); got != 50 {
			t.Fatalf("bucket %s examined %d keys after day 2, want 50", b, got)
		}
	}
	// Unregistered buckets are not processed.
	if err := w0.Unregister(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Hour)
	w0.RunOnce(ctx)
	w1.RunOnce(ctx)
	if got := rec.count("a"); got != 50 {
		t.Fatalf("unregistered bucket processed: %d", got)
	}
}

func TestCrashResumesFromCheckpointAndReclaimsOwnLease(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC)}
	io := openIO(t, clock)
	ctx := context.Background()
	rec := newRecorder(100)
	// gw0 hangs after 35 keys of its pass, like a process killed with
	// kill -9 at that point: checkpoints at 10, 20, 30 were written, its
	// lease is still held, nothing else happens.
	dying := &killer{recorder: rec, after: 35, reached: make(chan struct{}), hang: make(chan struct{})}
	w0 := newWorker(t, io, "gw0", dying, clock)
	if err := w0.Register(ctx, "bk"); err != nil {
		t.Fatal(err)
	}
	deadDone := make(chan struct{})
	go func() { defer close(deadDone); w0.RunOnce(ctx) }()
	<-dying.reached
	defer func() {
		// The old incarnation wakes up and tries to record its failure:
		// its lease was broken, so the write is fenced and changes nothing.
		close(dying.hang)
		<-deadDone
		if st, err := w0.Get(ctx, "bk"); err != nil || st.State != "COMPLETE" {
			t.Errorf("a fenced old holder changed the status: %+v %v", st, err)
		}
	}()
	st, err := w0.Get(ctx, "bk")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "PROCESSING" || st.Marker != "k029" {
		t.Fatalf("after crash: %+v, want PROCESSING at checkpoint k029", st)
	}
	// Another gateway cannot take the shard while the dead holder's lease
	// runs.
	other := newWorker(t, io, "gw1", rec, clock)
	if n := other.RunOnce(ctx); n != 0 {
		t.Fatalf("gw1 processed %d buckets under gw0's live lease", n)
	}
	// gw0 restarting (same owner) reclaims its lease at once and resumes
	// after the checkpoint: keys k030..k034 are examined twice (after the
	// checkpoint, before the crash), nothing before it.
	w0b := newWorker(t, io, "gw0", rec, clock)
	if n := w0b.RunOnce(ctx); n != 1 {
		t.Fatalf("restarted gw0 completed %d buckets, want 1", n)
	}
	if got := rec.count("bk"); got != 35+70 {
		t.Fatalf("examined %d keys in all, want 105 (35 before the crash, 70 after the checkpoint)", got)
	}
	st, _ = w0b.Get(ctx, "bk")
	if st.State != "COMPLETE" || st.Marker != "" {
		t.Fatalf("after resume: %+v", st)
	}
}

// killer stops forever after some keys (until hang closes), holding
// its lease: no release, no final status write.
type killer struct {
	*recorder
	after         int
	reached, hang chan struct{}
}

func (k *killer) ProcessBucket(ctx context.Context, bucket, marker string, p *Progress) error {
	n := 0
	for i := 0; i < k.n; i++ {
		key := fmt.Sprintf("k%03d", i)
		if key <= marker {
			continue
		}
		if n == k.after {
			close(k.reached)
			<-k.hang
			return errCrash
		}
		k.mu.Lock()
		k.seen[bucket] = append(k.seen[bucket], key)
		k.mu.Unlock()
		n++
		if err := p.Examined(1, key); err != nil {
			return err
		}
	}
	return nil
}

func TestProcessForcesAPass(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC)}
	io := openIO(t, clock)
	ctx := context.Background()
	rec := newRecorder(5)
	w := newWorker(t, io, "gw0", rec, clock)
	if err := w.Register(ctx, "bk"); err != nil {
		t.Fatal(err)
	}
	w.RunOnce(ctx)
	w.RunOnce(ctx)
	if rec.count("bk") != 5 {
		t.Fatalf("count %d", rec.count("bk"))
	}
	if err := w.Process(ctx, "bk"); err != nil {
		t.Fatal(err)
	}
	w.RunOnce(ctx)
	if rec.count("bk") != 10 {
		t.Fatalf("forced pass did not run: count %d", rec.count("bk"))
	}
	if err := w.Process(ctx, "nope"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Process of an unregistered bucket: %v", err)
	}
}

func TestPacing(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC)}
	io := openIO(t, clock)
	ctx := context.Background()
	rec := newRecorder(40)
	w, err := NewWorker(Config{IO: io, Processor: rec, Owner: "gw0", Shards: 1, Day: time.Hour, Rate: 100, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Register(ctx, "bk")
	start := time.Now()
	w.RunOnce(ctx)
	// 40 objects at 100/s take at least ~0.4 s; only a lower bound is
	// asserted (a loaded machine is only ever slower).
	if el := time.Since(start); el < 350*time.Millisecond {
		t.Fatalf("40 objects at rate 100/s took %v", el)
	}
}
