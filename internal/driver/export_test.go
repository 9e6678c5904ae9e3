package driver

import (
	"context"

	"github.com/cairn-s3/cairn/internal/bucketindex"
)

// GCQueued is how many replaced manifests d's collector holds in memory.
func GCQueued(d *Driver) int {
	d.gc.mu.Lock()
	defer d.gc.mu.Unlock()
	return len(d.gc.queue)
}

// IndexFor is the bucket index of inst (benchmarks fill it directly).
func IndexFor(d *Driver, inst Instance) bucketindex.Index { return d.indexFor(inst) }

// GCPass runs one round of d's background collector now.
func GCPass(d *Driver) { d.gc.pass(context.Background()) }

// GCRecords counts the GC records in every bucket's shards.
func GCRecords(d *Driver) (int, error) {
	n := 0
	err := d.eachGCRecord(context.Background(), func(Instance, bucketindex.GCRecord) bool { n++; return true })
	return n, err
}

// GCWalkStats is how many GC records d's walks read and how many records
// its collector removed.
func GCWalkStats(d *Driver) (read, collected int64) { return d.gc.read.Load(), d.gc.collected.Load() }
