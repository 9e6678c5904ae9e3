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
//
// The queue in memory is bounded (Options.GCQueueMax): past it, a record
// stays only in its shard (spilled) and the collector walks the shards for
// records again once the queue has drained to half. A backlog of millions
// of replaced objects (the scale run's aging queued 2.5M) would otherwise
// hold every manifest in memory.
type collector struct {
	d      *Driver
	mu     sync.Mutex
	queue  []gcItem
	queued map[string]time.Time // shard + "\x00" + tag → due, of every queued item
	max    int
	// spilled counts records left in their shards because the queue was
	// full, since the last walk that found them all.
	spilled int
	wake    chan struct{}
	stopCh  chan struct{}
	done    chan struct{}
}

type gcItem struct {
	due      time.Time
	shard    string
	tag      string
	manifest bucketindex.Manifest
}

func newCollector(d *Driver) *collector {
	c := &collector{d: d, queued: map[string]time.Time{}, max: d.opts.GCQueueMax, wake: make(chan struct{}, 1), stopCh: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

// enqueue queues a replaced manifest whose GC record is in shard; false
// when the queue is full and the record was left in its shard.
func (c *collector) enqueue(shard, tag string, m bucketindex.Manifest) bool {
	if len(m.Runs) == 0 {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := shard + "\x00" + tag
	if !c.queued[k].IsZero() {
		return true
	}
	if len(c.queue) >= c.max {
		c.spilled++
		return false
	}
	due := c.d.opts.Now().Add(c.d.opts.GCMinWait)
	c.queued[k] = due
	c.queue = append(c.queue, gcItem{due: due, shard: shard, tag: tag, manifest: m})
	return true
}

// refill walks the shards for spilled records once the queue has drained
// to half its bound.
func (c *collector) refill(ctx context.Context) {
	c.mu.Lock()
	need := c.spilled > 0 && len(c.queue) <= c.max/2
	c.mu.Unlock()
	if !need {
		return
	}
	if _, err := c.walk(ctx); err != nil {
		c.d.log.Warn("gc: walk for spilled records", "err", err)
	}
}

// walk queues the GC records of every bucket until the queue is full and
// returns how many it read.
func (c *collector) walk(ctx context.Context) (int, error) {
	n, full := 0, false
	err := c.d.eachGCRecord(ctx, func(_ Instance, r bucketindex.GCRecord) bool {
		n++
		if !c.enqueue(r.Shard, r.Tag, r.Manifest) {
			full = true
			return false
		}
		return true
	})
	if err != nil {
		return n, err
	}
	c.mu.Lock()
	if !full {
		c.spilled = 0 // every record is queued
	} else {
		// Unknown how many wait; at least one.
		c.spilled = max(1, c.spilled-c.max/2)
	}
	c.mu.Unlock()
	return n, nil
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
		c.refill(context.Background())
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
func (d *Driver) SweepGC(ctx context.Context) (int, error) { return d.gc.walk(ctx) }

// gcWalkPage is how many GC records a walk reads from a shard at a time.
const gcWalkPage = 1000

// eachGCRecord calls fn with every GC record of every bucket, a page per
// shard at a time, until fn returns false.
func (d *Driver) eachGCRecord(ctx context.Context, fn func(Instance, bucketindex.GCRecord) bool) error {
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
			for after := ""; ; {
				recs, err := ix.PendingGCAfter(ctx, s, after, gcWalkPage)
				if err != nil {
					break // a retired shard: its records moved on
				}
				for _, r := range recs {
					if !fn(inst, r) {
						return nil
					}
				}
				if len(recs) < gcWalkPage {
					break
				}
				after = recs[len(recs)-1].Tag
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
	err := d.eachGCRecord(ctx, func(inst Instance, r bucketindex.GCRecord) bool {
		due := now.Add(d.opts.GCMinWait) // when the queue is full: due once queued
		if d.gc.enqueue(r.Shard, r.Tag, r.Manifest) {
			due = d.gc.due(r.Shard, r.Tag)
		}
		if !includeAll && due.After(now) {
			return true
		}
		e := GCEntry{Bucket: inst.Name, BucketID: inst.ID, Shard: r.Shard, Tag: r.Tag, Due: due.UTC(), Objects: r.Manifest.Objects()}
		for _, run := range r.Manifest.Runs {
			e.Size += run.Size
		}
		out = append(out, e)
		return true
	})
	return out, err
}

// GCProcess collects every due GC record of every bucket now (all of them
// with includeAll, ignoring gc-min-wait), as radosgw-admin gc process
// [--include-all]. It returns how many records were collected.
func (d *Driver) GCProcess(ctx context.Context, includeAll bool) (int, error) {
	total := 0
	for {
		if _, err := d.SweepGC(ctx); err != nil {
			return total, err
		}
		n := d.gc.collectDue(ctx, includeAll)
		total += n
		// A bounded queue takes a backlog in several passes; a stop or an
		// empty pass ends it.
		if n == 0 || d.gc.stopping() || !d.gc.hasSpilled() {
			return total, nil
		}
	}
}

func (c *collector) stopping() bool {
	select {
	case <-c.stopCh:
		return true
	default:
		return false
	}
}

func (c *collector) hasSpilled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spilled > 0
}

// due is when the queued item (shard, tag) is collected (zero: not queued).
func (c *collector) due(shard, tag string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queued[shard+"\x00"+tag]
}

// GCBacklog is how many replaced manifests wait for collection (due or
// not yet due): benchmarks report it to show collection keeps up. Records
// spilled past the queue's bound count as they were dropped (an estimate
// until the next walk finds them).
func (d *Driver) GCBacklog() int {
	d.gc.mu.Lock()
	defer d.gc.mu.Unlock()
	return len(d.gc.queue) + d.gc.spilled
}
