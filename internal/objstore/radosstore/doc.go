// Package radosstore is the Ceph RADOS backend of the object layer: the
// objstore contract translated onto librados's C API through cgo.
//
// It is built only with the build tag "rados" (it needs librados-dev at
// build time and librados at run time). Without the tag, Open returns an
// error saying so, and the rest of the module builds without any Ceph
// library.
//
// Plain WriteOps and ReadOps become one rados_write_op / rados_read_op each
// (one round trip). Steps RADOS cannot express natively (ExecStep with a Go
// class method, CmpXattr in u64 mode, OmapCmp with NE/GTE/LTE, AssertVersion(0))
// make the op an optimistic transaction: the object's state is read at a
// version V, the steps are evaluated in Go, and the resulting mutations are
// written in one rados_write_op guarded by assert_version(V) (or an
// exclusive create when the object did not exist), retried on conflict.
// docs/design/rados-backend.md has the details and measurements.
package radosstore
