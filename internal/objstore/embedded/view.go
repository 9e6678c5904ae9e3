package embedded

import (
	"bytes"
	"context"
	"fmt"

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
