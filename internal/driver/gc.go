package driver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// collector removes data replaced by overwrites and deletes. The index
// recorded each such manifest in a GC record atomically with the change, so
// nothing is lost if the process dies: Sweep re-queues every record found in
// the shards. Collection waits GCMinWait so in-flight GETs of the old version
// finish first.
type collector struct {
	d      *Driver
	mu     sync.Mutex
	queue  []gcItem
	wake   chan struct{}
	stopCh chan struct{}
	done   chan struct{}
}

type gcItem struct {
	due      time.Time
	shard    string
	tag      string
	manifest bucketindex.Manifest
}

func newCollector(d *Driver) *collector {
	c := &collector{d: d, wake: make(chan struct{}, 1), stopCh: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

func (c *collector) enqueue(shard, tag string, m bucketindex.Manifest) {
	if len(m.Runs) == 0 {
		return
	}
	c.mu.Lock()
	c.queue = append(c.queue, gcItem{due: c.d.opts.Now().Add(c.d.opts.GCMinWait), shard: shard, tag: tag, manifest: m})
	c.mu.Unlock()
}

func (c *collector) stop() {
	close(c.stopCh)
	<-c.done
}

func (c *collector) run() {
	defer close(c.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-c.stopCh:
			return
		case <-t.C:
		case <-c.wake:
		}
		c.collectDue(context.Background(), false)
	}
}

// collectDue removes the data of due items (all items when force) and then
// their GC records, batched per shard.
func (c *collector) collectDue(ctx context.Context, force bool) int {
	now := c.d.opts.Now()
	c.mu.Lock()
	var due, keep []gcItem
	for _, it := range c.queue {
		if force || !it.due.After(now) {
			due = append(due, it)
		} else {
			keep = append(keep, it)
		}
	}
	c.queue = keep
	c.mu.Unlock()
	byShard := map[string][]string{}
	for _, it := range due {
		c.d.removeObjects(ctx, it.manifest.Objects())
		byShard[it.shard] = append(byShard[it.shard], it.tag)
	}
	for shard, tags := range byShard {
		err := bucketindex.GCDone(ctx, c.d.index, shard, tags...)
		if err != nil && !errors.Is(err, objstore.ErrNotFound) {
			c.d.log.Warn("gc: clear records", "shard", shard, "err", err)
		}
	}
	return len(due)
}

// drainIndex collects every GC record of ix now (bucket deletion).
func (c *collector) drainIndex(ctx context.Context, ix bucketindex.Index) {
	for s := 0; s < ix.Layout.NumShards; s++ {
		recs, err := ix.PendingGC(ctx, s, 0)
		if err != nil {
			continue
		}
		var tags []string
		for _, r := range recs {
			c.d.removeObjects(ctx, r.Manifest.Objects())
			tags = append(tags, r.Tag)
		}
		if len(tags) > 0 {
			_ = bucketindex.GCDone(ctx, c.d.index, recs[0].Shard, tags...)
		}
	}
}

// SweepGC queues every GC record of every bucket: run at start-up, so data
// replaced just before a crash is still collected.
func (d *Driver) SweepGC(ctx context.Context) (int, error) {
	ids, err := listAll(ctx, d.meta.WithNamespace(nsInstances))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		inst, _, err := d.ReadInstance(ctx, id)
		if err != nil {
			continue
		}
		ix := d.indexFor(inst)
		for s := 0; s < inst.Layout.NumShards; s++ {
			recs, err := ix.PendingGC(ctx, s, 0)
			if err != nil {
				continue
			}
			for _, r := range recs {
				d.gc.enqueue(r.Shard, r.Tag, r.Manifest)
				n++
			}
		}
	}
	return n, nil
}

// CollectNow runs every queued collection immediately (tests, shutdown).
func (d *Driver) CollectNow(ctx context.Context) int { return d.gc.collectDue(ctx, true) }

// GCBacklog is how many replaced manifests wait for collection (due or
// not yet due): benchmarks report it to show collection keeps up.
func (d *Driver) GCBacklog() int {
	d.gc.mu.Lock()
	defer d.gc.mu.Unlock()
	return len(d.gc.queue)
}
