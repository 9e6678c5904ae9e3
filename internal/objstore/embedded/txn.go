package embedded

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/interp"
	"github.com/cockroachdb/pebble/v2"
)

// txn is one operation's view of one object. Writes are staged in an
// indexed pebble batch, so later steps (and class methods) read through
// the batch and see them; nothing reaches the DB unless the batch commits.
// The caller holds the object's lock for the txn's whole life.
type txn struct {
	s *Store
	r pebble.Reader // the batch for a WriteOp, the DB for a ReadOp
	// shared, when set, serves every read instead of r: one iterator for
	// all the objects of an OperateReadMany.
	shared *pebble.Iterator
	b      *pebble.Batch // nil for a ReadOp
	entry  *objEntry
	prefix []byte // objPrefix
	mkey   []byte // metaKey

	orig, cur          meta
	origExists, exists bool
	cm                 *cachedMeta // where load found the meta, if cached
	xattrsTouched      bool        // a step set, removed or dropped xattrs
	// okeys are the omap keys steps set or removed, up to maxNotedKeys;
	// keysWide: more, or a range (pendNode).
	okeys    []string
	keysWide bool

	dirty bool // some step changed the object
	plain bool // ... through a step other than Exec
	now   time.Time
	mtime *time.Time

	preBlobs map[*objstore.WriteFull]uint64 // blobs written before the lock
	blobData map[uint64][]byte              // their contents, for copy-on-write
	cache    map[string]any                 // staged SetCached entries
	writers  map[string]bool                // classes whose methods wrote
	execd    bool                           // a class method ran
	views    keySpan                        // the view keys steps set or removed
	proj     objstore.Projection            // cur.proj's function, once looked up
	projName string
	seen     *seenChunk // a read op's chunk, looked up before the meta
}

func (t *txn) load() error {
	if c := t.entry.meta.Load(); c != nil {
		t.cm = c
		t.orig, t.cur, t.origExists, t.exists = c.m, c.m, c.exists, c.exists
		return nil
	}
	v, ok, err := t.get(t.mkey)
	if err != nil || !ok {
		return err
	}
	m, err := decodeMeta(v)
	if err != nil {
		return err
	}
	if m.viewPart {
		v, ok, err := t.get(t.part(partView))
		if err != nil {
			return err
		}
		if !ok {
			return objstore.Errorf(objstore.ErrInvalid, "embedded: view member without its view part")
		}
		if err := m.decodeView(v); err != nil {
			return err
		}
		if t.b == nil {
			// A read (under the object's read lock: the meta is the
			// store's) of a view member, an index shard: hot and few,
			// so later reads skip both gets, as after its writes.
			t.entry.meta.Store(&cachedMeta{m: m, exists: true})
		}
	}
	t.orig, t.cur, t.origExists, t.exists = m, m, true, true
	return nil
}

// runWrite loads the object's state (not for a fresh op, which starts
// from an absent object: it is validated as blind writes, and with
// Options.CheckFresh an existing object fails it) and runs op's steps.
func (t *txn) runWrite(op *objstore.WriteOp, oid string) error {
	if !op.Fresh || t.s.opts.CheckFresh {
		if err := t.load(); err != nil {
			return err
		}
	}
	if op.Fresh && t.exists {
		return objstore.Errorf(objstore.ErrExists, "fresh write of existing object %q", oid)
	}
	return interp.RunWrite(t, op.Steps)
}

func (t *txn) part(kind byte, suffix ...byte) []byte {
	k := make([]byte, 0, len(t.prefix)+1+len(suffix))
	k = append(append(append(k, t.prefix...), kind), suffix...)
	return k
}

func (t *txn) partStr(kind byte, s string) []byte {
	k := make([]byte, 0, len(t.prefix)+1+len(s))
	k = append(append(append(k, t.prefix...), kind), s...)
	return k
}

func chunkSuffix(idx int64) []byte { return binary.BigEndian.AppendUint32(nil, uint32(idx)) }

func (t *txn) chunkKey(idx int64) []byte { return t.part(partData, chunkSuffix(idx)...) }

// get returns a copy of key's value.
func (t *txn) get(key []byte) ([]byte, bool, error) {
	t.s.pointGets.Add(1)
	if it := t.shared; it != nil {
		it.SetBounds(nil, nil)
		// A point lookup: the whole key is the prefix (default comparer),
		// so the bloom filters apply as for Get.
		if !it.SeekPrefixGE(key) || !bytes.Equal(it.Key(), key) {
			return nil, false, it.Error()
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, false, err
		}
		return append(make([]byte, 0, len(v)), v...), true, nil
	}
	v, c, err := t.r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append(make([]byte, 0, len(v)), v...)
	return out, true, c.Close()
}

// iter returns an iterator over [lo, hi) on the txn's view: a new one, or
// the shared one with new bounds. Pass it to done, not Close.
func (t *txn) iter(lo, hi []byte) (*pebble.Iterator, error) {
	if t.shared != nil {
		t.shared.SetBounds(lo, hi)
		return t.shared, nil
	}
	return t.r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
}

// done closes it unless it is the shared iterator, and returns its error.
func (t *txn) done(it *pebble.Iterator) error {
	if it == t.shared {
		return it.Error()
	}
	return errors.Join(it.Error(), it.Close())
}

func (t *txn) set(k, v []byte) error { return t.b.Set(k, v, nil) }
func (t *txn) del(k []byte) error    { return t.b.Delete(k, nil) }

// clearKeys deletes every key in [lo, hi): point deletes for a few keys
// (cheap for later reads), one range tombstone for many.
func (t *txn) clearKeys(lo, hi []byte) error {
	const pointLimit = 256
	it, err := t.iter(lo, hi)
	if err != nil {
		return err
	}
	var keys [][]byte
	for it.First(); it.Valid() && len(keys) <= pointLimit; it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()...))
	}
	if err := t.done(it); err != nil {
		return err
	}
	if len(keys) > pointLimit {
		return t.b.DeleteRange(lo, hi, nil)
	}
	for _, k := range keys {
		if err := t.del(k); err != nil {
			return err
		}
	}
	return nil
}

// touch records a change, creating the object if it does not exist.
func (t *txn) touch(plain bool) {
	if !t.exists {
		t.exists = true
		t.cur.size, t.cur.blob = 0, 0
	}
	t.dirty = true
	if plain {
		t.plain = true
	}
}

func (t *txn) version() uint64 {
	if !t.exists {
		return 0
	}
	return t.cur.version
}

// ---- data ----

func (t *txn) readData(off, n int64) ([]byte, error) {
	size := t.cur.size
	if !t.exists || off >= size {
		return []byte{}, nil
	}
	end := size
	if n > 0 && off+n < size {
		end = off + n
	}
	out := make([]byte, end-off)
	if t.cur.blob != 0 {
		if d, ok := t.blobData[t.cur.blob]; ok {
			copy(out, d[off:end])
			return out, nil
		}
		return out, t.s.readBlob(t.cur.blob, off, out)
	}
	lo, hi := off/chunkSize, (end-1)/chunkSize
	if lo == hi {
		// One chunk (every object under chunkSize): a point lookup, which
		// the bloom filters serve, where a bounded scan would seek every
		// level whose tables span the key. A missing chunk is a hole.
		var v []byte
		var ok bool
		var err error
		if c := t.seen; c != nil && c.idx == lo {
			v, ok = c.v, c.found
		} else {
			v, ok, err = t.get(t.chunkKey(lo))
		}
		if ok {
			cs := lo * chunkSize
			if s, e := off, min(cs+int64(len(v)), end); s < e {
				copy(out, v[s-cs:e-cs])
			}
		}
		return out, err
	}
	it, err := t.iter(t.chunkKey(lo), t.chunkKey(hi+1))
	if err != nil {
		return nil, err
	}
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		cs := int64(binary.BigEndian.Uint32(k[len(t.prefix)+1:])) * chunkSize
		v := it.Value()
		s, e := max(cs, off), min(cs+int64(len(v)), end)
		if s < e {
			copy(out[s-off:e-off], v[s-cs:e-cs])
		}
	}
	return out, t.done(it)
}

// inline moves a blob-backed object's data into chunks (copy-on-write
// before a partial modification).
func (t *txn) inline() error {
	if t.cur.blob == 0 {
		return nil
	}
	data, err := t.readData(0, 0)
	if err != nil {
		return err
	}
	t.cur.blob = 0
	return t.putChunks(data)
}

// putChunks writes data as chunks 0.. of an object that has none.
func (t *txn) putChunks(data []byte) error {
	for i := int64(0); i*chunkSize < int64(len(data)); i++ {
		c := data[i*chunkSize : min((i+1)*chunkSize, int64(len(data)))]
		if err := t.set(t.chunkKey(i), c); err != nil {
			return err
		}
	}
	return nil
}

func nchunks(size int64) int64 { return (size + chunkSize - 1) / chunkSize }

// dropChunks deletes chunks [from, nchunks(size)) with blind point deletes.
func (t *txn) dropChunks(from, size int64) error {
	to := nchunks(size)
	if to-from > 256 {
		return t.b.DeleteRange(t.chunkKey(from), t.part(partData+1), nil)
	}
	for i := from; i < to; i++ {
		if err := t.del(t.chunkKey(i)); err != nil {
			return err
		}
	}
	return nil
}

func (t *txn) writeAt(off int64, data []byte, plain bool) error {
	if off < 0 {
		return objstore.Errorf(objstore.ErrInvalid, "negative offset")
	}
	end := off + int64(len(data))
	if err := interp.TooBig(end); err != nil {
		return err
	}
	t.touch(plain)
	if err := t.inline(); err != nil {
		return err
	}
	for idx := off / chunkSize; idx*chunkSize < end; idx++ {
		cs := idx * chunkSize
		old, _, err := t.get(t.chunkKey(idx))
		if err != nil {
			return err
		}
		ws, we := max(off, cs)-cs, min(end, cs+chunkSize)-cs
		buf := old
		if int64(len(buf)) < we {
			buf = make([]byte, we)
			copy(buf, old)
		}
		copy(buf[ws:we], data[cs+ws-off:cs+we-off])
		if err := t.set(t.chunkKey(idx), buf); err != nil {
			return err
		}
	}
	if end > t.cur.size {
		t.cur.size = end
	}
	return nil
}

func (t *txn) writeFull(data []byte, blob uint64, plain bool) error {
	t.touch(plain)
	n := int64(len(data))
	if t.cur.blob != 0 {
		t.cur.blob = 0 // a blob-backed object has no chunks
	} else if blob != 0 {
		if err := t.dropChunks(0, t.cur.size); err != nil {
			return err
		}
	} else if err := t.dropChunks(nchunks(n), t.cur.size); err != nil {
		return err
	}
	t.cur.size = n
	if blob != 0 {
		t.cur.blob = blob
		return nil
	}
	return t.putChunks(data)
}

func (t *txn) truncate(size int64, plain bool) error {
	if size < 0 {
		return objstore.Errorf(objstore.ErrInvalid, "negative size")
	}
	if err := interp.TooBig(size); err != nil {
		return err
	}
	t.touch(plain)
	if size == t.cur.size {
		return nil
	}
	if err := t.inline(); err != nil {
		return err
	}
	if size < t.cur.size {
		if err := t.dropChunks(nchunks(size), t.cur.size); err != nil {
			return err
		}
		if r := size % chunkSize; r != 0 {
			k := t.chunkKey(size / chunkSize)
			v, ok, err := t.get(k)
			if err != nil {
				return err
			}
			if ok && int64(len(v)) > r {
				if err := t.set(k, v[:r]); err != nil {
					return err
				}
			}
		}
	}
	t.cur.size = size
	return nil
}

func (t *txn) create(exclusive, plain bool) error {
	if t.exists && exclusive {
		return objstore.Errorf(objstore.ErrExists, "object exists")
	}
	t.touch(plain)
	return nil
}

func (t *txn) remove(plain bool) error {
	if err := interp.NeedObject(t); err != nil {
		return err
	}
	if t.cur.blob == 0 {
		if err := t.dropChunks(0, t.cur.size); err != nil {
			return err
		}
	}
	// Header, omap and xattrs: every part kind after data.
	if err := t.clearKeys(t.part(partData+1), succ(t.prefix)); err != nil {
		return err
	}
	t.dirty = true
	t.xattrsTouched = true
	if plain {
		t.plain = true
	}
	t.exists = false
	t.cur.size, t.cur.blob = 0, 0
	t.cur.view, t.cur.below, t.cur.proj = "", "", "" // its keys stay in the view (objstore.Viewer)
	t.cur.viewPart = false                           // cleared with the other parts
	return nil
}

// ---- xattrs ----

func (t *txn) getXattr(name string) ([]byte, bool, error) {
	if !t.exists {
		return nil, false, nil
	}
	if t.cm != nil && (t.b == nil || !t.xattrsTouched) {
		// An object whose meta is cached: its xattrs as of that meta,
		// loaded once. A read's view agrees with the meta; so does a
		// write's (under the write lock t.cm is current) until one of its
		// steps touches xattrs, and then it reads through its batch. (The
		// lease guard on every delivery remove op reads here.)
		xs := t.cm.xattrs.Load()
		if xs == nil {
			all, err := t.getXattrs()
			if err != nil {
				return nil, false, err
			}
			t.cm.xattrs.CompareAndSwap(nil, &all)
			xs = &all
		}
		i, ok := slices.BinarySearchFunc(*xs, name, func(kv objstore.KV, n string) int { return strings.Compare(kv.Key, n) })
		if !ok {
			return nil, false, nil
		}
		return bytes.Clone((*xs)[i].Value), true, nil
	}
	return t.get(t.partStr(partXattr, name))
}

func (t *txn) getXattrs() ([]objstore.KV, error) {
	if !t.exists {
		return nil, nil
	}
	kvs, _, err := t.scan(partXattr, "", "", 0, true)
	return kvs, err
}

func (t *txn) setXattr(name string, v []byte, plain bool) error {
	t.touch(plain)
	t.xattrsTouched = true
	return t.set(t.partStr(partXattr, name), v)
}

func (t *txn) rmXattr(name string, plain bool) error {
	if err := interp.NeedObject(t); err != nil {
		return err
	}
	t.touch(plain)
	t.xattrsTouched = true
	return t.del(t.partStr(partXattr, name))
}

// ---- omap ----

// scan lists keys of one part kind that sort after startAfter and begin
// with prefix, at most max (0 = all), and whether more exist.
func (t *txn) scan(kind byte, startAfter, prefix string, max int, vals bool) ([]objstore.KV, bool, error) {
	base := t.part(kind)
	lower := t.partStr(kind, prefix)
	upper := t.part(kind + 1)
	if prefix != "" {
		upper = succ(lower)
	}
	seek := lower
	if startAfter != "" {
		// The least key after startAfter: names never contain NUL.
		if s := append(append(append([]byte(nil), base...), startAfter...), 0); bytes.Compare(s, seek) > 0 {
			seek = s
		}
	}
	it, err := t.iter(lower, upper)
	if err != nil {
		return nil, false, err
	}
	var out []objstore.KV
	if max > 0 {
		out = make([]objstore.KV, 0, min(max, 128)) // a page's slice grows once, if at all
	}
	more := false
	p0 := it.Stats().InternalStats.PointCount // a shared iterator's stats add up
	for it.SeekGE(seek); it.Valid(); it.Next() {
		if max > 0 && len(out) == max {
			more = true
			break
		}
		kv := objstore.KV{Key: string(it.Key()[len(base):])}
		if vals {
			kv.Value = append(make([]byte, 0, len(it.Value())), it.Value()...)
		}
		out = append(out, kv)
	}
	if points := it.Stats().InternalStats.PointCount - p0; points > uint64(len(out))+deadScanMin {
		hi := upper
		if more {
			hi = append(append(bytes.Clone(base), out[len(out)-1].Key...), 0)
		}
		t.s.noteDead(seek, hi, points, len(out))
	}
	return out, more, t.done(it)
}

func (t *txn) omapVals(startAfter, prefix string, max int) ([]objstore.KV, bool, error) {
	if !t.exists {
		return nil, false, nil
	}
	return t.scan(partOmap, startAfter, prefix, max, true)
}

func (t *txn) omapGet(key string) ([]byte, bool, error) {
	if !t.exists {
		return nil, false, nil
	}
	if t.b != nil && t.shared == nil {
		return t.probe(t.partStr(partOmap, key))
	}
	return t.get(t.partStr(partOmap, key))
}

// probe is get for a key a write may well not find: an index link's
// entry when the object is new, a replayed key on its reshard target. A
// pebble Get skips the lowest level's bloom filters (large, and a Get
// usually finds its key), so a Get of an absent key read an index and a
// data block of the L6 table spanning it: at 30M objects half of a fill
// PUT's CPU, nearly all of it block cache misses (docs/bench/scale.md,
// "Stop 49"). A prefix seek with UseL6Filters consults every level's
// filter and reads blocks only where the key may be. A key that exists
// costs one filter probe more than a Get (the filter block stays cached:
// every such write reads it).
func (t *txn) probe(key []byte) ([]byte, bool, error) {
	t.s.pointGets.Add(1)
	it, err := t.r.NewIter(&pebble.IterOptions{LowerBound: key, UpperBound: append(key[:len(key):len(key)], 0), UseL6Filters: true})
	if err != nil {
		return nil, false, err
	}
	var v []byte
	ok := it.SeekPrefixGE(key) && bytes.Equal(it.Key(), key)
	if ok {
		var raw []byte
		if raw, err = it.ValueAndErr(); err == nil {
			v = append(make([]byte, 0, len(raw)), raw...)
		}
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, false, err
	}
	return v, ok, nil
}

// maxNotedKeys bounds the keys a write lists for readers (pendNode):
// an index link changes three or four.
const maxNotedKeys = 16

func (t *txn) noteKey(k string) {
	if len(t.okeys) == maxNotedKeys {
		t.keysWide = true
		return
	}
	t.okeys = append(t.okeys, k)
}

// changedKeys reports the omap keys the op changed, or wide when it
// changed more than that: the object's existence, its xattrs, a range.
func (t *txn) changedKeys() ([]string, bool) {
	if t.keysWide || t.xattrsTouched || !t.origExists || !t.exists {
		return nil, true
	}
	return t.okeys, false
}

func (t *txn) setOmap(pairs []objstore.KV, plain bool) error {
	t.touch(plain)
	for _, kv := range pairs {
		t.noteKey(kv.Key)
		if err := t.set(t.partStr(partOmap, kv.Key), kv.Value); err != nil {
			return err
		}
		if t.inView(kv.Key) {
			vk := t.viewKey(kv.Key)
			t.views.add(vk)
			v, err := t.viewValue(kv.Key, kv.Value)
			if err != nil {
				return err
			}
			if err := t.set(vk, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *txn) rmOmapKeys(keys []string, plain bool) error {
	if err := interp.NeedObject(t); err != nil {
		return err
	}
	t.touch(plain)
	for _, k := range keys {
		t.noteKey(k)
		if err := t.del(t.partStr(partOmap, k)); err != nil {
			return err
		}
		if t.inView(k) {
			vk := t.viewKey(k)
			t.views.add(vk)
			if err := t.del(vk); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *txn) omapRmRange(start, end string, plain bool) error {
	if err := interp.NeedObject(t); err != nil {
		return err
	}
	t.touch(plain)
	t.keysWide = true
	hi := t.part(partOmap + 1)
	if end != "" {
		hi = t.partStr(partOmap, end)
	}
	lo := t.partStr(partOmap, start)
	if err := t.unview(lo, hi); err != nil {
		return err
	}
	return t.clearKeys(lo, hi)
}

func (t *txn) omapClear(plain bool) error {
	if err := interp.NeedObject(t); err != nil {
		return err
	}
	t.touch(plain)
	t.keysWide = true
	if err := t.unview(t.part(partOmap), t.part(partOmap+1)); err != nil {
		return err
	}
	return t.clearKeys(t.part(partOmap), t.part(partOmap+1))
}

// ---- ordered views (objstore.Viewer) ----

// SetView implements interp.ViewMember.
func (t *txn) SetView(name, below, proj string) error {
	if proj != "" {
		if _, err := t.s.opts.Classes.LookupProjection(proj); err != nil {
			return err
		}
	}
	t.touch(true)
	if name == "" {
		below, proj = "", ""
	}
	if t.cur.view != name || t.cur.below != below || t.cur.proj != proj {
		t.cur.view, t.cur.below, t.cur.proj = name, below, proj
		t.cur.viewPart = false // commit writes the v part
	}
	return nil
}

// viewValue is what the object's view keeps for value v of key k.
func (t *txn) viewValue(k string, v []byte) ([]byte, error) {
	if t.cur.proj == "" {
		return v, nil
	}
	if t.proj == nil || t.projName != t.cur.proj {
		p, err := t.s.opts.Classes.LookupProjection(t.cur.proj)
		if err != nil {
			return nil, err // a member of a view whose projection this build lacks
		}
		t.proj, t.projName = p, t.cur.proj
	}
	return t.proj(k, v), nil
}

// inView reports whether omap key k of this object is copied to its view.
func (t *txn) inView(k string) bool {
	return t.cur.view != "" && (t.cur.below == "" || k < t.cur.below)
}

// viewKey is k's key in the object's view: the object prefix's pool and
// namespace (O <pool> <ns> 00 ...), then the view's name.
func (t *txn) viewKey(k string) []byte {
	nsEnd := 9 + bytes.IndexByte(t.prefix[9:], 0) + 1
	b := make([]byte, 0, nsEnd+len(t.cur.view)+1+len(k))
	b = append(append(b, kView), t.prefix[1:nsEnd]...)
	b = append(append(b, t.cur.view...), 0)
	return append(b, k...)
}

// unview removes from the object's view the member's own omap keys in
// [lo, hi) (full omap part keys): one point delete each, since the view's
// range holds the other members' keys too.
func (t *txn) unview(lo, hi []byte) error {
	if t.cur.view == "" {
		return nil
	}
	if t.cur.below != "" {
		if b := t.partStr(partOmap, t.cur.below); bytes.Compare(b, hi) < 0 {
			hi = b
		}
	}
	if bytes.Compare(lo, hi) >= 0 {
		return nil
	}
	it, err := t.iter(lo, hi)
	if err != nil {
		return err
	}
	base := len(t.part(partOmap))
	var keys []string
	for it.First(); it.Valid(); it.Next() {
		keys = append(keys, string(it.Key()[base:]))
	}
	if err := t.done(it); err != nil {
		return err
	}
	for _, k := range keys {
		vk := t.viewKey(k)
		t.views.add(vk)
		if err := t.del(vk); err != nil {
			return err
		}
	}
	return nil
}

func (t *txn) omapHeader() ([]byte, error) {
	if !t.exists {
		return nil, nil
	}
	v, _, err := t.get(t.part(partHeader))
	return v, err
}

func (t *txn) setOmapHeader(h []byte, plain bool) error {
	t.touch(plain)
	return t.set(t.part(partHeader), h)
}

// omapByKeys reads many omap keys with one iterator seeking through them
// in order (a Get per key builds a full iterator stack each time), by
// prefix seeks: the whole key is the prefix (pebble's default Split), so a
// seek consults each table's bloom filter and reads a data block only
// where its key may be. A plain SeekGE read a block in every level: in a
// reshard's replay at 10M objects, whose keys are mostly absent from the
// target (new objects), those reads were 97 % of the replay's CPU (stop 41).
// pointKeys: up to this many keys, omapByKeys reads each with a point get.
const pointKeys = 4

func (t *txn) omapByKeys(keys []string) ([]objstore.KV, error) {
	if !t.exists || len(keys) == 0 {
		return nil, nil
	}
	sorted := slices.Compact(slices.Sorted(slices.Values(keys)))
	if len(sorted) <= pointKeys {
		// Point reads: each consults the bloom filters and reads a block
		// only where its key may be. An iterator's seek positions every
		// level overlapping the range, a block read in each: at 30M
		// objects a DELETE's two-key read (entry, null pointer) cost
		// ~100 µs that way (docs/bench/scale.md, stop 40).
		var out []objstore.KV
		for _, k := range sorted {
			v, ok, err := t.omapGet(k)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, objstore.KV{Key: k, Value: v})
			}
		}
		return out, nil
	}
	lo := t.partStr(partOmap, sorted[0])
	hi := succ(t.partStr(partOmap, sorted[len(sorted)-1]))
	var it *pebble.Iterator
	var err error
	if t.shared != nil {
		it, err = t.iter(lo, hi)
	} else {
		// The lowest level's filters too: most of the data is there.
		it, err = t.r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi, UseL6Filters: true})
	}
	if err != nil {
		return nil, err
	}
	var out []objstore.KV
	base := len(lo) - len(sorted[0])
	for _, k := range sorted {
		want := t.partStr(partOmap, k)
		if !it.SeekPrefixGE(want) {
			continue
		}
		if bytes.Equal(it.Key(), want) {
			out = append(out, objstore.KV{Key: string(it.Key()[base:]), Value: append(make([]byte, 0, len(it.Value())), it.Value()...)})
		}
	}
	return out, t.done(it)
}

// remember caches the object's meta as this op left it (applied), for
// the next op on it; only after class methods, which mark hot objects.
// Called with the object's write lock held.
func (t *txn) remember() {
	if t.execd {
		c := &cachedMeta{m: t.cur, exists: t.exists}
		if t.cm != nil && !t.xattrsTouched && t.exists {
			// Under the write lock t.cm is still the current meta, and its
			// xattrs (if loaded) are this op's too.
			if xs := t.cm.xattrs.Load(); xs != nil {
				c.xattrs.Store(xs)
			}
		}
		t.entry.meta.Store(c)
	} else {
		t.entry.meta.Store(nil)
	}
}

// commitView writes the v part of an object that joined a view or
// changed it, and removes it from one that left (a removed object's parts
// are gone already): only then, not at every op (meta format 4).
func (t *txn) commitView() error {
	switch {
	case t.cur.view != "" && !t.cur.viewPart:
		t.cur.viewPart = true
		return t.set(t.part(partView), t.cur.encodeView())
	case t.cur.view == "" && t.origExists && t.orig.viewPart:
		t.cur.viewPart = false
		return t.del(t.part(partView))
	}
	return nil
}

// commit adds the object's meta (or its deletion) and blob references to
// the batch, with version v.
func (t *txn) commit(v uint64) error {
	if t.exists {
		t.cur.version = v
		t.cur.mtime = t.now.UnixNano()
		if t.mtime != nil {
			t.cur.mtime = t.mtime.UnixNano()
		}
		if err := t.commitView(); err != nil {
			return err
		}
		if err := t.set(t.mkey, t.cur.encode()); err != nil {
			return err
		}
	} else if t.origExists {
		if err := t.del(t.mkey); err != nil {
			return err
		}
	}
	if t.orig.blob != t.cur.blob {
		if t.orig.blob != 0 && t.origExists {
			if err := t.del(blobRefKey(t.orig.blob)); err != nil {
				return err
			}
		}
		if t.cur.blob != 0 {
			if err := t.set(blobRefKey(t.cur.blob), t.mkey); err != nil {
				return err
			}
		}
	}
	return nil
}
