package embedded

import (
	"bytes"
	"github.com/cairn-s3/cairn/internal/objstore"
	"hash/maphash"
	"slices"
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

func (t *ticket) synced() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// pendNode is one applied-but-unsynced write of an object, in a chain
// (objEntry.chain), newest first, so that a read of named omap keys waits
// only for the writes that changed what it read (pendingFor). At 11 index
// shards under 32 writers every shard had a write in flight, and each GET
// waited for a WAL sync it did not depend on (p50 0.5 ms against 0.03 at
// 59 shards, docs/bench/scale.md).
type pendNode struct {
	tk   *ticket
	keys []string // omap keys the write set or removed (when not wide)
	// wide: the write changed more than named omap keys (the object's
	// existence, its xattrs, a key range), or too many to list.
	wide bool
	prev atomic.Pointer[pendNode] // cut (nil) once this write is synced
}

// pendPush is what pushPending added, for undoPending and doneSynced.
type pendPush struct{ node *pendNode }

// pushPending makes tk the object's newest unsynced write. The caller
// holds the object's write lock, as it does for undoPending.
func (e *objEntry) pushPending(tk *ticket, t *txn) pendPush {
	n := &pendNode{tk: tk}
	n.keys, n.wide = t.changedKeys()
	n.prev.Store(e.chain.Load())
	e.chain.Store(n)
	return pendPush{node: n}
}

// undoPending takes back a push whose batch was not applied.
func (e *objEntry) undoPending(p pendPush) {
	e.chain.Store(p.node.prev.Load())
}

// doneSynced retires a push once its ticket is finished: every earlier
// write is durable too (WAL order), so the chain ends here.
func (e *objEntry) doneSynced(p pendPush) {
	p.node.prev.Store(nil)
	e.chain.CompareAndSwap(p.node, nil)
}

// newest returns the object's newest applied-but-unsynced write (nil:
// none, or its ticket already finished), captured under the object's lock.
func (e *objEntry) newest() *ticket {
	if n := e.chain.Load(); n != nil {
		return n.tk
	}
	return nil
}

// pendingFor returns the unsynced write a read must wait for, captured
// under the object's lock. A read that sees only the values of keys (and
// the object's existence and xattrs, through guards) waits for the newest
// write that changed any of them, and for none when no write in flight
// did; any other read (keys nil) waits for the newest write.
func (e *objEntry) pendingFor(keys []string) *ticket {
	n := e.chain.Load()
	if n == nil || keys == nil {
		return e.newest()
	}
	for ; n != nil; n = n.prev.Load() {
		if n.tk.synced() {
			if n.tk.err != nil {
				return n.tk
			}
			return nil // durable, and everything before it
		}
		if n.wide {
			return n.tk
		}
		for _, k := range n.keys {
			if slices.Contains(keys, k) {
				return n.tk
			}
		}
	}
	return nil
}

// objEntry serialises operations on one object and carries its class cache.
type objEntry struct {
	key string
	rw  sync.RWMutex
	// chain lists the applied-but-unsynced writes, newest first (newest,
	// pendingFor).
	chain atomic.Pointer[pendNode]
	refs  int // guarded by the shard mutex

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
