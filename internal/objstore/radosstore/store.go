//go:build rados

package radosstore

/*
#include <errno.h>
#include <stdlib.h>
#include <rados/librados.h>
*/
import "C"

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Store is a connection to one Ceph cluster (a rados_t).
type Store struct {
	opts    Options
	cluster C.rados_t

	mu      sync.Mutex
	closed  bool
	ioctxs  map[ioKey]C.rados_ioctx_t // one librados ioctx per (pool, namespace)
	retired []C.rados_ioctx_t         // of deleted pools: destroyed at Close, as ops may still hold them

	locks  objLocks   // serialises this process's optimistic transactions per object
	caches cacheTable // version-keyed class caches

	txns, conflicts, txnReads atomic.Int64
	batched                   atomic.Int64 // ops that committed in a batch with others (group commit)
	writes                    atomic.Int64 // rados_write_op round trips
	specHits, specMisses      atomic.Int64 // absent-key guesses confirmed / refuted by the write
	spec                      sync.Map     // pool -> *atomic.Int32: its guess score (speculate.go)
	ops                       opCounts     // round trips by pool, namespace and kind (opcount.go)
}

// Stats are counters of the optimistic path since Open.
type Stats struct {
	Txns      int64 // optimistic transactions run (write and read ops)
	Conflicts int64 // attempts retried because the object changed
	Reads     int64 // round trips spent reading state for them (incl. the first)
}

// Stats returns the optimistic-path counters.
func (s *Store) Stats() Stats {
	return Stats{Txns: s.txns.Load(), Conflicts: s.conflicts.Load(), Reads: s.txnReads.Load()}
}

// Counters are Stats by name, for benchmarks that know no backend types.
func (s *Store) Counters() map[string]int64 {
	st := s.Stats()
	return map[string]int64{"txns": st.Txns, "conflicts": st.Conflicts, "state_reads": st.Reads,
		"batched_ops": s.batched.Load(), "writes": s.writes.Load(),
		"absent_guesses": s.specHits.Load(), "absent_misses": s.specMisses.Load()}
}

type ioKey struct{ pool, ns string }

var _ objstore.Store = (*Store)(nil)

// Open connects to the cluster described by opts.ConfFile
// (rados_create2, rados_conf_read_file, rados_connect).
func Open(opts Options) (objstore.Store, error) { return OpenStore(opts) }

// OpenStore is Open returning the concrete type.
func OpenStore(opts Options) (*Store, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Store{opts: opts, ioctxs: map[ioKey]C.rados_ioctx_t{}}
	s.locks.init()
	s.caches.init()
	var a arena
	defer a.free()
	if r := C.rados_create2(&s.cluster, a.str("ceph"), a.str("client."+opts.User), 0); r < 0 {
		return nil, fmt.Errorf("radosstore: rados_create2: %w", errnoErr(r, "create"))
	}
	if r := C.rados_conf_read_file(s.cluster, a.str(opts.ConfFile)); r < 0 {
		C.rados_shutdown(s.cluster)
		return nil, fmt.Errorf("radosstore: read %s: %w", opts.ConfFile, errnoErr(r, "conf_read_file"))
	}
	if opts.OpTimeout > 0 {
		secs := strconv.FormatFloat(opts.OpTimeout.Seconds(), 'f', -1, 64)
		for _, k := range []string{"rados_osd_op_timeout", "rados_mon_op_timeout"} {
			if r := C.rados_conf_set(s.cluster, a.str(k), a.str(secs)); r < 0 {
				C.rados_shutdown(s.cluster)
				return nil, fmt.Errorf("radosstore: conf_set %s: %w", k, errnoErr(r, "conf_set"))
			}
		}
	}
	if r := C.rados_connect(s.cluster); r < 0 {
		C.rados_shutdown(s.cluster)
		return nil, fmt.Errorf("radosstore: connect (conf %s, client.%s): %w", opts.ConfFile, opts.User, errnoErr(r, "connect"))
	}
	return s, nil
}

func (s *Store) poolName(name string) string { return s.opts.PoolPrefix + name }

// CreatePool: rados_pool_create, then rados_application_enable("cairn").
func (s *Store) CreatePool(ctx context.Context, name string) error {
	if err := objstore.ValidatePoolName(name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var a arena
	defer a.free()
	full := a.str(s.poolName(name))
	if !s.opts.CreatePools {
		if C.rados_pool_lookup(s.cluster, full) >= 0 {
			return objstore.Errorf(objstore.ErrExists, "pool %q", name)
		}
		return fmt.Errorf("radosstore: pool %q does not exist and CreatePools is off: create it with `ceph osd pool create %s`", s.poolName(name), s.poolName(name))
	}
	if r := C.rados_pool_create(s.cluster, full); r < 0 {
		return errnoErr(r, "pool_create "+strconv.Quote(name))
	}
	var io C.rados_ioctx_t
	if r := C.rados_ioctx_create(s.cluster, full, &io); r == 0 {
		C.rados_application_enable(io, a.str("cairn"), 1)
		C.rados_ioctx_destroy(io)
	}
	return nil
}

// DeletePool: rados_pool_delete (needs mon_allow_pool_delete).
func (s *Store) DeletePool(ctx context.Context, name string) error {
	if err := objstore.ValidatePoolName(name); err != nil {
		return err
	}
	s.mu.Lock()
	for k, io := range s.ioctxs {
		if k.pool == name {
			s.retired = append(s.retired, io)
			delete(s.ioctxs, k)
		}
	}
	s.mu.Unlock()
	var a arena
	defer a.free()
	if r := C.rados_pool_delete(s.cluster, a.str(s.poolName(name))); r < 0 {
		return errnoErr(r, "pool_delete "+strconv.Quote(name))
	}
	return nil
}

// ListPools: rados_pool_list, filtered by PoolPrefix and sorted.
func (s *Store) ListPools(ctx context.Context) ([]string, error) {
	n := 4096
	for {
		buf := make([]byte, n)
		r := C.rados_pool_list(s.cluster, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(n))
		if r < 0 {
			return nil, errnoErr(r, "pool_list")
		}
		if int(r) > n {
			n = int(r)
			continue
		}
		var out []string
		for _, p := range bytes.Split(buf[:r], []byte{0}) {
			if len(p) == 0 {
				continue
			}
			name := string(p)
			if rest, ok := strings.CutPrefix(name, s.opts.PoolPrefix); ok && rest != "" {
				out = append(out, rest)
			}
		}
		sort.Strings(out)
		return out, nil
	}
}

// IOContext: rados_ioctx_create on the pool's default namespace.
func (s *Store) IOContext(ctx context.Context, pool string) (objstore.IOContext, error) {
	if err := objstore.ValidatePoolName(pool); err != nil {
		return nil, err
	}
	if _, err := s.ioctx(pool, ""); err != nil {
		return nil, err
	}
	return &ioContext{s: s, pool: pool}, nil
}

// ioctx returns the cached librados ioctx for (pool, ns), creating it
// (rados_ioctx_create + rados_ioctx_set_namespace). A librados ioctx's
// namespace is mutable, so each namespace gets its own.
func (s *Store) ioctx(pool, ns string) (C.rados_ioctx_t, error) {
	k := ioKey{pool, ns}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("radosstore: store closed")
	}
	if io, ok := s.ioctxs[k]; ok {
		return io, nil
	}
	var a arena
	defer a.free()
	var io C.rados_ioctx_t
	if r := C.rados_ioctx_create(s.cluster, a.str(s.poolName(pool)), &io); r < 0 {
		return nil, errnoErr(r, "pool "+strconv.Quote(pool))
	}
	C.rados_ioctx_set_namespace(io, a.str(ns))
	s.ioctxs[k] = io
	return io, nil
}

// Close destroys the ioctxs and shuts the connection down (rados_shutdown).
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for k, io := range s.ioctxs {
		C.rados_ioctx_destroy(io)
		delete(s.ioctxs, k)
	}
	for _, io := range s.retired {
		C.rados_ioctx_destroy(io)
	}
	s.retired = nil
	C.rados_shutdown(s.cluster)
	return nil
}

// ioContext is an immutable (pool, namespace) handle.
type ioContext struct {
	s        *Store
	pool, ns string
}

var _ objstore.IOContext = (*ioContext)(nil)

func (c *ioContext) Pool() string      { return c.pool }
func (c *ioContext) Namespace() string { return c.ns }
func (c *ioContext) WithNamespace(ns string) objstore.IOContext {
	return &ioContext{s: c.s, pool: c.pool, ns: ns}
}

func (c *ioContext) io() (C.rados_ioctx_t, error) {
	if err := objstore.ValidateNamespace(c.ns); err != nil {
		return nil, err
	}
	return c.s.ioctx(c.pool, c.ns)
}

// ListObjects lists the namespace fully (rados_nobjects_list_*, which is
// unordered: hash order), sorts, and returns the page after marker. Cost:
// O(objects in the namespace) per call; see docs/design/rados-backend.md.
func (c *ioContext) ListObjects(ctx context.Context, marker string, max int) ([]string, bool, error) {
	if max < 0 {
		return nil, false, objstore.Errorf(objstore.ErrInvalid, "list: negative max")
	}
	io, err := c.io()
	if err != nil {
		return nil, false, err
	}
	var lc C.rados_list_ctx_t
	c.s.ops.add(c.pool, c.ns, opList)
	if r := C.rados_nobjects_list_open(io, &lc); r < 0 {
		return nil, false, errnoErr(r, "nobjects_list_open")
	}
	defer C.rados_nobjects_list_close(lc)
	var all []string
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, false, err
			}
		}
		var entry, key, nspace *C.char
		var elen, klen, nlen C.size_t
		r := C.rados_nobjects_list_next2(lc, &entry, &key, &nspace, &elen, &klen, &nlen)
		if r == -C.ENOENT {
			break
		}
		if r < 0 {
			return nil, false, errnoErr(r, "nobjects_list_next")
		}
		name := C.GoStringN(entry, C.int(elen))
		if name > marker {
			all = append(all, name)
		}
	}
	sort.Strings(all)
	if max > 0 && len(all) > max {
		return all[:max], true, nil
	}
	return all, false, nil
}
