package embedded

import (
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// exec runs a class method inside the txn. In a ReadOp, methods flagged
// MethodWrite are refused with ErrInvalid; any method lacking MethodWrite
// gets ErrInvalid from MethodContext's write calls.
func (t *txn) exec(s *objstore.ExecStep, readOp bool) error {
	fn, flags, err := t.s.opts.Classes.Lookup(s.Class, s.Method)
	if err != nil {
		return err
	}
	canWrite := flags&objstore.MethodWrite != 0
	if readOp && canWrite {
		return objstore.Errorf(objstore.ErrInvalid, "exec %s.%s: write method in a read op", s.Class, s.Method)
	}
	mc := &methodCtx{t: t, class: s.Class, method: s.Method, canWrite: canWrite}
	out, err := fn(mc, s.In)
	mc.t = nil // the context is valid only during the call
	if err != nil {
		return err
	}
	s.Out = out
	return nil
}

// methodCtx is MethodContext over a txn's staged state.
type methodCtx struct {
	t             *txn
	class, method string
	canWrite      bool
}

var _ objstore.MethodContext = (*methodCtx)(nil)

func (m *methodCtx) w() error {
	if m.t == nil {
		panic("objstore: MethodContext used after its method returned")
	}
	if !m.canWrite {
		return objstore.Errorf(objstore.ErrInvalid, "%s.%s is not a write method", m.class, m.method)
	}
	if m.t.writers == nil {
		m.t.writers = map[string]bool{}
	}
	m.t.writers[m.class] = true
	return nil
}

func (m *methodCtx) Stat() (objstore.Stat, error) {
	if err := m.t.needObject(); err != nil {
		return objstore.Stat{}, err
	}
	st := m.t.cur.stat()
	if m.t.dirty {
		st.ModTime = m.t.now
	}
	return st, nil
}

func (m *methodCtx) Exists() bool { return m.t.exists }

func (m *methodCtx) Create(exclusive bool) error {
	if err := m.w(); err != nil {
		return err
	}
	return m.t.create(exclusive, false)
}

func (m *methodCtx) Read(off, length int64) ([]byte, error) {
	if off < 0 || length < 0 {
		return nil, objstore.Errorf(objstore.ErrInvalid, "read: negative offset or length")
	}
	if err := m.t.needObject(); err != nil {
		return nil, err
	}
	return m.t.readData(off, length)
}

func (m *methodCtx) Write(off int64, data []byte) error {
	if err := m.w(); err != nil {
		return err
	}
	return m.t.writeAt(off, data, false)
}

func (m *methodCtx) WriteFull(data []byte) error {
	if err := m.w(); err != nil {
		return err
	}
	if err := tooBig(int64(len(data))); err != nil {
		return err
	}
	return m.t.writeFull(data, 0, false)
}

func (m *methodCtx) Append(data []byte) error {
	if err := m.w(); err != nil {
		return err
	}
	return m.t.writeAt(m.t.cur.size, data, false)
}

func (m *methodCtx) Truncate(size int64) error {
	if err := m.w(); err != nil {
		return err
	}
	return m.t.truncate(size, false)
}

func (m *methodCtx) Remove() error {
	if err := m.w(); err != nil {
		return err
	}
	return m.t.remove(false)
}

func (m *methodCtx) GetXattr(name string) ([]byte, error) {
	if err := objstore.ValidateXattr(name, nil); err != nil {
		return nil, err
	}
	if err := m.t.needObject(); err != nil {
		return nil, err
	}
	v, ok, err := m.t.getXattr(name)
	if err == nil && !ok {
		err = objstore.Errorf(objstore.ErrNotFound, "xattr %q", name)
	}
	return v, err
}

func (m *methodCtx) GetXattrs() ([]objstore.KV, error) {
	if err := m.t.needObject(); err != nil {
		return nil, err
	}
	return m.t.getXattrs()
}

func (m *methodCtx) SetXattr(name string, value []byte) error {
	if err := objstore.ValidateXattr(name, value); err != nil {
		return err
	}
	if err := m.w(); err != nil {
		return err
	}
	return m.t.setXattr(name, value, false)
}

func (m *methodCtx) RmXattr(name string) error {
	if err := objstore.ValidateXattr(name, nil); err != nil {
		return err
	}
	if err := m.w(); err != nil {
		return err
	}
	return m.t.rmXattr(name, false)
}

func (m *methodCtx) GetOmapVal(key string) ([]byte, error) {
	if err := objstore.ValidateOmapKey(key); err != nil {
		return nil, err
	}
	if err := m.t.needObject(); err != nil {
		return nil, err
	}
	v, ok, err := m.t.omapGet(key)
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
	if err := m.t.needObject(); err != nil {
		return nil, err
	}
	return m.t.omapByKeys(keys)
}

func (m *methodCtx) GetOmapVals(startAfter, prefix string, max int) ([]objstore.KV, bool, error) {
	if max < 0 {
		return nil, false, objstore.Errorf(objstore.ErrInvalid, "negative max")
	}
	if err := m.t.needObject(); err != nil {
		return nil, false, err
	}
	return m.t.omapVals(startAfter, prefix, max)
}

func (m *methodCtx) SetOmap(pairs ...objstore.KV) error {
	for _, kv := range pairs {
		if err := objstore.ValidateOmapKey(kv.Key); err != nil {
			return err
		}
		if err := objstore.ValidateOmapValue(kv.Value); err != nil {
			return err
		}
	}
	if err := m.w(); err != nil {
		return err
	}
	return m.t.setOmap(pairs, false)
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
	return m.t.rmOmapKeys(keys, false)
}

func (m *methodCtx) OmapRmRange(start, end string) error {
	if end != "" && end < start {
		return objstore.Errorf(objstore.ErrInvalid, "omap_rm_range: end %q before start %q", end, start)
	}
	if err := m.w(); err != nil {
		return err
	}
	return m.t.omapRmRange(start, end, false)
}

func (m *methodCtx) OmapClear() error {
	if err := m.w(); err != nil {
		return err
	}
	return m.t.omapClear(false)
}

func (m *methodCtx) GetOmapHeader() ([]byte, error) {
	if err := m.t.needObject(); err != nil {
		return nil, err
	}
	return m.t.omapHeader()
}

func (m *methodCtx) SetOmapHeader(h []byte) error {
	if err := objstore.ValidateOmapValue(h); err != nil {
		return err
	}
	if err := m.w(); err != nil {
		return err
	}
	return m.t.setOmapHeader(h, false)
}

func (m *methodCtx) Now() time.Time { return m.t.now }

func (m *methodCtx) Cached(slot string) (any, bool) {
	k := m.class + "\x00" + slot
	if v, ok := m.t.cache[k]; ok {
		return v, true
	}
	e := m.t.entry
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	v, ok := e.cache[k]
	return v, ok
}

func (m *methodCtx) SetCached(slot string, v any) {
	if m.t.cache == nil {
		m.t.cache = map[string]any{}
	}
	m.t.cache[m.class+"\x00"+slot] = v
}

// publishCache applies a successful op's cache changes: a plain change
// drops every entry; a method that wrote keeps only its own class's
// entries; staged entries are installed unless a plain step ran.
func (t *txn) publishCache() {
	if !t.plain && len(t.writers) == 0 && len(t.cache) == 0 {
		return
	}
	e := t.entry
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	if t.plain {
		e.cache = nil
		return
	}
	for k := range e.cache {
		if len(t.writers) > 0 && !t.writers[className(k)] {
			delete(e.cache, k)
		}
	}
	for k, v := range t.cache {
		if e.cache == nil {
			e.cache = map[string]any{}
		}
		e.cache[k] = v
	}
}

func className(k string) string {
	for i := 0; i < len(k); i++ {
		if k[i] == 0 {
			return k[:i]
		}
	}
	return k
}
