package objstore

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// MethodFlags say what a class method may do (CLS_METHOD_RD / CLS_METHOD_WR).
type MethodFlags uint8

const (
	MethodRead  MethodFlags = 1
	MethodWrite MethodFlags = 2
)

// Method is an object class method: it runs inside one WriteOp or ReadOp on
// one object, atomically with the op's other steps, and sees their effects.
// Returning an error fails the whole op and discards every change. Methods
// must be deterministic given the object state, input and ctx.Now(): the
// RADOS backend may run them more than once (optimistic retry).
type Method func(ctx MethodContext, in []byte) (out []byte, err error)

// MethodContext is what a class method can do to its object: the Go
// counterpart of objclass.h's cls_cxx_* calls. Reads observe the op's earlier
// steps; writes are staged in the op and apply at commit. It is valid only
// during the call.
type MethodContext interface {
	// Stat: cls_cxx_stat. ErrNotFound if the object does not exist.
	Stat() (Stat, error)
	// Exists reports whether the object exists at this point in the op.
	Exists() bool
	// Create: cls_cxx_create.
	Create(exclusive bool) error
	// Read: cls_cxx_read; length 0 reads to the end.
	Read(off, length int64) ([]byte, error)
	// Write: cls_cxx_write.
	Write(off int64, data []byte) error
	// WriteFull: cls_cxx_write_full.
	WriteFull(data []byte) error
	// Append writes at the current end.
	Append(data []byte) error
	// Truncate: cls_cxx_truncate.
	Truncate(size int64) error
	// Remove: cls_cxx_remove.
	Remove() error
	// GetXattr: cls_cxx_getxattr; ErrNotFound when missing.
	GetXattr(name string) ([]byte, error)
	// GetXattrs: cls_cxx_getxattrs, sorted by name.
	GetXattrs() ([]KV, error)
	// SetXattr: cls_cxx_setxattr.
	SetXattr(name string, value []byte) error
	// RmXattr removes an xattr; missing is not an error.
	RmXattr(name string) error
	// GetOmapVal: cls_cxx_map_get_val; ErrNotFound when missing.
	GetOmapVal(key string) ([]byte, error)
	// GetOmapValsByKeys: cls_cxx_map_get_vals_by_keys: the pairs of the
	// keys that exist, sorted by key, as the op sees them. One read for
	// many keys (on RADOS one round trip instead of one per key).
	GetOmapValsByKeys(keys ...string) ([]KV, error)
	// GetOmapVals: cls_cxx_map_get_vals (start_after, prefix, max; 0 = all).
	GetOmapVals(startAfter, prefix string, max int) (pairs []KV, more bool, err error)
	// SetOmap: cls_cxx_map_set_vals. Values must not be empty (ErrInvalid):
	// the RADOS backend takes a key it has not read for absent and asserts
	// that with omap_cmp(key == ""), which an empty value would also pass.
	SetOmap(pairs ...KV) error
	// RmOmapKeys: cls_cxx_map_remove_key for each key.
	RmOmapKeys(keys ...string) error
	// OmapRmRange: cls_cxx_map_remove_range over [start, end); end "" = to
	// the end.
	OmapRmRange(start, end string) error
	// OmapClear: cls_cxx_map_clear.
	OmapClear() error
	// GetOmapHeader / SetOmapHeader: cls_cxx_map_read_header / write_header.
	GetOmapHeader() ([]byte, error)
	SetOmapHeader(h []byte) error
	// Now is the op's time (cls_current_time): one value per op, injectable
	// in tests.
	Now() time.Time
	// Cached returns a value this class stored for this object with
	// SetCached. The backend keeps it only while it provably matches the
	// object's persistent state: it drops an object's cache entries when any
	// op changes the object other than through an ExecStep that keeps them,
	// when the op fails, and on restart. A miss means "read it from the
	// object". Values must be treated as immutable.
	Cached(slot string) (any, bool)
	// SetCached stages a cache entry, published only if the op commits.
	SetCached(slot string, v any)
}

// Class is a named set of methods.
type Class struct {
	Name    string
	methods map[string]classMethod
}

type classMethod struct {
	fn    Method
	flags MethodFlags
}

// Projection maps an omap value to what an ordered view keeps for it
// (Viewer; a class names one in WriteOp.SetView). The store calls it in
// the write's commit, so it must be cheap and deterministic, accept
// any value (returning a value it does not know unchanged) and be
// idempotent: a view's values may be restated through it.
type Projection func(key string, val []byte) []byte

// Registry maps class names to classes. Build one at start-up and hand it
// to the backend; it is read-only afterwards and safe for concurrent use.
type Registry struct {
	mu          sync.RWMutex
	classes     map[string]*Class
	projections map[string]Projection
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{classes: map[string]*Class{}, projections: map[string]Projection{}}
}

// RegisterProjection adds view projection cls.name. It panics on a
// duplicate, as Register does.
func (r *Registry) RegisterProjection(cls, name string, p Projection) {
	r.mu.Lock()
	defer r.mu.Unlock()
	full := cls + "." + name
	if _, dup := r.projections[full]; dup {
		panic(fmt.Sprintf("objstore: view projection %s registered twice", full))
	}
	r.projections[full] = p
}

// LookupProjection returns projection full ("class.name"), or
// ErrNotSupported.
func (r *Registry) LookupProjection(full string) (Projection, error) {
	if r != nil {
		r.mu.RLock()
		p := r.projections[full]
		r.mu.RUnlock()
		if p != nil {
			return p, nil
		}
	}
	return nil, Errorf(ErrNotSupported, "unknown view projection %q", full)
}

// Register adds method cls.method. It panics on a duplicate: registration is
// programmer wiring, not input.
func (r *Registry) Register(cls, method string, flags MethodFlags, fn Method) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.classes[cls]
	if c == nil {
		c = &Class{Name: cls, methods: map[string]classMethod{}}
		r.classes[cls] = c
	}
	if _, dup := c.methods[method]; dup {
		panic(fmt.Sprintf("objstore: class method %s.%s registered twice", cls, method))
	}
	c.methods[method] = classMethod{fn: fn, flags: flags}
}

// Lookup returns the method and its flags, or ErrNotSupported.
func (r *Registry) Lookup(cls, method string) (Method, MethodFlags, error) {
	if r == nil {
		return nil, 0, Errorf(ErrNotSupported, "class %q: no classes registered", cls)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	c := r.classes[cls]
	if c == nil {
		return nil, 0, Errorf(ErrNotSupported, "unknown class %q", cls)
	}
	m, ok := c.methods[method]
	if !ok {
		return nil, 0, Errorf(ErrNotSupported, "unknown method %s.%s", cls, method)
	}
	return m.fn, m.flags, nil
}

// Classes lists "class.method" names, sorted.
func (r *Registry) Classes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for n, c := range r.classes {
		for m := range c.methods {
			out = append(out, n+"."+m)
		}
	}
	sort.Strings(out)
	return out
}
