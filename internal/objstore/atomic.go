package objstore

import "context"

// AtomicReq is one object's write in an atomic group (OperateAtomic).
type AtomicReq struct {
	IO  IOContext // the object's pool and namespace
	OID string
	Op  *WriteOp
}

// AtomicWriter is an optional capability of a backend's IOContext: write
// ops on several objects, in any pools and namespaces of one store, applied
// as one atomic commit. The embedded store implements it (one pebble batch,
// one WAL record, one sync). RADOS cannot (a librados write op addresses
// one object, and there is no multi-object transaction), so the RADOS
// backend does not implement it: callers that need one write to be durable
// before another (data before the index entry naming it) keep their own
// order of Operates there.
type AtomicWriter interface {
	// AtomicWith reports whether ops on this handle and on other can
	// share one OperateAtomic (both handles address the same store).
	AtomicWith(other IOContext) bool

	// OperateAtomic applies every reqs[i].Op to its object, all or none:
	// after a crash either every op has applied or none has. Each op has
	// Operate's semantics on its object (its steps in order, guards, class
	// methods); if any op fails, nothing changes and OperateAtomic returns
	// that op's error unwrapped (a failed guard: ErrCanceled). Every IO
	// must satisfy AtomicWith of the receiver, and one object may appear
	// once: otherwise ErrInvalid and nothing changes. On success every
	// op's Version is set, and the commit is durable when OperateAtomic
	// returns, unless every op has DeferSync (or ctx defers syncs to this
	// store, WithDeferredSync): then it is visible, and durable no later
	// than the next synced write on the store. Locks are taken in one
	// global order, so concurrent groups and Operates do not deadlock.
	OperateAtomic(ctx context.Context, reqs []AtomicReq) error
}

// Atomic returns the AtomicWriter that can write objects of a and b in one
// commit, or nil when a's backend has none or b is on another store.
func Atomic(a, b IOContext) AtomicWriter {
	w, ok := a.(AtomicWriter)
	if !ok || !w.AtomicWith(b) {
		return nil
	}
	return w
}
