// Package clsfake is an in-process stand-in for a backend's class runtime,
// for the classes' unit tests: one map of objects, each op run on a copy and
// published only on success, with a settable clock and a per-object cache
// that follows the objstore.MethodContext contract. Real-backend coverage is
// in internal/cls/clstest.
package clsfake

import (
	"bytes"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Object is one object's state.
type Object struct {
	Data    []byte
	Xattrs  map[string][]byte
	Omap    map[string][]byte
	Header  []byte
	Version uint64
	Mtime   time.Time
}

func (o *Object) clone() *Object {
	if o == nil {
		return nil
	}
	c := *o
	c.Data = bytes.Clone(o.Data)
	c.Xattrs = maps.Clone(o.Xattrs)
	c.Omap = maps.Clone(o.Omap)
	c.Header = bytes.Clone(o.Header)
	return &c
}

// Store holds objects by name.
type Store struct {
	mu    sync.Mutex
	Reg   *objstore.Registry
	Objs  map[string]*Object
	cache map[string]map[string]any
	now   time.Time
	ver   uint64
}

// New returns an empty store running reg's classes at time now.
func New(reg *objstore.Registry, now time.Time) *Store {
	return &Store{Reg: reg, Objs: map[string]*Object{}, cache: map[string]map[string]any{}, now: now}
}

// Advance moves the clock.
func (s *Store) Advance(d time.Duration) { s.mu.Lock(); s.now = s.now.Add(d); s.mu.Unlock() }

// DropCache forgets every cached value, as a restart does.
func (s *Store) DropCache() { s.mu.Lock(); s.cache = map[string]map[string]any{}; s.mu.Unlock() }

// Call is one class method call.
type Call struct {
	Class, Method string
	In            []byte
	Out           []byte
}

// Exec runs calls on oid atomically, in order; each call's Out is filled in.
func (s *Store) Exec(oid string, calls ...*Call) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx := &mctx{s: s, obj: s.Objs[oid].clone(), staged: map[string]any{}}
	wrote := false
	for _, c := range calls {
		fn, flags, err := s.Reg.Lookup(c.Class, c.Method)
		if err != nil {
			return err
		}
		ctx.oid, ctx.readOnly = oid, flags&objstore.MethodWrite == 0
		out, err := fn(ctx, c.In)
		if err != nil {
			return err
		}
		c.Out = out
		wrote = wrote || ctx.dirty
	}
	if !wrote {
		return nil
	}
	s.ver++
	if ctx.obj != nil {
		ctx.obj.Version = s.ver
		ctx.obj.Mtime = s.now
		s.Objs[oid] = ctx.obj
	} else {
		delete(s.Objs, oid)
	}
	// Changes made by a method that set no cache entry invalidate the
	// object's cache, mirroring the backend contract.
	if len(ctx.staged) == 0 {
		delete(s.cache, oid)
	} else {
		m := maps.Clone(s.cache[oid])
		if m == nil {
			m = map[string]any{}
		}
		maps.Copy(m, ctx.staged)
		s.cache[oid] = m
	}
	return nil
}

// Mutate changes an object outside any class (a plain write), dropping its
// cache as a backend would.
func (s *Store) Mutate(oid string, f func(o *Object)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.Objs[oid]
	if o == nil {
		o = &Object{Xattrs: map[string][]byte{}, Omap: map[string][]byte{}}
		s.Objs[oid] = o
	}
	f(o)
	delete(s.cache, oid)
}

type mctx struct {
	s        *Store
	oid      string
	obj      *Object
	readOnly bool
	dirty    bool
	staged   map[string]any
}

func (c *mctx) write() error {
	if c.readOnly {
		return objstore.Errorf(objstore.ErrInvalid, "read-only method writes")
	}
	c.dirty = true
	if c.obj == nil {
		c.obj = &Object{Xattrs: map[string][]byte{}, Omap: map[string][]byte{}}
	}
	return nil
}

func (c *mctx) need() error {
	if c.obj == nil {
		return objstore.Errorf(objstore.ErrNotFound, "object %q", c.oid)
	}
	return nil
}

func (c *mctx) Stat() (objstore.Stat, error) {
	if err := c.need(); err != nil {
		return objstore.Stat{}, err
	}
	return objstore.Stat{Size: int64(len(c.obj.Data)), ModTime: c.obj.Mtime, Version: c.obj.Version}, nil
}
func (c *mctx) Exists() bool { return c.obj != nil }
func (c *mctx) Create(excl bool) error {
	if excl && c.obj != nil {
		return objstore.Errorf(objstore.ErrExists, "object %q", c.oid)
	}
	return c.write()
}
func (c *mctx) Read(off, n int64) ([]byte, error) {
	if err := c.need(); err != nil {
		return nil, err
	}
	if off >= int64(len(c.obj.Data)) {
		return nil, nil
	}
	end := int64(len(c.obj.Data))
	if n > 0 && off+n < end {
		end = off + n
	}
	return bytes.Clone(c.obj.Data[off:end]), nil
}
func (c *mctx) Write(off int64, data []byte) error {
	if err := c.write(); err != nil {
		return err
	}
	if need := off + int64(len(data)); need > int64(len(c.obj.Data)) {
		c.obj.Data = append(c.obj.Data, make([]byte, need-int64(len(c.obj.Data)))...)
	}
	copy(c.obj.Data[off:], data)
	return nil
}
func (c *mctx) WriteFull(data []byte) error {
	if err := c.write(); err != nil {
		return err
	}
	c.obj.Data = bytes.Clone(data)
	return nil
}
func (c *mctx) Append(data []byte) error {
	if err := c.write(); err != nil {
		return err
	}
	c.obj.Data = append(c.obj.Data, data...)
	return nil
}
func (c *mctx) Truncate(size int64) error {
	if err := c.write(); err != nil {
		return err
	}
	if size <= int64(len(c.obj.Data)) {
		c.obj.Data = c.obj.Data[:size]
	} else {
		c.obj.Data = append(c.obj.Data, make([]byte, size-int64(len(c.obj.Data)))...)
	}
	return nil
}
func (c *mctx) Remove() error {
	if err := c.need(); err != nil {
		return err
	}
	if err := c.write(); err != nil {
		return err
	}
	c.obj = nil
	return nil
}
func (c *mctx) GetXattr(name string) ([]byte, error) {
	if err := c.need(); err != nil {
		return nil, err
	}
	v, ok := c.obj.Xattrs[name]
	if !ok {
		return nil, objstore.Errorf(objstore.ErrNotFound, "xattr %q", name)
	}
	return bytes.Clone(v), nil
}
func (c *mctx) GetXattrs() ([]objstore.KV, error) {
	if err := c.need(); err != nil {
		return nil, err
	}
	return sorted(c.obj.Xattrs, "", "", 0), nil
}
func (c *mctx) SetXattr(name string, v []byte) error {
	if err := objstore.ValidateXattr(name, v); err != nil {
		return err
	}
	if err := c.write(); err != nil {
		return err
	}
	c.obj.Xattrs[name] = bytes.Clone(v)
	return nil
}
func (c *mctx) RmXattr(name string) error {
	if err := c.write(); err != nil {
		return err
	}
	delete(c.obj.Xattrs, name)
	return nil
}
func (c *mctx) GetOmapVal(key string) ([]byte, error) {
	if err := c.need(); err != nil {
		return nil, err
	}
	v, ok := c.obj.Omap[key]
	if !ok {
		return nil, objstore.Errorf(objstore.ErrNotFound, "omap key %q", key)
	}
	return bytes.Clone(v), nil
}
func (c *mctx) GetOmapValsByKeys(keys ...string) ([]objstore.KV, error) {
	if err := c.need(); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []objstore.KV
	for _, k := range keys {
		if v, ok := c.obj.Omap[k]; ok && !seen[k] {
			seen[k] = true
			out = append(out, objstore.KV{Key: k, Value: bytes.Clone(v)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
func (c *mctx) GetOmapVals(after, prefix string, max int) ([]objstore.KV, bool, error) {
	if err := c.need(); err != nil {
		return nil, false, err
	}
	all := sorted(c.obj.Omap, after, prefix, 0)
	if max > 0 && len(all) > max {
		return all[:max], true, nil
	}
	return all, false, nil
}
func (c *mctx) SetOmap(pairs ...objstore.KV) error {
	if err := c.write(); err != nil {
		return err
	}
	for _, kv := range pairs {
		if err := objstore.ValidateOmapKey(kv.Key); err != nil {
			return err
		}
		c.obj.Omap[kv.Key] = bytes.Clone(kv.Value)
	}
	return nil
}
func (c *mctx) RmOmapKeys(keys ...string) error {
	if err := c.write(); err != nil {
		return err
	}
	for _, k := range keys {
		delete(c.obj.Omap, k)
	}
	return nil
}
func (c *mctx) OmapRmRange(start, end string) error {
	if err := c.write(); err != nil {
		return err
	}
	for k := range c.obj.Omap {
		if k >= start && (end == "" || k < end) {
			delete(c.obj.Omap, k)
		}
	}
	return nil
}
func (c *mctx) OmapClear() error {
	if err := c.write(); err != nil {
		return err
	}
	clear(c.obj.Omap)
	return nil
}
func (c *mctx) GetOmapHeader() ([]byte, error) {
	if err := c.need(); err != nil {
		return nil, err
	}
	return bytes.Clone(c.obj.Header), nil
}
func (c *mctx) SetOmapHeader(h []byte) error {
	if err := c.write(); err != nil {
		return err
	}
	c.obj.Header = bytes.Clone(h)
	return nil
}
func (c *mctx) Now() time.Time { return c.s.now }
func (c *mctx) Cached(slot string) (any, bool) {
	if v, ok := c.staged[slot]; ok {
		return v, true
	}
	v, ok := c.s.cache[c.oid][slot]
	return v, ok
}
func (c *mctx) SetCached(slot string, v any) { c.staged[slot] = v }

func sorted(m map[string][]byte, after, prefix string, max int) []objstore.KV {
	var out []objstore.KV
	for k, v := range m {
		if k > after && strings.HasPrefix(k, prefix) {
			out = append(out, objstore.KV{Key: k, Value: bytes.Clone(v)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	if max > 0 && len(out) > max {
		out = out[:max]
	}
	return out
}
