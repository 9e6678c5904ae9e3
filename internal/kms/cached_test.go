package kms_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/kms"
	"github.com/cairn-s3/cairn/internal/kms/kmstest"
)

func TestCachedConformance(t *testing.T) {
	kmstest.Run(t, kmstest.Harness{
		New:   func(t *testing.T) kms.KMS { return kms.NewCached(kmstest.NewMemory("k1", "k2"), kms.CacheOptions{}) },
		KeyID: "k1", OtherKeyID: "k2", MissingKeyID: "nope",
		Rotate: func(t *testing.T, k kms.KMS, id string) {
			if err := k.(kms.Rotator).RotateKey(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		},
		Unavailable: func(t *testing.T) kms.KMS {
			m := kmstest.NewMemory("k1", "k2")
			m.SetUnavailable(true)
			return kms.NewCached(m, kms.CacheOptions{})
		},
	})
}

type clock struct{ now atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Unix(0, c.now.Load()) }
func (c *clock) advance(d time.Duration) { c.now.Add(int64(d)) }

func TestCachedTTLsAndCounters(t *testing.T) {
	ctx := context.Background()
	mem := kmstest.NewMemory("k1")
	var clk clock
	c := kms.NewCached(mem, kms.CacheOptions{Size: 4, HitTTL: time.Minute, MissTTL: 2 * time.Minute, ErrTTL: 10 * time.Second, Now: clk.Now})
	dk, err := c.GenerateDataKey(ctx, "k1", []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		p, err := c.Decrypt(ctx, "k1", dk.Sealed, []byte("a"))
		if err != nil || !bytes.Equal(p, dk.Plaintext) {
			t.Fatalf("decrypt %d: %v", i, err)
		}
		clear(p) // the caller's copy: the cache keeps its own
	}
	if s := c.Stats(); s.BackendGenerate != 1 || s.BackendDecrypt != 1 || s.Hits != 2 {
		t.Fatalf("stats %+v, want 1 generate, 1 backend decrypt, 2 hits", s)
	}
	// Another aad is another entry, and a refusal.
	if _, err := c.Decrypt(ctx, "k1", dk.Sealed, []byte("b")); !errors.Is(err, kms.ErrUnseal) {
		t.Fatal(err)
	}
	if _, err := c.Decrypt(ctx, "k1", dk.Sealed, []byte("b")); !errors.Is(err, kms.ErrUnseal) {
		t.Fatal(err)
	}
	if s := c.Stats(); s.BackendDecrypt != 2 {
		t.Fatalf("refusal not cached: %+v", s)
	}
	// Hit TTL: after a minute the key is fetched again.
	clk.advance(time.Minute)
	if _, err := c.Decrypt(ctx, "k1", dk.Sealed, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.BackendDecrypt != 3 {
		t.Fatalf("hit TTL not applied: %+v", s)
	}
	// Miss TTL: still cached at 61 s (stored at 0, 120 s TTL)...
	if _, err := c.Decrypt(ctx, "k1", dk.Sealed, []byte("b")); !errors.Is(err, kms.ErrUnseal) || c.Stats().BackendDecrypt != 3 {
		t.Fatalf("refusal: %v %+v", err, c.Stats())
	}
	// An outage is cached for ErrTTL only.
	mem.SetUnavailable(true)
	dk2, _ := kmstest.NewMemory("k1").GenerateDataKey(ctx, "k1", nil)
	for i := 0; i < 2; i++ {
		if _, err := c.Decrypt(ctx, "k1", dk2.Sealed, nil); !errors.Is(err, kms.ErrUnavailable) {
			t.Fatal(err)
		}
	}
	if s := c.Stats(); s.BackendDecrypt != 4 {
		t.Fatalf("error not cached: %+v", s)
	}
	mem.SetUnavailable(false)
	clk.advance(10 * time.Second)
	if _, err := c.Decrypt(ctx, "k1", dk2.Sealed, nil); !errors.Is(err, kms.ErrUnseal) {
		t.Fatalf("after the error TTL: %v, want the backend's answer (ErrUnseal: another Memory sealed it)", err)
	}
	// GenerateDataKey and Rewrap always reach the backend.
	if _, err := c.Rewrap(ctx, "k1", dk.Sealed, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.BackendRewrap != 1 {
		t.Fatalf("%+v", s)
	}
}

func TestCachedBounded(t *testing.T) {
	ctx := context.Background()
	c := kms.NewCached(kmstest.NewMemory("k1"), kms.CacheOptions{Size: 2})
	var dks []kms.DataKey
	for i := 0; i < 3; i++ {
		dk, err := c.GenerateDataKey(ctx, "k1", nil)
		if err != nil {
			t.Fatal(err)
		}
		dks = append(dks, dk)
		if _, err := c.Decrypt(ctx, "k1", dk.Sealed, nil); err != nil {
			t.Fatal(err)
		}
	}
	// dks[0] was evicted (least recently used), dks[2] is cached.
	if _, err := c.Decrypt(ctx, "k1", dks[2].Sealed, nil); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.BackendDecrypt != 3 || s.Hits != 1 {
		t.Fatalf("%+v", s)
	}
	if _, err := c.Decrypt(ctx, "k1", dks[0].Sealed, nil); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.BackendDecrypt != 4 {
		t.Fatalf("evicted entry answered from cache: %+v", s)
	}
}

// blocking holds Decrypt until released, counting calls.
type blocking struct {
	kms.KMS
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (b *blocking) Decrypt(ctx context.Context, id string, sealed, aad []byte) ([]byte, error) {
	b.calls.Add(1)
	b.entered <- struct{}{}
	<-b.release
	return b.KMS.Decrypt(ctx, id, sealed, aad)
}

func TestCachedSingleflight(t *testing.T) {
	ctx := context.Background()
	mem := kmstest.NewMemory("k1")
	dk, err := mem.GenerateDataKey(ctx, "k1", nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &blocking{KMS: mem, entered: make(chan struct{}, 8), release: make(chan struct{})}
	c := kms.NewCached(b, kms.CacheOptions{})
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := c.Decrypt(ctx, "k1", dk.Sealed, nil)
			if err == nil && !bytes.Equal(p, dk.Plaintext) {
				err = errors.New("wrong key")
			}
			errs <- err
		}()
	}
	start()
	<-b.entered // the first caller is inside the backend
	for i := 1; i < n; i++ {
		start()
	}
	// Wait until the others joined the flight, then let it finish.
	for c.Stats().Shared < n-1 {
		time.Sleep(time.Millisecond)
	}
	close(b.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := b.calls.Load(); got != 1 {
		t.Fatalf("%d backend calls for %d concurrent identical Decrypts, want 1", got, n)
	}
}

func TestCachedServesStaleDuringOutage(t *testing.T) {
	ctx := context.Background()
	mem := kmstest.NewMemory("k1")
	var clk clock
	c := kms.NewCached(mem, kms.CacheOptions{HitTTL: time.Minute, ErrTTL: 10 * time.Second, StaleTTL: 5 * time.Minute, Now: clk.Now})
	dk, err := c.GenerateDataKey(ctx, "k1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decrypt(ctx, "k1", dk.Sealed, nil); err != nil {
		t.Fatal(err)
	}
	mem.SetUnavailable(true)
	clk.advance(2 * time.Minute) // expired, within the stale window
	p, err := c.Decrypt(ctx, "k1", dk.Sealed, nil)
	if err != nil || !bytes.Equal(p, dk.Plaintext) {
		t.Fatalf("during an outage: %v, want the stale key", err)
	}
	if _, err := c.Decrypt(ctx, "k1", dk.Sealed, nil); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.Stale != 1 || s.BackendDecrypt != 2 {
		t.Fatalf("%+v: want one stale answer, then the KMS spared for ErrTTL", s)
	}
	// Back up: the key is fetched fresh again.
	mem.SetUnavailable(false)
	clk.advance(10 * time.Second)
	if _, err := c.Decrypt(ctx, "k1", dk.Sealed, nil); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.BackendDecrypt != 3 {
		t.Fatalf("%+v", s)
	}
	// Past HitTTL + StaleTTL an outage is an error.
	mem.SetUnavailable(true)
	clk.advance(7 * time.Minute)
	if _, err := c.Decrypt(ctx, "k1", dk.Sealed, nil); !errors.Is(err, kms.ErrUnavailable) {
		t.Fatalf("past the stale window: %v, want ErrUnavailable", err)
	}
	// A key never read is not invented.
	dk2, _ := kmstest.NewMemory("k1").GenerateDataKey(ctx, "k1", nil)
	if _, err := c.Decrypt(ctx, "k1", dk2.Sealed, nil); !errors.Is(err, kms.ErrUnavailable) {
		t.Fatal(err)
	}
}
