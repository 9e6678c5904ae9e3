package driver

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// collector removes data replaced by overwrites and deletes. The index
// recorded each such manifest in a GC record atomically with the change,
// stamped with the writer's clock, so nothing is lost if the process dies:
// the shards hold the truth and the queue in memory is a cache of it.
// A record is due GCMinWait after it was written (so in-flight GETs of the
// old version finish first), whether it is queued here or found in its
// shard by a walk.
//
// The queue in memory is bounded (Options.GCQueueMax) and split: at most
// half of it holds records not due yet (fresh: queued by the write path as
// it replaces data, or by a walk with room for them); the rest is kept for
// due records that walks find. A record that finds no room stays only in
// its shard (spilled), and the collector walks the shards for due records,
// resuming where its last walk stopped, as often as there is room. So
// collection keeps pace with the work it can do, not with GCMinWait: the
// scale run's aging replaced 2,000 objects/s while a queue of 65,536 items,
// each due 30 s after it was queued and spilled ones re-queued only at
// half-empty, let at most ~1,000-2,000/s through.
type collector struct {
	d      *Driver
	mu     sync.Mutex
	queue  []gcItem
	queued map[string]time.Time // shard + "\x00" + tag → due, of every queued or in-flight item
	max    int
	fresh  int // queued items that were not due when queued
	// inflight counts items taken from the queue for collection whose
	// records are not cleared yet (they stay in queued meanwhile).
	inflight int
	// spilled estimates the records left in their shards: counted up as
	// they spill, down as walks queue them, and reset to what a walk that
	// ends a cycle left behind.
	spilled int
	// pending: some record may wait in a shard only; walks run while it
	// is set, not before nextWalk (zero: now).
	pending  bool
	nextWalk time.Time
	// The background walk's position and what its current cycle (a pass
	// over every shard) left behind.
	walkMu     sync.Mutex // one walk at a time
	passMu     sync.Mutex // one pass at a time (the loop's, a test's)
	cur        gcCursor
	cycle      uint64
	cycleLeft  int       // records seen but left in their shards
	cycleSpill int       // records spilled since the cycle began
	cycleStart time.Time // when the cycle began
	lastCycle  time.Time // when the last cycle ended (or the collector began)
	cycleDue   time.Time // the earliest due time of a record left
	// the earliest due time of a record spilled since the cycle began
	cycleSpillDue time.Time
	// firstSeen holds, for records without a written time (older
	// gateways'), when a walk first saw them: they are due GCMinWait after.
	// Bounded by max; entries not seen by a cycle are dropped at its end.
	firstSeen map[string]gcSeen
	// read counts the records walks read, collected those removed: their
	// ratio is the walks' overhead.
	read, collected atomic.Int64
	wake            chan struct{}
	stopCh          chan struct{}
	done            chan struct{}
}

type gcItem struct {
	due      time.Time
	fresh    bool
	shard    string
	tag      string
	manifest bucketindex.Manifest
}

type gcSeen struct {
	at    time.Time
	cycle uint64
}

// gcCursor is where a walk resumes: the bucket instance, its shard, and
// the last GC record tag read there ("" with inst "": the start).
type gcCursor struct {
	inst  string
	shard int
	after string
}

func newCollector(d *Driver) *collector {
	c := &collector{d: d, queued: map[string]time.Time{}, firstSeen: map[string]gcSeen{}, max: d.opts.GCQueueMax,
		lastCycle: d.opts.Now(), wake: make(chan struct{}, 1), stopCh: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

func gcKey(shard, tag string) string { return shard + "\x00" + tag }

// enqueue queues a manifest the write path just handed to the collector
// (its GC record in shard, written at written); false when there was no
// room and the record was left in its shard.
func (c *collector) enqueue(shard, tag string, m bucketindex.Manifest, written time.Time) bool {
	if !m.Stored() {
		return true
	}
	now := c.d.opts.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	ok, _ := c.add(gcItem{due: written.Add(c.d.opts.GCMinWait), shard: shard, tag: tag, manifest: m}, now, false)
	if !ok {
		due := written.Add(c.d.opts.GCMinWait)
		c.spilled++
		c.cycleSpill++
		if c.cycleSpillDue.IsZero() || due.Before(c.cycleSpillDue) {
			c.cycleSpillDue = due
		}
		if !c.pending {
			c.pending, c.nextWalk = true, due
		}
	}
	return ok
}

// add queues it unless it is queued already (true, false) or there is no
// room: a due item (or any, with force) may take the whole queue, one not
// due only the fresh half. It reports whether the item is queued and
// whether this call queued it. c.mu is held.
func (c *collector) add(it gcItem, now time.Time, force bool) (bool, bool) {
	k := gcKey(it.shard, it.tag)
	if !c.queued[k].IsZero() {
		return true, false
	}
	it.fresh = !force && it.due.After(now)
	if len(c.queue) >= c.max || it.fresh && c.fresh >= c.max/2 {
		return false, false
	}
	if it.fresh {
		c.fresh++
	}
	c.queued[k] = it.due
	c.queue = append(c.queue, it)
	return true, true
}

// gcSweepEvery is how often the collector walks every shard even when it
// spilled nothing: records another gateway left (it stopped for good) or a
// reshard moved behind a walk's cursor are found within it.
const gcSweepEvery = 5 * time.Minute

// needWalk reports whether records may wait in the shards only, there is
// room to queue them, and it is time to look.
func (c *collector) needWalk(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pending && now.Sub(c.lastCycle) >= gcSweepEvery {
		c.pending, c.nextWalk = true, time.Time{}
	}
	return c.pending && len(c.queue) < c.max && !now.Before(c.nextWalk)
}

// pass is one round of the background loop: collect what is due, then walk
// the shards for spilled records and collect those that are due, as long
// as walks fill the queue (at most two cycles over the shards).
func (c *collector) pass(ctx context.Context) {
	c.passMu.Lock()
	defer c.passMu.Unlock()
	c.collectDue(ctx, false)
	for cycles := 0; cycles < 2 && !c.stopping() && c.needWalk(c.d.opts.Now()); {
		_, end, err := c.walk(ctx, &c.cur, false)
		if err != nil {
			c.d.log.Warn("gc: walk for spilled records", "err", err)
			return
		}
		c.collectDue(ctx, false)
		if end {
			cycles++
		}
	}
}

// walk reads GC records from cur on, queueing the due ones (all with
// force) and, while the fresh half has room, those not due yet, until the
// queue is full or the last shard of the last bucket is read (end: cur
// is back at the start). It returns how many records it read. With the
// background cursor (c.cur) it also keeps the cycle's account.
func (c *collector) walk(ctx context.Context, cur *gcCursor, force bool) (n int, end bool, err error) {
	c.walkMu.Lock()
	defer c.walkMu.Unlock()
	bg := cur == &c.cur
	if bg && *cur == (gcCursor{}) {
		c.beginCycle()
	}
	ids, err := listAll(ctx, c.d.meta.WithNamespace(nsInstances))
	if err != nil {
		return 0, false, err
	}
	sort.Strings(ids)
	for _, id := range ids[sort.SearchStrings(ids, cur.inst):] {
		if id != cur.inst {
			*cur = gcCursor{inst: id}
		}
		inst, _, err := c.d.ReadInstance(ctx, id)
		if err != nil {
			continue // deleted meanwhile
		}
		ix := c.d.indexFor(inst)
		for ; cur.shard < inst.Layout.NumShards; cur.shard, cur.after = cur.shard+1, "" {
			for {
				recs, err := ix.PendingGCAfter(ctx, cur.shard, cur.after, gcWalkPage)
				if err != nil {
					break // a retired shard: its records moved on
				}
				now := c.d.opts.Now()
				c.mu.Lock()
				full := false
				for _, r := range recs {
					if !c.offer(r, now, force, bg) {
						full = true
						break
					}
					n++
					c.read.Add(1)
					cur.after = r.Tag
				}
				c.mu.Unlock()
				if full {
					return n, false, nil
				}
				if len(recs) < gcWalkPage {
					break
				}
			}
		}
	}
	*cur = gcCursor{}
	if bg {
		c.endCycle()
	}
	return n, true, nil
}

// offer queues record r found by a walk if it is due (or force) or the
// fresh half has room; false when the queue is full and the walk must
// stop before r. c.mu is held.
func (c *collector) offer(r bucketindex.GCRecord, now time.Time, force, bg bool) bool {
	if len(r.Manifest.Runs) == 0 {
		return true
	}
	k := gcKey(r.Shard, r.Tag)
	written := r.Written
	if written.IsZero() {
		// An older writer's record: written when first seen.
		s, ok := c.firstSeen[k]
		if !ok {
			s.at = now
		}
		written = s.at
		if ok || len(c.firstSeen) < c.max {
			s.cycle = c.cycle
			c.firstSeen[k] = s
		}
	}
	it := gcItem{due: written.Add(c.d.opts.GCMinWait), shard: r.Shard, tag: r.Tag, manifest: r.Manifest}
	ok, added := c.add(it, now, force)
	switch {
	case added:
		c.spilled = max(0, c.spilled-1)
		delete(c.firstSeen, k)
	case !ok && (force || !it.due.After(now)):
		return false // due, and no room at all
	case !ok:
		if bg {
			c.cycleLeft++
			if c.cycleDue.IsZero() || it.due.Before(c.cycleDue) {
				c.cycleDue = it.due
			}
		}
	}
	return true
}

func (c *collector) beginCycle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cycle++
	c.cycleLeft, c.cycleSpill, c.cycleDue, c.cycleSpillDue = 0, 0, time.Time{}, time.Time{}
	c.cycleStart = c.d.opts.Now()
}

// endCycle takes stock after a walk over every shard: what it left behind
// and what spilled meanwhile wait in the shards. The next walk starts
// once some of it is due, and at least GCMinWait/2 after this cycle
// began, so each walk over records not due yet finds about half of them
// due: reading one more time is cheap beside a removal.
func (c *collector) endCycle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, s := range c.firstSeen {
		if s.cycle < c.cycle {
			delete(c.firstSeen, k) // collected, or moved by a reshard
		}
	}
	c.spilled = c.cycleLeft + c.cycleSpill
	c.lastCycle = c.d.opts.Now()
	if c.spilled == 0 {
		c.pending, c.nextWalk = false, time.Time{}
		return
	}
	c.pending = true
	next := c.cycleDue
	if c.cycleSpill > 0 && (next.IsZero() || c.cycleSpillDue.Before(next)) {
		next = c.cycleSpillDue
	}
	if w := c.cycleStart.Add(c.d.opts.GCMinWait / 2); c.cycleLeft > 0 && next.Before(w) {
		next = w
	}
	c.nextWalk = next
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
		c.pass(context.Background())
	}
}

// gcChunk is how many due items one round removes before their GC
// records are cleared; a stop is honoured between rounds, so shutdown never
// waits for a whole backlog.
const (
	gcChunk = 512
	// A round's removals go out in up to gcRemoveConcurrency calls of at
	// least gcRemoveMin objects each.
	gcRemoveConcurrency = 16
	gcRemoveMin         = 16
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
	// Partitioned in place: the queue is scanned every second, and a
	// fresh slice each time was most of the collector's garbage.
	nDue := 0
	for _, it := range c.queue {
		if force || !it.due.After(now) {
			nDue++
		}
	}
	due, keep := make([]gcItem, 0, nDue), c.queue[:0]
	for _, it := range c.queue {
		if force || !it.due.After(now) {
			due = append(due, it)
		} else {
			keep = append(keep, it)
		}
	}
	clear(c.queue[len(keep):]) // drop the manifests' references
	c.queue = keep
	// In flight, the items stay in c.queued (a walk meanwhile must not
	// queue them again) and count in the backlog until their records go.
	for _, it := range due {
		if it.fresh {
			c.fresh--
		}
	}
	c.inflight += len(due)
	c.mu.Unlock()
	n := 0
	for len(due) > 0 {
		select {
		case <-c.stopCh:
			// Left in their shards, for a later walk (the next start's).
			c.release(due, true)
			return n
		default:
		}
		if ctx.Err() != nil {
			c.requeue(due)
			return n
		}
		round := due[:min(gcChunk, len(due))]
		due = due[len(round):]
		c.release(round, !c.collectRound(ctx, round))
		n += len(round)
		c.collected.Add(int64(len(round)))
	}
	return n
}

// release ends items in flight: collected, or (left) back to their
// shards only.
func (c *collector) release(items []gcItem, left bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range items {
		delete(c.queued, gcKey(it.shard, it.tag))
	}
	c.inflight -= len(items)
	if left {
		c.spilled += len(items)
		c.pending = true
	}
}

// requeue puts items in flight back in the queue (a canceled collection).
func (c *collector) requeue(items []gcItem) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range items {
		if it.fresh {
			c.fresh++
		}
		c.queue = append(c.queue, it)
	}
	c.inflight -= len(items)
}

// collectRound removes the data of items and then clears their records;
// false when some records stay (a failed removal or clear).
//
// The removals of a round go to the store in OperateMany calls per data
// pool, a few side by side: the embedded store applies each as one batch
// with one WAL sync, instead of an Operate and a commit each (most of a
// collected record's CPU); RADOS runs them as concurrent ops.
// Every removal reported done is durable, so the records can go.
func (c *collector) collectRound(ctx context.Context, items []gcItem) bool {
	byPool := map[string][]objstore.WriteReq{}
	owners := map[string][]int{}
	for i, it := range items {
		for _, r := range it.manifest.Runs {
			for s := int64(0); s < r.NumStripes(); s++ {
				byPool[r.Pool] = append(byPool[r.Pool], objstore.WriteReq{OID: r.StripeOID(s), Op: objstore.NewWriteOp().Remove()})
				owners[r.Pool] = append(owners[r.Pool], i)
			}
		}
	}
	failed := make([]bool, len(items))
	for pool, reqs := range byPool {
		io, err := c.d.dataIO(ctx, pool)
		if err != nil {
			c.d.log.Warn("gc: remove data objects", "pool", pool, "err", err)
			for _, i := range owners[pool] {
				failed[i] = true
			}
			continue
		}
		// Side by side in slices: a removal reads the object's keys first,
		// and replaced data is cold (on disk, not cached), so one call
		// reading them one after another waited on the disk for each: ~460
		// records/s in the 30M aging (stop 37). The calls' syncs
		// group-commit.
		per := max(gcRemoveMin, (len(reqs)+gcRemoveConcurrency-1)/gcRemoveConcurrency)
		var wg sync.WaitGroup
		for from := 0; from < len(reqs); from += per {
			batch := reqs[from:min(from+per, len(reqs))]
			wg.Add(1)
			go func() {
				defer wg.Done()
				objstore.OperateMany(ctx, io, batch)
			}()
		}
		wg.Wait()
		logged := false
		for j, r := range reqs {
			if r.Err == nil || errors.Is(r.Err, objstore.ErrNotFound) {
				continue
			}
			failed[owners[pool][j]] = true
			if !logged { // one line per pool: a failing store fails them all
				c.d.log.Warn("gc: remove data object", "pool", pool, "oid", r.OID, "err", r.Err)
				logged = true
			}
		}
	}
	c.d.failpoint("gc-after-remove")
	// Keep the records of failed removals: a later walk tries again.
	cleared := true
	byShard := map[string][]string{}
	for i, it := range items {
		if failed[i] {
			cleared = false
			continue
		}
		byShard[it.shard] = append(byShard[it.shard], it.tag)
	}
	// Each shard's clear is a synced index write. One after another they
	// held collection to ~500 records/s on a 1,021-shard bucket under load
	// (a round of 512 items touches ~400 shards; docs/bench/scale.md, stop
	// 36); side by side their syncs group-commit (RADOS: concurrent ops).
	var wg sync.WaitGroup
	var clearFailed atomic.Bool
	sem := make(chan struct{}, gcClearConcurrency)
	for shard, tags := range byShard {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := bucketindex.GCDone(ctx, c.d.index, shard, tags...)
			if err != nil && !errors.Is(err, objstore.ErrNotFound) {
				c.d.log.Warn("gc: clear records", "shard", shard, "err", err)
				clearFailed.Store(true)
			}
		}()
	}
	wg.Wait()
	return cleared && !clearFailed.Load()
}

// gcClearConcurrency bounds the shards whose GC records a round clears at
// once.
const gcClearConcurrency = 16

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

// SweepGC walks the GC records of every bucket from the start, queueing
// those due and, while there is room, those not due yet: run at start-up,
// so data replaced just before a crash is still collected. The background
// loop walks on from where it stopped. It returns how many records it read.
func (d *Driver) SweepGC(ctx context.Context) (int, error) {
	c := d.gc
	c.walkMu.Lock()
	c.cur = gcCursor{}
	c.walkMu.Unlock()
	c.mu.Lock()
	c.pending, c.nextWalk = true, time.Time{}
	c.mu.Unlock()
	n, _, err := c.walk(ctx, &c.cur, false)
	return n, err
}

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
// A record is due GCMinWait after it was written; one without a written
// time (an older gateway's) GCMinWait after the collector first saw it.
func (d *Driver) GCList(ctx context.Context, includeAll bool) ([]GCEntry, error) {
	out := []GCEntry{}
	now := d.opts.Now()
	err := d.eachGCRecord(ctx, func(inst Instance, r bucketindex.GCRecord) bool {
		due := d.gc.due(r, now)
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
	var cur gcCursor
	for {
		read, end, err := d.gc.walk(ctx, &cur, includeAll)
		if err != nil {
			return total, err
		}
		n := d.gc.collectDue(ctx, includeAll)
		total += n
		// A bounded queue takes a backlog in several passes, each walk
		// resuming where the last stopped; the end of the walk or a stop
		// ends it.
		if end || d.gc.stopping() || n == 0 && read == 0 {
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

// due is when record r is collected: when queued, as queued.
func (c *collector) due(r bucketindex.GCRecord, now time.Time) time.Time {
	k := gcKey(r.Shard, r.Tag)
	c.mu.Lock()
	defer c.mu.Unlock()
	if due := c.queued[k]; !due.IsZero() {
		return due
	}
	w := r.Written
	if w.IsZero() {
		w = now
		if s, ok := c.firstSeen[k]; ok {
			w = s.at
		}
	}
	return w.Add(c.d.opts.GCMinWait)
}

// GCRecords counts the GC records of every bucket, due or not (what gc
// list --include-all would list), by a walk over every index shard: the
// exact backlog that GCBacklog estimates.
func (d *Driver) GCRecords(ctx context.Context) (int, error) {
	n := 0
	err := d.eachGCRecord(ctx, func(Instance, bucketindex.GCRecord) bool {
		n++
		return true
	})
	return n, err
}

// GCCollected is how many records this driver's collector has removed
// since it started.
func (d *Driver) GCCollected() int64 { return d.gc.collected.Load() }

// GCBacklog is how many replaced manifests wait for collection (due or
// not yet due): benchmarks report it to show collection keeps up. Records
// spilled past the queue's bound are an estimate (see collector.spilled),
// exact after a walk over every shard.
func (d *Driver) GCBacklog() int {
	d.gc.mu.Lock()
	defer d.gc.mu.Unlock()
	return len(d.gc.queue) + d.gc.inflight + d.gc.spilled
}
