package bucketindex

import (
	"bytes"
	"container/heap"
	"context"
	"sort"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Iter walks the entries of every shard in key order, like List. From the
// bucket's view (objstore.Viewer) it is one cursor that reads entries in
// place, decodes only those the caller takes, and skips ahead (SkipPast,
// past a common prefix) with one seek. Over the shards it keeps each
// shard's cursor between calls, so a skip pays a read only on the shards
// whose buffered page ends before the skip target, instead of a new merge
// over all of them. Its entries carry what a listing needs: Tag and
// Manifest are left empty and Meta is not checked (it is JSON as the
// writer stored it). The caller must Close it. Not safe for concurrent
// use.
type Iter struct {
	h     cursorHeap
	vc    objstore.ViewCursor // the view's cursor, or nil: the merge
	floor string              // entries <= floor are skipped
	reads int
	at    bool   // positioned at the next entry (by Peek)
	key   string // its key, once Peek made it
	cur   Entry  // the entry Next returned
}

// NewIter opens an iterator over entries with keys > startAfter that begin
// with prefix, for a caller that expects to take about want entries: each
// shard is read once now, PageSize(want, shards) entries at a time, in one
// batch (or the view's cursor is opened: it reads as it goes). While it is
// open over the view, the caller makes no other call on the index.
func (x Index) NewIter(ctx context.Context, startAfter, prefix string, want int) (*Iter, error) {
	if v := x.viewer(); v != nil {
		vc, err := v.OpenView(ctx, x.BucketID, startAfter, prefix)
		if err != nil {
			return nil, err
		}
		return &Iter{vc: vc, floor: startAfter, reads: 1}, nil
	}
	n := x.Layout.NumShards
	want = max(want, 1)
	curs := make([]*cursor, n)
	for i := range curs {
		curs[i] = &cursor{x: x, oid: x.shardOID(i), after: startAfter, prefix: prefix, page: PageSize(want, n)}
	}
	if err := fillAll(ctx, x.IO, curs); err != nil {
		return nil, err
	}
	it := &Iter{floor: startAfter, reads: n}
	for _, c := range curs {
		if len(c.buf) > 0 {
			it.h = append(it.h, c)
		}
	}
	heap.Init(&it.h)
	return it, nil
}

// Reads is the number of shard reads (or view seeks) so far.
func (it *Iter) Reads() int { return it.reads }

// SkipPast makes Next skip every entry with a key <= key.
func (it *Iter) SkipPast(key string) {
	if key <= it.floor {
		return
	}
	it.floor = key
	if it.at && it.key <= key {
		it.at, it.key = false, ""
		if it.vc != nil {
			// Past the whole skipped range in one seek.
			it.reads++
			it.vc.SeekAfter(key)
		}
	}
}

// Peek returns the next entry's key without taking or decoding it, or
// false at the end.
func (it *Iter) Peek(ctx context.Context) (string, bool, error) {
	if !it.at {
		ok, err := it.seek(ctx)
		if !ok || err != nil {
			return "", false, err
		}
	}
	if it.key == "" { // found by Next's seek, which makes no string
		it.key = string(it.vc.Key())
	}
	return it.key, true, nil
}

// Next returns the next entry, or false at the end. The entry is the
// iterator's, valid until its next call (not copied: an Entry is large).
func (it *Iter) Next(ctx context.Context) (*Entry, bool, error) {
	if !it.at {
		ok, err := it.seek(ctx)
		if !ok || err != nil {
			return nil, false, err
		}
	}
	it.cur = Entry{}
	if it.vc != nil {
		// The key Peek made, if any, is reused, not copied again; a
		// listing record holds none: the cursor's key is copied with
		// its strings.
		v := it.vc.Value()
		var err error
		if isListingRecord(v) {
			err = decodeListingRecordKey(&it.cur, v, it.key, it.vc.Key())
		} else {
			err = decodeListingInto(&it.cur, v, it.key)
		}
		if err != nil {
			return nil, false, err
		}
		// Meta (rarely there: an ACL) aliases the cursor's memory.
		it.cur.Meta = bytes.Clone(it.cur.Meta)
		it.at, it.key = false, ""
		it.vc.Next()
		return &it.cur, true, nil
	}
	c := it.h[0]
	if err := decodeListingInto(&it.cur, c.buf[0].Value, c.buf[0].Key); err != nil {
		return nil, false, err
	}
	it.at, it.key = false, ""
	c.buf = c.buf[1:]
	return &it.cur, true, it.settle(ctx, c)
}

// Close releases the iterator; over the view, a nil error says that every
// entry it returned is durable: the caller uses none before.
func (it *Iter) Close() error {
	if it.vc == nil {
		return nil
	}
	return it.vc.Close()
}

// seek moves to the next entry after the floor (at; over the merge, key
// is its key; over the view, none is made yet).
func (it *Iter) seek(ctx context.Context) (bool, error) {
	if it.vc != nil {
		for it.vc.Valid() {
			k := it.vc.Key()
			if bytes.HasPrefix(k, []byte(specialPrefix)) {
				return false, nil // the view holds none, but a bound of "" would let them in
			}
			if string(k) <= it.floor {
				it.reads++
				it.vc.SeekAfter(it.floor)
				continue
			}
			it.at = true
			return true, nil
		}
		return false, nil
	}
	for it.h.Len() > 0 {
		c := it.h[0]
		if c.buf[0].Key <= it.floor {
			if err := it.advance(ctx, c); err != nil {
				return false, err
			}
			continue
		}
		it.at, it.key = true, c.buf[0].Key
		return true, nil
	}
	return false, nil
}

// advance drops c's buffered entries up to the floor; when the buffer runs
// out, the next page is read from the floor on, skipping the rest in one
// read.
func (it *Iter) advance(ctx context.Context, c *cursor) error {
	i := sort.Search(len(c.buf), func(i int) bool { return c.buf[i].Key > it.floor })
	c.buf = c.buf[i:]
	if len(c.buf) == 0 && c.more && c.after < it.floor {
		c.after = it.floor
	}
	return it.settle(ctx, c)
}

// settle refills c if its buffer ran out and restores the heap (c is the
// top).
func (it *Iter) settle(ctx context.Context, c *cursor) error {
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
