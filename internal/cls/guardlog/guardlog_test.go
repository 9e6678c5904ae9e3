package guardlog

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/internal/clsfake"
	"github.com/cairn-s3/cairn/internal/objstore"
)

func TestGuardedLog(t *testing.T) {
	ctx := context.Background()
	reg := objstore.NewRegistry()
	Register(reg)
	s := clsfake.New(reg, time.Unix(1, 0))
	io := s.IO()
	if _, _, _, err := MaxPos(ctx, io, "l"); err != nil {
		t.Fatalf("max_pos of a fresh object: %v", err) // the fake tolerates absence
	}
	for i := uint64(0); i < 3; i++ {
		pos, err := Append(ctx, io, "l", 0, []byte{byte('a' + i)})
		if err != nil || pos != i {
			t.Fatalf("append %d: %d %v", i, pos, err)
		}
	}
	if _, err := Seal(ctx, io, "l", 0); !errors.Is(err, objstore.ErrAgain) {
		t.Fatalf("seal 0: %v", err)
	}
	tail, err := Seal(ctx, io, "l", 5)
	if err != nil || tail != 3 {
		t.Fatalf("seal: %d %v", tail, err)
	}
	if _, err := Seal(ctx, io, "l", 5); !errors.Is(err, objstore.ErrAgain) {
		t.Fatalf("reseal: %v", err)
	}
	if _, err := Append(ctx, io, "l", 4, []byte("x")); !errors.Is(err, objstore.ErrAgain) {
		t.Fatalf("stale append: %v", err)
	}
	if err := Write(ctx, io, "l", 4, 10, []byte("x")); !errors.Is(err, objstore.ErrAgain) {
		t.Fatalf("stale write: %v", err)
	}
	if err := Write(ctx, io, "l", 5, 10, []byte("ten")); err != nil {
		t.Fatal(err)
	}
	if err := Write(ctx, io, "l", 6, 10, []byte("again")); !errors.Is(err, objstore.ErrReadOnly) {
		t.Fatalf("rewrite: %v", err)
	}
	if err := Write(ctx, io, "l", 5, 1, []byte("again")); !errors.Is(err, objstore.ErrReadOnly) {
		t.Fatalf("rewrite 1: %v", err)
	}
	if err := Write(ctx, io, "l", 5, 7, []byte("seven")); err != nil {
		t.Fatal(err)
	}
	// Appends continue after the highest written position.
	if pos, err := Append(ctx, io, "l", 5, []byte("eleven")); err != nil || pos != 11 {
		t.Fatalf("append after write: %d %v", pos, err)
	}
	if b, err := Read(ctx, io, "l", 7); err != nil || string(b) != "seven" {
		t.Fatalf("read 7: %q %v", b, err)
	}
	if _, err := Read(ctx, io, "l", 8); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("read hole: %v", err)
	}
	// A restart empties the cache: state comes back from the object.
	s.DropCache()
	if _, err := Append(ctx, io, "l", 4, []byte("x")); !errors.Is(err, objstore.ErrAgain) {
		t.Fatalf("stale append after restart: %v", err)
	}
	if pos, err := Append(ctx, io, "l", 5, []byte("twelve")); err != nil || pos != 12 {
		t.Fatalf("append after restart: %d %v", pos, err)
	}
	epoch, max, empty, err := MaxPos(ctx, io, "l")
	if err != nil || epoch != 5 || max != 12 || empty {
		t.Fatalf("max_pos: %d %d %v %v", epoch, max, empty, err)
	}
	// An outside write to the epoch xattr invalidates the cache.
	s.Mutate("l", func(o *clsfake.Object) { o.Xattrs[EpochXattr] = []byte{1, 9} })
	if _, err := Append(ctx, io, "l", 5, []byte("x")); !errors.Is(err, objstore.ErrAgain) {
		t.Fatalf("append after outside seal: %v", err)
	}
}
