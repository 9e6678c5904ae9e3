package embedded

import (
	"context"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/objstoretest"
)

// The meta cached after class ops must follow every plain op in between:
// a method and a version guard after a plain write, a removal and a
// recreate must see the object as it is.
func TestMetaCacheFollowsPlainWrites(t *testing.T) {
	ctx := context.Background()
	s := openMem(t, testRegistry())
	if err := s.CreatePool(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	io, err := s.IOContext(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	// stat asks a class method in a write op (the path that trusts the
	// cache) how it sees the object.
	stat := func() string {
		t.Helper()
		op := objstore.NewWriteOp()
		ex := op.Exec(objstoretest.TestClass, "stat", nil)
		if err := io.Operate(ctx, "o", op); err != nil {
			t.Fatal(err)
		}
		return string(ex.Out)
	}
	exec := func(method string, in []byte) *objstore.WriteOp {
		op := objstore.NewWriteOp()
		op.Exec(objstoretest.TestClass, method, in)
		return op
	}
	write := func(op *objstore.WriteOp) uint64 {
		t.Helper()
		if err := io.Operate(ctx, "o", op); err != nil {
			t.Fatal(err)
		}
		return op.Version
	}

	v1 := write(exec("append", []byte("abc")))
	if got := stat(); got != "true 3" {
		t.Fatalf("after class append: %q", got)
	}
	v2 := write(objstore.NewWriteOp().WriteFull([]byte("0123456789")))
	if v2 <= v1 {
		t.Fatalf("plain write version %d after %d", v2, v1)
	}
	if got := stat(); got != "true 10" {
		t.Fatalf("class method after a plain write sees %q, want size 10", got)
	}
	if err := io.Operate(ctx, "o", objstore.NewWriteOp().AssertVersion(v1).SetXattr("a", nil)); err == nil {
		t.Fatalf("guard on the cached (old) version %d passed", v1)
	}
	if err := io.Operate(ctx, "o", objstore.NewWriteOp().AssertVersion(v2).SetXattr("a", nil)); err != nil {
		t.Fatalf("guard on the current version %d: %v", v2, err)
	}
	v3 := write(exec("append", []byte("x")))
	if got := stat(); got != "true 11" {
		t.Fatalf("after a second class append: %q", got)
	}
	write(objstore.NewWriteOp().Remove())
	if got := stat(); got != "false 0" {
		t.Fatalf("class method after remove sees %q", got)
	}
	v4 := write(exec("append", []byte("yz")))
	if v4 <= v3 {
		t.Fatalf("recreated object version %d, want > %d", v4, v3)
	}
	if got := stat(); got != "true 2" {
		t.Fatalf("after recreate: %q", got)
	}
	// A failed class op applies nothing and must not poison the cache.
	if err := io.Operate(ctx, "o", exec("fail", nil)); err == nil {
		t.Fatal("fail method succeeded")
	}
	if got := stat(); got != "true 2" {
		t.Fatalf("after a failed op: %q", got)
	}
}
