package bucketindex_test

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/bucketindex/indextest"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// The versions suite on the embedded store (radosstore runs it on RADOS).
func TestVersionsSuite(t *testing.T) {
	indextest.Run(t, func(t *testing.T) objstore.IOContext {
		reg := objstore.NewRegistry()
		bucketindex.Register(reg)
		st, err := embedded.Open(embedded.Options{Dir: "/ix", FS: vfs.NewMem(), Classes: reg})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		ctx := context.Background()
		if err := st.CreatePool(ctx, "idx"); err != nil {
			t.Fatal(err)
		}
		io, err := st.IOContext(ctx, "idx")
		if err != nil {
			t.Fatal(err)
		}
		return io
	})
}
