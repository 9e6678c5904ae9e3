package embedded

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// tuneReads sets the pebble options that serve point reads. Most point
// reads on the write path look for keys that do not exist yet (the meta of
// a new stripe, a new index entry); a bloom filter per sstable (10 bits a
// key, ≈1% false positives) answers those without reading index and data
// blocks. pebble's Get consults no filter of the lowest level, where most
// tables are: a write's omap reads go through txn.probe, which does.
// Tables written before the option keep none until compacted.
func tuneReads(po *pebble.Options) {
	// Levels 1+ inherit L0's policy (LevelOptions.EnsureL1PlusDefaults).
	po.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
}
