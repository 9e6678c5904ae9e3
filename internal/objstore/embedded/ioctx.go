package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/interp"
	"github.com/cockroachdb/pebble/v2"
)

type ioctx struct {
	s     *Store
	pool  *pool
	ns    string
	nsErr error
}

func (c *ioctx) Pool() string      { return c.pool.name }
func (c *ioctx) Namespace() string { return c.ns }

// WithNamespace: rados_ioctx_set_namespace, as a new handle. A bad name is
// reported (ErrInvalid) by every operation on the handle.
func (c *ioctx) WithNamespace(ns string) objstore.IOContext {
	return &ioctx{s: c.s, pool: c.pool, ns: ns, nsErr: objstore.ValidateNamespace(ns)}
}

func (c *ioctx) check(ctx context.Context, oid string) error {
	if c.nsErr != nil {
		return c.nsErr
	}
	if err := objstore.ValidateObjectName(oid); err != nil {
		return err
	}
	if err := c.s.checkOpen(); err != nil {
		return err
	}
	return ctx.Err()
}

// lockKey names the object in the lock table: pool id, ns, 0, oid.
func (c *ioctx) lockKey(oid string) string {
	b := make([]byte, 0, 9+len(c.ns)+len(oid))
	b = append(append(u64(b, c.pool.id), c.ns...), 0)
	return string(append(b, oid...))
}

// rlockPool holds the pool shared; ErrNotFound once it has been deleted.
func (c *ioctx) rlockPool() error {
	c.pool.mu.RLock()
	if c.pool.deleted {
		c.pool.mu.RUnlock()
		return objstore.Errorf(objstore.ErrNotFound, "pool %q was deleted", c.pool.name)
	}
	return nil
}

// Operate: rados_write_op_operate. The op runs under the object's lock in
// an indexed batch that is applied without waiting for its WAL sync; the
// lock is released before the sync, so ops on one object pipeline their
// syncs, and readers that see the batch wait for the sync (objEntry.chain).
func (c *ioctx) Operate(ctx context.Context, oid string, op *objstore.WriteOp) error {
	if err := c.check(ctx, oid); err != nil {
		return err
	}
	if err := objstore.ValidateWriteOp(op); err != nil {
		return err
	}
	s := c.s
	t := &txn{s: s, now: s.opts.Now()}

	// Large WriteFull data goes to blob files, written and synced before
	// the object lock is taken.
	if th := s.opts.BlobThreshold; th > 0 {
		for _, st := range op.Steps {
			if wf, ok := st.(*objstore.WriteFull); ok && len(wf.Data) >= th {
				id, err := s.writeBlob(wf.Data)
				if err != nil {
					t.dropBlobs(0)
					return err
				}
				if t.preBlobs == nil {
					t.preBlobs = map[*objstore.WriteFull]uint64{}
					t.blobData = map[uint64][]byte{}
				}
				t.preBlobs[wf] = id
				t.blobData[id] = wf.Data
			}
		}
	}

	if err := c.rlockPool(); err != nil {
		t.dropBlobs(0)
		return err
	}
	e := s.locks.acquire(c.lockKey(oid))
	defer s.locks.release(e)
	e.rw.Lock()
	b := s.db.NewIndexedBatch()
	t.r, t.b, t.entry = b, b, e
	t.prefix = objPrefix(c.pool.id, c.ns, oid)
	t.mkey = metaKey(c.pool.id, c.ns, oid)

	err := t.runWrite(op, oid)
	if err != nil || !t.dirty {
		// Nothing to apply; the result may still rest on unsynced state.
		pending := e.newest()
		if err != nil {
			e.dropCache()
		} else {
			t.publishCache()
		}
		v := t.version()
		e.rw.Unlock()
		c.pool.mu.RUnlock()
		b.Close()
		t.dropBlobs(0)
		if werr := pending.wait(); err == nil {
			err = werr
		}
		if err == nil {
			op.Version = v
		}
		return err
	}

	// A deferred op's batch goes to the WAL unsynced: the WAL is one
	// ordered log, so the next synced write makes it durable too (pebble
	// fsyncs the log up to and past a synced record, and closes, syncing,
	// the old log before a rotation starts the next; no WAL failover is
	// configured). Not when
	// it replaces a blob: that file is deleted below, and a crash must not
	// bring back a pointer to it.
	if (op.DeferSync || c.deferredBy(ctx)) && (t.orig.blob == 0 || t.orig.blob == t.cur.blob) {
		return c.applyDeferred(t, op, e, b)
	}
	v := s.nextID()
	if err := t.commit(v); err != nil {
		e.dropCache()
		e.rw.Unlock()
		c.pool.mu.RUnlock()
		b.Close()
		t.dropBlobs(0)
		return err
	}
	tk := newTicket()
	tk.views = t.views
	s.registerInflight(tk)
	push := e.pushPending(tk, t)
	if err := s.db.ApplyNoSyncWait(b, syncOpts); err != nil {
		e.undoPending(push)
		s.finishInflight(tk, nil)
		e.dropCache()
		e.rw.Unlock()
		c.pool.mu.RUnlock()
		b.Close()
		t.dropBlobs(0)
		return fmt.Errorf("embedded: apply: %w", err)
	}
	t.remember()
	t.publishCache()
	e.rw.Unlock()
	c.pool.mu.RUnlock()

	serr := b.SyncWait()
	s.countCommit(b.CommitStats())
	s.finishInflight(tk, serr)
	e.doneSynced(push)
	b.Close()
	if serr != nil {
		// The write is visible but may not be durable; the DB is unusable.
		return fmt.Errorf("embedded: WAL sync: %w", serr)
	}
	if t.orig.blob != 0 && t.orig.blob != t.cur.blob {
		s.removeBlob(t.orig.blob)
	}
	t.dropBlobs(t.cur.blob)
	op.Version = v
	return nil
}

// deferredBy reports whether ctx defers the syncs of writes to this
// store (objstore.WithDeferredSync).
func (c *ioctx) deferredBy(ctx context.Context) bool {
	o, ok := objstore.DeferredSync(ctx).(*ioctx)
	return ok && o.s == c.s
}

// Sync implements objstore.Syncer: a synced empty WAL record, which makes
// every earlier (deferred) record durable with it.
func (c *ioctx) Sync(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.s.db.LogData(nil, syncOpts); err != nil {
		return fmt.Errorf("embedded: sync: %w", err)
	}
	return nil
}

// applyDeferred commits t's batch without waiting for a WAL sync (see
// WriteOp.DeferSync). It runs with the object and pool locks held and
// releases them.
func (c *ioctx) applyDeferred(t *txn, op *objstore.WriteOp, e *objEntry, b *pebble.Batch) error {
	s := c.s
	v := s.nextID()
	err := t.commit(v)
	if err == nil {
		if err = s.db.Apply(b, pebble.NoSync); err != nil {
			err = fmt.Errorf("embedded: apply: %w", err)
		}
	}
	if err != nil {
		e.dropCache()
	} else {
		t.remember()
		t.publishCache()
	}
	e.rw.Unlock()
	c.pool.mu.RUnlock()
	b.Close()
	if err != nil {
		t.dropBlobs(0)
		return err
	}
	t.dropBlobs(t.cur.blob)
	op.Version = v
	return nil
}

// dropBlobs removes the op's pre-written blobs except keep.
func (t *txn) dropBlobs(keep uint64) {
	for _, id := range t.preBlobs {
		if id != keep {
			t.s.removeBlob(id)
		}
	}
}

// OperateRead: rados_read_op_operate. The object's shared lock gives a
// consistent view; the read then waits for the sync of any write it saw.
func (c *ioctx) OperateRead(ctx context.Context, oid string, op *objstore.ReadOp) error {
	if err := c.check(ctx, oid); err != nil {
		return err
	}
	if err := objstore.ValidateReadOp(op); err != nil {
		return err
	}
	s := c.s
	if err := c.rlockPool(); err != nil {
		return err
	}
	e := s.locks.acquire(c.lockKey(oid))
	defer s.locks.release(e)
	keys := readKeys(op)
	e.rw.RLock()
	t := &txn{
		s: s, r: s.db, entry: e, now: s.opts.Now(),
		prefix: objPrefix(c.pool.id, c.ns, oid),
		mkey:   metaKey(c.pool.id, c.ns, oid),
	}
	if rs := chunkRead(op); rs != nil && e.meta.Load() == nil {
		// A small object's GET: one point read, not two (readCovered).
		ok, err := t.readCovered(rs)
		if ok || err != nil {
			pending := e.pendingFor(keys)
			e.rw.RUnlock()
			c.pool.mu.RUnlock()
			if werr := pending.wait(); err == nil {
				err = werr
			}
			return err
		}
	}
	err := t.load()
	if err == nil {
		t.keepMeta(op)
	}
	if err == nil && !t.exists && !op.TolerantOfAbsence() {
		err = objstore.Errorf(objstore.ErrNotFound, "object %q", oid)
	}
	if err == nil && snapshotRead(op, t.cur.blob != 0) {
		// Plain reads run on a pebble snapshot taken under the lock, after
		// it is released: under the lock no write of this object is between
		// apply and publish, so the snapshot, the cached meta and pending
		// agree. Held through a slow read (an omap page from disk), the
		// shared lock made the object's next writer wait, and with it every
		// reader queued behind that writer (RWMutex): at scale, listing
		// and GETs stalled PUTs and each other (issue 24).
		snap := s.db.NewSnapshot()
		pending := e.pendingFor(keys)
		e.rw.RUnlock()
		t.r = snap
		err = interp.RunRead(t, op.Steps)
		if cerr := snap.Close(); err == nil {
			err = cerr
		}
		c.pool.mu.RUnlock()
		if werr := pending.wait(); err == nil {
			err = werr
		}
		return err
	}
	if err == nil {
		err = interp.RunRead(t, op.Steps)
	}
	if err == nil {
		t.publishCache()
	}
	pending := e.pendingFor(keys)
	e.rw.RUnlock()
	c.pool.mu.RUnlock()
	if werr := pending.wait(); err == nil {
		err = werr
	}
	return err
}

// readKeys returns the omap keys a read op sees when that is all it sees
// besides the object's existence and xattrs (an index shard's GetOmap-
// ValuesByKeys under a state guard: a GET's or HEAD's entry lookup), so it
// waits only for unsynced writes of those (objEntry.pendingFor); nil
// for any other op.
func readKeys(op *objstore.ReadOp) []string {
	var keys []string
	for _, st := range op.Steps {
		switch st := st.(type) {
		case *objstore.OmapValsByKeysStep:
			keys = append(keys, st.Keys...)
		case *objstore.OmapCmp:
			keys = append(keys, st.Key)
		case *objstore.CmpXattr, *objstore.AssertExists, *objstore.GetXattrStep, *objstore.GetXattrsStep:
		default:
			return nil
		}
	}
	if keys == nil {
		return nil // guards alone: no reason to narrow
	}
	return keys
}

// ListObjects lists by name from the meta keys, then waits for the sync of
// every write that was in flight, so it never reports an undurable object.
func (c *ioctx) ListObjects(ctx context.Context, marker string, max int) ([]string, bool, error) {
	if c.nsErr != nil {
		return nil, false, c.nsErr
	}
	if max < 0 {
		return nil, false, objstore.Errorf(objstore.ErrInvalid, "list: negative max")
	}
	if err := c.s.checkOpen(); err != nil {
		return nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if err := c.rlockPool(); err != nil {
		return nil, false, err
	}
	prefix := nsPrefix(c.pool.id, c.ns)
	seek := prefix
	if marker != "" {
		seek = append(append(bytes.Clone(prefix), marker...), 0)
	}
	kvs, more, err := c.scanSynced(prefix, succ(prefix), seek, max, false, false)
	if err != nil {
		return nil, false, err
	}
	oids := make([]string, len(kvs))
	for i, kv := range kvs {
		oids[i] = kv.Key
	}
	return oids, more, nil
}

// scanSynced reads up to max (0 = all) keys of [lower, upper) from seek
// on, with the part after lower as the key (and the value if vals), and
// whether more exist; the caller holds the pool shared, which scanSynced
// releases. It then waits for the sync of every write in flight (of a
// view read, every one that set or removed view keys in the range the
// page covers: a write elsewhere cannot have shown in it), so the result
// holds nothing a crash could take back.
func (c *ioctx) scanSynced(lower, upper, seek []byte, max int, vals, view bool) ([]objstore.KV, bool, error) {
	it, err := c.s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		c.pool.mu.RUnlock()
		return nil, false, err
	}
	var out []objstore.KV
	if max > 0 {
		out = make([]objstore.KV, 0, min(max, 1024))
	}
	more := false
	for it.SeekGE(seek); it.Valid(); it.Next() {
		if max > 0 && len(out) == max {
			more = true
			break
		}
		kv := objstore.KV{Key: string(it.Key()[len(lower):])}
		if vals {
			v := it.Value()
			kv.Value = append(make([]byte, 0, len(v)), v...)
		}
		out = append(out, kv)
	}
	points := it.Stats().InternalStats.PointCount // before Close resets it
	err = errors.Join(it.Error(), it.Close())
	c.pool.mu.RUnlock()
	if err != nil {
		return nil, false, err
	}
	if points > uint64(len(out))+deadScanMin {
		hi := upper
		if more {
			hi = append(append(bytes.Clone(lower), out[len(out)-1].Key...), 0)
		}
		c.s.noteDead(seek, hi, points, len(out))
	}
	var span *keySpan
	if view {
		// The page covers [seek, upper), or up to its last key when more
		// follow (NUL is the least byte: last+NUL is its successor).
		span = &keySpan{lo: seek, hi: upper}
		if more {
			span.hi = append(append(bytes.Clone(lower), out[len(out)-1].Key...), 0)
		}
	}
	if err := c.s.waitInflight(span); err != nil {
		return nil, false, err
	}
	return out, more, nil
}

// keepMeta caches the meta t loaded from the LSM when op is guarded by an
// xattr: such reads are of shared objects (an index shard's state is
// checked by every GET, HEAD and listing of its keys), so, as after a
// class write (remember), the next op reads neither the meta nor, through
// it, the xattr. Called under the object's shared lock, where no write is
// between apply and publish: the meta is the committed one, and every
// later write replaces or clears it under the write lock.
func (t *txn) keepMeta(op *objstore.ReadOp) {
	if t.cm != nil || !t.exists || !xattrGuarded(op) {
		return
	}
	if cm := (&cachedMeta{m: t.cur, exists: true}); t.entry.meta.CompareAndSwap(nil, cm) {
		t.cm = cm
	}
}

// xattrGuarded reports whether op compares an xattr.
func xattrGuarded(op *objstore.ReadOp) bool {
	for _, st := range op.Steps {
		if _, ok := st.(*objstore.CmpXattr); ok {
			return true
		}
	}
	return false
}

// snapshotRead reports whether op can run on a snapshot without the
// object's lock: no class method (they read and stage the object's cache,
// which must match what they read) and no data read of a blob-backed
// object (a writer replacing the blob deletes its file once it holds the
// lock, which a lock-free reader would not stop).
func snapshotRead(op *objstore.ReadOp, blob bool) bool {
	for _, st := range op.Steps {
		switch st.(type) {
		case *objstore.ExecStep:
			return false
		case *objstore.ReadStep:
			if blob {
				return false
			}
		}
	}
	return true
}
