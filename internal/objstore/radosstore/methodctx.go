//go:build rados

package radosstore

import (
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// exec runs a Go class method against the model. In a ReadOp, methods
// flagged MethodWrite are refused with ErrInvalid; a method lacking
// MethodWrite gets ErrInvalid from the write calls (as in the embedded
// backend).
func (m *model) exec(s *objstore.ExecStep, readOp bool) error {
	fn, flags, err := m.c.s.opts.Classes.Lookup(s.Class, s.Method)
	if err != nil {
		return err
	}
	canWrite := flags&objstore.MethodWrite != 0
	if readOp && canWrite {
		return objstore.Errorf(objstore.ErrInvalid, "exec %s.%s: write method in a read op", s.Class, s.Method)
	}
	mc := &methodCtx{m: m, class: s.Class, method: s.Method, canWrite: canWrite}
	out, err := fn(mc, s.In)
	mc.m = nil
	if err != nil {
		return err
	}
	s.Out = out
	return nil
}

type methodCtx struct {
	m             *model
	class, method string
	canWrite      bool
}

var _ objstore.MethodContext = (*methodCtx)(nil)

func (c *methodCtx) w() error {
	if c.m == nil {
		panic("objstore: MethodContext used after its method returned")
	}
	if !c.canWrite {
		return objstore.Errorf(objstore.ErrInvalid, "%s.%s is not a write method", c.class, c.method)
	}
	if c.m.writers == nil {
		c.m.writers = map[string]bool{}
	}
	c.m.writers[c.class] = true
	return nil
}

func (c *methodCtx) Stat() (objstore.Stat, error) {
	if err := c.m.needObject(); err != nil {
		return objstore.Stat{}, err
	}
	if c.m.fromCache && c.m.baseExists {
		if err := c.m.validate(); err != nil {
			return objstore.Stat{}, err
		}
	}
	st := objstore.Stat{Size: c.m.size, ModTime: c.m.baseMtime, Version: c.m.version()}
	if c.m.dirty {
		st.ModTime = c.m.now
	}
	return st, nil
}

func (c *methodCtx) Exists() bool { return c.m.exists }

func (c *methodCtx) Create(exclusive bool) error {
	if err := c.w(); err != nil {
		return err
	}
	return c.m.create(exclusive, false)
}

func (c *methodCtx) Read(off, length int64) ([]byte, error) {
	if off < 0 || length < 0 {
		return nil, objstore.Errorf(objstore.ErrInvalid, "read: negative offset or length")
	}
	if err := c.m.needObject(); err != nil {
		return nil, err
	}
	return c.m.readData(off, length)
}

func (c *methodCtx) Write(off int64, data []byte) error {
	if err := c.w(); err != nil {
		return err
	}
	return c.m.writeAt(off, data, false)
}

func (c *methodCtx) WriteFull(data []byte) error {
	if err := c.w(); err != nil {
		return err
	}
	return c.m.writeFull(data, false)
}

func (c *methodCtx) Append(data []byte) error {
	if err := c.w(); err != nil {
		return err
	}
	return c.m.writeAt(c.m.size, data, false)
}

func (c *methodCtx) Truncate(size int64) error {
	if err := c.w(); err != nil {
		return err
	}
	return c.m.truncate(size, false)
}

func (c *methodCtx) Remove() error {
	if err := c.w(); err != nil {
		return err
	}
	return c.m.remove(false)
}

func (c *methodCtx) GetXattr(name string) ([]byte, error) {
	if err := objstore.ValidateXattr(name, nil); err != nil {
		return nil, err
	}
	if err := c.m.needObject(); err != nil {
		return nil, err
	}
	v, ok := c.m.getXattr(name)
	if !ok {
		return nil, objstore.Errorf(objstore.ErrNotFound, "xattr %q", name)
	}
	return v, nil
}

func (c *methodCtx) GetXattrs() ([]objstore.KV, error) {
	if err := c.m.needObject(); err != nil {
		return nil, err
	}
	return c.m.getXattrs(), nil
}

func (c *methodCtx) SetXattr(name string, value []byte) error {
	if err := objstore.ValidateXattr(name, value); err != nil {
		return err
	}
	if err := c.w(); err != nil {
		return err
	}
	return c.m.setXattr(name, value, false)
}

func (c *methodCtx) RmXattr(name string) error {
	if err := objstore.ValidateXattr(name, nil); err != nil {
		return err
	}
	if err := c.w(); err != nil {
		return err
	}
	return c.m.rmXattr(name, false)
}

func (c *methodCtx) GetOmapVal(key string) ([]byte, error) {
	if err := objstore.ValidateOmapKey(key); err != nil {
		return nil, err
	}
	if err := c.m.needObject(); err != nil {
		return nil, err
	}
	v, ok, err := c.m.omapGet(key)
	if err == nil && !ok {
		err = objstore.Errorf(objstore.ErrNotFound, "omap key %q", key)
	}
	return v, err
}

func (c *methodCtx) GetOmapValsByKeys(keys ...string) ([]objstore.KV, error) {
	for _, k := range keys {
		if err := objstore.ValidateOmapKey(k); err != nil {
			return nil, err
		}
	}
	if err := c.m.needObject(); err != nil {
		return nil, err
	}
	return c.m.omapGetMany(keys)
}

func (c *methodCtx) GetOmapVals(startAfter, prefix string, max int) ([]objstore.KV, bool, error) {
	if max < 0 {
		return nil, false, objstore.Errorf(objstore.ErrInvalid, "negative max")
	}
	if err := c.m.needObject(); err != nil {
		return nil, false, err
	}
	return c.m.omapVals(startAfter, prefix, max)
}

func (c *methodCtx) SetOmap(pairs ...objstore.KV) error {
	for _, kv := range pairs {
		if err := objstore.ValidateOmapKey(kv.Key); err != nil {
			return err
		}
		if err := objstore.ValidateOmapValue(kv.Value); err != nil {
			return err
		}
	}
	if err := c.w(); err != nil {
		return err
	}
	return c.m.setOmap(pairs, false)
}

func (c *methodCtx) RmOmapKeys(keys ...string) error {
	for _, k := range keys {
		if err := objstore.ValidateOmapKey(k); err != nil {
			return err
		}
	}
	if err := c.w(); err != nil {
		return err
	}
	return c.m.rmOmapKeys(keys, false)
}

func (c *methodCtx) OmapRmRange(start, end string) error {
	if end != "" && end < start {
		return objstore.Errorf(objstore.ErrInvalid, "omap_rm_range: end %q before start %q", end, start)
	}
	if err := c.w(); err != nil {
		return err
	}
	return c.m.omapRmRange(start, end, false)
}

func (c *methodCtx) OmapClear() error {
	if err := c.w(); err != nil {
		return err
	}
	return c.m.omapClear(false)
}

func (c *methodCtx) GetOmapHeader() ([]byte, error) {
	if err := c.m.needObject(); err != nil {
		return nil, err
	}
	return c.m.getHeader(), nil
}

func (c *methodCtx) SetOmapHeader(h []byte) error {
	if err := objstore.ValidateOmapValue(h); err != nil {
		return err
	}
	if err := c.w(); err != nil {
		return err
	}
	return c.m.setHeader(h, false)
}

func (c *methodCtx) Now() time.Time { return c.m.now }

// Cached returns an entry staged by this op, or one published at exactly
// the version this attempt read (so it matches the object's state).
func (c *methodCtx) Cached(slot string) (any, bool) {
	k := c.class + "\x00" + slot
	if v, ok := c.m.staged[k]; ok {
		return v, true
	}
	if !c.m.baseExists {
		return nil, false
	}
	return c.m.c.s.caches.get(c.m.c.cacheKey(c.m.oid), c.m.baseVersion, k)
}

func (c *methodCtx) SetCached(slot string, v any) {
	if c.m.staged == nil {
		c.m.staged = map[string]any{}
	}
	c.m.staged[c.class+"\x00"+slot] = v
}
