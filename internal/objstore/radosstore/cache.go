//go:build rados

package radosstore

import (
	"sort"
	"sync"

	"github.com/cairn-s3/cairn/internal/objstore"
)

func sortKVs(kvs []objstore.KV) {
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].Key < kvs[j].Key })
}

// objKey names one object in the store.
type objKey struct{ pool, ns, oid string }

func (c *ioContext) cacheKey(oid string) objKey { return objKey{c.pool, c.ns, oid} }

// objLocks serialises this process's optimistic transactions on one object,
// so that goroutines of one gateway do not conflict with each other (they
// only conflict with other gateways). Plain ops do not take it.
type objLocks struct {
	shards [64]struct {
		mu sync.Mutex
		m  map[objKey]*objLock
	}
}

type objLock struct {
	sem  chan struct{} // a one-slot semaphore held while a transaction (or a batch) runs
	refs int

	qmu   sync.Mutex
	queue []*pendingOp // batchable ops waiting for group commit
}

func (l *objLocks) init() {
	for i := range l.shards {
		l.shards[i].m = map[objKey]*objLock{}
	}
}

func shardOf(k objKey) int {
	h := uint32(2166136261)
	for i := 0; i < len(k.oid); i++ {
		h = (h ^ uint32(k.oid[i])) * 16777619
	}
	for i := 0; i < len(k.pool); i++ {
		h = (h ^ uint32(k.pool[i])) * 16777619
	}
	return int(h % 64)
}

// ref returns k's entry, unlocked, and the function that releases it.
func (l *objLocks) ref(k objKey) (*objLock, func()) {
	sh := &l.shards[shardOf(k)]
	sh.mu.Lock()
	e := sh.m[k]
	if e == nil {
		e = &objLock{sem: make(chan struct{}, 1)}
		sh.m[k] = e
	}
	e.refs++
	sh.mu.Unlock()
	return e, func() {
		sh.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(sh.m, k)
		}
		sh.mu.Unlock()
	}
}

// cacheTable holds class cache entries keyed by object and tagged with the
// object version they were computed at: an entry is returned only while the
// object is still at that version, so a write by any client (another
// gateway included) invalidates it without any notification.
type cacheTable struct {
	mu  sync.Mutex
	m   map[objKey]*cacheEntry
	max int
}

type cacheEntry struct {
	version uint64
	slots   map[string]any // "class\x00slot"
	meta    *metaState     // object state after this process's last transaction
}

func (t *cacheTable) init() { t.m = map[objKey]*cacheEntry{}; t.max = 65536 }

func (t *cacheTable) active() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m) > 0
}

func (t *cacheTable) get(k objKey, version uint64, slot string) (any, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[k]
	if e == nil || e.version != version {
		return nil, false
	}
	v, ok := e.slots[slot]
	return v, ok
}

func (t *cacheTable) meta(k objKey) *metaState {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[k]; e != nil {
		return e.meta
	}
	return nil
}

// setMeta records the state a committed transaction left; class slots of
// another version are dropped.
func (t *cacheTable) setMeta(k objKey, ms *metaState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[k]
	if e == nil || e.version != ms.version {
		if e == nil && len(t.m) >= t.max {
			for victim := range t.m {
				delete(t.m, victim)
				break
			}
		}
		e = &cacheEntry{version: ms.version}
		t.m[k] = e
	}
	e.meta = ms
}

func (t *cacheTable) dropMeta(k objKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[k]; e != nil {
		e.meta = nil
	}
}

func (t *cacheTable) drop(k objKey) {
	t.mu.Lock()
	delete(t.m, k)
	t.mu.Unlock()
}

// publish applies a successful op: base is the version the op read, next
// the version it left. plain: a step other than a method changed the
// object (drop everything). writers: classes whose methods wrote (their
// entries stay valid, others are dropped). staged: new entries.
func (t *cacheTable) publish(k objKey, base, next uint64, plain bool, writers map[string]bool, staged map[string]any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.m[k]
	if plain {
		delete(t.m, k)
		return
	}
	slots := map[string]any{}
	if old != nil && old.version == base {
		for s, v := range old.slots {
			if len(writers) > 0 && !writers[className(s)] {
				continue
			}
			slots[s] = v
		}
	}
	for s, v := range staged {
		slots[s] = v
	}
	if len(slots) == 0 {
		delete(t.m, k)
		return
	}
	if old == nil && len(t.m) >= t.max {
		for victim := range t.m { // evict an arbitrary entry: a miss is always correct
			delete(t.m, victim)
			break
		}
	}
	t.m[k] = &cacheEntry{version: next, slots: slots}
}

func className(k string) string {
	for i := 0; i < len(k); i++ {
		if k[i] == 0 {
			return k[:i]
		}
	}
	return k
}
