package bucketindex

import (
	"container/heap"
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/cairn-s3/cairn/internal/objstore"
	json "github.com/goccy/go-json"
)

// VersionCond makes LinkVersion conditional (see linkVersionIn).
type VersionCond struct {
	// IfNoneETag: fail when the current object has this ETag (RGW's
	// If-None-Match: etag); IfTag: only if the current object is still
	// the write with this tag (conditions checked on it by the caller).
	IfNoneETag string
	IfTag      string

	IfAbsent  bool   // If-None-Match: *
	IfExists  bool   // If-Match: *
	IfETag    string // If-Match: etag
	DeferSync bool   // see LinkCond
	// Intent, when set, is stored under the entry's tag in the same
	// atomic op as the link (IntentRecord): the caller's proof, found by
	// a later recovery pass, that the version became visible before
	// whatever the intent describes (a notification) was committed.
	Intent []byte
}

// LinkVersion links e (a new version, or a delete marker when e.Marker)
// under the bucket's versioning mode, in one class call on e's shard. The
// class assigns e's Seq and VersionID (returned in the result). A retried
// call with the same e.Tag changes nothing and reports Retry. Errors:
// ErrCanceled (a condition failed), ErrNotFound (IfExists/IfETag/IfTag and
// no current object), ErrStale (the layout changed).
func (x Index) LinkVersion(ctx context.Context, mode string, e Entry, c VersionCond) (VersionResult, error) {
	return x.LinkVersionWith(ctx, mode, e, c)
}

// LinkVersionWith is LinkVersion committed in one atomic write with the
// ops of with (the new version's data, say): all apply or none; without
// any, it is LinkVersion. The index
// and every op's IOContext must share an objstore.AtomicWriter (the
// embedded store's pools do; RADOS has none: ErrNotSupported). An error of
// the link is returned as LinkVersion returns it; an op of with that fails
// fails the whole write with its own error.
func (x Index) LinkVersionWith(ctx context.Context, mode string, e Entry, c VersionCond, with ...objstore.AtomicReq) (VersionResult, error) {
	in, err := encodeLinkVersionIn(&linkVersionIn{Entry: e, Mode: mode, IfAbsent: c.IfAbsent, IfExists: c.IfExists, IfETag: c.IfETag, IfNoneETag: c.IfNoneETag, IfTag: c.IfTag, GCTime: x.gcTime()})
	if err != nil {
		return VersionResult{}, err
	}
	var intent []byte
	if len(c.Intent) > 0 {
		intent = encodePutIntentIn(e.Tag, c.Intent)
	}
	return x.versionOp(ctx, e.Key, "link_version", in, c.DeferSync, with, intent)
}

// UnlinkVersion removes version id ("null" for the null version) of key
// and promotes the next newest when it was current. ErrNotFound when the
// version does not exist; ErrCanceled when ifETag is set and differs.
func (x Index) UnlinkVersion(ctx context.Context, key, id, ifETag string) (VersionResult, error) {
	in, _ := json.Marshal(unlinkVersionIn{Key: key, VersionID: id, IfETag: ifETag, GCTime: x.gcTime()})
	return x.versionOp(ctx, key, "unlink_version", in, false, nil, nil)
}

// versionOp runs method on key's shard; intent (put_intent's input), when
// set, is stored in the same op after the method (so only if it
// succeeds). With with, the op commits atomically with those (see
// LinkVersionWith).
func (x Index) versionOp(ctx context.Context, key, method string, in []byte, deferSync bool, with []objstore.AtomicReq, intent []byte) (VersionResult, error) {
	op := objstore.NewWriteOp()
	op.DeferSync = deferSync
	ex := op.Exec(ClassName, method, in)
	if intent != nil {
		// A class step, not a plain SetOmap: a plain write drops the
		// shard's class cache, and every next link would read the header
		// from the store again.
		op.Exec(ClassName, "put_intent", intent)
	}
	var err error
	if len(with) > 0 {
		aw := x.atomicWith(with)
		if aw == nil {
			return VersionResult{}, objstore.Errorf(objstore.ErrNotSupported, "%s: no atomic write across the index and its data", method)
		}
		err = aw.OperateAtomic(ctx, append(with, objstore.AtomicReq{IO: x.IO, OID: x.ShardFor(key), Op: op}))
	} else {
		err = x.IO.Operate(ctx, x.ShardFor(key), op)
	}
	if err != nil {
		return VersionResult{}, err
	}
	var res VersionResult
	if err := json.Unmarshal(ex.Out, &res); err != nil {
		return res, objstore.Errorf(objstore.ErrInvalid, "%s output: %v", method, err)
	}
	if res.CurrentIsEntry {
		c := res.Entry
		res.Current, res.CurrentIsEntry = &c, false
	}
	return res, nil
}

// GetVersion returns version id of key: "null" is the null version (a
// legacy entry, or the record the null pointer names). ErrNotFound if none.
func (x Index) GetVersion(ctx context.Context, key, id string) (Entry, error) {
	oid := x.ShardFor(key)
	notFound := objstore.Errorf(objstore.ErrNotFound, "version %q of %q", id, key)
	var rk string
	if id == NullVersion {
		op := objstore.NewReadOp()
		notClosed(op)
		st := op.GetOmapValuesByKeys(key, nullKey(key))
		if err := x.IO.OperateRead(ctx, oid, op); err != nil {
			return Entry{}, readErr(err, oid)
		}
		for _, kv := range st.Pairs {
			if kv.Key == key {
				e, err := decodeEntry(kv.Value)
				if err == nil && e.Seq == 0 {
					e.VersionID = NullVersion
					return e, nil
				}
				continue
			}
			var p nullPtr
			if err := json.Unmarshal(kv.Value, &p); err != nil {
				return Entry{}, objstore.Errorf(objstore.ErrInvalid, "null pointer of %q: %v", key, err)
			}
			rk = verKey(key, p.Q)
		}
		if rk == "" {
			return Entry{}, notFound
		}
	} else {
		seq, ok := ParseVersionID(id)
		if !ok {
			return Entry{}, notFound
		}
		rk = verKey(key, seq)
	}
	op := objstore.NewReadOp()
	notClosed(op)
	st := op.GetOmapValuesByKeys(rk)
	if err := x.IO.OperateRead(ctx, oid, op); err != nil {
		return Entry{}, readErr(err, oid)
	}
	if len(st.Pairs) == 0 {
		return Entry{}, notFound
	}
	e, err := decodeEntry(st.Pairs[0].Value)
	if err != nil {
		return e, err
	}
	if e.VersionID != id {
		return Entry{}, notFound
	}
	return e, nil
}

// Newest returns key's newest version record (a delete marker when the
// key has no current object but has versions). ErrNotFound if none.
func (x Index) Newest(ctx context.Context, key string) (Entry, error) {
	oid := x.ShardFor(key)
	p := verKeyPrefix(key)
	op := objstore.NewReadOp()
	notClosed(op)
	vs := op.GetOmapValues(p, p, 1)
	if err := x.IO.OperateRead(ctx, oid, op); err != nil {
		return Entry{}, readErr(err, oid)
	}
	if len(vs.Pairs) == 0 {
		return Entry{}, objstore.Errorf(objstore.ErrNotFound, "versions of %q", key)
	}
	return decodeEntry(vs.Pairs[0].Value)
}

// VersionMark is a position in a version listing: after version Seq of
// Key, or after every version of Key when Seq is 0.
type VersionMark struct {
	Key string
	Seq uint64
}

// ListedVersion is one version in a listing.
type ListedVersion struct {
	Entry
	IsLatest bool
}

// ListVersions returns up to max versions (and delete markers) of keys
// beginning with prefix after mark, in key order and newest first within a
// key, merged across every shard, and whether more exist. Legacy entries
// are listed as the null version. The first version listed of a key is
// its latest unless the listing resumed inside that key.
func (x Index) ListVersions(ctx context.Context, mark VersionMark, prefix string, max int) ([]ListedVersion, bool, error) {
	if max <= 0 {
		return nil, false, nil
	}
	it, err := x.NewVersionIter(ctx, mark, prefix, max)
	if err != nil {
		return nil, false, err
	}
	out := make([]ListedVersion, 0, max)
	for {
		v, ok, err := it.Next(ctx)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return out, false, nil
		}
		out = append(out, v)
		if len(out) == max {
			_, more := it.Peek()
			return out, more, nil
		}
	}
}

// VersionIter walks versions as ListVersions lists them, keeping each
// shard's two cursors (version records, legacy entries) between calls, so
// that a caller skipping ahead (SkipPast, past a common prefix) re-reads
// only the cursors whose buffered page ends before the skip target,
// instead of restarting the merge over every shard. Not safe for
// concurrent use.
type VersionIter struct {
	h       vheap
	mark    VersionMark
	lastKey string
	started bool
	reads   int
}

// NewVersionIter opens an iterator over the versions after mark of keys
// beginning with prefix, for a caller that expects to take about want:
// both cursors of every shard are read now, in one batch.
func (x Index) NewVersionIter(ctx context.Context, mark VersionMark, prefix string, want int) (*VersionIter, error) {
	n := x.Layout.NumShards
	want = max(want, 1)
	per := min(2*want/n+8, want)
	recStart := verKey(mark.Key, mark.Seq)
	if mark.Key == "" {
		recStart = ""
	}
	curs := make([]*vcursor, 0, 2*n)
	for i := 0; i < n; i++ {
		oid := x.shardOID(i)
		curs = append(curs,
			&vcursor{x: x, oid: oid, after: recStart, prefix: verPrefix + escapeName(prefix), page: per},
			&vcursor{x: x, oid: oid, after: mark.Key, prefix: prefix, page: per, legacy: true})
	}
	if err := fillAllVersions(ctx, x.IO, curs); err != nil {
		return nil, err
	}
	it := &VersionIter{mark: mark, reads: len(curs)}
	for _, c := range curs {
		if len(c.buf) > 0 {
			it.h = append(it.h, c)
		}
	}
	heap.Init(&it.h)
	return it, nil
}

// Reads is the number of cursor reads so far.
func (it *VersionIter) Reads() int { return it.reads }

// Peek returns the key of the next version, or false at the end.
func (it *VersionIter) Peek() (string, bool) {
	if it.h.Len() == 0 {
		return "", false
	}
	return it.h[0].buf[0].e.Key, true
}

// Next returns the next version, or false at the end. The first version
// listed of a key is its latest unless the listing resumed inside that key.
func (it *VersionIter) Next(ctx context.Context) (ListedVersion, bool, error) {
	if it.h.Len() == 0 {
		return ListedVersion{}, false, nil
	}
	c := it.h[0]
	v := c.buf[0]
	latest := !it.started || v.e.Key != it.lastKey
	if !it.started && it.mark.Seq > 0 && v.e.Key == it.mark.Key {
		latest = false
	}
	it.started, it.lastKey = true, v.e.Key
	c.buf = c.buf[1:]
	return ListedVersion{Entry: v.e, IsLatest: latest}, true, it.settle(ctx, c)
}

// SkipPast skips every version of every key <= key (a key no version
// has: past a common prefix, the prefix and 0xff).
func (it *VersionIter) SkipPast(ctx context.Context, key string) error {
	rec := verKey(key, 0) // after every version of key
	for it.h.Len() > 0 {
		c := it.h[0]
		if c.buf[0].sort > rec {
			return nil
		}
		i := sort.Search(len(c.buf), func(i int) bool { return c.buf[i].sort > rec })
		c.buf = c.buf[i:]
		if len(c.buf) == 0 && c.more {
			// Read on from the target, not through the skipped range.
			after := rec
			if c.legacy {
				after = key
			}
			if c.after < after {
				c.after = after
			}
		}
		if err := it.settle(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// settle refills c (the top) if its buffer ran out and restores the heap.
func (it *VersionIter) settle(ctx context.Context, c *vcursor) error {
	if len(c.buf) == 0 && c.more {
		it.reads++
		if err := c.fill(ctx); err != nil {
			return err
		}
	}
	if len(c.buf) == 0 {
		heap.Pop(&it.h)
	} else {
		heap.Fix(&it.h, 0)
	}
	return nil
}

type vitem struct {
	sort string // the version record key (legacy entries: after all of the key's)
	e    Entry
}

// vcursor pages through one shard's version records, or (legacy) its bare
// entries with Seq 0, skipping the rest; a shard without legacy entries
// (its header says so) is not scanned for them.
type vcursor struct {
	x      Index
	oid    string
	after  string
	prefix string
	page   int
	legacy bool
	buf    []vitem
	more   bool
}

// fillAllVersions reads every cursor's first page in one batch (see
// fillAll); a cursor whose page held only records it skips reads on alone.
func fillAllVersions(ctx context.Context, io objstore.IOContext, curs []*vcursor) error {
	reqs := make([]objstore.ReadReq, len(curs))
	hss := make([]*objstore.OmapHeaderStep, len(curs))
	vss := make([]*objstore.OmapValsStep, len(curs))
	for i, c := range curs {
		reqs[i].OID = c.oid
		reqs[i].Op, hss[i], vss[i] = c.readOp()
	}
	objstore.OperateReadMany(ctx, io, reqs)
	var errs []error
	for i, c := range curs {
		if err := reqs[i].Err; err != nil {
			errs = append(errs, readErr(err, c.oid))
			continue
		}
		again, err := c.take(hss[i], vss[i])
		if err == nil && again {
			err = c.fill(ctx)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *vcursor) readOp() (*objstore.ReadOp, *objstore.OmapHeaderStep, *objstore.OmapValsStep) {
	op := objstore.NewReadOp()
	notClosed(op)
	var hs *objstore.OmapHeaderStep
	if c.legacy {
		hs = op.GetOmapHeader()
	}
	return op, hs, op.GetOmapValues(c.after, c.prefix, c.page)
}

func (c *vcursor) fill(ctx context.Context) error {
	for {
		op, hs, vs := c.readOp()
		if err := c.x.IO.OperateRead(ctx, c.oid, op); err != nil {
			return readErr(err, c.oid)
		}
		again, err := c.take(hs, vs)
		if err != nil || !again {
			return err
		}
	}
}

// take buffers a page read by readOp; again reports that it held only
// records the cursor skips and more follow, so the next page must be read.
func (c *vcursor) take(hs *objstore.OmapHeaderStep, vs *objstore.OmapValsStep) (again bool, err error) {
	c.buf = c.buf[:0]
	c.more = vs.More
	if c.legacy {
		h, err := decodeHeader(hs.Header)
		if err != nil {
			return false, err
		}
		if h.Legacy == 0 {
			c.more = false
			return false, nil
		}
	}
	for _, kv := range vs.Pairs {
		c.after = kv.Key
		if c.legacy {
			if strings.HasPrefix(kv.Key, specialPrefix) {
				c.more = false
				break
			}
			_, seq, err := entrySizeSeq(kv.Value)
			if err != nil {
				return false, err
			}
			if seq != 0 {
				continue
			}
			e, err := decodeEntry(kv.Value)
			if err != nil {
				return false, err
			}
			e.VersionID = NullVersion
			c.buf = append(c.buf, vitem{sort: verKey(e.Key, 0), e: e})
			continue
		}
		e, err := decodeEntry(kv.Value)
		if err != nil {
			return false, err
		}
		c.buf = append(c.buf, vitem{sort: kv.Key, e: e})
	}
	return len(c.buf) == 0 && c.more, nil
}

type vheap []*vcursor

func (h vheap) Len() int           { return len(h) }
func (h vheap) Less(i, j int) bool { return h[i].buf[0].sort < h[j].buf[0].sort }
func (h vheap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *vheap) Push(v any)        { *h = append(*h, v.(*vcursor)) }
func (h *vheap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

// atomicWith returns the AtomicWriter for the index and every op's pool,
// or nil.
func (x Index) atomicWith(with []objstore.AtomicReq) objstore.AtomicWriter {
	var aw objstore.AtomicWriter
	for _, r := range with {
		if aw = objstore.Atomic(x.IO, r.IO); aw == nil {
			return nil
		}
	}
	return aw
}
