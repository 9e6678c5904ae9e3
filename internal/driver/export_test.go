package driver

import "github.com/cairn-s3/cairn/internal/bucketindex"

// GCQueued is how many replaced manifests d's collector holds in memory.
func GCQueued(d *Driver) int {
	d.gc.mu.Lock()
	defer d.gc.mu.Unlock()
	return len(d.gc.queue)
}

// IndexFor is the bucket index of inst (benchmarks fill it directly).
func IndexFor(d *Driver, inst Instance) bucketindex.Index { return d.indexFor(inst) }
