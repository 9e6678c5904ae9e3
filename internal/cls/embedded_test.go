package cls_test

import (
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/clstest"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestEmbedded runs the class suite against the embedded backend on an
// in-memory filesystem; reopening keeps the data and empties class caches.
func TestEmbedded(t *testing.T) {
	clstest.Run(t, func(t *testing.T, reg *objstore.Registry, now func() time.Time) func() objstore.Store {
		fs := vfs.NewMem()
		return func() objstore.Store {
			s, err := embedded.Open(embedded.Options{Dir: "/store", FS: fs, Classes: reg, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}
