// Package cls holds Cairn's object classes: Go methods registered by name
// that run inside an objstore WriteOp or ReadOp, atomically with the op's
// other steps (RADOS's cls_* modules).
//
// Each class package has the server side (Register and the methods) and a
// typed client API: AddX builders that put one call into a compound op, so
// callers can combine class calls with guards such as lock.AssertLocked,
// and one-call helpers for the common case.
//
//	lock      cls_lock: exclusive/shared locks, expiry, renew, assert_locked (fencing)
//	version   cls_version: object version + tag in an xattr, set/inc/read/check
//	queue     class "2pc_queue": bounded reserve/commit/abort queue (notifications)
//	guardlog  class "log": epoch-guarded, write-once log segment (CORFU/ZLog)
//
// Inputs, outputs and stored records use the compact, versioned encoding of
// internal/cls/internal/wire; byte layouts are in docs/format/cls.md. The
// behaviour every backend must show is checked by clstest.
package cls
