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
	queued map[string]time.Time // shard + "\x00" + tag → due, of every queued item
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
	c := &collector{d: d, queued: map[string]time.Time{}, wake: make(chan struct{}, 1), stopCh: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

func (c *collector) enqueue(shard, tag string, m bucketindex.Manifest) {
	if len(m.Runs) == 0 {
		return
	}
	c.mu.Lock()
	if k := shard + "\x00" + tag; c.queued[k].IsZero() {
		due := c.d.opts.Now().Add(c.d.opts.GCMinWait)
		c.queued[k] = due
		c.queue = append(c.queue, gcItem{due: due, shard: shard, tag: tag, manifest: m})
	}
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

// gcChunk is how many due items one round removes before their GC
// records are cleared; a stop is honoured between rounds, so shutdown never
// waits for a whole backlog. gcWorkers remove a round's data in parallel.
const (
	gcChunk   = 512
	gcWorkers = 8
)

// collectDue removes the data of due items (all items when force) and then
// their GC records, batched per shard, a round of gcChunk items at a time.
// The removals do not wait for their own sync: each round syncs every
// data store it touched once and then clears the records in one synced
// write per shard, so a crash before that leaves records, and the sweep at
// start-up removes their (already absent or still present) data again.
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
	for _, it := range due {
		delete(c.queued, it.shard+"\x00"+it.tag)
	}
	c.mu.Unlock()
	n := 0
	for len(due) > 0 {
		select {
		case <-c.stopCh:
			// Left for the next start's sweep (the records are kept).
			return n
		default:
		}
		if ctx.Err() != nil {
			c.requeue(due)
			return n
		}
		round := due[:min(gcChunk, len(due))]
		due = due[len(round):]
		c.collectRound(ctx, round)
		n += len(round)
	}
	return n
}

// requeue puts items taken from the queue back (a canceled collection).
func (c *collector) requeue(items []gcItem) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range items {
		if k := it.shard + "\x00" + it.tag; c.queued[k].IsZero() {
			c.queued[k] = it.due
			c.queue = append(c.queue, it)
		}
	}
}

// collectRound removes the data of items and then clears their records.
func (c *collector) collectRound(ctx context.Context, items []gcItem) {
	var (
		mu      sync.Mutex
		touched = map[string]objstore.IOContext{}
		next    = make(chan gcItem)
		wg      sync.WaitGroup
	)
	for w := 0; w < min(gcWorkers, len(items)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range next {
				for _, r := range it.manifest.Runs {
					io, err := c.d.dataIO(ctx, r.Pool)
					if err != nil {
						c.d.log.Warn("gc: remove data objects", "pool", r.Pool, "err", err)
						continue
					}
					mu.Lock()
					touched[r.Pool] = io
					mu.Unlock()
					for _, oid := range (bucketindex.Manifest{Runs: []bucketindex.Run{r}}).Objects() {
						op := objstore.NewWriteOp().Remove()
						op.DeferSync = true
						if err := io.Operate(ctx, oid, op); err != nil && !errors.Is(err, objstore.ErrNotFound) {
							c.d.log.Warn("gc: remove data object", "oid", oid, "err", err)
						}
					}
				}
			}
		}()
	}
	for _, it := range items {
		next <- it
	}
	close(next)
	wg.Wait()
	c.d.failpoint("gc-after-remove")
	for pool, io := range touched {
		if err := objstore.Sync(ctx, io); err != nil {
			// Keep the records: the next sweep removes the data again.
			c.d.log.Warn("gc: sync removals", "pool", pool, "err", err)
			return
		}
	}
	byShard := map[string][]string{}
	for _, it := range items {
		byShard[it.shard] = append(byShard[it.shard], it.tag)
	}
	for shard, tags := range byShard {
		err := bucketindex.GCDone(ctx, c.d.index, shard, tags...)
		if err != nil && !errors.Is(err, objstore.ErrNotFound) {
			c.d.log.Warn("gc: clear records", "shard", shard, "err", err)
		}
	}
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
			c.d.removeManifest(ctx, r.Manifest)
			tags = append(tags, r.Tag)
		}
		if len(tags) > 0 {
			_ = bucketindex.GCDone(ctx, c.d.index, recs[0].Shard, tags...)
		}
	}
}

// SweepGC queues every GC record of every bucket: run at start-up, so data
// replaced just before a crash is still collected. A record already
// queued keeps its due time; one found here (another gateway's, or left
// by a crash) is due GCMinWait from now.
func (d *Driver) SweepGC(ctx context.Context) (int, error) {
	n := 0
	err := d.eachGCRecord(ctx, func(_ Instance, r bucketindex.GCRecord) {
		d.gc.enqueue(r.Shard, r.Tag, r.Manifest)
		n++
	})
	return n, err
}

// eachGCRecord calls fn with every GC record of every bucket.
func (d *Driver) eachGCRecord(ctx context.Context, fn func(Instance, bucketindex.GCRecord)) error {
	ids, err := listAll(ctx, d.meta.WithNamespace(nsInstances))
	if err != nil {
		return err
	}
	for _, id := range ids {
		inst, _, err := d.ReadInstance(ctx, id)
		if err != nil {
			continue
		}
		ix := d.indexFor(inst)
		for s := 0; s < inst.Layout.NumShards; s++ {
			recs, err := ix.PendingGC(ctx, s, 0)
			if err != nil {
				continue // a retired shard: its records moved on
			}
			for _, r := range recs {
				fn(inst, r)
			}
		}
	}
	return nil
}

// CollectNow runs every queued collection immediately (tests, shutdown).
func (d *Driver) CollectNow(ctx context.Context) int { return d.gc.collectDue(ctx, true) }

// GCEntry is data awaiting collection (gc list): a version an overwrite
// or a delete replaced, recorded in its index shard with the change.
type GCEntry struct {
	Bucket   string    `json:"bucket"`
	BucketID string    `json:"bucket_id"`
	Shard    string    `json:"shard"` // the index shard object holding the record
	Tag      string    `json:"tag"`
	Due      time.Time `json:"time"` // when this gateway collects it
	Objects  []string  `json:"objs"` // data objects (pool default.rgw.buckets.data)
	Size     int64     `json:"size"` // bytes stored
}

// GCList returns the GC records of every bucket whose collection is due
// (all of them with includeAll), as radosgw-admin gc list [--include-all].
// Records not yet queued here are queued (due GCMinWait from now).
func (d *Driver) GCList(ctx context.Context, includeAll bool) ([]GCEntry, error) {
	out := []GCEntry{}
	now := d.opts.Now()
	err := d.eachGCRecord(ctx, func(inst Instance, r bucketindex.GCRecord) {
		d.gc.enqueue(r.Shard, r.Tag, r.Manifest)
		due := d.gc.due(r.Shard, r.Tag)
		if !includeAll && due.After(now) {
			return
		}
		e := GCEntry{Bucket: inst.Name, BucketID: inst.ID, Shard: r.Shard, Tag: r.Tag, Due: due.UTC(), Objects: r.Manifest.Objects()}
		for _, run := range r.Manifest.Runs {
			e.Size += run.Size
		}
		out = append(out, e)
	})
	return out, err
}

// GCProcess collects every due GC record of every bucket now (all of them
// with includeAll, ignoring gc-min-wait), as radosgw-admin gc process
// [--include-all]. It returns how many records were collected.
func (d *Driver) GCProcess(ctx context.Context, includeAll bool) (int, error) {
	if _, err := d.SweepGC(ctx); err != nil {
		return 0, err
	}
	return d.gc.collectDue(ctx, includeAll), nil
}

// due is when the queued item (shard, tag) is collected (zero: not queued).
func (c *collector) due(shard, tag string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queued[shard+"\x00"+tag]
}

// GCBacklog is how many replaced manifests wait for collection (due or
// not yet due): benchmarks report it to show collection keeps up.
func (d *Driver) GCBacklog() int {
	d.gc.mu.Lock()
	defer d.gc.mu.Unlock()
	return len(d.gc.queue)
}
