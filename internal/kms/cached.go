package kms

import (
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// CacheOptions tune Cached. Zero fields take the defaults, which are
// RGW's secrets cache (ceph#61256).
type CacheOptions struct {
	// Size bounds the number of cached answers (default 128).
	Size int
	// HitTTL keeps an unsealed data key (default 60 s).
	HitTTL time.Duration
	// MissTTL keeps a definite refusal, ErrKeyNotFound or ErrUnseal, so a
	// client replaying a bad sealed key does not reach the KMS each time
	// (default 120 s).
	MissTTL time.Duration
	// ErrTTL keeps any other error, ErrUnavailable included, so a KMS
	// outage is not hammered by every read (default 10 s).
	ErrTTL time.Duration
	// StaleTTL lets an unsealed data key outlive HitTTL by this much, used
	// only while the backend is unavailable (default 5 min): a KMS outage
	// then does not stop reads of what was read recently (sealed user
	// secrets: authentication). Negative disables.
	StaleTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (o *CacheOptions) ensureDefaults() {
	if o.Size <= 0 {
		o.Size = 128
	}
	if o.HitTTL <= 0 {
		o.HitTTL = 60 * time.Second
	}
	if o.MissTTL <= 0 {
		o.MissTTL = 120 * time.Second
	}
	if o.ErrTTL <= 0 {
		o.ErrTTL = 10 * time.Second
	}
	if o.StaleTTL == 0 {
		o.StaleTTL = 5 * time.Minute
	}
	if o.StaleTTL < 0 {
		o.StaleTTL = 0
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// CacheStats counts calls. Backend* are the calls that reached the
// wrapped KMS (the SSE benchmark reports them per PUT); Hits are Decrypts
// answered from the cache (a cached error included) and Shared those that
// waited for another caller's identical Decrypt.
type CacheStats struct {
	BackendGenerate, BackendDecrypt, BackendRewrap uint64
	Hits, Shared                                   uint64
	// Stale counts Decrypts answered with an expired key because the
	// backend was unavailable.
	Stale uint64
}

// Cached wraps a KMS with a bounded LRU of Decrypt answers, keyed by (key
// id, SHA-256 of the sealed key, SHA-256 of the aad), and collapses
// concurrent identical Decrypts into one backend call (singleflight).
// GenerateDataKey and Rewrap are never cached. Cached plaintexts are
// cleared when evicted; callers get their own copy.
type Cached struct {
	inner KMS
	o     CacheOptions

	mu       sync.Mutex
	lru      *list.List // of *cacheEntry, front = most recent
	m        map[cacheKey]*list.Element
	inflight map[cacheKey]*flight

	generate, decrypt, rewrap, hits, shared, stale atomic.Uint64
}

var _ KMS = (*Cached)(nil)
var _ Rotator = (*Cached)(nil)

type cacheKey struct {
	keyID       string
	sealed, aad [sha256.Size]byte
}

type cacheEntry struct {
	k       cacheKey
	plain   []byte
	err     error
	expires time.Time
	// staleUntil bounds serving plain past expires during an outage.
	staleUntil time.Time
}

type flight struct {
	done  chan struct{}
	plain []byte
	err   error
}

// NewCached wraps inner.
func NewCached(inner KMS, o CacheOptions) *Cached {
	o.ensureDefaults()
	return &Cached{inner: inner, o: o, lru: list.New(), m: map[cacheKey]*list.Element{}, inflight: map[cacheKey]*flight{}}
}

// Inner returns the wrapped KMS.
func (c *Cached) Inner() KMS { return c.inner }

// Stats returns the counters so far.
func (c *Cached) Stats() CacheStats {
	return CacheStats{
		BackendGenerate: c.generate.Load(), BackendDecrypt: c.decrypt.Load(), BackendRewrap: c.rewrap.Load(),
		Hits: c.hits.Load(), Shared: c.shared.Load(), Stale: c.stale.Load(),
	}
}

// GenerateDataKey calls the backend: every data key is fresh.
func (c *Cached) GenerateDataKey(ctx context.Context, keyID string, aad []byte) (DataKey, error) {
	c.generate.Add(1)
	return c.inner.GenerateDataKey(ctx, keyID, aad)
}

// Rewrap calls the backend.
func (c *Cached) Rewrap(ctx context.Context, keyID string, sealed, aad []byte) ([]byte, error) {
	c.rewrap.Add(1)
	return c.inner.Rewrap(ctx, keyID, sealed, aad)
}

// DefaultKeyID is the backend's.
func (c *Cached) DefaultKeyID() string { return c.inner.DefaultKeyID() }

// RotateKey rotates in the backend if it can, and empties the cache.
func (c *Cached) RotateKey(ctx context.Context, keyID string) error {
	r, ok := c.inner.(Rotator)
	if !ok {
		return errors.New("kms: this backend's keys are rotated by its operator, not by cairn")
	}
	if err := r.RotateKey(ctx, keyID); err != nil {
		return err
	}
	c.Purge()
	return nil
}

// Purge drops every cached answer.
func (c *Cached) Purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.lru.Front(); e != nil; e = e.Next() {
		clear(e.Value.(*cacheEntry).plain)
	}
	c.lru.Init()
	clear(c.m)
}

// Decrypt answers from the cache when it can.
func (c *Cached) Decrypt(ctx context.Context, keyID string, sealed, aad []byte) ([]byte, error) {
	k := cacheKey{keyID: keyID, sealed: sha256.Sum256(sealed), aad: sha256.Sum256(aad)}
	now := c.o.Now()
	c.mu.Lock()
	if el, ok := c.m[k]; ok {
		e := el.Value.(*cacheEntry)
		if now.Before(e.expires) {
			c.lru.MoveToFront(el)
			plain, err := clone(e.plain), e.err
			c.mu.Unlock()
			c.hits.Add(1)
			return plain, err
		}
		if !now.Before(e.staleUntil) {
			c.removeLocked(el)
		}
	}
	if f, ok := c.inflight[k]; ok {
		c.mu.Unlock()
		c.shared.Add(1)
		select {
		case <-f.done:
			return clone(f.plain), f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &flight{done: make(chan struct{})}
	c.inflight[k] = f
	c.mu.Unlock()

	c.decrypt.Add(1)
	// A caller that gives up must not poison the waiters: the flight's
	// own context cancellation is not cached (see below).
	f.plain, f.err = c.inner.Decrypt(ctx, keyID, sealed, aad)

	c.mu.Lock()
	delete(c.inflight, k)
	servedStale := false
	if errors.Is(f.err, ErrUnavailable) {
		if el, ok := c.m[k]; ok {
			if e := el.Value.(*cacheEntry); e.err == nil && c.o.Now().Before(e.staleUntil) {
				// Serve the expired key, and spare the KMS for ErrTTL.
				e.expires = minTime(c.o.Now().Add(c.o.ErrTTL), e.staleUntil)
				f.plain, f.err, servedStale = clone(e.plain), nil, true
				c.stale.Add(1)
			}
		}
	}
	if !servedStale && (ctx.Err() == nil || f.err == nil) {
		ttl := c.o.ErrTTL
		switch {
		case f.err == nil:
			ttl = c.o.HitTTL
		case errors.Is(f.err, ErrKeyNotFound) || errors.Is(f.err, ErrUnseal):
			ttl = c.o.MissTTL
		}
		e := &cacheEntry{k: k, plain: clone(f.plain), err: f.err, expires: c.o.Now().Add(ttl)}
		if f.err == nil {
			e.staleUntil = e.expires.Add(c.o.StaleTTL)
		}
		c.addLocked(e)
	}
	c.mu.Unlock()
	close(f.done)
	return clone(f.plain), f.err
}

func (c *Cached) addLocked(e *cacheEntry) {
	if el, ok := c.m[e.k]; ok {
		c.removeLocked(el)
	}
	c.m[e.k] = c.lru.PushFront(e)
	for c.lru.Len() > c.o.Size {
		c.removeLocked(c.lru.Back())
	}
}

func (c *Cached) removeLocked(el *list.Element) {
	e := el.Value.(*cacheEntry)
	clear(e.plain)
	delete(c.m, e.k)
	c.lru.Remove(el)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}
