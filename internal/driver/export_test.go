package driver

// GCQueued is how many replaced manifests d's collector holds in memory.
func GCQueued(d *Driver) int {
	d.gc.mu.Lock()
	defer d.gc.mu.Unlock()
	return len(d.gc.queue)
}
