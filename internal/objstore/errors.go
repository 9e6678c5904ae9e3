package objstore

import (
	"errors"
	"fmt"
	"syscall"
)

// Errno is an errno-style error code, named after the librados return code
// it mirrors. Backends return *Error values; callers compare with errors.Is
// against the sentinels below, so context can be attached without losing
// the code.
type Errno syscall.Errno

func (e Errno) Error() string { return syscall.Errno(e).Error() }

// Sentinel errors. Every backend returns the same one for the same condition.
var (
	ErrNotFound     = Errno(syscall.ENOENT)     // object, pool, xattr, omap key or reservation missing
	ErrExists       = Errno(syscall.EEXIST)     // exclusive create of an existing object or pool
	ErrCanceled     = Errno(syscall.ECANCELED)  // a guard (cmpxattr, omap_cmp, assert_version, assert_locked) failed
	ErrNoSpace      = Errno(syscall.ENOSPC)     // a bounded structure (queue) is full
	ErrBusy         = Errno(syscall.EBUSY)      // held by someone else (lock)
	ErrInvalid      = Errno(syscall.EINVAL)     // bad name, argument or class input
	ErrAgain        = Errno(syscall.EAGAIN)     // stale epoch (log class): retry with a newer one
	ErrReadOnly     = Errno(syscall.EROFS)      // write-once position already written (log class)
	ErrTooBig       = Errno(syscall.EFBIG)      // value or object over its size limit
	ErrNotSupported = Errno(syscall.EOPNOTSUPP) // unknown class or method
	ErrTimedOut     = Errno(syscall.ETIMEDOUT)  // backend did not answer in time
	ErrStale        = Errno(syscall.ESTALE)     // addressed a retired structure (closed index shard): refresh and retry
)

// Error is an Errno with context. errors.Is(err, ErrNotFound) holds for an
// *Error whose Code is ErrNotFound.
type Error struct {
	Code Errno
	Msg  string
}

func (e *Error) Error() string { return e.Msg + ": " + e.Code.Error() }

// Is reports whether target is this error's code.
func (e *Error) Is(target error) bool {
	c, ok := target.(Errno)
	return ok && c == e.Code
}

// Unwrap returns the code, so errors.As(err, &errno) works.
func (e *Error) Unwrap() error { return e.Code }

// Errorf returns an *Error with code c and a formatted message.
func Errorf(c Errno, format string, args ...any) error {
	return &Error{Code: c, Msg: fmt.Sprintf(format, args...)}
}

// Code returns the Errno in err's chain, or 0 when there is none.
func Code(err error) Errno {
	var e Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}
