//go:build rados

package radosstore

/*
#cgo LDFLAGS: -lrados
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <rados/librados.h>

// One cgo call per op: submit asynchronously (so the completion carries the
// object's version, rados_aio_get_version, which is per op; the ioctx's
// rados_get_last_version is racy under concurrency), wait, collect.
int cairn_write_op_run(rados_write_op_t op, rados_ioctx_t io, const char *oid,
		time_t *mtime, uint64_t *ver) {
	rados_completion_t c;
	int r = rados_aio_create_completion2(NULL, NULL, &c);
	if (r < 0) return r;
	r = rados_aio_write_op_operate(op, io, c, oid, mtime, 0);
	if (r < 0) { rados_aio_release(c); return r; }
	rados_aio_wait_for_complete(c);
	r = rados_aio_get_return_value(c);
	*ver = rados_aio_get_version(c);
	rados_aio_release(c);
	return r;
}

int cairn_read_op_run(rados_read_op_t op, rados_ioctx_t io, const char *oid, uint64_t *ver) {
	rados_completion_t c;
	int r = rados_aio_create_completion2(NULL, NULL, &c);
	if (r < 0) return r;
	r = rados_aio_read_op_operate(op, io, c, oid, 0);
	if (r < 0) { rados_aio_release(c); return r; }
	rados_aio_wait_for_complete(c);
	r = rados_aio_get_return_value(c);
	*ver = rados_aio_get_version(c);
	rados_aio_release(c);
	return r;
}
*/
import "C"

import (
	"syscall"
	"unsafe"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// arena owns C memory for the arguments of one op; free releases it after
// the op completed.
type arena struct{ ptrs []unsafe.Pointer }

func (a *arena) str(s string) *C.char {
	p := C.CString(s)
	a.ptrs = append(a.ptrs, unsafe.Pointer(p))
	return p
}

// bytes copies b into C memory (never NULL, so zero-length values are
// still values).
func (a *arena) bytes(b []byte) *C.char {
	p := C.malloc(C.size_t(len(b) + 1))
	if len(b) > 0 {
		C.memcpy(p, unsafe.Pointer(&b[0]), C.size_t(len(b)))
	}
	a.ptrs = append(a.ptrs, p)
	return (*C.char)(p)
}

func (a *arena) sbytes(s string) *C.char {
	p := C.malloc(C.size_t(len(s) + 1))
	if len(s) > 0 {
		C.memcpy(p, unsafe.Pointer(unsafe.StringData(s)), C.size_t(len(s)))
	}
	a.ptrs = append(a.ptrs, p)
	return (*C.char)(p)
}

func (a *arena) alloc(n int) unsafe.Pointer {
	if n == 0 {
		n = 1
	}
	p := C.calloc(1, C.size_t(n))
	a.ptrs = append(a.ptrs, p)
	return p
}

func (a *arena) free() {
	for _, p := range a.ptrs {
		C.free(p)
	}
	a.ptrs = a.ptrs[:0]
}

// errnoErr maps a negative librados return code to an objstore error. The
// contract's codes are librados's errnos, with these translations:
// ERANGE/EOVERFLOW (assert_version too old/new) → ErrCanceled; ENODATA
// (missing xattr) → ErrNotFound; E2BIG → ErrTooBig.
func errnoErr(r C.int, what string) error {
	if r >= 0 {
		return nil
	}
	e := syscall.Errno(-r)
	switch e {
	case syscall.ERANGE, syscall.EOVERFLOW:
		return objstore.Errorf(objstore.ErrCanceled, "%s: assert_version failed (%v)", what, e)
	case syscall.ENODATA:
		return objstore.Errorf(objstore.ErrNotFound, "%s: %v", what, e)
	case syscall.ENAMETOOLONG:
		return objstore.Errorf(objstore.ErrInvalid, "%s: %v (xattr names over osd_max_attr_name_len)", what, e)
	case syscall.E2BIG:
		return objstore.Errorf(objstore.ErrTooBig, "%s: %v", what, e)
	case syscall.EDQUOT:
		return objstore.Errorf(objstore.ErrNoSpace, "%s: %v", what, e)
	}
	return objstore.Errorf(objstore.Errno(e), "%s", what)
}
