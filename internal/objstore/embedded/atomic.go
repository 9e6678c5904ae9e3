package embedded

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cockroachdb/pebble/v2"
)

var _ objstore.AtomicWriter = (*ioctx)(nil)

// AtomicWith implements objstore.AtomicWriter: every pool of one store.
func (c *ioctx) AtomicWith(other objstore.IOContext) bool {
	o, ok := other.(*ioctx)
	return ok && o.s == c.s
}

// OperateAtomic implements objstore.AtomicWriter. The ops run as Operate
// runs one, each under its object's lock, but all stage their writes in
// one indexed batch (their keys are disjoint: each object has its own
// prefix), which commits once: one pass through pebble's commit pipeline,
// one WAL record and at most one sync. A failing op closes the batch
// unapplied. Pools are held shared in id order, then objects locked in
// lock-key order (the order OperateMany and OperateReadMany use within a
// pool); the locks are released before the sync, as in Operate.
func (c *ioctx) OperateAtomic(ctx context.Context, reqs []objstore.AtomicReq) error {
	s := c.s
	type item struct {
		c    *ioctx
		r    *objstore.AtomicReq
		key  string
		t    *txn
		e    *objEntry
		v    uint64
		push pendPush // its pending write before this one's, and this one's
	}
	var small [4]item // a PUT's group: data and index
	items := small[:0]
	if len(reqs) > len(small) {
		items = make([]item, 0, len(reqs))
	}
	items = items[:len(reqs)]
	deferred := c.deferredBy(ctx)
	allDefer := true
	for i := range reqs {
		r := &reqs[i]
		ic, ok := r.IO.(*ioctx)
		if !ok || ic.s != s {
			return objstore.Errorf(objstore.ErrInvalid, "atomic write: object %q is on another store", r.OID)
		}
		if err := ic.check(ctx, r.OID); err != nil {
			return err
		}
		if err := objstore.ValidateWriteOp(r.Op); err != nil {
			return err
		}
		allDefer = allDefer && r.Op.DeferSync
		items[i] = item{c: ic, r: r, key: ic.lockKey(r.OID)}
	}
	deferred = deferred || allDefer
	slices.SortFunc(items, func(a, b item) int { return cmp.Compare(a.key, b.key) })
	for i := 1; i < len(items); i++ {
		if items[i].key == items[i-1].key {
			return objstore.Errorf(objstore.ErrInvalid, "atomic write: object %q given twice", items[i].r.OID)
		}
	}

	// Large WriteFull data goes to blob files first, as in Operate.
	now := s.opts.Now()
	for i := range items {
		items[i].t = &txn{s: s, now: now}
	}
	dropBlobs := func(keep bool) {
		for _, it := range items {
			if keep {
				it.t.dropBlobs(it.t.cur.blob)
			} else {
				it.t.dropBlobs(0)
			}
		}
	}
	if th := s.opts.BlobThreshold; th > 0 {
		for _, it := range items {
			for _, st := range it.r.Op.Steps {
				if wf, ok := st.(*objstore.WriteFull); ok && len(wf.Data) >= th {
					id, err := s.writeBlob(wf.Data)
					if err != nil {
						dropBlobs(false)
						return err
					}
					t := it.t
					if t.preBlobs == nil {
						t.preBlobs = map[*objstore.WriteFull]uint64{}
						t.blobData = map[uint64][]byte{}
					}
					t.preBlobs[wf] = id
					t.blobData[id] = wf.Data
				}
			}
		}
	}

	// Every distinct pool once, in id order.
	pools := make([]*ioctx, 0, 2)
	for _, it := range items {
		if !slices.ContainsFunc(pools, func(p *ioctx) bool { return p.pool == it.c.pool }) {
			pools = append(pools, it.c)
		}
	}
	slices.SortFunc(pools, func(a, b *ioctx) int { return cmp.Compare(a.pool.id, b.pool.id) })
	for i, p := range pools {
		if err := p.rlockPool(); err != nil {
			for _, q := range pools[:i] {
				q.pool.mu.RUnlock()
			}
			dropBlobs(false)
			return err
		}
	}
	unlockPools := func() {
		for _, p := range pools {
			p.pool.mu.RUnlock()
		}
	}
	for i := range items {
		items[i].e = s.locks.acquire(items[i].key)
		items[i].e.rw.Lock()
	}
	defer func() {
		for _, it := range items {
			s.locks.release(it.e)
		}
	}()
	unlockObjects := func() {
		for _, it := range items {
			it.e.rw.Unlock()
		}
	}

	b := s.db.NewIndexedBatch()
	dirty, replacesBlob := false, false
	var err error
	for i := range items {
		it := &items[i]
		t, op := it.t, it.r.Op
		t.r, t.b, t.entry = b, b, it.e
		t.prefix = objPrefix(it.c.pool.id, it.c.ns, it.r.OID)
		t.mkey = metaKey(it.c.pool.id, it.c.ns, it.r.OID)
		err = t.runWrite(op, it.r.OID)
		if err == nil && t.dirty {
			it.v = s.nextID()
			err = t.commit(it.v)
			dirty = true
			replacesBlob = replacesBlob || (t.orig.blob != 0 && t.orig.blob != t.cur.blob)
		} else if err == nil {
			it.v = t.version()
		}
		if err != nil {
			break
		}
	}
	if err != nil || !dirty {
		// Nothing to apply; a result may still rest on unsynced state.
		var pending []*ticket
		for _, it := range items {
			if err != nil {
				it.e.dropCache()
			} else {
				it.t.publishCache()
				pending = append(pending, it.e.newest())
			}
		}
		unlockObjects()
		unlockPools()
		b.Close()
		dropBlobs(false)
		for _, p := range pending {
			if werr := p.wait(); err == nil {
				err = werr
			}
		}
		if err == nil {
			for _, it := range items {
				it.r.Op.Version = it.v
			}
		}
		return err
	}

	// Deferred as in Operate (and not when a blob file is replaced: it
	// is deleted below, and a crash must not bring back a pointer to it).
	if deferred && !replacesBlob {
		err := s.db.Apply(b, pebble.NoSync)
		for _, it := range items {
			if err != nil {
				it.e.dropCache()
			} else {
				it.t.remember()
				it.t.publishCache()
			}
		}
		unlockObjects()
		unlockPools()
		b.Close()
		if err != nil {
			dropBlobs(false)
			return fmt.Errorf("embedded: apply: %w", err)
		}
		dropBlobs(true)
		for _, it := range items {
			it.r.Op.Version = it.v
		}
		return nil
	}

	tk := newTicket()
	for _, it := range items {
		tk.views.union(it.t.views)
	}
	s.registerInflight(tk)
	for i := range items {
		items[i].push = items[i].e.pushPending(tk, items[i].t)
	}
	if err := s.db.ApplyNoSyncWait(b, syncOpts); err != nil {
		for _, it := range items {
			it.e.undoPending(it.push)
			it.e.dropCache()
		}
		s.finishInflight(tk, nil)
		unlockObjects()
		unlockPools()
		b.Close()
		dropBlobs(false)
		return fmt.Errorf("embedded: apply: %w", err)
	}
	for _, it := range items {
		it.t.remember()
		it.t.publishCache()
	}
	unlockObjects()
	unlockPools()

	serr := b.SyncWait()
	s.countCommit(b.CommitStats())
	s.finishInflight(tk, serr)
	for _, it := range items {
		it.e.doneSynced(it.push)
	}
	b.Close()
	if serr != nil {
		// Visible but perhaps not durable; the DB is unusable.
		return fmt.Errorf("embedded: WAL sync: %w", serr)
	}
	for _, it := range items {
		if it.t.orig.blob != 0 && it.t.orig.blob != it.t.cur.blob {
			s.removeBlob(it.t.orig.blob)
		}
		it.r.Op.Version = it.v
	}
	dropBlobs(true)
	return nil
}
