package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/cairn-s3/cairn/internal/objstore"
)

var _ objstore.Viewer = (*ioctx)(nil)

// ReadView implements objstore.Viewer: one iterator over the view's key
// range, then a wait for the sync of every write in flight that wrote view
// keys, so the page holds nothing a crash could still take back. Not for
// the others: under a scale run's load, waiting for GC batches and a
// reshard's copy in flight as well doubled a page's median latency.
func (c *ioctx) ReadView(ctx context.Context, name, startAfter, prefix string, max int) ([]objstore.KV, bool, error) {
	if err := c.checkView(ctx, name); err != nil {
		return nil, false, err
	}
	if max < 0 {
		return nil, false, objstore.Errorf(objstore.ErrInvalid, "read view: negative max")
	}
	if err := c.rlockPool(); err != nil {
		return nil, false, err
	}
	base := viewPrefix(c.pool.id, c.ns, name)
	lower := append(bytes.Clone(base), prefix...)
	upper := succ(lower)
	seek := lower
	if startAfter != "" {
		// The least key after startAfter: keys never contain NUL.
		if s := append(append(bytes.Clone(base), startAfter...), 0); bytes.Compare(s, seek) > 0 {
			seek = s
		}
	}
	// From base, so that keys keep their prefix: upper and seek bound
	// the scan to it.
	return c.scanSynced(base, upper, seek, max, true, true)
}

// RemoveView implements objstore.Viewer: one range deletion, synced.
func (c *ioctx) RemoveView(ctx context.Context, name string) error {
	if err := c.checkView(ctx, name); err != nil {
		return err
	}
	if err := c.rlockPool(); err != nil {
		return err
	}
	defer c.pool.mu.RUnlock()
	lo := viewPrefix(c.pool.id, c.ns, name)
	b := c.s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(lo, succ(lo), nil); err != nil {
		return err
	}
	if err := c.s.db.Apply(b, syncOpts); err != nil {
		return fmt.Errorf("embedded: remove view: %w", err)
	}
	return nil
}

func (c *ioctx) checkView(ctx context.Context, name string) error {
	if c.nsErr != nil {
		return c.nsErr
	}
	if name == "" {
		return objstore.Errorf(objstore.ErrInvalid, "empty view name")
	}
	if err := objstore.ValidateObjectName(name); err != nil {
		return err
	}
	if err := c.s.checkOpen(); err != nil {
		return err
	}
	return ctx.Err()
}

// OpenView implements objstore.Viewer: one pebble iterator over the view's
// key range; Close waits, as ReadView does, for the sync of every write in
// flight to the keys the walk covered.
func (c *ioctx) OpenView(ctx context.Context, name, startAfter, prefix string) (objstore.ViewCursor, error) {
	if err := c.checkView(ctx, name); err != nil {
		return nil, err
	}
	if err := c.rlockPool(); err != nil {
		return nil, err
	}
	base := viewPrefix(c.pool.id, c.ns, name)
	lower := append(bytes.Clone(base), prefix...)
	upper := succ(lower)
	it, err := c.s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		c.pool.mu.RUnlock()
		return nil, err
	}
	vc := &viewCursor{c: c, it: it, base: base, upper: upper, seek: lower}
	if startAfter != "" {
		// The least key after startAfter: keys never contain NUL.
		if s := append(append(bytes.Clone(base), startAfter...), 0); bytes.Compare(s, lower) > 0 {
			vc.seek = s
		}
	}
	vc.valid = it.SeekGE(vc.seek)
	return vc, nil
}

type viewCursor struct {
	c       *ioctx
	it      *pebble.Iterator
	base    []byte // the view's key prefix, cut from keys
	upper   []byte
	seek    []byte // where the walk began
	scratch []byte
	valid   bool
	steps   int // pairs shown, for the dead-range heuristic
	closed  bool
}

var _ objstore.ViewCursor = (*viewCursor)(nil)

func (v *viewCursor) Valid() bool   { return v.valid }
func (v *viewCursor) Key() []byte   { return v.it.Key()[len(v.base):] }
func (v *viewCursor) Value() []byte { return v.it.Value() }

func (v *viewCursor) Next() {
	v.steps++
	v.valid = v.it.Next()
}

func (v *viewCursor) SeekAfter(key string) {
	v.steps++
	v.scratch = append(append(append(v.scratch[:0], v.base...), key...), 0)
	if !v.valid || bytes.Compare(v.scratch, v.it.Key()) <= 0 {
		return // at or past it already (or at the end)
	}
	v.valid = v.it.SeekGE(v.scratch)
}

func (v *viewCursor) Close() error {
	if v.closed {
		return objstore.Errorf(objstore.ErrInvalid, "view cursor closed twice")
	}
	v.closed = true
	// The walk covered [seek, the current key], or up to upper at the end.
	hi := v.upper
	if v.valid {
		hi = append(bytes.Clone(v.it.Key()), 0)
	}
	points := v.it.Stats().InternalStats.PointCount // before Close resets it
	err := errors.Join(v.it.Error(), v.it.Close())
	v.c.pool.mu.RUnlock()
	if err != nil {
		return err
	}
	if points > uint64(v.steps)+deadScanMin {
		v.c.s.noteDead(v.seek, hi, points, v.steps)
	}
	return v.c.s.waitInflight(&keySpan{lo: v.seek, hi: hi})
}
