package driver

import (
	"sync"
	"time"
)

// keyCacheTTL bounds how long a gateway trusts a cached access key: a key
// removed through another gateway (on a shared store) stops working within
// this time, as with the bucket instance cache. Changes made through this
// driver invalidate at once.
const keyCacheTTL = 5 * time.Second

// keyCacheMax bounds the cache; when full it is emptied (cheap, rare: one
// entry per active access key).
const keyCacheMax = 1 << 14

// keyCache maps access keys to their user and secret, so a request's
// authentication costs no store reads (two point reads otherwise). Only
// found keys are cached: unknown keys cannot fill it.
type keyCache struct {
	mu  sync.Mutex
	m   map[string]keyCacheEntry
	gen uint64 // bumped by forget: a lookup that began before is not cached
}

type keyCacheEntry struct {
	user   User
	secret string
	loaded time.Time
}

// get returns a fresh entry, or the generation to hand to put after
// reading the key from the store.
func (c *keyCache) get(ak string, now time.Time) (User, string, uint64, bool) {
	c.mu.Lock()
	e, ok := c.m[ak]
	gen := c.gen
	c.mu.Unlock()
	if !ok || now.Sub(e.loaded) >= keyCacheTTL || now.Before(e.loaded) {
		return User{}, "", gen, false
	}
	return e.user, e.secret, gen, true
}

// put caches what a lookup read, unless a forget ran since its get.
func (c *keyCache) put(ak string, u User, secret string, gen uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.m == nil || len(c.m) >= keyCacheMax {
		c.m = map[string]keyCacheEntry{}
	}
	c.m[ak] = keyCacheEntry{user: u, secret: secret, loaded: now}
}

// forget drops the cached entries of every key in keys.
func (c *keyCache) forget(keys []Key) {
	c.mu.Lock()
	c.gen++
	for _, k := range keys {
		delete(c.m, k.AccessKey)
	}
	c.mu.Unlock()
}
