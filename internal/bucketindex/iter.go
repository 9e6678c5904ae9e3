package bucketindex

import (
	"container/heap"
	"context"
	"sort"
)

// Iter walks the entries of every shard in key order, like List, but keeps
// each shard's cursor between calls, so a caller that skips ahead (past a
// common prefix, SkipPast) pays a read only on the shards whose buffered
// page ends before the skip target, instead of a new merge over all of
// them. Its entries carry what a listing needs: Tag and Manifest are left
// empty and Meta is not checked (it is JSON as the writer stored it). Not
// safe for concurrent use.
type Iter struct {
	h     cursorHeap
	floor string // entries <= floor are skipped
	reads int
}

// NewIter opens an iterator over entries with keys > startAfter that begin
// with prefix, for a caller that expects to take about want entries: each
// shard is read once now, PageSize(want, shards) entries at a time, in one
// batch (or the view once, want+1 entries: the one after the last tells
// the caller the listing goes on).
func (x Index) NewIter(ctx context.Context, startAfter, prefix string, want int) (*Iter, error) {
	n := x.Layout.NumShards
	want = max(want, 1)
	var curs []*cursor
	if v := x.viewer(); v != nil {
		c := &cursor{x: x, view: v, after: startAfter, prefix: prefix, page: min(want+1, maxViewPage)}
		if err := c.fill(ctx); err != nil {
			return nil, err
		}
		curs, n = []*cursor{c}, 1
	} else {
		curs = make([]*cursor, n)
		for i := range curs {
			curs[i] = &cursor{x: x, oid: x.shardOID(i), after: startAfter, prefix: prefix, page: PageSize(want, n)}
		}
		if err := fillAll(ctx, x.IO, curs); err != nil {
			return nil, err
		}
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

// maxViewPage bounds one read of the view (a 1,000-key page and the key
// after it).
const maxViewPage = 1001

// Reads is the number of shard (or view) reads so far.
func (it *Iter) Reads() int { return it.reads }

// SkipPast makes Next skip every entry with a key <= key.
func (it *Iter) SkipPast(key string) {
	if key > it.floor {
		it.floor = key
	}
}

// Next returns the next entry, or false at the end.
func (it *Iter) Next(ctx context.Context) (Entry, bool, error) {
	for it.h.Len() > 0 {
		c := it.h[0]
		if c.buf[0].Key <= it.floor {
			if err := it.advance(ctx, c); err != nil {
				return Entry{}, false, err
			}
			continue
		}
		e, err := decodeListing(c.buf[0].Value)
		if err != nil {
			return Entry{}, false, err
		}
		c.buf = c.buf[1:]
		if err := it.settle(ctx, c); err != nil {
			return Entry{}, false, err
		}
		return e, true, nil
	}
	return Entry{}, false, nil
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
