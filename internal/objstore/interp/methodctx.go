package interp

import (
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// methodCtx is objstore.MethodContext over an Object: argument checks,
// the write permission of the method, and absent-object errors live here.
type methodCtx struct {
	o             Object
	class, method string
	canWrite      bool
}

var _ objstore.MethodContext = (*methodCtx)(nil)

// w checks that the method may write and records that it did.
func (m *methodCtx) w() error {
	if m.o == nil {
		panic("objstore: MethodContext used after its method returned")
	}
	if !m.canWrite {
		return objstore.Errorf(objstore.ErrInvalid, "%s.%s is not a write method", m.class, m.method)
	}
	m.o.Wrote(m.class)
	return nil
}

func (m *methodCtx) Stat() (objstore.Stat, error) {
	if err := NeedObject(m.o); err != nil {
		return objstore.Stat{}, err
	}
	return m.o.MethodStat()
}

func (m *methodCtx) Exists() bool { return m.o.Exists() }

func (m *methodCtx) Create(exclusive bool) error {
	if err := m.w(); err != nil {
		return err
	}
	return m.o.Create(exclusive, false)
}

func (m *methodCtx) Read(off, length int64) ([]byte, error) {
	if off < 0 || length < 0 {
		return nil, objstore.Errorf(objstore.ErrInvalid, "read: negative offset or length")
	}
	if err := NeedObject(m.o); err != nil {
		return nil, err
	}
	return m.o.ReadData(off, length)
}

func (m *methodCtx) Write(off int64, data []byte) error {
	if err := m.w(); err != nil {
		return err
	}
	return m.o.WriteAt(off, data, false)
}

func (m *methodCtx) WriteFull(data []byte) error {
	if err := m.w(); err != nil {
		return err
	}
	if err := TooBig(int64(len(data))); err != nil {
		return err
	}
	return m.o.WriteFull(data, nil, false)
}

func (m *methodCtx) Append(data []byte) error {
	if err := m.w(); err != nil {
		return err
	}
	return m.o.WriteAt(m.o.Size(), data, false)
}

func (m *methodCtx) Truncate(size int64) error {
	if err := m.w(); err != nil {
		return err
	}
	return m.o.Truncate(size, false)
}

func (m *methodCtx) Remove() error {
	if err := m.w(); err != nil {
		return err
	}
	return m.o.Remove(false)
}

func (m *methodCtx) GetXattr(name string) ([]byte, error) {
	if err := objstore.ValidateXattr(name, nil); err != nil {
		return nil, err
	}
	if err := NeedObject(m.o); err != nil {
		return nil, err
	}
	v, ok, err := m.o.GetXattr(name)
	if err == nil && !ok {
		err = objstore.Errorf(objstore.ErrNotFound, "xattr %q", name)
	}
	return v, err
}

func (m *methodCtx) GetXattrs() ([]objstore.KV, error) {
	if err := NeedObject(m.o); err != nil {
		return nil, err
	}
	return m.o.GetXattrs()
}

func (m *methodCtx) SetXattr(name string, value []byte) error {
	if err := objstore.ValidateXattr(name, value); err != nil {
		return err
	}
	if err := m.w(); err != nil {
		return err
	}
	return m.o.SetXattr(name, value, false)
}

func (m *methodCtx) RmXattr(name string) error {
	if err := objstore.ValidateXattr(name, nil); err != nil {
		return err
	}
	if err := m.w(); err != nil {
		return err
	}
	return m.o.RmXattr(name, false)
}

func (m *methodCtx) GetOmapVal(key string) ([]byte, error) {
	if err := objstore.ValidateOmapKey(key); err != nil {
		return nil, err
	}
	if err := NeedObject(m.o); err != nil {
		return nil, err
	}
	v, ok, err := m.o.OmapGet(key)
	if err == nil && !ok {
		err = objstore.Errorf(objstore.ErrNotFound, "omap key %q", key)
	}
	return v, err
}

func (m *methodCtx) GetOmapValsByKeys(keys ...string) ([]objstore.KV, error) {
	for _, k := range keys {
		if err := objstore.ValidateOmapKey(k); err != nil {
			return nil, err
		}
	}
	if err := NeedObject(m.o); err != nil {
		return nil, err
	}
	return m.o.OmapByKeys(keys)
}

func (m *methodCtx) GetOmapVals(startAfter, prefix string, max int) ([]objstore.KV, bool, error) {
	if max < 0 {
		return nil, false, objstore.Errorf(objstore.ErrInvalid, "negative max")
	}
	if err := NeedObject(m.o); err != nil {
		return nil, false, err
	}
	return m.o.OmapVals(startAfter, prefix, max)
}

func (m *methodCtx) SetOmap(pairs ...objstore.KV) error {
	for _, kv := range pairs {
		if err := objstore.ValidateOmapKey(kv.Key); err != nil {
			return err
		}
		if err := objstore.ValidateOmapValue(kv.Value); err != nil {
			return err
		}
		if len(kv.Value) == 0 {
			// The RADOS backend may answer a key it has not read as absent
			// and assert it with omap_cmp(key == ""), which an empty value
			// also passes: class values are never empty.
			return objstore.Errorf(objstore.ErrInvalid, "class %s: empty omap value for %q", m.class, kv.Key)
		}
	}
	if err := m.w(); err != nil {
		return err
	}
	return m.o.SetOmap(pairs, false)
}

func (m *methodCtx) RmOmapKeys(keys ...string) error {
	for _, k := range keys {
		if err := objstore.ValidateOmapKey(k); err != nil {
			return err
		}
	}
	if err := m.w(); err != nil {
		return err
	}
	return m.o.RmOmapKeys(keys, false)
}

func (m *methodCtx) OmapRmRange(start, end string) error {
	if end != "" && end < start {
		return objstore.Errorf(objstore.ErrInvalid, "omap_rm_range: end %q before start %q", end, start)
	}
	if err := m.w(); err != nil {
		return err
	}
	return m.o.OmapRmRange(start, end, false)
}

func (m *methodCtx) OmapClear() error {
	if err := m.w(); err != nil {
		return err
	}
	return m.o.OmapClear(false)
}

func (m *methodCtx) GetOmapHeader() ([]byte, error) {
	if err := NeedObject(m.o); err != nil {
		return nil, err
	}
	return m.o.OmapHeader()
}

func (m *methodCtx) SetOmapHeader(h []byte) error {
	if err := objstore.ValidateOmapValue(h); err != nil {
		return err
	}
	if err := m.w(); err != nil {
		return err
	}
	return m.o.SetOmapHeader(h, false)
}

func (m *methodCtx) Now() time.Time { return m.o.Now() }

func (m *methodCtx) Cached(slot string) (any, bool) { return m.o.Cached(m.class + "\x00" + slot) }

func (m *methodCtx) SetCached(slot string, v any) { m.o.SetCached(m.class+"\x00"+slot, v) }
