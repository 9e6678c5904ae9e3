package lock

import (
	"context"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Execer is a WriteOp or ReadOp: anything that can carry an ExecStep.
type Execer interface {
	Exec(class, method string, in []byte) *objstore.ExecStep
}

// AddLock adds a lock step to op (cls_client::lock).
func AddLock(op *objstore.WriteOp, o Options) {
	op.Exec(ClassName, MethodLock, encodeLock(o))
}

// AddUnlock adds an unlock step to op (cls_client::unlock).
func AddUnlock(op *objstore.WriteOp, name, cookie string) {
	op.Exec(ClassName, MethodUnlock, encodeName(nameIn{name: name, cookie: cookie}))
}

// AddBreakLock adds a break_lock step (cls_client::break_lock).
func AddBreakLock(op *objstore.WriteOp, name, locker, cookie string) {
	op.Exec(ClassName, MethodBreakLock, encodeName(nameIn{name: name, locker: locker, cookie: cookie}))
}

// AssertLocked adds a guard to op (a WriteOp or ReadOp): the whole op fails
// with ErrCanceled and changes nothing unless cookie holds lock name with
// type typ (0 = either) right now (cls_client::assert_locked). This is lease
// fencing: a holder whose lease lapsed or was broken cannot write.
func AssertLocked(op Execer, name, cookie string, typ Type) {
	op.Exec(ClassName, MethodAssertLocked, encodeName(nameIn{name: name, cookie: cookie, typ: typ}))
}

// Lock takes or renews a lock on oid, creating the object if needed. Errors:
// ErrBusy (held by others), ErrExists (cookie holds it; set Renew),
// ErrNotFound (MustRenew and not held), ErrInvalid.
func Lock(ctx context.Context, io objstore.IOContext, oid string, o Options) error {
	op := objstore.NewWriteOp()
	AddLock(op, o)
	return io.Operate(ctx, oid, op)
}

// Unlock releases cookie's hold. ErrNotFound if it does not hold the lock
// (also when the hold lapsed).
func Unlock(ctx context.Context, io objstore.IOContext, oid, name, cookie string) error {
	op := objstore.NewWriteOp()
	AddUnlock(op, name, cookie)
	return io.Operate(ctx, oid, op)
}

// BreakLock removes another holder's hold. ErrNotFound unless locker and
// cookie hold the lock.
func BreakLock(ctx context.Context, io objstore.IOContext, oid, name, locker, cookie string) error {
	op := objstore.NewWriteOp()
	AddBreakLock(op, name, locker, cookie)
	return io.Operate(ctx, oid, op)
}

// GetInfo returns the lock's live holders (lapsed ones are left out).
// ErrNotFound if the object does not exist.
func GetInfo(ctx context.Context, io objstore.IOContext, oid, name string) (Info, error) {
	op := objstore.NewReadOp()
	s := op.Exec(ClassName, MethodGetInfo, encodeName(nameIn{name: name}))
	if err := io.OperateRead(ctx, oid, op); err != nil {
		return Info{}, err
	}
	return decodeInfo(s.Out)
}

// ListLocks returns the names of the locks held on oid, sorted.
func ListLocks(ctx context.Context, io objstore.IOContext, oid string) ([]string, error) {
	op := objstore.NewReadOp()
	s := op.Exec(ClassName, MethodListLocks, nil)
	if err := io.OperateRead(ctx, oid, op); err != nil {
		return nil, err
	}
	return decodeNames(s.Out)
}
