package objstore

import (
	"context"
	"sync"
	"time"
)

// Limits every backend enforces, so that input rejected by one is rejected
// by all. Names may not contain NUL bytes.
const (
	MaxPoolNameLen   = 255
	MaxNamespaceLen  = 255
	MaxObjectNameLen = 2048 // RADOS osd_max_object_name_len default
	MaxXattrNameLen  = 255
	MaxXattrValueLen = 64 << 10
	MaxOmapKeyLen    = 4096
	MaxOmapValueLen  = 1 << 20
	MaxObjectSize    = 1 << 30 // one object; S3 objects are striped above this layer
	MaxOpSteps       = 4096
	MaxClassInputLen = 8 << 20
)

// Store is a set of pools: the librados Conn/cluster handle.
//
// All methods are safe for concurrent use.
type Store interface {
	// CreatePool creates a pool (rados_pool_create). ErrExists if it exists,
	// ErrInvalid for a bad name.
	CreatePool(ctx context.Context, name string) error
	// DeletePool removes a pool and every object in it (rados_pool_delete).
	// ErrNotFound if it does not exist.
	DeletePool(ctx context.Context, name string) error
	// ListPools returns pool names in lexical order (rados_pool_list).
	ListPools(ctx context.Context) ([]string, error)
	// IOContext opens a handle on a pool's default (empty) namespace
	// (rados_ioctx_create). ErrNotFound if the pool does not exist.
	IOContext(ctx context.Context, pool string) (IOContext, error)
	// Close releases the store. In-flight operations must have returned.
	Close() error
}

// IOContext addresses objects in one pool and namespace. It is immutable and
// safe for concurrent use (unlike a librados ioctx, whose namespace is
// mutable state: WithNamespace returns a new handle instead).
type IOContext interface {
	Pool() string
	Namespace() string
	// WithNamespace returns a handle on the same pool in namespace ns
	// (rados_ioctx_set_namespace).
	WithNamespace(ns string) IOContext

	// Operate applies every step of op to object oid atomically: all steps
	// take effect, or none does (rados_write_op_operate). A failed guard
	// returns an error matching ErrCanceled; a failed step returns its own
	// error; in both cases nothing changed. On success the object's version
	// has increased and op.Version reports it. When Operate returns nil the
	// change is durable (synced); concurrent operations share syncs, unless
	// op.DeferSync asks otherwise (see WriteOp).
	// Operations on one object are serialised; on different objects they
	// run in parallel. Concurrent ops on one object made only of ExecSteps
	// may commit together, as one write in arrival order (the RADOS
	// backend's group commit): each has its own result, as if run alone,
	// and they report the same Version.
	//
	// Steps run in order and later steps observe earlier ones. An op may be
	// used once.
	Operate(ctx context.Context, oid string, op *WriteOp) error

	// OperateRead runs every step of op against one consistent snapshot of
	// object oid (rados_read_op_operate). Step results are filled in place.
	// A failed guard returns ErrCanceled; a missing object returns
	// ErrNotFound unless every step tolerates absence (see ReadOp).
	// A read sees every write acknowledged before it started, and never a
	// write that could still be lost by a crash.
	OperateRead(ctx context.Context, oid string, op *ReadOp) error

	// ListObjects returns up to max object names in this namespace that sort
	// after marker, in lexical order, and whether more remain
	// (rados_nobjects_list_*, but ordered and resumable by name).
	ListObjects(ctx context.Context, marker string, max int) (oids []string, more bool, err error)
}

// Stat is an object's size, modification time and version.
type Stat struct {
	Size    int64
	ModTime time.Time
	// Version is the object's user version. It strictly increases with
	// every successful WriteOp on the object (ops committed together, see
	// IOContext.Operate, count as one), also across removal and
	// re-creation, so assert_version cannot be fooled by ABA. Values are
	// not dense: do not assume +1 steps.
	Version uint64
}

// KV is one omap entry.
type KV struct {
	Key   string
	Value []byte
}

// Syncer is implemented by backends where WriteOp.DeferSync can leave
// changes not yet durable: Sync returns once every change applied to the
// store before it is durable. Backends whose writes are durable when
// acknowledged (RADOS) need not implement it.
type Syncer interface {
	Sync(ctx context.Context) error
}

// Sync makes every change applied through io's store durable (see
// WriteOp.DeferSync); a no-op where io's backend has nothing deferred.
func Sync(ctx context.Context, io IOContext) error {
	if s, ok := io.(Syncer); ok {
		return s.Sync(ctx)
	}
	return nil
}

// ReadReq is one object's read in a batch (OperateReadMany).
type ReadReq struct {
	OID string
	Op  *ReadOp
	// Err is set by OperateReadMany to what OperateRead(OID, Op) would
	// have returned.
	Err error
}

// ReadBatcher is implemented by backends that serve many objects' reads
// in one call for less than one OperateRead each (the embedded store
// answers them from one iterator).
type ReadBatcher interface {
	// OperateReadMany: see the function OperateReadMany.
	OperateReadMany(ctx context.Context, reqs []ReadReq)
}

// readManyFanout bounds the concurrent OperateReads of OperateReadMany's
// fallback.
const readManyFanout = 32

// OperateReadMany runs reqs[i].Op on object reqs[i].OID for every i, with
// OperateRead's semantics for each one (guards, absence, durability), and
// sets reqs[i].Err to its result. Each op sees one consistent snapshot of
// its object; different objects' reads need not come from one moment, and
// the ops run in no particular order. An OID may appear more than once.
//
// RADOS has no multi-object read: backends without ReadBatcher (the RADOS
// backend) run one OperateRead (rados_read_op_operate) per request, up to
// 32 at a time, as librados clients issue parallel ops.
func OperateReadMany(ctx context.Context, io IOContext, reqs []ReadReq) {
	if b, ok := io.(ReadBatcher); ok {
		b.OperateReadMany(ctx, reqs)
		return
	}
	if len(reqs) == 1 {
		reqs[0].Err = io.OperateRead(ctx, reqs[0].OID, reqs[0].Op)
		return
	}
	fanOut(len(reqs), readManyFanout, func(i int) {
		reqs[i].Err = io.OperateRead(ctx, reqs[i].OID, reqs[i].Op)
	})
}

// fanOut runs fn(0..n-1), at most limit at a time, and waits for all.
func fanOut(n, limit int, fn func(i int)) {
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}

// WriteReq is one object's write in a batch (OperateMany).
type WriteReq struct {
	OID string
	Op  *WriteOp
	// Err is set by OperateMany to what Operate(OID, Op) would have
	// returned; on success Op.Version is set as by Operate.
	Err error
}

// WriteBatcher is implemented by backends that apply many objects' write
// ops in one call for less than one Operate each (the embedded store
// commits them as one storage batch with one WAL sync).
type WriteBatcher interface {
	// OperateMany: see the function OperateMany.
	OperateMany(ctx context.Context, reqs []WriteReq)
}

// writeManyFanout bounds the concurrent Operates of OperateMany's
// fallback.
const writeManyFanout = 32

// OperateMany runs reqs[i].Op on object reqs[i].OID for every i, with
// Operate's semantics for each one: each op is atomic on its object and
// guarded on its own, and reqs[i].Err is what Operate would have
// returned. One op's failure (a guard, a class error, ErrNotFound) does
// not fail or change the others; an error that leaves the outcome
// unknown (I/O, a failed sync) may be reported for every op of the call.
// There is no atomicity across objects: after a crash any subset of the
// ops may have applied unless the call returned, and when it returns every
// op reported nil is durable. Ops on one OID apply in the order given.
//
// RADOS has no multi-object write: backends without WriteBatcher (the
// RADOS backend) run one Operate (rados_write_op_operate) per request, up
// to 32 at a time, as a librados client issues concurrent aio write ops
// and waits for all; ops on an OID that appears again run one after the
// other.
func OperateMany(ctx context.Context, io IOContext, reqs []WriteReq) {
	if b, ok := io.(WriteBatcher); ok {
		b.OperateMany(ctx, reqs)
		return
	}
	if len(reqs) == 1 {
		reqs[0].Err = io.Operate(ctx, reqs[0].OID, reqs[0].Op)
		return
	}
	// One goroutine per distinct OID runs that OID's ops in order.
	byOID := make(map[string][]int, len(reqs))
	var order []string
	for i := range reqs {
		if _, ok := byOID[reqs[i].OID]; !ok {
			order = append(order, reqs[i].OID)
		}
		byOID[reqs[i].OID] = append(byOID[reqs[i].OID], i)
	}
	fanOut(len(order), writeManyFanout, func(k int) {
		for _, i := range byOID[order[k]] {
			reqs[i].Err = io.Operate(ctx, reqs[i].OID, reqs[i].Op)
		}
	})
}

// OmapLoader is implemented by backends that can load omaps in bulk below
// the write path: an extension of the object model for the embedded store,
// which writes the pairs as sorted tables and ingests them into its LSM
// (written once, where Operate's pairs pass the WAL, the memtable and
// every compaction level); RADOS has no counterpart. A reshard copies a
// bucket's entries into its new shards this way.
type OmapLoader interface {
	NewOmapLoad(ctx context.Context) (OmapLoad, error)
}

// OmapLoad is one bulk load into the omaps of existing objects.
type OmapLoad interface {
	// Add stages key=value in oid's omap. Per object, keys must ascend
	// (each once); objects may interleave.
	Add(oid, key string, value []byte) error
	// Guard makes Commit check guard's steps on oid (guard steps only:
	// AssertExists, AssertVersion, CmpXattr, OmapCmp; ErrInvalid
	// otherwise), atomically with the load: a fenced writer loads only
	// while its fence holds.
	Guard(oid string, guard *ReadOp) error
	// Commit makes every staged pair visible and durable at once. Every
	// object must exist (ErrNotFound), keep no view (ErrInvalid) and pass
	// its guards (their error): otherwise nothing is loaded. A staged key replaces the object's value for it.
	// Commit does not change the objects' versions or mtimes, and the
	// caller keeps other writers off the loaded keys until it returns (a
	// concurrent write of a staged key may be lost to the load).
	Commit(ctx context.Context) error
	// Abort drops what was staged; after Commit it does nothing.
	Abort()
}

// Viewer is implemented by backends that keep ordered views: an extension
// of the object model for the embedded store, which has no RADOS
// counterpart (the RADOS backend does not implement it and rejects
// SetView with ErrNotSupported).
//
// A view is one ordered key space per pool and namespace, named by the
// caller, that its member objects' omap writes keep: while an object is a
// member (WriteOp.SetView(name, below, proj)), every omap key below Below
// (every key when Below is "") that an op sets or removes on the object is
// set or removed in the view too, in the same atomic commit, with the
// same value, or the value's Projection when the member names one (a
// bucket index keeps only what a listing shows). An OmapRmRange or OmapClear on a member removes the
// member's keys it removes, and only those. Nothing else changes a view:
// joining does not copy the member's existing keys, and leaving, removing
// the member object or a failed op leaves the view as it is. So a view
// holds the union of what its members wrote, and the caller keeps the
// members' key sets disjoint (a bucket index's shards) and removes the
// view when it is done with it. A view read sees one consistent moment
// and, like OperateRead, never a write that could still be lost.
type Viewer interface {
	// ReadView returns up to max (0 = all) pairs of view name with keys
	// after startAfter that begin with prefix, in key order, and whether
	// more exist. An unknown view is empty.
	ReadView(ctx context.Context, name, startAfter, prefix string, max int) ([]KV, bool, error)
	// OpenView opens a cursor over the keys of view name after startAfter
	// that begin with prefix, in key order, at one consistent moment: a
	// walk that reads a page in place, without copying it, and skips
	// ahead with a seek. The caller must Close it, and must not act on
	// what it read before Close returns nil (a write still in flight may
	// yet be lost). While it is open the caller makes no other call on
	// the backend (it holds the pool's read lock).
	OpenView(ctx context.Context, name, startAfter, prefix string) (ViewCursor, error)
	// RemoveView drops every key of view name (not its members'
	// membership; they should be gone or have left first).
	RemoveView(ctx context.Context, name string) error
}

// ViewCursor walks a view (Viewer.OpenView). Key and Value are the
// cursor's memory, valid until its next call: copy what you keep. Not safe
// for concurrent use.
type ViewCursor interface {
	// Valid reports whether the cursor is at a pair (false at the end).
	Valid() bool
	// Key is the current key; Value its value.
	Key() []byte
	Value() []byte
	// Next steps to the next pair.
	Next()
	// SeekAfter moves to the first pair with a key > key; key is at or
	// after the current one (a cursor does not go back).
	SeekAfter(key string)
	// Close ends the walk: nil means every pair it showed is durable.
	Close() error
}
