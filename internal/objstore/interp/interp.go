// Package interp is the one interpreter of compound operations and class
// methods. A backend stages one object's state in its own way (the embedded
// store in a pebble batch, the RADOS backend in an optimistic model that
// replays as a rados_write_op) and exposes it as an Object; RunWrite and
// RunRead apply an op's guards and steps to it in order, and Exec runs a
// class method against it through the one MethodContext implementation. So
// guard semantics, step dispatch, argument validation and the method
// context's rules exist once, and both backends agree by construction.
package interp

import (
	"bytes"
	"strconv"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Object is one object's state inside a transaction, as the op's earlier
// steps left it. Reads observe staged changes; writes stage them. plain is
// true for a client step and false for a write made by a class method (the
// backends drop class caches on plain writes only). Errors are objstore
// errors; a backend may also return its own retry signal, which the
// interpreter passes through unchanged.
type Object interface {
	Exists() bool
	// Version is the object version the op started from, 0 when absent.
	Version() uint64
	// Size is the staged data size (0 when absent).
	Size() int64
	// Stat is the committed stat with the staged size, for a StatStep.
	Stat() objstore.Stat
	// MethodStat is Stat as a class method sees it (mtime = now once the op
	// wrote); it may fail when the backend must first confirm its view.
	MethodStat() (objstore.Stat, error)
	Now() time.Time

	ReadData(off, n int64) ([]byte, error)
	GetXattr(name string) ([]byte, bool, error)
	GetXattrs() ([]objstore.KV, error)
	OmapGet(key string) ([]byte, bool, error)
	OmapVals(startAfter, prefix string, max int) ([]objstore.KV, bool, error)
	OmapKeys(startAfter string, max int) ([]string, bool, error)
	// OmapByKeys returns the pairs of the keys that exist, sorted by key.
	OmapByKeys(keys []string) ([]objstore.KV, error)
	OmapHeader() ([]byte, error)

	Create(exclusive, plain bool) error
	// WriteFull replaces the data. from is the client step the data came
	// from (the embedded store may have written it ahead as a blob), nil
	// for a class method's write.
	WriteFull(data []byte, from *objstore.WriteFull, plain bool) error
	WriteAt(off int64, data []byte, plain bool) error
	Truncate(size int64, plain bool) error
	Remove(plain bool) error
	SetXattr(name string, v []byte, plain bool) error
	RmXattr(name string, plain bool) error
	SetOmap(pairs []objstore.KV, plain bool) error
	RmOmapKeys(keys []string, plain bool) error
	OmapRmRange(start, end string, plain bool) error
	OmapClear(plain bool) error
	SetOmapHeader(h []byte, plain bool) error
	SetMtime(t time.Time)

	// Lookup finds a class method (the backend's registry).
	Lookup(class, method string) (objstore.Method, objstore.MethodFlags, error)
	// Executing is called before a class method runs; readOp says whether
	// the enclosing op is a ReadOp.
	Executing(class string, readOp bool)
	// Wrote records that class wrote through its method context.
	Wrote(class string)
	// Cached and SetCached back MethodContext's per-class cache; key is
	// class + "\x00" + slot.
	Cached(key string) (any, bool)
	SetCached(key string, v any)
}

// NeedObject is ErrNotFound for an absent object.
func NeedObject(o Object) error {
	if !o.Exists() {
		return objstore.Errorf(objstore.ErrNotFound, "object does not exist")
	}
	return nil
}

// TooBig is ErrTooBig when an object would end beyond MaxObjectSize.
func TooBig(end int64) error {
	if end > objstore.MaxObjectSize {
		return objstore.Errorf(objstore.ErrTooBig, "object would be %d bytes, limit %d", end, objstore.MaxObjectSize)
	}
	return nil
}

// cmpU64 compares a stored decimal (absent = 0) with v.
func cmpU64(stored []byte, op objstore.CmpOp, v uint64) (bool, error) {
	var have uint64
	if len(stored) > 0 {
		var err error
		if have, err = strconv.ParseUint(string(stored), 10, 64); err != nil {
			return false, objstore.Errorf(objstore.ErrInvalid, "cmpxattr u64: stored value %q is not a decimal integer", stored)
		}
	}
	c := 0
	if have < v {
		c = -1
	} else if have > v {
		c = 1
	}
	return op.Holds(c), nil
}

// guard evaluates s if it is a guard step; a failed guard is ErrCanceled.
func guard(o Object, s objstore.Step) (handled bool, err error) {
	switch s := s.(type) {
	case *objstore.AssertExists:
		return true, NeedObject(o)
	case *objstore.AssertVersion:
		if v := o.Version(); v != s.Version {
			return true, objstore.Errorf(objstore.ErrCanceled, "assert_version: object at %d, want %d", v, s.Version)
		}
		return true, nil
	case *objstore.CmpXattr:
		v, _, err := o.GetXattr(s.Name)
		if err != nil {
			return true, err
		}
		ok := false
		if s.Mode == objstore.CmpU64 {
			if ok, err = cmpU64(v, s.Op, s.U64); err != nil {
				return true, err
			}
		} else {
			ok = s.Op.Holds(bytes.Compare(v, s.Value))
		}
		if !ok {
			return true, objstore.Errorf(objstore.ErrCanceled, "cmpxattr %q failed", s.Name)
		}
		return true, nil
	case *objstore.OmapCmp:
		v, _, err := o.OmapGet(s.Key)
		if err != nil {
			return true, err
		}
		if !s.Op.Holds(bytes.Compare(v, s.Value)) {
			return true, objstore.Errorf(objstore.ErrCanceled, "omap_cmp %q failed", s.Key)
		}
		return true, nil
	}
	return false, nil
}

// ViewMember is an Object whose backend keeps ordered views
// (objstore.Viewer).
type ViewMember interface {
	SetView(name, below, proj string) error
}

// RunWrite applies a WriteOp's steps in order, stopping at the first error.
// The caller commits the staged state only when it returns nil.
func RunWrite(o Object, steps []objstore.Step) error {
	for _, st := range steps {
		if handled, err := guard(o, st); handled {
			if err != nil {
				return err
			}
			continue
		}
		var err error
		switch s := st.(type) {
		case *objstore.Create:
			err = o.Create(s.Exclusive, true)
		case *objstore.WriteFull:
			err = o.WriteFull(s.Data, s, true)
		case *objstore.Write:
			err = o.WriteAt(s.Offset, s.Data, true)
		case *objstore.Append:
			err = o.WriteAt(o.Size(), s.Data, true) // size is 0 when absent
		case *objstore.Truncate:
			err = o.Truncate(s.Size, true)
		case *objstore.Remove:
			err = o.Remove(true)
		case *objstore.SetXattr:
			err = o.SetXattr(s.Name, s.Value, true)
		case *objstore.RmXattr:
			err = o.RmXattr(s.Name, true)
		case *objstore.SetOmap:
			err = o.SetOmap(s.Pairs, true)
		case *objstore.RmOmapKeys:
			err = o.RmOmapKeys(s.Keys, true)
		case *objstore.OmapRmRange:
			err = o.OmapRmRange(s.Start, s.End, true)
		case *objstore.OmapClear:
			err = o.OmapClear(true)
		case *objstore.SetOmapHeader:
			err = o.SetOmapHeader(s.Header, true)
		case *objstore.SetMtime:
			o.SetMtime(s.Time)
		case *objstore.ExecStep:
			err = Exec(o, s, false)
		case *objstore.SetView:
			if m, ok := o.(ViewMember); ok {
				err = m.SetView(s.Name, s.Below, s.Proj)
			} else {
				err = objstore.Errorf(objstore.ErrNotSupported, "ordered views are an embedded-store extension")
			}
		default:
			err = objstore.Errorf(objstore.ErrInvalid, "step %T not allowed in a write op", st)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// RunRead evaluates a ReadOp's steps in order, filling their results.
func RunRead(o Object, steps []objstore.Step) error {
	for _, st := range steps {
		if handled, err := guard(o, st); handled {
			if err != nil {
				return err
			}
			continue
		}
		var err error
		switch s := st.(type) {
		case *objstore.StatStep:
			s.Exists, s.Stat = o.Exists(), objstore.Stat{}
			if s.Exists {
				s.Stat = o.Stat()
			}
		case *objstore.ReadStep:
			s.Data, err = o.ReadData(s.Offset, s.Length)
		case *objstore.GetXattrStep:
			s.Value, s.Found, err = o.GetXattr(s.Name)
			if err == nil && !s.Found && !s.Optional {
				err = objstore.Errorf(objstore.ErrNotFound, "xattr %q", s.Name)
			}
		case *objstore.GetXattrsStep:
			s.Attrs, err = o.GetXattrs()
		case *objstore.OmapValsStep:
			s.Pairs, s.More, err = o.OmapVals(s.StartAfter, s.Prefix, s.Max)
		case *objstore.OmapKeysStep:
			s.Keys, s.More, err = o.OmapKeys(s.StartAfter, s.Max)
		case *objstore.OmapValsByKeysStep:
			s.Pairs, err = o.OmapByKeys(s.Keys)
		case *objstore.OmapHeaderStep:
			s.Header, err = o.OmapHeader()
		case *objstore.ExecStep:
			err = Exec(o, s, true)
		default:
			err = objstore.Errorf(objstore.ErrInvalid, "step %T not allowed in a read op", st)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Exec runs a class method against o. In a ReadOp, methods flagged
// MethodWrite are refused with ErrInvalid; a method lacking MethodWrite
// gets ErrInvalid from the context's write calls.
func Exec(o Object, s *objstore.ExecStep, readOp bool) error {
	fn, flags, err := o.Lookup(s.Class, s.Method)
	if err != nil {
		return err
	}
	canWrite := flags&objstore.MethodWrite != 0
	if readOp && canWrite {
		return objstore.Errorf(objstore.ErrInvalid, "exec %s.%s: write method in a read op", s.Class, s.Method)
	}
	o.Executing(s.Class, readOp)
	mc := &methodCtx{o: o, class: s.Class, method: s.Method, canWrite: canWrite}
	out, err := fn(mc, s.In)
	mc.o = nil // the context is valid only during the call
	if err != nil {
		return err
	}
	s.Out = out
	return nil
}
