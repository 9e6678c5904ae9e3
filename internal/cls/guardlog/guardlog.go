// Package guardlog is the guarded-append log object class (class name "log"),
// after CORFU/ZLog on RADOS: a log segment on one object whose positions are
// written once, and whose writers carry an epoch that seal() can fence off.
//
// Errors by method:
//
//	seal    ErrAgain     the epoch is not newer than the sealed one (a
//	                     repeated seal of the same epoch also gets it: read
//	                     max_pos to learn the tail)
//	append  ErrAgain     the writer's epoch is older than the sealed one
//	write   ErrAgain     stale epoch; ErrReadOnly: the position is written (EROFS)
//	read    ErrNotFound  the position is unwritten (or the object missing)
//
// A writer's epoch may be newer than the sealed one (the seal has not
// reached this object yet); it is accepted.
//
// Storage (docs/format/cls.md): the sealed epoch is the xattr "log.epoch";
// the tail (next position to append) is the omap header; entries are omap
// keys "p<16 hex position>". The epoch and tail are cached in the backend
// (MethodContext.Cached), so a guarded append reads nothing: it writes one
// omap key and the header, about what a plain append writes. The cache is
// only an accelerator: on a miss (restart, or a write to the object from
// outside this class) both are read back from the object.
package guardlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairn-s3/cairn/internal/cls/internal/wire"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// ClassName is the name the class is registered under.
const ClassName = "log"

// Method names.
const (
	MethodSeal   = "seal"
	MethodAppend = "append"
	MethodWrite  = "write"
	MethodRead   = "read"
	MethodMaxPos = "max_pos"
)

// EpochXattr holds the sealed epoch.
const EpochXattr = "log.epoch"

const (
	posPrefix = "p"
	cacheSlot = "log.state"
	entryData = 1 // entry value tag: written data follows
)

func posKey(pos uint64) string { return fmt.Sprintf("%s%016x", posPrefix, pos) }

// state is the cached (epoch, tail) pair; a value, so it is immutable once
// handed to SetCached.
type state struct{ epoch, tail uint64 }

func load(ctx objstore.MethodContext) (state, error) {
	if v, ok := ctx.Cached(cacheSlot); ok {
		return v.(state), nil
	}
	var st state
	if !ctx.Exists() {
		return st, nil
	}
	b, err := ctx.GetXattr(EpochXattr)
	switch {
	case errors.Is(err, objstore.ErrNotFound):
	case err != nil:
		return st, err
	default:
		d, _ := wire.NewDec(b, 1, "log epoch")
		st.epoch = d.Uvarint()
		if err := d.Err(); err != nil {
			return st, err
		}
	}
	h, err := ctx.GetOmapHeader()
	if err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return st, err
	}
	if len(h) > 0 {
		d, _ := wire.NewDec(h, 1, "log header")
		st.tail = d.Uvarint()
		if err := d.Err(); err != nil {
			return st, err
		}
	}
	return st, nil
}

func checkEpoch(st state, epoch uint64) error {
	if epoch < st.epoch {
		return objstore.Errorf(objstore.ErrAgain, "log: epoch %d is older than sealed epoch %d", epoch, st.epoch)
	}
	return nil
}

// Register adds the class's methods to reg.
func Register(reg *objstore.Registry) {
	rw := objstore.MethodRead | objstore.MethodWrite
	reg.Register(ClassName, MethodSeal, rw, sealMethod)
	reg.Register(ClassName, MethodAppend, rw, appendMethod)
	reg.Register(ClassName, MethodWrite, rw, writeMethod)
	reg.Register(ClassName, MethodRead, objstore.MethodRead, readMethod)
	reg.Register(ClassName, MethodMaxPos, objstore.MethodRead, maxPosMethod)
}

// seal input: epoch. Output: the tail.
func sealMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	d, _ := wire.NewDec(in, 1, "log seal")
	epoch := d.Uvarint()
	if err := d.Err(); err != nil {
		return nil, err
	}
	st, err := load(ctx)
	if err != nil {
		return nil, err
	}
	if epoch <= st.epoch {
		return nil, objstore.Errorf(objstore.ErrAgain, "log: seal epoch %d is not newer than %d", epoch, st.epoch)
	}
	if err := ctx.Create(false); err != nil {
		return nil, err
	}
	if err := ctx.SetXattr(EpochXattr, wire.NewEnc(1, 10).Uvarint(epoch).B); err != nil {
		return nil, err
	}
	st.epoch = epoch
	ctx.SetCached(cacheSlot, st)
	return wire.NewEnc(1, 10).Uvarint(st.tail).B, nil
}

func put(ctx objstore.MethodContext, st state, pos uint64, data []byte) error {
	v := make([]byte, 1+len(data))
	v[0] = entryData
	copy(v[1:], data)
	if err := ctx.SetOmap(objstore.KV{Key: posKey(pos), Value: v}); err != nil {
		return err
	}
	if pos >= st.tail {
		st.tail = pos + 1
		if err := ctx.SetOmapHeader(wire.NewEnc(1, 10).Uvarint(st.tail).B); err != nil {
			return err
		}
	}
	ctx.SetCached(cacheSlot, st)
	return nil
}

// append input: epoch, data. Output: the position written.
func appendMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	d, _ := wire.NewDec(in, 1, "log append")
	epoch, data := d.Uvarint(), d.Bytes()
	if err := d.Err(); err != nil {
		return nil, err
	}
	st, err := load(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkEpoch(st, epoch); err != nil {
		return nil, err
	}
	if st.tail == 1<<64-1 {
		return nil, objstore.Errorf(objstore.ErrNoSpace, "log: position space exhausted")
	}
	pos := st.tail
	if err := put(ctx, st, pos, data); err != nil {
		return nil, err
	}
	return wire.NewEnc(1, 10).Uvarint(pos).B, nil
}

// write input: epoch, position, data.
func writeMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	d, _ := wire.NewDec(in, 1, "log write")
	epoch, pos, data := d.Uvarint(), d.Uvarint(), d.Bytes()
	if err := d.Err(); err != nil {
		return nil, err
	}
	if pos == 1<<64-1 {
		return nil, objstore.Errorf(objstore.ErrInvalid, "log: position %d out of range", pos)
	}
	st, err := load(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkEpoch(st, epoch); err != nil {
		return nil, err
	}
	if pos < st.tail {
		if _, err := ctx.GetOmapVal(posKey(pos)); err == nil {
			return nil, objstore.Errorf(objstore.ErrReadOnly, "log: position %d already written", pos)
		} else if !errors.Is(err, objstore.ErrNotFound) {
			return nil, err
		}
	}
	return nil, put(ctx, st, pos, data)
}

// read input: position. Output: the raw data (not wire-encoded).
func readMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	d, _ := wire.NewDec(in, 1, "log read")
	pos := d.Uvarint()
	if err := d.Err(); err != nil {
		return nil, err
	}
	if !ctx.Exists() {
		return nil, objstore.Errorf(objstore.ErrNotFound, "log: position %d unwritten", pos)
	}
	v, err := ctx.GetOmapVal(posKey(pos))
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, objstore.Errorf(objstore.ErrNotFound, "log: position %d unwritten", pos)
	}
	if err != nil {
		return nil, err
	}
	if len(v) == 0 || v[0] != entryData {
		return nil, objstore.Errorf(objstore.ErrInvalid, "log: position %d: unknown entry format", pos)
	}
	return v[1:], nil
}

// max_pos output: epoch, tail (uvarints).
func maxPosMethod(ctx objstore.MethodContext, _ []byte) ([]byte, error) {
	st, err := load(ctx)
	if err != nil {
		return nil, err
	}
	return wire.NewEnc(1, 20).Uvarint(st.epoch).Uvarint(st.tail).B, nil
}

// Client API.

// Execer is a WriteOp or ReadOp.
type Execer interface {
	Exec(class, method string, in []byte) *objstore.ExecStep
}

// PosStep is a call whose output is a position.
type PosStep struct{ s *objstore.ExecStep }

// Pos decodes the position.
func (p PosStep) Pos() (uint64, error) {
	d, _ := wire.NewDec(p.s.Out, 1, "log position")
	v := d.Uvarint()
	return v, d.Err()
}

// AddSeal installs epoch; its output (Pos) is the tail.
func AddSeal(op *objstore.WriteOp, epoch uint64) PosStep {
	return PosStep{op.Exec(ClassName, MethodSeal, wire.NewEnc(1, 10).Uvarint(epoch).B)}
}

// AddAppend appends data under epoch; its output is the position.
func AddAppend(op *objstore.WriteOp, epoch uint64, data []byte) PosStep {
	return PosStep{op.Exec(ClassName, MethodAppend, wire.NewEnc(1, 12+len(data)).Uvarint(epoch).Bytes(data).B)}
}

// AddWrite writes data at pos under epoch, once.
func AddWrite(op *objstore.WriteOp, epoch, pos uint64, data []byte) {
	op.Exec(ClassName, MethodWrite, wire.NewEnc(1, 22+len(data)).Uvarint(epoch).Uvarint(pos).Bytes(data).B)
}

// Seal installs a newer epoch on oid and returns the tail (the next
// position to append). ErrAgain if epoch is not newer.
func Seal(ctx context.Context, io objstore.IOContext, oid string, epoch uint64) (uint64, error) {
	op := objstore.NewWriteOp()
	s := AddSeal(op, epoch)
	if err := io.Operate(ctx, oid, op); err != nil {
		return 0, err
	}
	return s.Pos()
}

// Append appends data and returns its position. ErrAgain for a stale epoch.
func Append(ctx context.Context, io objstore.IOContext, oid string, epoch uint64, data []byte) (uint64, error) {
	op := objstore.NewWriteOp()
	s := AddAppend(op, epoch, data)
	if err := io.Operate(ctx, oid, op); err != nil {
		return 0, err
	}
	return s.Pos()
}

// Write writes data at pos. ErrAgain for a stale epoch, ErrReadOnly if pos
// is already written.
func Write(ctx context.Context, io objstore.IOContext, oid string, epoch, pos uint64, data []byte) error {
	op := objstore.NewWriteOp()
	AddWrite(op, epoch, pos, data)
	return io.Operate(ctx, oid, op)
}

// Read returns the data at pos; ErrNotFound if unwritten.
func Read(ctx context.Context, io objstore.IOContext, oid string, pos uint64) ([]byte, error) {
	op := objstore.NewReadOp()
	s := op.Exec(ClassName, MethodRead, wire.NewEnc(1, 10).Uvarint(pos).B)
	if err := io.OperateRead(ctx, oid, op); err != nil {
		return nil, err
	}
	return s.Out, nil
}

// MaxPos returns the sealed epoch and the highest written position; empty
// is true when nothing was written (pos is then 0). ErrNotFound if the
// object does not exist.
func MaxPos(ctx context.Context, io objstore.IOContext, oid string) (epoch, pos uint64, empty bool, err error) {
	op := objstore.NewReadOp()
	s := op.Exec(ClassName, MethodMaxPos, nil)
	if err := io.OperateRead(ctx, oid, op); err != nil {
		return 0, 0, false, err
	}
	d, _ := wire.NewDec(s.Out, 1, "log max_pos")
	epoch, tail := d.Uvarint(), d.Uvarint()
	if err := d.Err(); err != nil {
		return 0, 0, false, err
	}
	if tail == 0 {
		return epoch, 0, true, nil
	}
	return epoch, tail - 1, false, nil
}
