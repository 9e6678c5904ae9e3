package embedded

import (
	"context"
	"errors"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestFreshSkipsMetaRead: a fresh op makes no point read (the S3 stripe
// write's absent-meta lookup); the same op without the hint makes one.
// With CheckFresh a fresh op on an existing object fails with ErrExists
// and changes nothing.
func TestFreshSkipsMetaRead(t *testing.T) {
	ctx := context.Background()
	for _, check := range []bool{false, true} {
		s, err := Open(Options{Dir: "/data", FS: vfs.NewMem(), CheckFresh: check})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.CreatePool(ctx, "p"); err != nil {
			t.Fatal(err)
		}
		io, err := s.IOContext(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		write := func(oid string, fresh bool) (uint64, error) {
			op := objstore.NewWriteOp().WriteFull([]byte("data")).SetXattr("o", []byte("x"))
			op.Fresh, op.DeferSync = fresh, true
			before := s.PointGets()
			err := io.Operate(ctx, oid, op)
			return s.PointGets() - before, err
		}
		n, err := write("plain", false)
		if err != nil || n != 1 {
			t.Fatalf("plain write: %d point gets, %v; want 1", n, err)
		}
		n, err = write("fresh", true)
		want := uint64(0)
		if check {
			want = 1
		}
		if err != nil || n != want {
			t.Fatalf("fresh write (check %v): %d point gets, %v; want %d", check, n, err, want)
		}
		if !check {
			continue
		}
		if _, err := write("plain", true); !errors.Is(err, objstore.ErrExists) {
			t.Fatalf("checked fresh write of an existing object: %v, want ErrExists", err)
		}
	}
}
