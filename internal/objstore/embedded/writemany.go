package embedded

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cockroachdb/pebble/v2"
)

var _ objstore.WriteBatcher = (*ioctx)(nil)

// OperateMany implements objstore.WriteBatcher. Each object's op runs as
// in Operate, under its object's lock in its own indexed batch, so a
// failing op is dropped alone; the batches of the ops that succeeded are
// then copied into one batch and committed together: one pass through
// pebble's commit pipeline, one WAL record and one sync for all (the
// queue shards' deferred commits of a whole gateway, say). The write
// locks are taken in key order (OperateReadMany takes its shared locks the
// same way; Operate holds one lock only), and released before the sync,
// as in Operate. Ops that Operate treats specially (blob-sized WriteFull
// data, deferred syncs) and every op on an OID given more than once run
// through Operate afterwards, one by one in the order given.
func (c *ioctx) OperateMany(ctx context.Context, reqs []objstore.WriteReq) {
	type item struct {
		r       *objstore.WriteReq
		t       *txn
		b       *pebble.Batch
		e       *objEntry
		v       uint64
		apply   bool    // its batch goes into the shared one
		pending *ticket // not applying: the unsynced write its result saw
	}
	count := make(map[string]int, len(reqs))
	for i := range reqs {
		count[reqs[i].OID]++
	}
	deferred := c.deferredBy(ctx)
	items := make([]item, 0, len(reqs))
	var alone []int
	for i := range reqs {
		r := &reqs[i]
		r.Err = nil
		if count[r.OID] > 1 || deferred || !c.batchableWrite(r.Op) {
			alone = append(alone, i)
			continue
		}
		if r.Err = c.check(ctx, r.OID); r.Err != nil {
			continue
		}
		if r.Err = objstore.ValidateWriteOp(r.Op); r.Err != nil {
			continue
		}
		items = append(items, item{r: r})
	}
	defer func() {
		for _, i := range alone {
			reqs[i].Err = c.Operate(ctx, reqs[i].OID, reqs[i].Op)
		}
	}()
	if len(items) == 1 {
		items[0].r.Err = c.Operate(ctx, items[0].r.OID, items[0].r.Op)
		return
	}
	if len(items) == 0 {
		return
	}
	if err := c.rlockPool(); err != nil {
		for _, it := range items {
			it.r.Err = err
		}
		return
	}
	s := c.s
	slices.SortFunc(items, func(a, b item) int { return cmp.Compare(a.r.OID, b.r.OID) })
	now := s.opts.Now()
	for i := range items {
		it := &items[i]
		it.e = s.locks.acquire(c.lockKey(it.r.OID))
		it.e.rw.Lock()
	}
	defer func() {
		for _, it := range items {
			s.locks.release(it.e)
		}
	}()
	napply := 0
	for i := range items {
		it := &items[i]
		op := it.r.Op
		b := s.db.NewIndexedBatch()
		t := &txn{s: s, now: now, r: b, b: b, entry: it.e,
			prefix: objPrefix(c.pool.id, c.ns, it.r.OID), mkey: metaKey(c.pool.id, c.ns, it.r.OID)}
		it.t, it.b = t, b
		err := t.runWrite(op, it.r.OID)
		if err == nil && t.dirty {
			it.v = s.nextID()
			if err = t.commit(it.v); err == nil {
				it.apply = true
				napply++
				continue
			}
		}
		// Nothing to apply: as in Operate, the result may still rest on
		// an unsynced write.
		it.pending = it.e.newest()
		if err != nil {
			it.e.dropCache()
		} else {
			t.publishCache()
			it.v = t.version()
		}
		it.r.Err = err
	}

	var all *pebble.Batch
	var tk *ticket
	pushes := make([]pendPush, len(items))
	var err error
	if napply > 0 {
		all = s.db.NewBatch()
		for _, it := range items {
			if it.apply && err == nil {
				err = all.Apply(it.b, nil)
			}
		}
		if err == nil {
			tk = newTicket()
			for _, it := range items {
				if it.apply {
					tk.views.union(it.t.views)
				}
			}
			s.registerInflight(tk)
			for i, it := range items {
				if it.apply {
					pushes[i] = it.e.pushPending(tk, it.t)
				}
			}
			if err = s.db.ApplyNoSyncWait(all, syncOpts); err != nil {
				for i, it := range items {
					if it.apply {
						it.e.undoPending(pushes[i])
					}
				}
				s.finishInflight(tk, nil)
				tk = nil
			}
		}
		if err != nil {
			err = fmt.Errorf("embedded: apply: %w", err)
		}
		for _, it := range items {
			if !it.apply {
				continue
			}
			if err != nil {
				it.e.dropCache()
				it.r.Err = err
				continue
			}
			it.t.remember()
			it.t.publishCache()
		}
	}
	for _, it := range items {
		it.e.rw.Unlock()
	}
	c.pool.mu.RUnlock()
	for _, it := range items {
		it.b.Close()
	}
	if tk != nil {
		serr := all.SyncWait()
		s.countCommit(all.CommitStats())
		s.finishInflight(tk, serr)
		if serr != nil {
			// Visible but perhaps not durable; the DB is unusable.
			serr = fmt.Errorf("embedded: WAL sync: %w", serr)
		}
		for i, it := range items {
			if it.apply {
				it.e.doneSynced(pushes[i])
				it.r.Err = serr
				// A replaced or removed blob goes once that is durable.
				if serr == nil && it.t.orig.blob != 0 && it.t.orig.blob != it.t.cur.blob {
					s.removeBlob(it.t.orig.blob)
				}
			}
		}
	}
	if all != nil {
		all.Close()
	}
	for _, it := range items {
		if !it.apply {
			if werr := it.pending.wait(); it.r.Err == nil {
				it.r.Err = werr
			}
		}
		if it.r.Err == nil {
			it.r.Op.Version = it.v
		}
	}
}

// batchableWrite reports whether op can share OperateMany's batch: no
// WriteFull data large enough for a blob file (Operate writes those
// before taking the lock) and no deferred sync.
func (c *ioctx) batchableWrite(op *objstore.WriteOp) bool {
	if op == nil || op.DeferSync {
		return false
	}
	if th := c.s.opts.BlobThreshold; th > 0 {
		for _, st := range op.Steps {
			if wf, ok := st.(*objstore.WriteFull); ok && len(wf.Data) >= th {
				return false
			}
		}
	}
	return true
}
