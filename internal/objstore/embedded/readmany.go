package embedded

import (
	"cmp"
	"context"
	"slices"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/interp"
	"github.com/cockroachdb/pebble/v2"
)

var _ objstore.ReadBatcher = (*ioctx)(nil)

// OperateReadMany implements objstore.ReadBatcher. The plain reads (no
// class method, no data read) all run on one pebble iterator, opened while
// the shared locks of all their objects are held (taken in key order, so
// two batches cannot deadlock; a writer holds one object's lock only), on
// this goroutine: a listing that reads a page of every index shard builds
// one iterator stack instead of one per shard (and per guard's Get), and
// starts no goroutines. As in OperateRead, the locks are released before
// the steps run, and each read then waits for the sync of any write it saw.
// Other reads go through OperateRead one by one.
func (c *ioctx) OperateReadMany(ctx context.Context, reqs []objstore.ReadReq) {
	type item struct {
		r       *objstore.ReadReq
		t       *txn
		pending *ticket
	}
	items := make([]item, 0, len(reqs))
	for i := range reqs {
		r := &reqs[i]
		if r.Err = c.check(ctx, r.OID); r.Err != nil {
			continue
		}
		if r.Err = objstore.ValidateReadOp(r.Op); r.Err != nil {
			continue
		}
		if !batchable(r.Op) {
			r.Err = c.OperateRead(ctx, r.OID, r.Op)
			continue
		}
		items = append(items, item{r: r})
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
	entries := make([]*objEntry, 0, len(items))
	now := s.opts.Now()
	for i := range items {
		it := &items[i]
		if i == 0 || it.r.OID != items[i-1].r.OID {
			e := s.locks.acquire(c.lockKey(it.r.OID))
			e.rw.RLock()
			entries = append(entries, e)
		}
		e := entries[len(entries)-1]
		it.t = &txn{
			s: s, r: s.db, entry: e, now: now,
			prefix: objPrefix(c.pool.id, c.ns, it.r.OID),
			mkey:   metaKey(c.pool.id, c.ns, it.r.OID),
		}
		err := it.t.load()
		if err == nil {
			it.t.keepMeta(it.r.Op)
		}
		if err == nil && !it.t.exists && !it.r.Op.TolerantOfAbsence() {
			err = objstore.Errorf(objstore.ErrNotFound, "object %q", it.r.OID)
		}
		it.r.Err = err
		it.pending = e.newest()
	}
	// Under every lock no write of these objects is between apply and
	// publish, so the iterator, the loaded metas and pending agree.
	lo := objNsPrefix(c.pool.id, c.ns)
	iter, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: succ(lo)})
	for _, e := range entries {
		e.rw.RUnlock()
	}
	if err == nil {
		for _, it := range items {
			if it.r.Err != nil {
				continue
			}
			it.t.r, it.t.shared = nil, iter
			it.r.Err = interp.RunRead(it.t, it.r.Op.Steps)
		}
		err = iter.Close()
	}
	c.pool.mu.RUnlock()
	for _, it := range items {
		if err != nil && it.r.Err == nil {
			it.r.Err = err
		}
		if werr := it.pending.wait(); it.r.Err == nil {
			it.r.Err = werr
		}
	}
	for _, e := range entries {
		s.locks.release(e)
	}
}

// batchable reports whether op can run on OperateReadMany's iterator: it
// runs no class method (see snapshotRead) and reads no data (a blob's file
// is not covered by the iterator).
func batchable(op *objstore.ReadOp) bool {
	for _, st := range op.Steps {
		switch st.(type) {
		case *objstore.ExecStep, *objstore.ReadStep:
			return false
		}
	}
	return true
}
