//go:build !rados

package radosstore

import (
	"errors"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// ErrNotBuilt is returned by Open in a binary built without the "rados" tag.
var ErrNotBuilt = errors.New("radosstore: this binary was built without RADOS support (build with -tags rados and librados-dev installed)")

// Open fails: this build has no librados.
func Open(opts Options) (objstore.Store, error) { return nil, ErrNotBuilt }
