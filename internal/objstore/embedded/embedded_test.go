package embedded

import (
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/objstoretest"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func testRegistry() *objstore.Registry {
	reg := objstore.NewRegistry()
	objstoretest.RegisterTestClasses(reg)
	return reg
}

func openMem(t testing.TB, reg *objstore.Registry) *Store {
	t.Helper()
	s, err := Open(Options{Dir: "/data", FS: vfs.NewMem(), Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openDisk(t testing.TB, reg *objstore.Registry) *Store {
	t.Helper()
	s, err := Open(Options{Dir: t.TempDir(), Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformanceMem(t *testing.T) {
	reg := testRegistry()
	objstoretest.RunCore(t, func(t *testing.T) objstore.Store { return openMem(t, reg) })
}

func TestConformanceDisk(t *testing.T) {
	reg := testRegistry()
	objstoretest.RunCore(t, func(t *testing.T) objstore.Store { return openDisk(t, reg) })
}
