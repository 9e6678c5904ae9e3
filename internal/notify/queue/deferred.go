package queue

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Deferred commits.
//
// Group commit gathers only the commits that arrive while a shard's op
// runs. With writers spread over many shards that is one or two events
// per op (1.6 with 11 shards against 11 with one: docs/bench/notify.md),
// and each op costs about the same whatever it carries. A write whose
// event is already durable elsewhere (its link intent, stored with the
// object version by a synced index op) need not wait for the queue: it
// hands the record to CommitDeferred and answers. The shard's committer
// waits up to Options.DeferLinger for more (or DeferBatch of them) and
// commits them in one op: the event is durable in the intent until then,
// the intent is removed only after the commit, and a crash in between is
// resolved by the start-up intent recovery, which finds the reservation
// consumed or commits it. The op stays synced: a read waits for the sync
// of a write it sees, so delivery never pushes an entry a crash could
// take back (which recovery would then commit and push again); its sync
// is one per batch, and the WAL shares it with concurrent writes' syncs.
//
// Order: one committer per shard, taking commits in the order they were
// handed over; a failed op falls back to committing its events one by
// one, in that order, before the next batch.

// deferred is a shard's queue of deferred commits.
type deferred struct {
	mu      sync.Mutex
	pending []*deferReq
	armed   bool // a flush is scheduled or running
	running bool
	timer   *time.Timer
}

// claim makes the caller the one to start runDeferred (false: a run is
// going); d.mu is held.
func (d *deferred) claim() bool {
	if d.running {
		return false
	}
	if d.timer != nil {
		d.timer.Stop()
	}
	d.running, d.armed = true, true
	return true
}

type deferReq struct {
	r    *Reservation
	data []byte
	done func(marker string, err error)
}

// CommitDeferred commits data under r like Commit, but returns at once:
// the commit runs later, batched with other deferred commits of the shard
// (see above), and done is called with Commit's outcome from another
// goroutine. Use it only when the event is durable without the queue (a
// link intent). data is kept until done is called; the caller may reuse
// it from then on.
func (r *Reservation) CommitDeferred(data []byte, done func(marker string, err error)) {
	if !r.state.CompareAndSwap(stOpen, stBusy) {
		done("", errors.New("queue: reservation already committed or aborted"))
		return
	}
	q := r.q
	q.unfinished.add()
	inner := done
	done = func(m string, err error) { inner(m, err); q.unfinished.done() }
	p := q.pool(r.oid)
	d := &p.later
	d.mu.Lock()
	d.pending = append(d.pending, &deferReq{r: r, data: data, done: done})
	switch {
	case d.running:
	case len(d.pending) >= q.opts.DeferBatch:
		if d.timer != nil {
			d.timer.Stop()
		}
		d.running, d.armed = true, true
		go q.runDeferred(r.oid, p)
	case !d.armed:
		d.armed = true
		d.timer = time.AfterFunc(q.opts.DeferLinger, func() {
			d.mu.Lock()
			if d.running {
				d.mu.Unlock()
				return
			}
			d.running = true
			d.mu.Unlock()
			q.runDeferred(r.oid, p)
		})
	}
	d.mu.Unlock()
}

// commitBehindDeferred commits data through the shard's deferred queue,
// started at once, when deferred commits wait or run there: a commit must
// not overtake them (a DELETE's event before its key's earlier PUT's).
// ok=false: none, commit as usual.
func (r *Reservation) commitBehindDeferred(p *shardPool, data []byte) (marker string, err error, ok bool) {
	d := &p.later
	d.mu.Lock()
	if len(d.pending) == 0 && !d.running {
		d.mu.Unlock()
		return "", nil, false
	}
	type result struct {
		m   string
		err error
	}
	ch := make(chan result, 1)
	q := r.q
	q.unfinished.add()
	d.pending = append(d.pending, &deferReq{r: r, data: data, done: func(m string, err error) {
		ch <- result{m, err}
		q.unfinished.done()
	}})
	start := d.claim()
	d.mu.Unlock()
	if start {
		go q.runDeferred(r.oid, p)
	}
	res := <-ch
	return res.m, res.err, true
}

// runDeferred commits the shard's pending deferred commits, a batch at a
// time, until none is left.
func (q *Queues) runDeferred(oid string, p *shardPool) {
	d := &p.later
	for {
		d.mu.Lock()
		n := min(len(d.pending), groupMaxOps)
		if n == 0 {
			d.running, d.armed, d.timer = false, false, nil
			d.mu.Unlock()
			return
		}
		batch := d.pending[:n:n]
		d.pending = d.pending[n:]
		d.mu.Unlock()
		q.commitDeferred(oid, p, batch)
	}
}

func (q *Queues) commitDeferred(oid string, p *shardPool, batch []*deferReq) {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	reqs := make([]*groupReq, 0, len(batch))
	var size int
	// Oversized records take Commit's recommit path, alone.
	var alone []*deferReq
	for _, dr := range batch {
		if uint64(len(dr.data)) > dr.r.bytes || dr.r.resumed || size+len(dr.data) > groupMaxBytes {
			alone = append(alone, dr)
			continue
		}
		size += len(dr.data)
		reqs = append(reqs, &groupReq{r: dr.r, data: dr.data})
	}
	if len(alone) == 0 && len(reqs) > 0 && q.runGroup(ctx, oid, p, reqs) {
		q.committed(oid)
		for i, dr := range batch {
			dr.r.state.Store(stDone)
			dr.done(reqs[i].marker, nil)
		}
		return
	}
	// In order, one by one (the group op failed, or some need their own).
	uncertain := len(reqs) > 0 && reqs[0].uncertain
	for _, dr := range batch {
		var m string
		var err error
		if uint64(len(dr.data)) > dr.r.bytes {
			m, err = dr.r.recommit(ctx, dr.data)
		} else {
			m, err = dr.r.commitAlone(ctx, dr.data, uncertain || dr.r.resumed)
		}
		dr.r.state.Store(stDone)
		dr.done(m, err)
	}
}

// FlushDeferred starts every shard's waiting deferred commits now and
// waits until all handed over so far are done (shutdown), or ctx ends.
func (q *Queues) FlushDeferred(ctx context.Context) error {
	q.pmu.Lock()
	pools := make(map[string]*shardPool, len(q.pools))
	for k, v := range q.pools {
		pools[k] = v
	}
	q.pmu.Unlock()
	for oid, p := range pools {
		d := &p.later
		d.mu.Lock()
		start := len(d.pending) > 0 && d.claim()
		d.mu.Unlock()
		if start {
			go q.runDeferred(oid, p)
		}
	}
	return q.unfinished.wait(ctx)
}

// counter counts deferred commits not done yet; wait waits for zero.
type counter struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0; nil while nobody waits
}

func (c *counter) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *counter) done() {
	c.mu.Lock()
	if c.n--; c.n == 0 && c.zero != nil {
		close(c.zero)
		c.zero = nil
	}
	c.mu.Unlock()
}

func (c *counter) wait(ctx context.Context) error {
	c.mu.Lock()
	if c.n == 0 {
		c.mu.Unlock()
		return nil
	}
	if c.zero == nil {
		c.zero = make(chan struct{})
	}
	z := c.zero
	c.mu.Unlock()
	select {
	case <-z:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
