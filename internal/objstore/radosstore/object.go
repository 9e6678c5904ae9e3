//go:build rados

package radosstore

import (
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/interp"
)

// model is the interpreter's view of the object (package interp runs the
// steps and class methods); these methods adapt its optimistic state.
var _ interp.Object = (*model)(nil)

func (m *model) Exists() bool         { return m.exists }
func (m *model) Version() uint64      { return m.version() }
func (m *model) Size() int64          { return m.size }
func (m *model) Now() time.Time       { return m.now }
func (m *model) SetMtime(t time.Time) { m.mtime = &t }

func (m *model) Stat() objstore.Stat {
	return objstore.Stat{Size: m.size, ModTime: m.baseMtime, Version: m.baseVersion}
}

// MethodStat confirms a base taken from the meta cache first: a class
// method may act on the stat, and a stale one must become a retry.
func (m *model) MethodStat() (objstore.Stat, error) {
	if m.fromCache && m.baseExists {
		if err := m.validate(); err != nil {
			return objstore.Stat{}, err
		}
	}
	st := objstore.Stat{Size: m.size, ModTime: m.baseMtime, Version: m.version()}
	if m.dirty {
		st.ModTime = m.now
	}
	return st, nil
}

func (m *model) ReadData(off, n int64) ([]byte, error) { return m.readData(off, n) }

func (m *model) GetXattr(name string) ([]byte, bool, error) {
	v, ok := m.getXattr(name)
	return v, ok, nil
}

func (m *model) GetXattrs() ([]objstore.KV, error)               { return m.getXattrs(), nil }
func (m *model) OmapGet(key string) ([]byte, bool, error)        { return m.omapGet(key) }
func (m *model) OmapByKeys(keys []string) ([]objstore.KV, error) { return m.omapGetMany(keys) }
func (m *model) OmapHeader() ([]byte, error)                     { return m.getHeader(), nil }

func (m *model) OmapVals(startAfter, prefix string, max int) ([]objstore.KV, bool, error) {
	return m.omapVals(startAfter, prefix, max)
}

func (m *model) OmapKeys(startAfter string, max int) ([]string, bool, error) {
	kvs, more, err := m.omapVals(startAfter, "", max)
	keys := make([]string, len(kvs))
	for i, kv := range kvs {
		keys[i] = kv.Key
	}
	return keys, more, err
}

func (m *model) Create(exclusive, plain bool) error { return m.create(exclusive, plain) }

func (m *model) WriteFull(data []byte, _ *objstore.WriteFull, plain bool) error {
	return m.writeFull(data, plain)
}

func (m *model) WriteAt(off int64, data []byte, plain bool) error { return m.writeAt(off, data, plain) }
func (m *model) Truncate(size int64, plain bool) error            { return m.truncate(size, plain) }
func (m *model) Remove(plain bool) error                          { return m.remove(plain) }
func (m *model) SetXattr(name string, v []byte, plain bool) error {
	return m.setXattr(name, v, plain)
}
func (m *model) RmXattr(name string, plain bool) error { return m.rmXattr(name, plain) }
func (m *model) SetOmap(pairs []objstore.KV, plain bool) error {
	return m.setOmap(pairs, plain)
}
func (m *model) RmOmapKeys(keys []string, plain bool) error { return m.rmOmapKeys(keys, plain) }
func (m *model) OmapRmRange(start, end string, plain bool) error {
	return m.omapRmRange(start, end, plain)
}
func (m *model) OmapClear(plain bool) error               { return m.omapClear(plain) }
func (m *model) SetOmapHeader(h []byte, plain bool) error { return m.setHeader(h, plain) }

func (m *model) Lookup(class, method string) (objstore.Method, objstore.MethodFlags, error) {
	return m.c.s.opts.Classes.Lookup(class, method)
}

func (m *model) Executing(string, bool) {}

func (m *model) Wrote(class string) {
	if m.writers == nil {
		m.writers = map[string]bool{}
	}
	m.writers[class] = true
}

// Cached returns an entry staged by this op, or one published at exactly
// the version this attempt read (so it matches the object's state).
func (m *model) Cached(k string) (any, bool) {
	if v, ok := m.staged[k]; ok {
		return v, true
	}
	if !m.baseExists {
		return nil, false
	}
	return m.c.s.caches.get(m.c.cacheKey(m.oid), m.baseVersion, k)
}

func (m *model) SetCached(k string, v any) {
	if m.staged == nil {
		m.staged = map[string]any{}
	}
	m.staged[k] = v
}
