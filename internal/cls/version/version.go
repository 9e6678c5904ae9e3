// Package version is the version object class (Ceph's cls_version): a
// version number and tag stored in an xattr, set or bumped inside any
// compound op and checked as a guard, so that read-modify-write cycles on
// metadata objects detect concurrent writers.
//
// Errors: check and inc with conditions fail with ErrCanceled when a
// condition does not hold; read of a missing object is ErrNotFound; a
// never-versioned object reads as {0, ""}.
package version

import (
	"context"
	"errors"
	"strconv"

	"github.com/cairn-s3/cairn/internal/cls/internal/wire"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// ClassName is the name the class is registered under.
const ClassName = "version"

// Method names.
const (
	MethodSet   = "set"
	MethodInc   = "inc"
	MethodRead  = "read"
	MethodCheck = "check"
)

// Xattr holds the version (the name cls_version uses).
const Xattr = "ceph.objclass.version"

// Version is obj_version: a number and a tag naming the object's
// incarnation.
type Version struct {
	Ver uint64
	Tag string
}

// Cond is a comparison of the stored version with an operand
// (VER_COND_*).
type Cond uint8

const (
	CondEQ    Cond = 1 // stored.Ver == operand.Ver
	CondGT    Cond = 2 // stored.Ver > operand.Ver
	CondGE    Cond = 3
	CondLT    Cond = 4
	CondLE    Cond = 5
	CondTagEQ Cond = 6 // stored.Tag == operand.Tag
	CondTagNE Cond = 7
)

// Check is one condition.
type Check struct {
	Cond Cond
	Ver  Version
}

func (c Check) holds(v Version) (bool, error) {
	switch c.Cond {
	case CondEQ:
		return v.Ver == c.Ver.Ver, nil
	case CondGT:
		return v.Ver > c.Ver.Ver, nil
	case CondGE:
		return v.Ver >= c.Ver.Ver, nil
	case CondLT:
		return v.Ver < c.Ver.Ver, nil
	case CondLE:
		return v.Ver <= c.Ver.Ver, nil
	case CondTagEQ:
		return v.Tag == c.Ver.Tag, nil
	case CondTagNE:
		return v.Tag != c.Ver.Tag, nil
	}
	return false, objstore.Errorf(objstore.ErrInvalid, "version: bad condition %d", c.Cond)
}

// Version v1: ver (uvarint), tag (string).
func encodeVersion(v Version) []byte {
	return wire.NewEnc(1, 12+len(v.Tag)).Uvarint(v.Ver).String(v.Tag).B
}

func decodeVersion(b []byte) (Version, error) {
	d, _ := wire.NewDec(b, 1, "version")
	v := Version{Ver: d.Uvarint(), Tag: d.String()}
	return v, d.Err()
}

// Checks v1: count, then per check: cond u8, ver, tag.
func encodeChecks(cs []Check) []byte {
	e := wire.NewEnc(1, 4+len(cs)*16).Uvarint(uint64(len(cs)))
	for _, c := range cs {
		e.U8(uint8(c.Cond)).Uvarint(c.Ver.Ver).String(c.Ver.Tag)
	}
	return e.B
}

func decodeChecks(b []byte) ([]Check, error) {
	d, _ := wire.NewDec(b, 1, "version checks")
	n := d.Count(3)
	cs := make([]Check, 0, n)
	for i := 0; i < n; i++ {
		cs = append(cs, Check{Cond: Cond(d.U8()), Ver: Version{Ver: d.Uvarint(), Tag: d.String()}})
	}
	return cs, d.Err()
}

// Register adds the class's methods to reg.
func Register(reg *objstore.Registry) {
	reg.Register(ClassName, MethodSet, objstore.MethodRead|objstore.MethodWrite, setMethod)
	reg.Register(ClassName, MethodInc, objstore.MethodRead|objstore.MethodWrite, incMethod)
	reg.Register(ClassName, MethodRead, objstore.MethodRead, readMethod)
	reg.Register(ClassName, MethodCheck, objstore.MethodRead, checkMethod)
}

func load(ctx objstore.MethodContext) (Version, error) {
	if !ctx.Exists() {
		return Version{}, nil
	}
	b, err := ctx.GetXattr(Xattr)
	if errors.Is(err, objstore.ErrNotFound) {
		return Version{}, nil
	}
	if err != nil {
		return Version{}, err
	}
	return decodeVersion(b)
}

func check(v Version, cs []Check) error {
	for _, c := range cs {
		ok, err := c.holds(v)
		if err != nil {
			return err
		}
		if !ok {
			return objstore.Errorf(objstore.ErrCanceled, "version %d/%q: condition %d against %d/%q failed",
				v.Ver, v.Tag, c.Cond, c.Ver.Ver, c.Ver.Tag)
		}
	}
	return nil
}

func setMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	v, err := decodeVersion(in)
	if err != nil {
		return nil, err
	}
	return nil, ctx.SetXattr(Xattr, encodeVersion(v))
}

// incMethod checks the conditions, then bumps the version. An object without
// a tag gets one derived from the op time, so a re-created object's versions
// are told apart from its predecessor's (cls_version uses a random tag; ours
// must be deterministic for optimistic retries).
func incMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	cs, err := decodeChecks(in)
	if err != nil {
		return nil, err
	}
	v, err := load(ctx)
	if err != nil {
		return nil, err
	}
	if err := check(v, cs); err != nil {
		return nil, err
	}
	v.Ver++
	if v.Tag == "" {
		v.Tag = strconv.FormatInt(ctx.Now().UnixNano(), 36)
	}
	return encodeVersion(v), ctx.SetXattr(Xattr, encodeVersion(v))
}

func readMethod(ctx objstore.MethodContext, _ []byte) ([]byte, error) {
	if !ctx.Exists() {
		return nil, objstore.Errorf(objstore.ErrNotFound, "version: no object")
	}
	v, err := load(ctx)
	if err != nil {
		return nil, err
	}
	return encodeVersion(v), nil
}

func checkMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	cs, err := decodeChecks(in)
	if err != nil {
		return nil, err
	}
	v, err := load(ctx)
	if err != nil {
		return nil, err
	}
	return nil, check(v, cs)
}

// Execer is a WriteOp or ReadOp.
type Execer interface {
	Exec(class, method string, in []byte) *objstore.ExecStep
}

// AddSet sets the version in op (cls_version_set).
func AddSet(op *objstore.WriteOp, v Version) {
	op.Exec(ClassName, MethodSet, encodeVersion(v))
}

// IncStep is an inc step; New is valid after the op succeeded.
type IncStep struct{ s *objstore.ExecStep }

// New returns the version the op installed.
func (i IncStep) New() (Version, error) { return decodeVersion(i.s.Out) }

// AddInc bumps the version in op if every check holds (cls_version_inc,
// cls_version_inc_conds).
func AddInc(op *objstore.WriteOp, checks ...Check) IncStep {
	return IncStep{op.Exec(ClassName, MethodInc, encodeChecks(checks))}
}

// AddCheck guards op: it fails with ErrCanceled unless every check holds
// (cls_version_check_conds).
func AddCheck(op Execer, checks ...Check) {
	op.Exec(ClassName, MethodCheck, encodeChecks(checks))
}

// Set stores v on oid, creating the object if needed.
func Set(ctx context.Context, io objstore.IOContext, oid string, v Version) error {
	op := objstore.NewWriteOp()
	AddSet(op, v)
	return io.Operate(ctx, oid, op)
}

// Inc bumps oid's version if every check holds and returns the new version.
func Inc(ctx context.Context, io objstore.IOContext, oid string, checks ...Check) (Version, error) {
	op := objstore.NewWriteOp()
	s := AddInc(op, checks...)
	if err := io.Operate(ctx, oid, op); err != nil {
		return Version{}, err
	}
	return s.New()
}

// Read returns oid's version ({0, ""} if never set); ErrNotFound if the
// object does not exist.
func Read(ctx context.Context, io objstore.IOContext, oid string) (Version, error) {
	op := objstore.NewReadOp()
	s := op.Exec(ClassName, MethodRead, nil)
	if err := io.OperateRead(ctx, oid, op); err != nil {
		return Version{}, err
	}
	return decodeVersion(s.Out)
}

// CheckVersion fails with ErrCanceled unless cond holds for oid's version
// against v (cls_version_check).
func CheckVersion(ctx context.Context, io objstore.IOContext, oid string, cond Cond, v Version) error {
	op := objstore.NewReadOp()
	AddCheck(op, Check{Cond: cond, Ver: v})
	return io.OperateRead(ctx, oid, op)
}
