package queue

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Deferred commits.
//
// Group commit gathers only the commits that arrive while a shard's op
// runs. With writers spread over many shards that is one or two events
// per op (1.6 with 11 shards against 11 with one: docs/bench/notify.md),
// and each op costs about the same whatever it carries. A write whose
// event is already durable elsewhere (its link intent, stored with the
// object version by a synced index op) need not wait for the queue: it
// hands the record to CommitDeferred and answers. The committer waits up
// to Options.DeferLinger for more (or until DeferBatch wait on one shard)
// and commits a shard's records in one op: the event is durable in the intent until then,
// the intent is removed only after the commit, and a crash in between is
// resolved by the start-up intent recovery, which finds the reservation
// consumed or commits it. The op stays synced: a read waits for the sync
// of a write it sees, so delivery never pushes an entry a crash could
// take back (which recovery would then commit and push again); its sync
// is one per batch, and the WAL shares it with concurrent writes' syncs.
//
// Across shards: with writers spread over many shards (11 per topic, and
// every topic of the gateway) a shard still gets few events per linger,
// so one committer serves every shard of these Queues. When the linger
// ends it takes each waiting shard's batch and commits them all in one
// store call (objstore.OperateMany: one atomic op per shard object, each
// guarded and failing on its own; on the embedded store one batch and
// one WAL sync for all).
//
// Order: the committer takes a shard's commits in the order they were
// handed over, runs one round at a time, and a shard whose op failed
// commits its events one by one, in that order, before the next round.

// deferred is a shard's queue of deferred commits, guarded by the
// Queues' committer's mutex.
type deferred struct {
	pending []*deferReq
	inRound bool // some of its commits are in the running round
}

// committer runs the deferred commits of every shard.
type committer struct {
	mu      sync.Mutex
	waiting []*shardPool // shards with pending commits, oldest first
	since   time.Time    // when the oldest pending commit came
	armed   bool         // a round is scheduled or running
	running bool
	now     bool // the running committer goes on at once (a batch is full, a flush waits)
	timer   *time.Timer
}

// claim makes the caller the one to start runDeferred (false: a run is
// going); c.mu is held.
func (c *committer) claim() bool {
	if c.running {
		return false
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	c.running, c.armed = true, true
	return true
}

// add queues dr on p's shard; c.mu is held.
func (c *committer) add(p *shardPool, dr *deferReq) {
	if len(c.waiting) == 0 {
		c.since = time.Now()
	}
	if len(p.later.pending) == 0 {
		c.waiting = append(c.waiting, p)
	}
	p.later.pending = append(p.later.pending, dr)
}

type deferReq struct {
	r    *Reservation
	data []byte
	done func(marker string, err error)
}

// CommitDeferred commits data under r like Commit, but returns at once:
// the commit runs later, batched with other deferred commits (see above),
// and done is called with Commit's outcome from another goroutine. Use it
// only when the event is durable without the queue (a link intent). data
// is kept until done is called; the caller may reuse it from then on.
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
	c := &q.later
	c.mu.Lock()
	c.add(p, &deferReq{r: r, data: data, done: done})
	full := len(p.later.pending) >= q.opts.DeferBatch
	switch {
	case c.running:
		c.now = c.now || full
	case full:
		c.claim()
		go q.runDeferred()
	case !c.armed:
		c.armed = true
		c.timer = time.AfterFunc(q.opts.DeferLinger, q.fireDeferred)
	}
	c.mu.Unlock()
}

// fireDeferred starts the committer when the linger ends.
func (q *Queues) fireDeferred() {
	c := &q.later
	c.mu.Lock()
	if c.running {
		c.mu.Unlock()
		return
	}
	c.running = true
	c.mu.Unlock()
	q.runDeferred()
}

// commitBehindDeferred commits data through the shard's deferred queue,
// starting a round at once, when deferred commits wait or run there: a
// commit must not overtake them (a DELETE's event before its key's
// earlier PUT's). ok=false: none, commit as usual.
func (r *Reservation) commitBehindDeferred(p *shardPool, data []byte) (marker string, err error, ok bool) {
	c := &r.q.later
	c.mu.Lock()
	if len(p.later.pending) == 0 && !p.later.inRound {
		c.mu.Unlock()
		return "", nil, false
	}
	type result struct {
		m   string
		err error
	}
	ch := make(chan result, 1)
	q := r.q
	q.unfinished.add()
	c.add(p, &deferReq{r: r, data: data, done: func(m string, err error) {
		ch <- result{m, err}
		q.unfinished.done()
	}})
	start := c.claim()
	c.now = c.now || !start
	c.mu.Unlock()
	if start {
		go q.runDeferred()
	}
	res := <-ch
	return res.m, res.err, true
}

// shardBatch is one shard's part of a round.
type shardBatch struct {
	oid   string
	p     *shardPool
	batch []*deferReq
	reqs  []*groupReq // the group op's commits; nil: one by one
	g     *groupOpState
	ok    bool
}

// runDeferred commits the pending deferred commits of every shard, a
// round at a time, until none is left. Commits that came during a round
// wait for their own linger (counted from the oldest of them), unless a
// shard's batch is full or a flush waits: going on at once made rounds of
// the one or two events that came meanwhile, one op per shard each.
func (q *Queues) runDeferred() {
	c := &q.later
	var prev []*shardBatch
	for first := true; ; first = false {
		c.mu.Lock()
		for _, sb := range prev {
			sb.p.later.inRound = false
		}
		if len(c.waiting) == 0 {
			c.running, c.armed, c.timer, c.now = false, false, nil, false
			c.mu.Unlock()
			return
		}
		if !first && !c.now {
			if d := time.Until(c.since.Add(q.opts.DeferLinger)); d > 0 {
				c.running = false
				c.timer = time.AfterFunc(d, q.fireDeferred)
				c.mu.Unlock()
				return
			}
		}
		c.now = false
		round := make([]*shardBatch, 0, len(c.waiting))
		keep := c.waiting[:0]
		for _, p := range c.waiting {
			d := &p.later
			n := min(len(d.pending), groupMaxOps)
			round = append(round, &shardBatch{oid: p.oid, p: p, batch: d.pending[:n:n]})
			d.pending = d.pending[n:]
			d.inRound = true
			if len(d.pending) > 0 {
				keep = append(keep, p)
			}
		}
		clear(c.waiting[len(keep):])
		c.waiting = keep
		// Shards with more than one op's worth left go on at once.
		c.now = len(keep) > 0
		c.mu.Unlock()
		q.commitRound(round)
		prev = round
	}
}

// commitRound commits each shard's batch in one group op, all shards' ops
// in one store call; a shard whose op failed, or that has commits which
// need their own op, commits one by one.
func (q *Queues) commitRound(round []*shardBatch) {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	wreqs := make([]objstore.WriteReq, 0, len(round))
	in := make([]*shardBatch, 0, len(round))
	for _, sb := range round {
		reqs := make([]*groupReq, 0, len(sb.batch))
		var size int
		alone := false
		for _, dr := range sb.batch {
			// Oversized records take Commit's recommit path, alone.
			if uint64(len(dr.data)) > dr.r.bytes || dr.r.resumed || size+len(dr.data) > groupMaxBytes {
				alone = true
				break
			}
			size += len(dr.data)
			reqs = append(reqs, &groupReq{r: dr.r, data: dr.data})
		}
		if alone || len(reqs) == 0 {
			continue
		}
		sb.reqs = reqs
		sb.g = q.groupOp(sb.p, reqs, true)
		wreqs = append(wreqs, objstore.WriteReq{OID: sb.oid, Op: sb.g.op})
		in = append(in, sb)
	}
	objstore.OperateMany(ctx, q.io, wreqs)
	for i, sb := range in {
		ok, retry := q.groupDone(sb.oid, sb.p, sb.reqs, sb.g, wreqs[i].Err)
		if retry {
			ok = q.runGroup(ctx, sb.oid, sb.p, sb.reqs)
		}
		sb.ok = ok
	}
	var wg sync.WaitGroup
	for _, sb := range round {
		if sb.ok {
			q.committed(sb.oid)
			for i, dr := range sb.batch {
				dr.r.state.Store(stDone)
				dr.done(sb.reqs[i].marker, nil)
			}
			continue
		}
		// Shards fall back in parallel: one slow shard must not hold the
		// others' events.
		wg.Add(1)
		go func() {
			defer wg.Done()
			q.commitOneByOne(ctx, sb)
		}()
	}
	wg.Wait()
}

// commitOneByOne commits sb's events in order, one op each (its group op
// failed, or some need their own).
func (q *Queues) commitOneByOne(ctx context.Context, sb *shardBatch) {
	uncertain := len(sb.reqs) > 0 && sb.reqs[0].uncertain
	for _, dr := range sb.batch {
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

// FlushDeferred starts the waiting deferred commits now and waits until
// all handed over so far are done (shutdown), or ctx ends.
func (q *Queues) FlushDeferred(ctx context.Context) error {
	c := &q.later
	c.mu.Lock()
	start := len(c.waiting) > 0 && c.claim()
	c.now = c.now || (len(c.waiting) > 0 && !start)
	c.mu.Unlock()
	if start {
		go q.runDeferred()
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
