// Package lock is the lock object class (Ceph's cls_lock): named exclusive or
// shared locks on an object, with cookies, tags, expiry and renewal, and
// assert_locked for lease fencing inside any compound op.
//
// A lock lives in the xattr "lock.<name>" (layout in docs/format/cls.md).
// Expiry is evaluated against the op's time (MethodContext.Now): a lapsed
// hold counts as absent everywhere and is dropped on the next write.
//
// Errors by method:
//
//	lock          ErrBusy      held by another cookie (exclusive, type or tag clash)
//	              ErrExists    this cookie holds it and Renew/MustRenew is unset (EEXIST)
//	              ErrNotFound  MustRenew and this cookie does not hold it
//	              ErrInvalid   empty name, bad type, bad input
//	unlock        ErrNotFound  this cookie does not hold it (ENOENT)
//	break_lock    ErrNotFound  no such locker+cookie holds it
//	get_info      ErrNotFound  object missing; a free lock has no lockers
//	assert_locked ErrCanceled  not held by this cookie, wrong type or tag, lapsed
//	              (cls_lock says EBUSY; ours is the objstore guard code)
//
// Holders are identified by cookie alone, so cookies must be unique per
// holder (a random id per lease); Locker names the holder for people.
package lock
