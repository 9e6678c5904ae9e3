package embedded

import (
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Value separation (pebble's blob files, not this package's blobs/ for
// objects of BlobThreshold and more). A flush writes each value of at
// least minSize to a blob file and a handle to the sstable; compactions
// then rewrite handles, not values, until a table references too many
// blob files (maxBlobDepth), when they copy the values into new ones.
// No format ratchet: pebble's format major version has been
// FormatValueSeparation (FormatNewest of v2.1.7) since the first build,
// and pebble reads separated values whatever the policy, so a build with
// separation off opens such a directory and inlines its values again as it
// compacts them (docs/format/embedded.md).
const (
	// maxBlobDepth bounds how many blob files one sstable's key range may
	// draw values from (pebble's MaxBlobReferenceDepth; CockroachDB uses
	// 10; measured: 10 rewrites ~1.5 KB of blob values per 4 KiB PUT in
	// compactions, 30 none, docs/bench/notify-issue25.md round 8): a scan
	// over a table opens at most this many blob files, and chunk values are
	// only read by point reads and short scans of one object.
	maxBlobDepth = 30
	// blobGarbageRatio: once this fraction of the values in blob files is
	// unreferenced (overwritten or deleted objects), pebble rewrites the
	// files with the most garbage, so disk space tracks live data.
	blobGarbageRatio = 0.2
	// blobRewriteAge: a blob file is rewritten only when at least this old,
	// so short-lived garbage goes with whole files, which cost no rewrite.
	blobRewriteAge = time.Minute
)

// separateValues enables pebble's value separation for values of at least
// minSize bytes (off when minSize <= 0).
func separateValues(po *pebble.Options, minSize int) {
	if minSize <= 0 {
		return
	}
	po.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
		return pebble.ValueSeparationPolicy{
			Enabled:               true,
			MinimumSize:           minSize,
			MaxBlobReferenceDepth: maxBlobDepth,
			RewriteMinimumAge:     blobRewriteAge,
			TargetGarbageRatio:    blobGarbageRatio,
		}
	}
}
