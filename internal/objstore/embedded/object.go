package embedded

import (
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/interp"
)

// txn is the interpreter's view of the object (package interp runs the
// steps and class methods); these methods adapt its staged state.
var _ interp.Object = (*txn)(nil)

func (t *txn) Exists() bool         { return t.exists }
func (t *txn) Version() uint64      { return t.version() }
func (t *txn) Size() int64          { return t.cur.size }
func (t *txn) Stat() objstore.Stat  { return t.cur.stat() }
func (t *txn) Now() time.Time       { return t.now }
func (t *txn) SetMtime(m time.Time) { t.mtime = &m }

func (t *txn) MethodStat() (objstore.Stat, error) {
	st := t.cur.stat()
	if t.dirty {
		st.ModTime = t.now
	}
	return st, nil
}

func (t *txn) ReadData(off, n int64) ([]byte, error)           { return t.readData(off, n) }
func (t *txn) GetXattr(name string) ([]byte, bool, error)      { return t.getXattr(name) }
func (t *txn) GetXattrs() ([]objstore.KV, error)               { return t.getXattrs() }
func (t *txn) OmapGet(key string) ([]byte, bool, error)        { return t.omapGet(key) }
func (t *txn) OmapByKeys(keys []string) ([]objstore.KV, error) { return t.omapByKeys(keys) }
func (t *txn) OmapHeader() ([]byte, error)                     { return t.omapHeader() }

func (t *txn) OmapVals(startAfter, prefix string, max int) ([]objstore.KV, bool, error) {
	return t.omapVals(startAfter, prefix, max)
}

func (t *txn) OmapKeys(startAfter string, max int) ([]string, bool, error) {
	kvs, more, err := t.scan(partOmap, startAfter, "", max, false)
	keys := make([]string, len(kvs))
	for i, kv := range kvs {
		keys[i] = kv.Key
	}
	return keys, more, err
}

func (t *txn) Create(exclusive, plain bool) error { return t.create(exclusive, plain) }

func (t *txn) WriteFull(data []byte, from *objstore.WriteFull, plain bool) error {
	var blob uint64
	if from != nil {
		blob = t.preBlobs[from] // written ahead of the batch, see ioctx
	}
	return t.writeFull(data, blob, plain)
}

func (t *txn) WriteAt(off int64, data []byte, plain bool) error { return t.writeAt(off, data, plain) }
func (t *txn) Truncate(size int64, plain bool) error            { return t.truncate(size, plain) }
func (t *txn) Remove(plain bool) error                          { return t.remove(plain) }
func (t *txn) SetXattr(name string, v []byte, plain bool) error {
	return t.setXattr(name, v, plain)
}
func (t *txn) RmXattr(name string, plain bool) error { return t.rmXattr(name, plain) }
func (t *txn) SetOmap(pairs []objstore.KV, plain bool) error {
	return t.setOmap(pairs, plain)
}
func (t *txn) RmOmapKeys(keys []string, plain bool) error { return t.rmOmapKeys(keys, plain) }
func (t *txn) OmapRmRange(start, end string, plain bool) error {
	return t.omapRmRange(start, end, plain)
}
func (t *txn) OmapClear(plain bool) error               { return t.omapClear(plain) }
func (t *txn) SetOmapHeader(h []byte, plain bool) error { return t.setOmapHeader(h, plain) }

func (t *txn) Lookup(class, method string) (objstore.Method, objstore.MethodFlags, error) {
	return t.s.opts.Classes.Lookup(class, method)
}

// Executing marks ops that ran a class method in a write op: their
// objects are hot, so the op's resulting meta is cached (remember).
func (t *txn) Executing(_ string, readOp bool) {
	if !readOp {
		t.execd = true
	}
}

func (t *txn) Wrote(class string) {
	if t.writers == nil {
		t.writers = map[string]bool{}
	}
	t.writers[class] = true
}

func (t *txn) Cached(k string) (any, bool) {
	if v, ok := t.cache[k]; ok {
		return v, true
	}
	e := t.entry
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	v, ok := e.cache[k]
	return v, ok
}

func (t *txn) SetCached(k string, v any) {
	if t.cache == nil {
		t.cache = map[string]any{}
	}
	t.cache[k] = v
}
