//go:build rados

package radosstore

/*
#include <rados/librados.h>
*/
import "C"

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/interp"
)

// model is one attempt of an optimistic transaction: the object as read at
// baseVersion (fetched lazily, every read guarded by assert_version), with
// the op's earlier steps applied on top, and the list of primitive write
// steps that reproduce those changes in one rados_write_op.
type model struct {
	c        *ioContext
	io       C.rados_ioctx_t
	oid      string
	now      time.Time
	conflict bool // a lazy read found the object changed: retry

	baseExists  bool
	baseVersion uint64
	baseMtime   time.Time
	fromCache   bool // base taken from metaCache, not read: validate before trusting a no-write result
	confirmed   bool // a guarded read succeeded: the base was current then

	exists bool
	size   int64
	xattrs map[string][]byte
	header []byte

	dataFresh  bool            // current data = dataOps applied to nothing (base irrelevant)
	dataOps    []objstore.Step // *Write, *WriteFull, *Truncate since the base or the fresh point
	baseData   []byte
	baseLoaded bool

	omapCleared bool
	overlay     map[string]ovVal
	rmRanges    [][2]string // removed [start, end) ranges ("" end = to the end)
	baseOmap    map[string]ovVal

	emitted []objstore.Step
	dirty   bool
	plain   bool
	mtime   *time.Time
	writers map[string]bool
	staged  map[string]any

	speculate bool     // answer unknown omap keys "absent" without reading (speculate.go)
	assumed   []string // keys so answered: the write asserts each is still absent
}

type ovVal struct {
	v   []byte
	del bool
}

func (c *ioContext) newModel(io C.rados_ioctx_t, oid string) *model {
	return &model{c: c, io: io, oid: oid, now: c.s.opts.Now(), xattrs: map[string][]byte{},
		overlay: map[string]ovVal{}, baseOmap: map[string]ovVal{}}
}

// load reads stat, xattrs and the omap header in one round trip.
func (m *model) load() error {
	op := objstore.NewReadOp()
	st := op.Stat()
	xs := op.GetXattrs()
	hd := op.GetOmapHeader()
	m.c.s.txnReads.Add(1)
	err := m.c.readSteps(m.io, m.oid, 0, op.Steps, opTxnLoad)
	if objstore.Code(err) == objstore.ErrNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	m.baseExists, m.exists = true, true
	m.baseVersion, m.baseMtime, m.size = st.Stat.Version, st.Stat.ModTime, st.Stat.Size
	for _, kv := range xs.Attrs {
		m.xattrs[kv.Key] = kv.Value
	}
	m.header = hd.Header
	return nil
}

// metaState is what a committed transaction knows about the object it
// left: existence, size, xattrs and header at version. The next
// transaction of this process on the object starts from it instead of
// reading (saving a round trip); every later read and the write are
// guarded by assert_version(version), so a stale entry only costs a retry.
type metaState struct {
	version uint64
	exists  bool
	size    int64
	xattrs  map[string][]byte
	header  []byte
}

func (m *model) fromMeta(ms *metaState) {
	m.fromCache = true
	m.baseExists, m.exists, m.baseVersion, m.size = ms.exists, ms.exists, ms.version, ms.size
	m.header = ms.header
	for k, v := range ms.xattrs {
		m.xattrs[k] = v
	}
}

func (m *model) metaAfter(version uint64) *metaState {
	ms := &metaState{version: version, exists: m.exists, size: m.size, header: m.header, xattrs: make(map[string][]byte, len(m.xattrs))}
	for k, v := range m.xattrs {
		ms.xattrs[k] = v
	}
	return ms
}

// validate checks a cache-started model against the object (one guarded
// stat) and loads the modification time.
func (m *model) validate() error {
	if !m.fromCache {
		return nil
	}
	m.fromCache = false
	if !m.baseExists {
		st := &objstore.StatStep{}
		m.c.s.txnReads.Add(1)
		err := m.c.readSteps(m.io, m.oid, 0, []objstore.Step{st}, opTxnRead)
		if err == nil {
			m.conflict = true // it exists now
		} else if objstore.Code(err) != objstore.ErrNotFound {
			return err
		}
		return nil
	}
	st := &objstore.StatStep{}
	if err := m.guarded(st); err != nil {
		return err
	}
	m.baseMtime = st.Stat.ModTime
	return nil
}

// guarded runs a follow-up read at the base version; a change since sets
// conflict, success confirms the base.
func (m *model) guarded(steps ...objstore.Step) error {
	m.c.s.txnReads.Add(1)
	err := m.c.readSteps(m.io, m.oid, m.baseVersion, steps, opTxnRead)
	if err == errRestart {
		m.conflict = true
	} else if err == nil {
		m.confirmed = true
	}
	return err
}

func (m *model) version() uint64 {
	if !m.exists {
		return 0
	}
	return m.baseVersion
}

func (m *model) emit(s objstore.Step, plain bool) {
	m.emitted = append(m.emitted, s)
	m.dirty = true
	if plain {
		m.plain = true
	}
}

func (m *model) touch() {
	if !m.exists {
		m.exists, m.size, m.dataFresh, m.dataOps = true, 0, true, nil
	}
}

// --- data ---

func (m *model) data() ([]byte, error) {
	if !m.exists {
		return []byte{}, nil
	}
	var buf []byte
	if !m.dataFresh && m.baseExists {
		if !m.baseLoaded {
			rd := &objstore.ReadStep{}
			if err := m.guarded(rd); err != nil {
				return nil, err
			}
			m.baseData, m.baseLoaded = rd.Data, true
		}
		buf = append(buf, m.baseData...)
	}
	for _, s := range m.dataOps {
		switch s := s.(type) {
		case *objstore.WriteFull:
			buf = append(buf[:0], s.Data...)
		case *objstore.Write:
			if end := int(s.Offset) + len(s.Data); end > len(buf) {
				buf = append(buf, make([]byte, end-len(buf))...)
			}
			copy(buf[s.Offset:], s.Data)
		case *objstore.Truncate:
			if int(s.Size) <= len(buf) {
				buf = buf[:s.Size]
			} else {
				buf = append(buf, make([]byte, int(s.Size)-len(buf))...)
			}
		}
	}
	return buf, nil
}

func (m *model) readData(off, n int64) ([]byte, error) {
	if !m.exists || off >= m.size {
		return []byte{}, nil
	}
	d, err := m.data()
	if err != nil {
		return nil, err
	}
	end := int64(len(d))
	if n > 0 && off+n < end {
		end = off + n
	}
	return append([]byte{}, d[off:end]...), nil
}

func (m *model) writeAt(off int64, data []byte, plain bool) error {
	if off < 0 {
		return objstore.Errorf(objstore.ErrInvalid, "negative offset")
	}
	if err := interp.TooBig(off + int64(len(data))); err != nil {
		return err
	}
	m.touch()
	w := &objstore.Write{Offset: off, Data: data}
	m.dataOps = append(m.dataOps, w)
	m.size = max(m.size, off+int64(len(data)))
	m.emit(w, plain)
	return nil
}

func (m *model) writeFull(data []byte, plain bool) error {
	if err := interp.TooBig(int64(len(data))); err != nil {
		return err
	}
	m.touch()
	w := &objstore.WriteFull{Data: data}
	m.dataFresh, m.dataOps = true, []objstore.Step{w}
	m.size = int64(len(data))
	m.emit(w, plain)
	return nil
}

func (m *model) truncate(size int64, plain bool) error {
	if size < 0 {
		return objstore.Errorf(objstore.ErrInvalid, "negative size")
	}
	if err := interp.TooBig(size); err != nil {
		return err
	}
	m.touch()
	t := &objstore.Truncate{Size: size}
	m.dataOps = append(m.dataOps, t)
	m.size = size
	m.emit(t, plain)
	return nil
}

func (m *model) create(exclusive, plain bool) error {
	if m.exists && exclusive {
		return objstore.Errorf(objstore.ErrExists, "object exists")
	}
	m.touch()
	m.emit(&objstore.Create{Exclusive: exclusive}, plain)
	return nil
}

func (m *model) remove(plain bool) error {
	if err := interp.NeedObject(m); err != nil {
		return err
	}
	m.exists, m.size, m.xattrs, m.header = false, 0, map[string][]byte{}, nil
	m.dataFresh, m.dataOps = true, nil
	m.omapCleared, m.overlay, m.rmRanges = true, map[string]ovVal{}, nil
	m.emit(&objstore.Remove{}, plain)
	return nil
}

// --- xattrs and header ---

func (m *model) getXattr(name string) ([]byte, bool) {
	if !m.exists {
		return nil, false
	}
	v, ok := m.xattrs[name]
	return v, ok
}

func (m *model) getXattrs() []objstore.KV {
	if !m.exists {
		return nil
	}
	var out []objstore.KV
	for k, v := range m.xattrs {
		out = append(out, objstore.KV{Key: k, Value: v})
	}
	sortKVs(out)
	return out
}

func (m *model) setXattr(name string, v []byte, plain bool) error {
	if err := checkUserXattr(name); err != nil {
		return err
	}
	m.touch()
	m.xattrs[name] = v
	m.emit(&objstore.SetXattr{Name: name, Value: v}, plain)
	return nil
}

func (m *model) rmXattr(name string, plain bool) error {
	if err := checkUserXattr(name); err != nil {
		return err
	}
	if err := interp.NeedObject(m); err != nil {
		return err
	}
	delete(m.xattrs, name)
	m.emit(&objstore.RmXattr{Name: name}, plain)
	return nil
}

func (m *model) setHeader(h []byte, plain bool) error {
	m.touch()
	m.header = h
	m.emit(&objstore.SetOmapHeader{Header: h}, plain)
	return nil
}

func (m *model) getHeader() []byte {
	if !m.exists {
		return nil
	}
	return m.header
}

// --- omap ---

func (m *model) inRemoved(k string) bool {
	for _, r := range m.rmRanges {
		if k >= r[0] && (r[1] == "" || k < r[1]) {
			return true
		}
	}
	return false
}

// baseHidden: the base value of k is not visible (overridden or removed).
func (m *model) baseHidden(k string) bool {
	if _, ok := m.overlay[k]; ok {
		return true
	}
	return m.omapCleared || !m.baseExists || m.inRemoved(k)
}

func (m *model) omapGet(k string) ([]byte, bool, error) {
	if !m.exists {
		return nil, false, nil
	}
	if o, ok := m.overlay[k]; ok {
		return o.v, !o.del, nil
	}
	if m.baseHidden(k) {
		return nil, false, nil
	}
	if o, ok := m.baseOmap[k]; ok {
		return o.v, !o.del, nil
	}
	if m.speculate {
		m.assume(k)
		return nil, false, nil
	}
	st := &objstore.OmapValsByKeysStep{Keys: []string{k}}
	if err := m.guarded(st); err != nil {
		return nil, false, err
	}
	if len(st.Pairs) == 1 {
		m.baseOmap[k] = ovVal{v: st.Pairs[0].Value}
		return st.Pairs[0].Value, true, nil
	}
	m.baseOmap[k] = ovVal{del: true}
	return nil, false, nil
}

// omapGetMany answers what the overlay and the base cache know and reads
// the rest in one guarded by-keys read. Result sorted by key.
func (m *model) omapGetMany(keys []string) ([]objstore.KV, error) {
	if !m.exists {
		return nil, nil
	}
	sorted := slices.Compact(slices.Sorted(slices.Values(keys)))
	var missing []string
	for _, k := range sorted {
		if _, ok := m.overlay[k]; ok || m.baseHidden(k) {
			continue
		}
		if _, ok := m.baseOmap[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 && m.speculate {
		for _, k := range missing {
			m.assume(k)
		}
		missing = nil
	}
	if len(missing) > 0 {
		st := &objstore.OmapValsByKeysStep{Keys: missing}
		if err := m.guarded(st); err != nil {
			return nil, err
		}
		for _, k := range missing {
			m.baseOmap[k] = ovVal{del: true}
		}
		for _, kv := range st.Pairs {
			m.baseOmap[kv.Key] = ovVal{v: kv.Value}
		}
	}
	var out []objstore.KV
	for _, k := range sorted {
		v, ok, err := m.omapGet(k) // answered locally now
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, objstore.KV{Key: k, Value: v})
		}
	}
	return out, nil
}

// omapVals merges the base (paged, guarded) with the overlay.
func (m *model) omapVals(startAfter, prefix string, maxN int) ([]objstore.KV, bool, error) {
	if !m.exists {
		return nil, false, nil
	}
	var ov []objstore.KV
	for k, o := range m.overlay {
		if !o.del && k > startAfter && strings.HasPrefix(k, prefix) {
			ov = append(ov, objstore.KV{Key: k, Value: o.v})
		}
	}
	sortKVs(ov)
	limit := 0
	page := 1 << 20
	if maxN > 0 {
		limit = maxN + 1
		page = min(1024, max(64, limit))
	}
	var base []objstore.KV
	baseMore := !m.omapCleared && m.baseExists
	cursor := startAfter
	fetch := func() error {
		st := &objstore.OmapValsStep{StartAfter: cursor, Prefix: prefix, Max: page}
		if err := m.guarded(st); err != nil {
			return err
		}
		baseMore = st.More && len(st.Pairs) > 0
		for _, kv := range st.Pairs {
			cursor = kv.Key
			if _, over := m.overlay[kv.Key]; over || m.inRemoved(kv.Key) {
				continue
			}
			base = append(base, kv)
		}
		return nil
	}
	var out []objstore.KV
	bi, oi := 0, 0
	for limit == 0 || len(out) < limit {
		for bi == len(base) && baseMore {
			base, bi = base[:0], 0
			if err := fetch(); err != nil {
				return nil, false, err
			}
		}
		switch {
		case bi < len(base) && (oi == len(ov) || base[bi].Key < ov[oi].Key):
			out = append(out, base[bi])
			bi++
		case oi < len(ov):
			out = append(out, ov[oi])
			oi++
		default:
			return out, false, nil
		}
	}
	return out[:maxN], true, nil
}

func (m *model) setOmap(pairs []objstore.KV, plain bool) error {
	m.touch()
	for _, kv := range pairs {
		m.overlay[kv.Key] = ovVal{v: kv.Value}
	}
	m.emit(&objstore.SetOmap{Pairs: pairs}, plain)
	return nil
}

func (m *model) rmOmapKeys(keys []string, plain bool) error {
	if err := interp.NeedObject(m); err != nil {
		return err
	}
	for _, k := range keys {
		m.overlay[k] = ovVal{del: true}
	}
	m.emit(&objstore.RmOmapKeys{Keys: keys}, plain)
	return nil
}

func (m *model) omapRmRange(start, end string, plain bool) error {
	if err := interp.NeedObject(m); err != nil {
		return err
	}
	for k := range m.overlay {
		if k >= start && (end == "" || k < end) {
			delete(m.overlay, k)
		}
	}
	m.rmRanges = append(m.rmRanges, [2]string{start, end})
	m.emit(&objstore.OmapRmRange{Start: start, End: end}, plain)
	return nil
}

func (m *model) omapClear(plain bool) error {
	if err := interp.NeedObject(m); err != nil {
		return err
	}
	m.omapCleared, m.overlay, m.rmRanges = true, map[string]ovVal{}, nil
	m.emit(&objstore.OmapClear{}, plain)
	return nil
}

// --- drivers ---

// Group commit bounds: one batch is one rados_write_op, so it stays well
// under the OSD's message and write limits.
const (
	maxBatchOps   = 64
	maxBatchInput = 4 << 20 // bytes of method input
)

// pendingOp is a write op waiting for (or in) a transaction batch.
type pendingOp struct {
	ctx   context.Context
	op    *objstore.WriteOp
	err   error
	done  bool
	ready chan struct{} // closed by finish
}

func (p *pendingOp) finish(err error) { p.err, p.done = err, true; close(p.ready) }

// batchable reports whether op may commit in one rados_write_op with other
// ops: it consists of class-method calls only, so no step of it asserts
// the object's version, which batched ops share.
func batchable(op *objstore.WriteOp) bool {
	for _, s := range op.Steps {
		if _, ok := s.(*objstore.ExecStep); !ok {
			return false
		}
	}
	return len(op.Steps) > 0
}

func inputLen(op *objstore.WriteOp) int {
	n := 0
	for _, s := range op.Steps {
		if e, ok := s.(*objstore.ExecStep); ok {
			n += len(e.In)
		}
	}
	return n
}

// operateTxn runs a write op as an optimistic transaction; see the package
// doc. This process's transactions on one object are serialised, so
// conflicts come only from other clients. Ops of class-method calls that
// wait for the object meanwhile are group-committed: the next holder runs
// all of them, in arrival order, on one model and writes them in one
// rados_write_op, so a hot object (a log, a queue shard) gets one round
// trip per batch instead of one per op.
func (c *ioContext) operateTxn(ctx context.Context, io C.rados_ioctx_t, oid string, op *objstore.WriteOp) error {
	key := c.cacheKey(oid)
	e, release := c.s.locks.ref(key)
	defer release()
	p := &pendingOp{ctx: ctx, op: op, ready: make(chan struct{})}
	if !batchable(op) {
		e.sem <- struct{}{}
		defer func() { <-e.sem }()
		c.runBatch(io, oid, key, []*pendingOp{p})
		return p.err
	}
	e.qmu.Lock()
	e.queue = append(e.queue, p)
	e.qmu.Unlock()
	for {
		// Done by another holder's batch, or the object is free: then
		// run what waits (this op at the latest in a later batch).
		select {
		case <-p.ready:
			return p.err
		case e.sem <- struct{}{}:
		}
		if p.done {
			<-e.sem
			return p.err
		}
		e.qmu.Lock()
		n, size := 0, 0
		for n < len(e.queue) && n < maxBatchOps {
			size += inputLen(e.queue[n].op)
			if n > 0 && size > maxBatchInput {
				break
			}
			n++
		}
		batch := append([]*pendingOp(nil), e.queue[:n]...)
		e.queue = append(e.queue[:0], e.queue[n:]...)
		e.qmu.Unlock()
		c.runBatch(io, oid, key, batch)
		<-e.sem
	}
}

// runBatch runs ops as one optimistic transaction, in order, as if each
// ran alone right after the previous one: an op that fails is left out
// (the others are replayed without it: methods are deterministic) and gets
// its error; the rest commit in one write and share its version. Every op
// is finished on return.
func (c *ioContext) runBatch(io C.rados_ioctx_t, oid string, key objKey, ops []*pendingOp) {
	c.s.txns.Add(int64(len(ops)))
	live := ops
	sc := c.specScore(ops)
	specOK := !slices.ContainsFunc(ops, func(p *pendingOp) bool { return !batchable(p.op) }) && shouldSpeculate(sc)
	for attempt := 1; ; attempt++ {
		guessed := false // the attempt failed on a guess: rerun reading
		if attempt > 1 {
			c.s.conflicts.Add(1)
		}
		live = slices.DeleteFunc(live, func(p *pendingOp) bool {
			if err := p.ctx.Err(); err != nil {
				p.finish(err)
				return true
			}
			return false
		})
		if len(live) == 0 {
			return
		}
		m := c.newModel(io, oid)
		m.speculate = specOK
		if ms := c.s.caches.meta(key); ms != nil && attempt == 1 {
			m.fromMeta(ms)
		} else if err := m.load(); err != nil {
			for _, p := range live {
				p.finish(err)
			}
			return
		}
		// The base, to replay from when an op fails.
		base, baseCached, baseMtime := m.metaAfter(m.baseVersion), m.fromCache, m.baseMtime
		for {
			failed := false
			for _, p := range live {
				err := interp.RunWrite(m, p.op.Steps)
				if err == nil || m.conflict {
					if m.conflict {
						break
					}
					continue
				}
				if len(m.assumed) > 0 {
					// a guess may not decide a failure: rerun reading
					c.specDone(sc, false)
					m.conflict, guessed = true, true
					break
				}
				if m.fromCache {
					// a failure computed from cached state may be stale: confirm
					if verr := m.validate(); verr != nil || m.conflict {
						m.conflict = true
						break
					}
				}
				p.finish(err)
				failed = true
				break
			}
			if !failed || m.conflict {
				break
			}
			live = slices.DeleteFunc(live, func(p *pendingOp) bool { return p.done })
			if !m.fromCache {
				baseCached, baseMtime = false, m.baseMtime // validated: no need to confirm again
			}
			m = c.newModel(io, oid)
			m.speculate = specOK
			m.fromMeta(base)
			m.fromCache, m.baseMtime = baseCached, baseMtime
		}
		if len(live) == 0 {
			return
		}
		if !m.conflict && !m.dirty && len(m.assumed) > 0 {
			// nothing to write to assert the guesses with
			c.specDone(sc, false)
			m.conflict, guessed = true, true
		}
		if !m.conflict && !m.dirty {
			// nothing to write: the result must not rest on a stale cache
			if err := m.validate(); err != nil {
				for _, p := range live {
					p.finish(err)
				}
				return
			}
		}
		if !m.conflict {
			if !m.dirty {
				for _, p := range live {
					p.op.Version = m.version()
					p.finish(nil)
				}
				if m.baseExists && len(m.staged) > 0 {
					c.s.caches.publish(key, m.baseVersion, m.baseVersion, false, nil, m.staged)
				}
				return
			}
			pre := &prefix{assertVersion: m.baseVersion, createExcl: !m.baseExists}
			// The model validated every exclusive create against the base
			// the prefix guards; replayed after that guard's own create
			// they would fail, so they become plain creates.
			steps := make([]objstore.Step, 0, len(m.assumed)+len(m.emitted)+1)
			steps = append(steps, m.guards()...)
			for _, s := range m.emitted {
				if c, ok := s.(*objstore.Create); ok && c.Exclusive {
					s = &objstore.Create{}
				}
				steps = append(steps, s)
			}
			if m.mtime != nil {
				steps = append(steps, &objstore.SetMtime{Time: *m.mtime})
			}
			v, werr := c.writeSteps(io, oid, pre, steps, opTxnWrite)
			if len(m.assumed) > 0 {
				c.specDone(sc, werr == nil)
			}
			if werr == nil {
				for _, p := range live {
					p.op.Version = v
					p.finish(nil)
				}
				if len(live) > 1 {
					c.s.batched.Add(int64(len(live)))
				}
				c.s.caches.publish(key, m.baseVersion, v, m.plain, m.writers, m.staged)
				c.s.caches.setMeta(key, m.metaAfter(v))
				return
			}
			if code := objstore.Code(werr); code != objstore.ErrCanceled && code != objstore.ErrExists {
				c.s.caches.drop(key)
				if len(live) == 1 {
					live[0].finish(werr)
					return
				}
				// The combination failed (too large, say): each alone.
				for _, p := range live {
					c.runBatch(io, oid, key, []*pendingOp{p})
				}
				return
			}
			c.s.caches.dropMeta(key)
			// ECANCELED after guesses: a guess (or the version) was wrong
			guessed = guessed || len(m.assumed) > 0
		}
		if guessed {
			// not a conflict: the same attempt again, reading every key
			specOK = false
			attempt--
			continue
		}
		if attempt >= c.s.opts.MaxAttempts {
			for _, p := range live {
				p.finish(objstore.Errorf(objstore.ErrBusy, "operate %s: %d optimistic attempts conflicted with other writers", oid, attempt))
			}
			return
		}
		bctx := context.Background()
		if len(live) == 1 {
			bctx = live[0].ctx
		}
		if err := backoff(bctx, attempt); err != nil {
			for _, p := range live {
				p.finish(err)
			}
			return
		}
	}
}

// readTxn evaluates a read op in Go over a version-guarded snapshot.
//
// A read of class calls only starts, like a write transaction, from the
// state this process's last transaction on the object left (a queue
// shard's list right after commits): its lazy reads are guarded by that
// version, so the state read is saved, and an answer no read confirmed is
// validated with one guarded stat. A stale start costs a retry.
func (c *ioContext) readTxn(ctx context.Context, io C.rados_ioctx_t, oid string, op *objstore.ReadOp) error {
	key := c.cacheKey(oid)
	c.s.txns.Add(1)
	execOnly := !slices.ContainsFunc(op.Steps, func(s objstore.Step) bool { _, ok := s.(*objstore.ExecStep); return !ok })
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			c.s.conflicts.Add(1)
		}
		m := c.newModel(io, oid)
		var err error
		cached := false
		if ms := c.s.caches.meta(key); execOnly && attempt == 1 && ms != nil && ms.exists {
			m.fromMeta(ms)
			cached = true
		} else {
			err = m.load()
		}
		if err == nil && !m.baseExists && !op.TolerantOfAbsence() {
			return objstore.Errorf(objstore.ErrNotFound, "object %q does not exist", oid)
		}
		if err == nil {
			err = interp.RunRead(m, op.Steps)
		}
		if m.fromCache && !m.conflict && !m.confirmed {
			// nothing read at the cached version: confirm it
			if verr := m.validate(); verr != nil && !m.conflict {
				return verr
			}
		}
		if !m.conflict {
			if err == nil && len(m.staged) > 0 {
				c.s.caches.publish(key, m.baseVersion, m.baseVersion, false, nil, m.staged)
			}
			return err
		}
		if attempt >= c.s.opts.MaxAttempts {
			return objstore.Errorf(objstore.ErrBusy, "read %s: object kept changing (%d attempts)", oid, attempt)
		}
		if cached {
			continue // a stale start, not a race: read the state at once
		}
		if err := backoff(ctx, attempt); err != nil {
			return err
		}
	}
}

// backoff sleeps 0.5–1× min(1 ms·2^attempt, 50 ms).
func backoff(ctx context.Context, attempt int) error {
	d := time.Millisecond << min(attempt, 6)
	d = min(d, 50*time.Millisecond)
	d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
