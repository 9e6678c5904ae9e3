package clsfake

import (
	"context"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// IO returns an IOContext over the store that runs ops made only of
// ExecSteps, so the classes' client APIs can be unit-tested. Other steps
// fail with ErrNotSupported.
func (s *Store) IO() objstore.IOContext { return fakeIO{s} }

type fakeIO struct{ s *Store }

func (fakeIO) Pool() string                              { return "fake" }
func (fakeIO) Namespace() string                         { return "" }
func (f fakeIO) WithNamespace(string) objstore.IOContext { return f }

func (f fakeIO) run(oid string, steps []objstore.Step) error {
	calls := make([]*Call, len(steps))
	for i, st := range steps {
		e, ok := st.(*objstore.ExecStep)
		if !ok {
			return objstore.Errorf(objstore.ErrNotSupported, "clsfake: step %T", st)
		}
		calls[i] = &Call{Class: e.Class, Method: e.Method, In: e.In}
	}
	if err := f.s.Exec(oid, calls...); err != nil {
		return err
	}
	for i, st := range steps {
		st.(*objstore.ExecStep).Out = calls[i].Out
	}
	return nil
}

func (f fakeIO) Operate(_ context.Context, oid string, op *objstore.WriteOp) error {
	return f.run(oid, op.Steps)
}

func (f fakeIO) OperateRead(_ context.Context, oid string, op *objstore.ReadOp) error {
	return f.run(oid, op.Steps)
}

func (f fakeIO) ListObjects(context.Context, string, int) ([]string, bool, error) {
	return nil, false, objstore.Errorf(objstore.ErrNotSupported, "clsfake: list")
}
