//go:build rados

package radosstore

/*
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <rados/librados.h>

int cairn_write_op_run(rados_write_op_t op, rados_ioctx_t io, const char *oid, time_t *mtime, uint64_t *ver);
int cairn_read_op_run(rados_read_op_t op, rados_ioctx_t io, const char *oid, uint64_t *ver);
*/
import "C"

import (
	"context"
	"strings"
	"time"
	"unsafe"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// headerXattr holds the omap header: librados's C API has no
// omap_set_header/omap_get_header (only the C++ API does), so the header
// lives in an xattr under a reserved name, hidden from GetXattrs and
// refused as a user xattr name. OmapClear keeps it (as the embedded backend
// keeps the header); Remove drops it with the object.
const (
	reservedXattrPrefix = "\x01cairn."
	headerXattr         = reservedXattrPrefix + "omap_header"
)

func checkUserXattr(name string) error {
	if strings.HasPrefix(name, reservedXattrPrefix) {
		return objstore.Errorf(objstore.ErrInvalid, "xattr name %q is reserved by the RADOS backend", name)
	}
	return nil
}

// nativeWrite reports whether a write step maps onto one or more librados
// write-op calls; anything else makes the op an optimistic transaction.
func nativeWrite(s objstore.Step) bool {
	switch s := s.(type) {
	case *objstore.ExecStep:
		return false
	case *objstore.CmpXattr:
		return s.Mode == objstore.CmpBytes
	case *objstore.OmapCmp:
		return s.Op == objstore.CmpEQ || s.Op == objstore.CmpLT || s.Op == objstore.CmpGT
	case *objstore.AssertVersion:
		return s.Version != 0 // RADOS rejects assert_version(0) with EINVAL
	}
	return true
}

// radosCmp converts the contract's "stored <op> operand" into RADOS's
// comparison, which reads "operand <op> stored" (cmpxattr and omap_cmp
// compare the value in the request against the stored one).
func radosCmp(op objstore.CmpOp) C.uint8_t {
	switch op {
	case objstore.CmpGT:
		return C.uint8_t(objstore.CmpLT)
	case objstore.CmpGTE:
		return C.uint8_t(objstore.CmpLTE)
	case objstore.CmpLT:
		return C.uint8_t(objstore.CmpGT)
	case objstore.CmpLTE:
		return C.uint8_t(objstore.CmpGTE)
	}
	return C.uint8_t(op)
}

// needsTxn reports whether steps need the optimistic path: a step RADOS
// cannot express, or a guard after a mutation (the OSD evaluates cmpxattr,
// omap_cmp and assert_version against the stored object, not against the
// op's earlier, still pending steps).
func needsTxn(steps []objstore.Step) bool {
	mutated := false
	for _, s := range steps {
		if !nativeWrite(s) {
			return true
		}
		switch s.(type) {
		case *objstore.AssertExists, *objstore.AssertVersion, *objstore.CmpXattr, *objstore.OmapCmp:
			if mutated {
				return true
			}
		case *objstore.SetMtime, *objstore.StatStep, *objstore.ReadStep, *objstore.GetXattrStep,
			*objstore.GetXattrsStep, *objstore.OmapValsStep, *objstore.OmapKeysStep,
			*objstore.OmapValsByKeysStep, *objstore.OmapHeaderStep:
		default:
			mutated = true
		}
	}
	return false
}

// checkReserved refuses steps this backend cannot take: the xattrs it
// keeps for itself, and ordered views (an embedded-store extension).
func checkReserved(steps []objstore.Step) error {
	for _, s := range steps {
		var name string
		switch s := s.(type) {
		case *objstore.CmpXattr:
			name = s.Name
		case *objstore.SetXattr:
			name = s.Name
		case *objstore.RmXattr:
			name = s.Name
		case *objstore.GetXattrStep:
			name = s.Name
		case *objstore.SetView:
			return objstore.Errorf(objstore.ErrNotSupported, "ordered views are an embedded-store extension")
		default:
			continue
		}
		if err := checkUserXattr(name); err != nil {
			return err
		}
	}
	return nil
}

// Operate: rados_write_op_* steps, rados_aio_write_op_operate.
func (c *ioContext) Operate(ctx context.Context, oid string, op *objstore.WriteOp) error {
	if err := objstore.ValidateObjectName(oid); err != nil {
		return err
	}
	if err := objstore.ValidateWriteOp(op); err != nil {
		return err
	}
	if err := checkReserved(op.Steps); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	io, err := c.io()
	if err != nil {
		return err
	}
	if needsTxn(op.Steps) {
		return c.operateTxn(ctx, io, oid, op)
	}
	v, err := c.writeSteps(io, oid, nil, op.Steps, opWrite)
	if err != nil {
		return err
	}
	op.Version = v
	if c.s.caches.active() {
		c.s.caches.drop(c.cacheKey(oid)) // a plain write invalidates class caches
	}
	return nil
}

// prefix is a guard the optimistic path puts first.
type prefix struct {
	assertVersion uint64 // > 0: assert_version
	createExcl    bool   // exclusive create (the object did not exist)
}

// writeSteps builds and runs one rados_write_op.
func (c *ioContext) writeSteps(io C.rados_ioctx_t, oid string, pre *prefix, steps []objstore.Step, kind opKind) (uint64, error) {
	var a arena
	defer a.free()
	wop := C.rados_create_write_op()
	defer C.rados_release_write_op(wop)
	n := 0
	if pre != nil {
		if pre.assertVersion > 0 {
			C.rados_write_op_assert_version(wop, C.uint64_t(pre.assertVersion))
			n++
		}
		if pre.createExcl {
			C.rados_write_op_create(wop, 1, nil)
			n++
		}
	}
	var mtime *time.Time
	for _, st := range steps {
		switch s := st.(type) {
		case *objstore.AssertExists:
			C.rados_write_op_assert_exists(wop)
		case *objstore.AssertVersion:
			C.rados_write_op_assert_version(wop, C.uint64_t(s.Version))
		case *objstore.CmpXattr:
			C.rados_write_op_cmpxattr(wop, a.str(s.Name), radosCmp(s.Op), a.bytes(s.Value), C.size_t(len(s.Value)))
		case *objstore.OmapCmp:
			C.rados_write_op_omap_cmp2(wop, a.sbytes(s.Key), C.uint8_t(s.Op), a.bytes(s.Value),
				C.size_t(len(s.Key)), C.size_t(len(s.Value)), (*C.int)(a.alloc(C.sizeof_int)))
		case *objstore.Create:
			ex := C.int(0)
			if s.Exclusive {
				ex = 1
			}
			C.rados_write_op_create(wop, ex, nil)
		case *objstore.WriteFull:
			C.rados_write_op_write_full(wop, a.bytes(s.Data), C.size_t(len(s.Data)))
		case *objstore.Write:
			C.rados_write_op_write(wop, a.bytes(s.Data), C.size_t(len(s.Data)), C.uint64_t(s.Offset))
		case *objstore.Append:
			C.rados_write_op_append(wop, a.bytes(s.Data), C.size_t(len(s.Data)))
		case *objstore.Truncate:
			// RADOS truncate does not create a missing object; the
			// contract's does.
			C.rados_write_op_create(wop, 0, nil)
			C.rados_write_op_truncate(wop, C.uint64_t(s.Size))
			n++
		case *objstore.Remove:
			C.rados_write_op_remove(wop)
		case *objstore.SetXattr:
			C.rados_write_op_setxattr(wop, a.str(s.Name), a.bytes(s.Value), C.size_t(len(s.Value)))
		case *objstore.RmXattr:
			// RADOS fails rmxattr of a missing xattr with ENODATA; the
			// contract makes it a no-op on an existing object: assert the
			// object exists, set the xattr, remove it (one op, atomic).
			name := a.str(s.Name)
			C.rados_write_op_assert_exists(wop)
			C.rados_write_op_setxattr(wop, name, a.bytes(nil), 0)
			C.rados_write_op_rmxattr(wop, name)
			n += 2
		case *objstore.SetOmap:
			if len(s.Pairs) == 0 {
				C.rados_write_op_create(wop, 0, nil) // omap_set of nothing still creates
				break
			}
			np := len(s.Pairs)
			keys := (*[1 << 28]*C.char)(a.alloc(np * int(unsafe.Sizeof((*C.char)(nil)))))[:np:np]
			vals := (*[1 << 28]*C.char)(a.alloc(np * int(unsafe.Sizeof((*C.char)(nil)))))[:np:np]
			klens := (*[1 << 28]C.size_t)(a.alloc(np * C.sizeof_size_t))[:np:np]
			vlens := (*[1 << 28]C.size_t)(a.alloc(np * C.sizeof_size_t))[:np:np]
			for i, kv := range s.Pairs {
				keys[i], klens[i] = a.sbytes(kv.Key), C.size_t(len(kv.Key))
				vals[i], vlens[i] = a.bytes(kv.Value), C.size_t(len(kv.Value))
			}
			C.rados_write_op_omap_set2(wop, &keys[0], &vals[0], &klens[0], &vlens[0], C.size_t(np))
		case *objstore.RmOmapKeys:
			if len(s.Keys) == 0 {
				C.rados_write_op_assert_exists(wop)
				break
			}
			np := len(s.Keys)
			keys := (*[1 << 28]*C.char)(a.alloc(np * int(unsafe.Sizeof((*C.char)(nil)))))[:np:np]
			klens := (*[1 << 28]C.size_t)(a.alloc(np * C.sizeof_size_t))[:np:np]
			for i, k := range s.Keys {
				keys[i], klens[i] = a.sbytes(k), C.size_t(len(k))
			}
			C.rados_write_op_omap_rm_keys2(wop, &keys[0], &klens[0], C.size_t(np))
		case *objstore.OmapRmRange:
			end := s.End
			if end == "" {
				// "to the end": keys are at most MaxOmapKeyLen bytes and
				// may hold any byte but NUL, so a key of 0xff bytes one
				// longer than the limit sorts after every valid key.
				end = strings.Repeat("\xff", objstore.MaxOmapKeyLen+1)
			}
			C.rados_write_op_omap_rm_range2(wop, a.sbytes(s.Start), C.size_t(len(s.Start)), a.sbytes(end), C.size_t(len(end)))
		case *objstore.OmapClear:
			C.rados_write_op_omap_clear(wop)
		case *objstore.SetOmapHeader:
			C.rados_write_op_setxattr(wop, a.str(headerXattr), a.bytes(s.Header), C.size_t(len(s.Header)))
		case *objstore.SetMtime:
			t := s.Time
			mtime = &t
			continue
		default:
			return 0, objstore.Errorf(objstore.ErrInvalid, "step %T not allowed in a write op", st)
		}
		n++
	}
	if n == 0 {
		// Only SetMtime: nothing changes; report the current version.
		return c.statVersion(io, oid)
	}
	var mt *C.time_t
	if mtime != nil {
		mt = (*C.time_t)(a.alloc(C.sizeof_time_t))
		*mt = C.time_t(mtime.Unix())
	}
	var ver C.uint64_t
	c.s.writes.Add(1)
	c.s.ops.add(c.pool, c.ns, kind)
	r := C.cairn_write_op_run(wop, io, a.str(oid), mt, &ver)
	if r < 0 {
		return 0, errnoErr(r, "operate "+oid)
	}
	return uint64(ver), nil
}

func (c *ioContext) statVersion(io C.rados_ioctx_t, oid string) (uint64, error) {
	op := objstore.NewReadOp()
	st := op.Stat()
	if err := c.readSteps(io, oid, 0, op.Steps, opStat); err != nil {
		return 0, err
	}
	return st.Stat.Version, nil
}

// OperateRead: rados_read_op_* steps, rados_aio_read_op_operate; follow-up
// round trips (omap pages past the OSD's per-request cap, data past the
// read guess) are guarded by assert_version, and the whole op restarts if
// the object changed in between.
func (c *ioContext) OperateRead(ctx context.Context, oid string, op *objstore.ReadOp) error {
	if err := objstore.ValidateObjectName(oid); err != nil {
		return err
	}
	if err := objstore.ValidateReadOp(op); err != nil {
		return err
	}
	if err := checkReserved(op.Steps); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	io, err := c.io()
	if err != nil {
		return err
	}
	if needsTxn(op.Steps) {
		return c.readTxn(ctx, io, oid, op)
	}
	for attempt := 0; ; attempt++ {
		err := c.readSteps(io, oid, 0, op.Steps, opRead)
		if err == errRestart && attempt < c.s.opts.MaxAttempts {
			continue
		}
		if err == errRestart {
			return objstore.Errorf(objstore.ErrBusy, "read %s: object kept changing during a multi-round-trip read", oid)
		}
		if objstore.Code(err) == objstore.ErrNotFound && op.TolerantOfAbsence() {
			for _, s := range op.Steps {
				if st, ok := s.(*objstore.StatStep); ok {
					st.Exists, st.Stat = false, objstore.Stat{}
				}
			}
			return nil
		}
		return err
	}
}

var errRestart = objstore.Errorf(objstore.ErrCanceled, "object changed between round trips")

// readSlot is the C-side result storage of one read step.
type readSlot struct {
	prval  *C.int
	iter   *C.rados_omap_iter_t
	more   *C.uchar
	size   *C.uint64_t
	mtime  *C.time_t
	buf    *C.char
	buflen int
	nread  *C.size_t
}

// readSteps runs one rados_read_op for steps (guarded by assert_version
// when guardVersion > 0) and fills the step results. It returns errRestart
// when a follow-up round trip found the object changed.
func (c *ioContext) readSteps(io C.rados_ioctx_t, oid string, guardVersion uint64, steps []objstore.Step, kind opKind) error {
	var a arena
	defer a.free()
	rop := C.rados_create_read_op()
	defer C.rados_release_read_op(rop)
	if guardVersion > 0 {
		C.rados_read_op_assert_version(rop, C.uint64_t(guardVersion))
	}
	slots := make([]readSlot, len(steps))
	var xiter *C.rados_xattrs_iter_t
	var xprval *C.int
	needX := false
	var statSlot *readSlot
	for i, st := range steps {
		sl := &slots[i]
		sl.prval = (*C.int)(a.alloc(C.sizeof_int))
		switch s := st.(type) {
		case *objstore.AssertExists:
			C.rados_read_op_assert_exists(rop)
		case *objstore.AssertVersion:
			C.rados_read_op_assert_version(rop, C.uint64_t(s.Version))
		case *objstore.CmpXattr:
			C.rados_read_op_cmpxattr(rop, a.str(s.Name), radosCmp(s.Op), a.bytes(s.Value), C.size_t(len(s.Value)))
		case *objstore.OmapCmp:
			C.rados_read_op_omap_cmp2(rop, a.sbytes(s.Key), C.uint8_t(s.Op), a.bytes(s.Value),
				C.size_t(len(s.Key)), C.size_t(len(s.Value)), sl.prval)
		case *objstore.StatStep:
			sl.size = (*C.uint64_t)(a.alloc(8))
			sl.mtime = (*C.time_t)(a.alloc(C.sizeof_time_t))
			C.rados_read_op_stat(rop, sl.size, sl.mtime, sl.prval)
			statSlot = sl
		case *objstore.ReadStep:
			n := int(s.Length)
			if n == 0 {
				n = c.s.opts.ReadGuess
				if statSlot == nil {
					statSlot = &readSlot{prval: (*C.int)(a.alloc(C.sizeof_int)), size: (*C.uint64_t)(a.alloc(8)), mtime: (*C.time_t)(a.alloc(C.sizeof_time_t))}
					C.rados_read_op_stat(rop, statSlot.size, statSlot.mtime, statSlot.prval)
				}
			}
			n = min(n, objstore.MaxObjectSize)
			sl.buf = (*C.char)(C.malloc(C.size_t(max(n, 1))))
			a.ptrs = append(a.ptrs, unsafe.Pointer(sl.buf))
			sl.buflen = n
			sl.nread = (*C.size_t)(a.alloc(C.sizeof_size_t))
			C.rados_read_op_read(rop, C.uint64_t(s.Offset), C.size_t(n), sl.buf, sl.nread, sl.prval)
		case *objstore.GetXattrStep, *objstore.GetXattrsStep, *objstore.OmapHeaderStep:
			needX = true
		case *objstore.OmapValsStep:
			sl.iter = (*C.rados_omap_iter_t)(a.alloc(int(unsafe.Sizeof(C.rados_omap_iter_t(nil)))))
			sl.more = (*C.uchar)(a.alloc(1))
			C.rados_read_op_omap_get_vals2(rop, a.str(s.StartAfter), a.str(s.Prefix), omapMax(s.Max), sl.iter, sl.more, sl.prval)
		case *objstore.OmapKeysStep:
			sl.iter = (*C.rados_omap_iter_t)(a.alloc(int(unsafe.Sizeof(C.rados_omap_iter_t(nil)))))
			sl.more = (*C.uchar)(a.alloc(1))
			C.rados_read_op_omap_get_keys2(rop, a.str(s.StartAfter), omapMax(s.Max), sl.iter, sl.more, sl.prval)
		case *objstore.OmapValsByKeysStep:
			if len(s.Keys) == 0 {
				break
			}
			np := len(s.Keys)
			keys := (*[1 << 28]*C.char)(a.alloc(np * int(unsafe.Sizeof((*C.char)(nil)))))[:np:np]
			klens := (*[1 << 28]C.size_t)(a.alloc(np * C.sizeof_size_t))[:np:np]
			for i, k := range s.Keys {
				keys[i], klens[i] = a.sbytes(k), C.size_t(len(k))
			}
			sl.iter = (*C.rados_omap_iter_t)(a.alloc(int(unsafe.Sizeof(C.rados_omap_iter_t(nil)))))
			C.rados_read_op_omap_get_vals_by_keys2(rop, &keys[0], C.size_t(np), &klens[0], sl.iter, sl.prval)
		default:
			return objstore.Errorf(objstore.ErrInvalid, "step %T not allowed in a read op", st)
		}
	}
	if needX {
		xiter = (*C.rados_xattrs_iter_t)(a.alloc(int(unsafe.Sizeof(C.rados_xattrs_iter_t(nil)))))
		xprval = (*C.int)(a.alloc(C.sizeof_int))
		C.rados_read_op_getxattrs(rop, xiter, xprval)
	}
	// Iterators are allocated when the step is added: always end them.
	defer func() {
		for i := range slots {
			if it := slots[i].iter; it != nil && *it != nil {
				C.rados_omap_get_end(*it)
			}
		}
		if xiter != nil && *xiter != nil {
			C.rados_getxattrs_end(*xiter)
		}
	}()
	var ver C.uint64_t
	c.s.ops.add(c.pool, c.ns, kind)
	r := C.cairn_read_op_run(rop, io, a.str(oid), &ver)
	if r < 0 {
		if guardVersion > 0 && (r == -C.ERANGE || r == -C.EOVERFLOW || r == -C.ENOENT) {
			return errRestart
		}
		return errnoErr(r, "read "+oid)
	}
	version := uint64(ver)
	var xattrs []objstore.KV
	var header []byte
	if needX {
		if *xprval < 0 {
			return errnoErr(*xprval, "getxattrs "+oid)
		}
		for {
			var name, val *C.char
			var vlen C.size_t
			if r := C.rados_getxattrs_next(*xiter, &name, &val, &vlen); r < 0 {
				return errnoErr(r, "getxattrs_next")
			}
			if name == nil {
				break
			}
			k, v := C.GoString(name), C.GoBytes(unsafe.Pointer(val), C.int(vlen))
			if k == headerXattr {
				header = v
				continue
			}
			if strings.HasPrefix(k, reservedXattrPrefix) {
				continue
			}
			xattrs = append(xattrs, objstore.KV{Key: k, Value: v})
		}
		sortKVs(xattrs)
	}
	for i, st := range steps {
		sl := &slots[i]
		switch s := st.(type) {
		case *objstore.StatStep:
			if *sl.prval < 0 {
				return errnoErr(*sl.prval, "stat "+oid)
			}
			s.Exists = true
			s.Stat = objstore.Stat{Size: int64(*sl.size), ModTime: time.Unix(int64(*sl.mtime), 0), Version: version}
		case *objstore.ReadStep:
			if *sl.prval < 0 {
				return errnoErr(*sl.prval, "read "+oid)
			}
			n := int(*sl.nread)
			s.Data = C.GoBytes(unsafe.Pointer(sl.buf), C.int(n))
			if s.Length == 0 && statSlot != nil && *statSlot.prval >= 0 {
				size := int64(*statSlot.size)
				if end := s.Offset + int64(n); n == sl.buflen && end < size {
					rest := &objstore.ReadStep{Offset: end, Length: size - end}
					if err := c.readSteps(io, oid, version, []objstore.Step{rest}, opReadMore); err != nil {
						return err
					}
					s.Data = append(s.Data, rest.Data...)
				}
			}
		case *objstore.GetXattrStep:
			s.Value, s.Found = nil, false
			for _, kv := range xattrs {
				if kv.Key == s.Name {
					s.Value, s.Found = kv.Value, true
				}
			}
			if !s.Found && !s.Optional {
				return objstore.Errorf(objstore.ErrNotFound, "xattr %q", s.Name)
			}
		case *objstore.GetXattrsStep:
			s.Attrs = append([]objstore.KV(nil), xattrs...)
		case *objstore.OmapHeaderStep:
			s.Header = header
		case *objstore.OmapValsStep:
			if *sl.prval < 0 {
				return errnoErr(*sl.prval, "omap_get_vals "+oid)
			}
			pairs := drainOmap(*sl.iter, true)
			more := *sl.more != 0
			for more && (s.Max == 0 || len(pairs) < s.Max) && len(pairs) > 0 {
				next := &objstore.OmapValsStep{StartAfter: pairs[len(pairs)-1].Key, Prefix: s.Prefix}
				if s.Max > 0 {
					next.Max = s.Max - len(pairs)
				}
				if err := c.readSteps(io, oid, version, []objstore.Step{next}, opReadMore); err != nil {
					return err
				}
				pairs, more = append(pairs, next.Pairs...), next.More
			}
			s.Pairs, s.More = pairs, more
		case *objstore.OmapKeysStep:
			if *sl.prval < 0 {
				return errnoErr(*sl.prval, "omap_get_keys "+oid)
			}
			pairs := drainOmap(*sl.iter, false)
			more := *sl.more != 0
			keys := make([]string, len(pairs))
			for i, kv := range pairs {
				keys[i] = kv.Key
			}
			for more && (s.Max == 0 || len(keys) < s.Max) && len(keys) > 0 {
				next := &objstore.OmapKeysStep{StartAfter: keys[len(keys)-1]}
				if s.Max > 0 {
					next.Max = s.Max - len(keys)
				}
				if err := c.readSteps(io, oid, version, []objstore.Step{next}, opReadMore); err != nil {
					return err
				}
				keys, more = append(keys, next.Keys...), next.More
			}
			s.Keys, s.More = keys, more
		case *objstore.OmapValsByKeysStep:
			s.Pairs = nil
			if sl.iter == nil {
				break
			}
			if *sl.prval < 0 {
				return errnoErr(*sl.prval, "omap_get_vals_by_keys "+oid)
			}
			s.Pairs = drainOmap(*sl.iter, true)
			sortKVs(s.Pairs)
		}
	}
	return nil
}

// omapMax is the max_return for an omap listing: the OSD caps it
// (osd_max_omap_entries_per_request) and reports "more" past the cap.
func omapMax(max int) C.uint64_t {
	if max <= 0 {
		return 1 << 20
	}
	return C.uint64_t(max)
}

func drainOmap(it C.rados_omap_iter_t, vals bool) []objstore.KV {
	var out []objstore.KV
	for {
		var k, v *C.char
		var kl, vl C.size_t
		if C.rados_omap_get_next2(it, &k, &v, &kl, &vl) < 0 || k == nil {
			return out
		}
		kv := objstore.KV{Key: C.GoStringN(k, C.int(kl))}
		if vals {
			kv.Value = C.GoBytes(unsafe.Pointer(v), C.int(vl))
		}
		out = append(out, kv)
	}
}
