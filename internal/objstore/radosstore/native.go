//go:build rados

package radosstore

/*
#include <stdlib.h>
#include <rados/librados.h>

int cairn_write_op_run(rados_write_op_t op, rados_ioctx_t io, const char *oid, time_t *mtime, uint64_t *ver);
int cairn_read_op_run(rados_read_op_t op, rados_ioctx_t io, const char *oid, uint64_t *ver);
*/
import "C"

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// ExecNative runs a method of a Ceph object class loaded in the OSDs (a C++
// class such as "version" or "lock", or "lua" with method "eval_json" where
// the cluster loads cls_lua), not a Go class: rados_write_op_exec when
// write is true (the output is discarded: the C API returns none from a
// write op), rados_read_op_exec otherwise. It returns the new object
// version for a write. io must come from this package.
func ExecNative(ctx context.Context, io objstore.IOContext, oid, class, method string, in []byte, write bool) (out []byte, version uint64, err error) {
	c, ok := io.(*ioContext)
	if !ok {
		return nil, 0, fmt.Errorf("radosstore: ExecNative on a %T", io)
	}
	if err := objstore.ValidateObjectName(oid); err != nil {
		return nil, 0, err
	}
	rio, err := c.io()
	if err != nil {
		return nil, 0, err
	}
	var a arena
	defer a.free()
	prval := (*C.int)(a.alloc(C.sizeof_int))
	var ver C.uint64_t
	if write {
		wop := C.rados_create_write_op()
		defer C.rados_release_write_op(wop)
		C.rados_write_op_exec(wop, a.str(class), a.str(method), a.bytes(in), C.size_t(len(in)), prval)
		c.s.ops.add(c.pool, c.ns, opExec)
		if r := C.cairn_write_op_run(wop, rio, a.str(oid), nil, &ver); r < 0 {
			return nil, 0, errnoErr(r, "exec "+class+"."+method)
		}
		return nil, uint64(ver), nil
	}
	rop := C.rados_create_read_op()
	defer C.rados_release_read_op(rop)
	outp := (**C.char)(a.alloc(int(unsafe.Sizeof((*C.char)(nil)))))
	outl := (*C.size_t)(a.alloc(C.sizeof_size_t))
	C.rados_read_op_exec(rop, a.str(class), a.str(method), a.bytes(in), C.size_t(len(in)), outp, outl, prval)
	c.s.ops.add(c.pool, c.ns, opExec)
	r := C.cairn_read_op_run(rop, rio, a.str(oid), &ver)
	if *outp != nil {
		out = C.GoBytes(unsafe.Pointer(*outp), C.int(*outl))
		C.rados_buffer_free(*outp)
	}
	if r < 0 {
		return nil, 0, errnoErr(r, "exec "+class+"."+method)
	}
	return out, uint64(ver), nil
}
