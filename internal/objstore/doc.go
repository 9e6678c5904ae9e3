// Package objstore is Cairn's RADOS-style object layer: the contract between
// the gateway services and a storage backend.
//
// It owns the vocabulary (pools, namespaces, objects with data, xattrs and an
// ordered omap; compound WriteOp/ReadOp with guards; Exec of object class
// methods), the errno-style errors every backend returns, the input limits
// every backend enforces, and the class registry. Names mirror librados (and
// go-ceph's rados package) so that the Ceph backend is a thin translation.
//
// Backends live in subpackages (embedded, radosstore) and share one step
// and class-method interpreter (interp); the conformance
// suite every backend must pass is objstoretest. Object classes live in
// internal/cls.
package objstore
