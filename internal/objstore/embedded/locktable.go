package embedded

import (
	"bytes"
	"github.com/cairn-s3/cairn/internal/objstore"
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// ticket tracks one applied batch until its WAL sync: readers that observed
// the batch's effects wait on done before returning.
type ticket struct {
	done chan struct{}
	err  error
	// views spans the ordered-view keys the batch set or removed (nil
	// when none): a view read waits for the writes whose span meets the
	// key range it returned, and for no other (a GC batch, a reshard's
	// copy, or a PUT elsewhere in the bucket has nothing to do with this
	// page of a listing).
	views keySpan
}

// keySpan is the closed key range [lo, hi]; the zero value is empty.
type keySpan struct{ lo, hi []byte }

// add widens s to hold k, which it may keep: k must not change after.
func (s *keySpan) add(k []byte) {
	if s.lo == nil || bytes.Compare(k, s.lo) < 0 {
		s.lo = k
	}
	if s.hi == nil || bytes.Compare(k, s.hi) > 0 {
		s.hi = k
	}
}

// union widens s to hold o.
func (s *keySpan) union(o keySpan) {
	if o.lo != nil {
		s.add(o.lo)
		s.add(o.hi)
	}
}

// meets reports whether s holds a key of [lo, hi) (hi nil: no bound).
func (s keySpan) meets(lo, hi []byte) bool {
	return s.lo != nil && bytes.Compare(s.hi, lo) >= 0 && (hi == nil || bytes.Compare(s.lo, hi) < 0)
}

func newTicket() *ticket { return &ticket{done: make(chan struct{})} }

func (t *ticket) wait() error {
	if t == nil {
		return nil
	}
	<-t.done
	return t.err
}

// objEntry serialises operations on one object and carries its class cache.
type objEntry struct {
	key string
	rw  sync.RWMutex
	// pending is the latest applied-but-unsynced write on this object.
	pending atomic.Pointer[ticket]
	refs    int // guarded by the shard mutex

	cacheMu sync.Mutex
	cache   map[string]any // "class\x00slot" → value

	// meta is the object's committed meta after the last op that ran a
	// class method on it (index and queue shards, locks: the hot objects),
	// so the next op skips the meta read. Every write to an object goes
	// through Operate under rw, which replaces or clears it.
	meta atomic.Pointer[cachedMeta]
}

type cachedMeta struct {
	m      meta
	exists bool
	// xattrs are the object's xattrs as of m, sorted by name, once a read
	// has loaded them (nil until then): guards on hot objects (an index
	// shard's state, checked by every listing read of it) skip the LSM.
	// A write that does not touch xattrs carries them to its successor.
	xattrs atomic.Pointer[[]objstore.KV]
}

func (e *objEntry) dropCache() {
	e.meta.Store(nil)
	e.cacheMu.Lock()
	e.cache = nil
	e.cacheMu.Unlock()
}

const lockShards = 64

// lockTable maps object keys to entries; entries live while referenced or
// while they hold cache entries (bounded by maxCached).
type lockTable struct {
	seed      maphash.Seed
	maxCached int
	shards    [lockShards]lockShard
}

type lockShard struct {
	mu     sync.Mutex
	m      map[string]*objEntry
	cached int // idle entries kept only for their cache
}

func newLockTable(maxCached int) *lockTable {
	lt := &lockTable{seed: maphash.MakeSeed(), maxCached: maxCached}
	for i := range lt.shards {
		lt.shards[i].m = map[string]*objEntry{}
	}
	return lt
}

func (lt *lockTable) shard(key string) *lockShard {
	return &lt.shards[maphash.String(lt.seed, key)%lockShards]
}

func (lt *lockTable) acquire(key string) *objEntry {
	sh := lt.shard(key)
	sh.mu.Lock()
	e := sh.m[key]
	if e == nil {
		e = &objEntry{key: key}
		sh.m[key] = e
	} else if e.refs == 0 {
		sh.cached--
	}
	e.refs++
	sh.mu.Unlock()
	return e
}

func (lt *lockTable) release(e *objEntry) {
	sh := lt.shard(e.key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e.refs--
	if e.refs > 0 {
		return
	}
	e.cacheMu.Lock()
	keep := len(e.cache) > 0 || e.meta.Load() != nil
	e.cacheMu.Unlock()
	if !keep {
		delete(sh.m, e.key)
		return
	}
	sh.cached++
	if limit := lt.maxCached / lockShards; sh.cached > limit {
		// A cache miss is always correct, so evict arbitrary idle entries.
		for k, o := range sh.m {
			if sh.cached <= limit/2 {
				break
			}
			if o.refs == 0 {
				delete(sh.m, k)
				sh.cached--
			}
		}
	}
}

// dropPrefix forgets idle entries whose key starts with p (a deleted pool).
func (lt *lockTable) dropPrefix(p string) {
	for i := range lt.shards {
		sh := &lt.shards[i]
		sh.mu.Lock()
		for k, e := range sh.m {
			if len(k) >= len(p) && k[:len(p)] == p {
				e.dropCache()
				if e.refs == 0 {
					delete(sh.m, k)
					sh.cached--
				}
			}
		}
		sh.mu.Unlock()
	}
}
