package objstore

import (
	"context"
	"time"
)

// CmpOp is a comparison for CmpXattr and OmapCmp (LIBRADOS_CMPXATTR_OP_*).
// The comparison reads "stored <op> operand".
type CmpOp uint8

const (
	CmpEQ  CmpOp = 1
	CmpNE  CmpOp = 2
	CmpGT  CmpOp = 3
	CmpGTE CmpOp = 4
	CmpLT  CmpOp = 5
	CmpLTE CmpOp = 6
)

func (c CmpOp) Valid() bool { return c >= CmpEQ && c <= CmpLTE }

// Holds reports whether "stored <c> operand" for a three-way comparison
// result cmp = compare(stored, operand).
func (c CmpOp) Holds(cmp int) bool {
	switch c {
	case CmpEQ:
		return cmp == 0
	case CmpNE:
		return cmp != 0
	case CmpGT:
		return cmp > 0
	case CmpGTE:
		return cmp >= 0
	case CmpLT:
		return cmp < 0
	case CmpLTE:
		return cmp <= 0
	}
	return false
}

// CmpMode says how CmpXattr compares (LIBRADOS_CMPXATTR_MODE_*).
type CmpMode uint8

const (
	// CmpBytes compares byte strings lexicographically. A missing xattr or
	// omap key compares as the empty string.
	CmpBytes CmpMode = 1
	// CmpU64 parses the stored value as a decimal unsigned integer (as RADOS
	// does; a missing or empty value is 0, an unparsable one fails the op
	// with ErrInvalid) and compares it with the operand.
	CmpU64 CmpMode = 2
)

// Step is one step of a WriteOp or ReadOp. Backends type-switch on the
// concrete step types below; the set is closed.
type Step interface{ step() }

// Guard steps (valid in WriteOp and ReadOp). A failed guard fails the whole
// op with ErrCanceled (ErrNotFound for AssertExists).
type (
	// AssertExists: rados_write_op_assert_exists.
	AssertExists struct{}
	// AssertVersion: rados_write_op_assert_version; the object's version
	// must equal Version (0 matches a never-written object).
	AssertVersion struct{ Version uint64 }
	// CmpXattr: rados_write_op_cmpxattr.
	CmpXattr struct {
		Name  string
		Op    CmpOp
		Mode  CmpMode
		Value []byte // CmpBytes operand
		U64   uint64 // CmpU64 operand
	}
	// OmapCmp: rados_write_op_omap_cmp, one key compared bytewise.
	OmapCmp struct {
		Key   string
		Op    CmpOp
		Value []byte
	}
)

// Write steps (WriteOp only).
type (
	// Create: rados_write_op_create. Exclusive fails with ErrExists when the
	// object exists; otherwise it is a no-op for an existing object.
	Create struct{ Exclusive bool }
	// WriteFull: rados_write_op_write_full; replaces the data.
	WriteFull struct{ Data []byte }
	// Write: rados_write_op_write; writes at Offset, zero-filling any gap.
	Write struct {
		Offset int64
		Data   []byte
	}
	// Append: rados_write_op_append.
	Append struct{ Data []byte }
	// Truncate: rados_write_op_truncate; extends with zeros or shrinks.
	Truncate struct{ Size int64 }
	// Remove: rados_write_op_remove; ErrNotFound if the object is absent.
	// Later steps in the same op see no object (and may re-create it).
	Remove struct{}
	// SetXattr: rados_write_op_setxattr.
	SetXattr struct {
		Name  string
		Value []byte
	}
	// RmXattr: rados_write_op_rmxattr; removing a missing xattr is a no-op
	// (RADOS returns ENODATA; we choose idempotence, documented).
	RmXattr struct{ Name string }
	// SetOmap: rados_write_op_omap_set, in slice order.
	SetOmap struct{ Pairs []KV }
	// RmOmapKeys: rados_write_op_omap_rm_keys; missing keys are ignored.
	RmOmapKeys struct{ Keys []string }
	// OmapRmRange: rados_write_op_omap_rm_range2; removes keys in
	// [Start, End). An empty End means "to the end".
	OmapRmRange struct{ Start, End string }
	// OmapClear: rados_write_op_omap_clear.
	OmapClear struct{}
	// SetOmapHeader: ObjectWriteOperation::omap_set_header.
	SetOmapHeader struct{ Header []byte }
	// SetMtime: rados_write_op_operate's mtime argument; overrides the
	// modification time recorded by this op.
	SetMtime struct{ Time time.Time }
	// SetView: no librados counterpart (see Viewer). Name "" leaves the
	// object's view; Below bounds the keys its omap writes copy there;
	// Proj, when set, names the registered Projection ("class.name") that
	// maps each value to what the view keeps.
	SetView struct{ Name, Below, Proj string }
)

// Read steps (ReadOp only). Results are filled in by OperateRead.
type (
	// StatStep: rados_read_op_stat. Exists is false (and no error is
	// returned for it) when the object is absent.
	StatStep struct {
		Stat   Stat
		Exists bool
	}
	// ReadStep: rados_read_op_read. Length 0 reads to the end. Reading past
	// the end returns the bytes that exist (possibly none).
	ReadStep struct {
		Offset, Length int64
		Data           []byte
	}
	// GetXattrStep: rados_getxattr. ErrNotFound fails the op if the
	// xattr is missing, unless Optional, in which case Found is false.
	GetXattrStep struct {
		Name     string
		Optional bool
		Value    []byte
		Found    bool
	}
	// GetXattrsStep: rados_read_op_getxattrs, sorted by name.
	GetXattrsStep struct{ Attrs []KV }
	// OmapValsStep: rados_read_op_omap_get_vals2: keys > StartAfter that
	// begin with Prefix, at most Max (0 = no limit), in key order. More
	// reports whether further matching keys exist.
	OmapValsStep struct {
		StartAfter, Prefix string
		Max                int
		Pairs              []KV
		More               bool
	}
	// OmapKeysStep: rados_read_op_omap_get_keys2; like OmapValsStep
	// without values.
	OmapKeysStep struct {
		StartAfter string
		Max        int
		Keys       []string
		More       bool
	}
	// OmapValsByKeysStep: rados_read_op_omap_get_vals_by_keys2. Missing
	// keys are absent from Pairs, which follow key order.
	OmapValsByKeysStep struct {
		Keys  []string
		Pairs []KV
	}
	// OmapHeaderStep: ObjectReadOperation::omap_get_header.
	OmapHeaderStep struct{ Header []byte }
)

// ExecStep runs an object class method (rados_write_op_exec /
// rados_read_op_exec) inside the op. Out receives the method's output. In a
// ReadOp the method may only read.
type ExecStep struct {
	Class, Method string
	In            []byte
	Out           []byte
}

func (*AssertExists) step()       {}
func (*AssertVersion) step()      {}
func (*CmpXattr) step()           {}
func (*OmapCmp) step()            {}
func (*Create) step()             {}
func (*WriteFull) step()          {}
func (*Write) step()              {}
func (*Append) step()             {}
func (*Truncate) step()           {}
func (*Remove) step()             {}
func (*SetXattr) step()           {}
func (*RmXattr) step()            {}
func (*SetOmap) step()            {}
func (*RmOmapKeys) step()         {}
func (*OmapRmRange) step()        {}
func (*OmapClear) step()          {}
func (*SetOmapHeader) step()      {}
func (*SetMtime) step()           {}
func (*SetView) step()            {}
func (*StatStep) step()           {}
func (*ReadStep) step()           {}
func (*GetXattrStep) step()       {}
func (*GetXattrsStep) step()      {}
func (*OmapValsStep) step()       {}
func (*OmapKeysStep) step()       {}
func (*OmapValsByKeysStep) step() {}
func (*OmapHeaderStep) step()     {}
func (*ExecStep) step()           {}

// WriteOp is a compound write on one object (librados WriteOp). Build it with
// the methods below, then pass it to IOContext.Operate once.
type WriteOp struct {
	Steps []Step
	// DeferSync lets Operate return once the change is applied and visible,
	// before it is durable: it becomes durable no later than the next
	// synced Operate on the same store returns. For writes whose commit
	// point is a later op (an S3 stripe before its index link), so one
	// request waits for one sync, not two. Reads may see such a change
	// before it is durable. Backends whose every write is durable when
	// acknowledged (RADOS) ignore it.
	// A context from WithDeferredSync sets it for every op on that
	// store run with it.
	DeferSync bool
	// Fresh says the object does not exist: its name is new (it carries
	// an id unique to this write, as an S3 PUT's stripes do). Like
	// rados_write_op_set_alloc_hint2 it is a hint about the object, not a
	// step: a backend may skip reading the object's prior state (the
	// embedded store does not read its meta, a point lookup that misses
	// in every LSM level). Only blind writes may be fresh (WriteFull,
	// Create without Exclusive, SetXattr, SetOmap, SetOmapHeader,
	// SetMtime); any other step fails validation with ErrInvalid. The
	// caller must be right: on an existing object the result is
	// unspecified (RADOS ignores the hint and applies the steps over the
	// object; the embedded store may leave parts of the old state behind,
	// or with Options.CheckFresh fails the op with ErrExists).
	Fresh bool
	// Version is set by Operate on success: the object's new version.
	Version uint64
}

// NewWriteOp returns an empty WriteOp.
func NewWriteOp() *WriteOp { return &WriteOp{} }

func (op *WriteOp) add(s Step) *WriteOp { op.Steps = append(op.Steps, s); return op }

func (op *WriteOp) AssertExists() *WriteOp          { return op.add(&AssertExists{}) }
func (op *WriteOp) AssertVersion(v uint64) *WriteOp { return op.add(&AssertVersion{Version: v}) }
func (op *WriteOp) CmpXattr(name string, c CmpOp, value []byte) *WriteOp {
	return op.add(&CmpXattr{Name: name, Op: c, Mode: CmpBytes, Value: value})
}
func (op *WriteOp) CmpXattrU64(name string, c CmpOp, v uint64) *WriteOp {
	return op.add(&CmpXattr{Name: name, Op: c, Mode: CmpU64, U64: v})
}
func (op *WriteOp) OmapCmp(key string, c CmpOp, value []byte) *WriteOp {
	return op.add(&OmapCmp{Key: key, Op: c, Value: value})
}
func (op *WriteOp) Create(exclusive bool) *WriteOp { return op.add(&Create{Exclusive: exclusive}) }
func (op *WriteOp) WriteFull(data []byte) *WriteOp { return op.add(&WriteFull{Data: data}) }
func (op *WriteOp) Write(data []byte, off int64) *WriteOp {
	return op.add(&Write{Offset: off, Data: data})
}
func (op *WriteOp) Append(data []byte) *WriteOp  { return op.add(&Append{Data: data}) }
func (op *WriteOp) Truncate(size int64) *WriteOp { return op.add(&Truncate{Size: size}) }
func (op *WriteOp) Remove() *WriteOp             { return op.add(&Remove{}) }
func (op *WriteOp) SetXattr(name string, v []byte) *WriteOp {
	return op.add(&SetXattr{Name: name, Value: v})
}
func (op *WriteOp) RmXattr(name string) *WriteOp       { return op.add(&RmXattr{Name: name}) }
func (op *WriteOp) SetOmap(pairs ...KV) *WriteOp       { return op.add(&SetOmap{Pairs: pairs}) }
func (op *WriteOp) RmOmapKeys(keys ...string) *WriteOp { return op.add(&RmOmapKeys{Keys: keys}) }
func (op *WriteOp) OmapRmRange(start, end string) *WriteOp {
	return op.add(&OmapRmRange{Start: start, End: end})
}
func (op *WriteOp) OmapClear() *WriteOp             { return op.add(&OmapClear{}) }
func (op *WriteOp) SetOmapHeader(h []byte) *WriteOp { return op.add(&SetOmapHeader{Header: h}) }
func (op *WriteOp) SetMtime(t time.Time) *WriteOp   { return op.add(&SetMtime{Time: t}) }

// SetView makes the object a member of ordered view name ("" leaves any
// view), keeping proj(value) there when proj ("class.name" of a
// Registry's Projection) is set; see Viewer. Embedded store only: other
// backends answer ErrNotSupported.
func (op *WriteOp) SetView(name, below, proj string) *WriteOp {
	return op.add(&SetView{Name: name, Below: below, Proj: proj})
}

// Exec adds a class method call and returns its step, whose Out is filled
// by Operate.
func (op *WriteOp) Exec(class, method string, in []byte) *ExecStep {
	s := &ExecStep{Class: class, Method: method, In: in}
	op.add(s)
	return s
}

// ReadOp is a compound read on one object (librados ReadOp).
type ReadOp struct {
	Steps []Step
}

// NewReadOp returns an empty ReadOp.
func NewReadOp() *ReadOp { return &ReadOp{} }

func (op *ReadOp) add(s Step) { op.Steps = append(op.Steps, s) }

func (op *ReadOp) AssertExists() *ReadOp          { op.add(&AssertExists{}); return op }
func (op *ReadOp) AssertVersion(v uint64) *ReadOp { op.add(&AssertVersion{Version: v}); return op }
func (op *ReadOp) CmpXattr(name string, c CmpOp, value []byte) *ReadOp {
	op.add(&CmpXattr{Name: name, Op: c, Mode: CmpBytes, Value: value})
	return op
}
func (op *ReadOp) CmpXattrU64(name string, c CmpOp, v uint64) *ReadOp {
	op.add(&CmpXattr{Name: name, Op: c, Mode: CmpU64, U64: v})
	return op
}
func (op *ReadOp) OmapCmp(key string, c CmpOp, value []byte) *ReadOp {
	op.add(&OmapCmp{Key: key, Op: c, Value: value})
	return op
}
func (op *ReadOp) Stat() *StatStep { s := &StatStep{}; op.add(s); return s }
func (op *ReadOp) Read(off, length int64) *ReadStep {
	s := &ReadStep{Offset: off, Length: length}
	op.add(s)
	return s
}
func (op *ReadOp) GetXattr(name string) *GetXattrStep {
	s := &GetXattrStep{Name: name}
	op.add(s)
	return s
}
func (op *ReadOp) GetXattrOptional(name string) *GetXattrStep {
	s := &GetXattrStep{Name: name, Optional: true}
	op.add(s)
	return s
}
func (op *ReadOp) GetXattrs() *GetXattrsStep { s := &GetXattrsStep{}; op.add(s); return s }
func (op *ReadOp) GetOmapValues(startAfter, prefix string, max int) *OmapValsStep {
	s := &OmapValsStep{StartAfter: startAfter, Prefix: prefix, Max: max}
	op.add(s)
	return s
}
func (op *ReadOp) GetOmapKeys(startAfter string, max int) *OmapKeysStep {
	s := &OmapKeysStep{StartAfter: startAfter, Max: max}
	op.add(s)
	return s
}
func (op *ReadOp) GetOmapValuesByKeys(keys ...string) *OmapValsByKeysStep {
	s := &OmapValsByKeysStep{Keys: keys}
	op.add(s)
	return s
}
func (op *ReadOp) GetOmapHeader() *OmapHeaderStep { s := &OmapHeaderStep{}; op.add(s); return s }
func (op *ReadOp) Exec(class, method string, in []byte) *ExecStep {
	s := &ExecStep{Class: class, Method: method, In: in}
	op.add(s)
	return s
}

// TolerantOfAbsence reports whether a ReadOp may run on a missing object
// without failing with ErrNotFound: true when it only stats (StatStep
// reports Exists=false). Any other step needs the object.
func (op *ReadOp) TolerantOfAbsence() bool {
	for _, s := range op.Steps {
		if _, ok := s.(*StatStep); !ok {
			return false
		}
	}
	return true
}

type deferSyncKey struct{}

// WithDeferredSync returns a context whose writes to io's store act as
// if each WriteOp had DeferSync set; io nil undoes it (for the commit
// point's own write inside such a context). For a request whose commit
// point is one synced write at its end on that store (bucket logging's
// journal record): every write before it rides on that sync. Whoever
// sets it must make a synced Operate on io's store, or Sync(io), before
// reporting success. Writes to other stores are not affected.
func WithDeferredSync(ctx context.Context, io IOContext) context.Context {
	if io == nil && DeferredSync(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, deferSyncKey{}, deferTo{io})
}

type deferTo struct{ io IOContext }

// DeferredSync returns the IOContext whose store ctx's writes defer their
// sync to (see WithDeferredSync), or nil.
func DeferredSync(ctx context.Context) IOContext {
	d, _ := ctx.Value(deferSyncKey{}).(deferTo)
	return d.io
}
