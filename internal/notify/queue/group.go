package queue

import (
	"context"
	"errors"
	"sync"
	"time"

	clsq "github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Group commit.
//
// Concurrent PUTs whose events go to one shard would each run one op on
// the shard object: one lock acquisition, one batch, one WAL sync each,
// serialised on the object's lock. Instead, commits to a shard queue up
// and a leader runs them as one op (every commit step, the pool refills
// and stale aborts together): the op is atomic, so either every event in
// it is durable or none is. When it succeeds each waiting Commit returns
// its own marker; when it fails, each falls back to the one-event path
// (with its retries and recommit), so one bad reservation (expired, say)
// costs the others a retry, never their event. An op that failed with an
// unknown outcome may have applied; the fallback then runs as a retry
// ("uncertain"), which recognises a reservation consumed by it.
//
// Leadership: one op per shard at a time. A commit that finds no op
// running leads at once; otherwise it queues. A finishing leader hands
// leadership to the oldest queued commit, which runs the next op with
// everything queued by then: nobody serves others' commits after its own
// is done. (Two ops at a time, overlapping one's WAL sync with the next's
// apply, gave smaller batches and no better rates in BenchmarkPut4K.)
const (
	groupLeaders  = 1
	groupMaxOps   = 128     // commits per op
	groupMaxBytes = 4 << 20 // record bytes per op
)

// groupReq is one Commit waiting in a shard's group.
type groupReq struct {
	r    *Reservation
	data []byte
	wake chan struct{} // signalled once: done, or lead
	lead bool          // set before wake: run an op starting with this one

	// Outcome, valid after done.
	marker    string
	fallback  bool // the group op failed: commit alone
	uncertain bool // ... and it may have applied
}

type group struct {
	mu      sync.Mutex
	leaders int
	waiting []*groupReq
}

// groupCommit commits data under r together with concurrent commits to
// the same shard. ok=false means the group op failed and the caller must
// commit alone; uncertain then says whether that op may have applied.
func (r *Reservation) groupCommit(ctx context.Context, p *shardPool, data []byte) (marker string, ok, uncertain bool) {
	req := &groupReq{r: r, data: data}
	g := &p.group
	g.mu.Lock()
	if g.leaders < groupLeaders {
		g.leaders++
		g.mu.Unlock()
	} else {
		req.wake = make(chan struct{}, 1)
		g.waiting = append(g.waiting, req)
		g.mu.Unlock()
		<-req.wake
		if !req.lead {
			return req.marker, !req.fallback, req.uncertain
		}
	}
	r.q.lead(ctx, r.oid, p, req)
	return req.marker, !req.fallback, req.uncertain
}

// lead runs one op for first and the commits queued behind it, then hands
// the leadership slot on.
func (q *Queues) lead(ctx context.Context, oid string, p *shardPool, first *groupReq) {
	g := &p.group
	batch := []*groupReq{first}
	size := len(first.data)
	g.mu.Lock()
	n := 0
	for n < len(g.waiting) && len(batch) < groupMaxOps && size+len(g.waiting[n].data) <= groupMaxBytes {
		size += len(g.waiting[n].data)
		batch = append(batch, g.waiting[n])
		n++
	}
	g.waiting = g.waiting[n:]
	g.mu.Unlock()

	if q.runGroup(ctx, oid, p, batch) {
		q.committed(oid)
	}
	for _, req := range batch[1:] {
		req.wake <- struct{}{}
	}

	g.mu.Lock()
	if len(g.waiting) > 0 {
		next := g.waiting[0]
		g.waiting = g.waiting[1:]
		next.lead = true
		next.wake <- struct{}{}
	} else {
		g.leaders--
	}
	g.mu.Unlock()
}

// runGroup commits batch in one op on oid and records each outcome; true
// when the op committed.
func (q *Queues) runGroup(ctx context.Context, oid string, p *shardPool, batch []*groupReq) bool {
	refill := true
	for {
		g := q.groupOp(p, batch, refill)
		ok, retry := q.groupDone(oid, p, batch, g, q.io.Operate(ctx, oid, g.op))
		if !retry {
			return ok
		}
		refill = false
	}
}

// groupOpState is one group op and what its outcome needs.
type groupOpState struct {
	op      *objstore.WriteOp
	step    clsq.BatchStep
	stale   []uint64
	refills int
	now     time.Time
}

// groupOp builds the op that commits batch on p's shard (with pool refills
// when refill is set, and stale aborts).
func (q *Queues) groupOp(p *shardPool, batch []*groupReq, refill bool) *groupOpState {
	g := &groupOpState{op: objstore.NewWriteOp(), now: q.opts.Now()}
	// One class call for the commits and refills: one header write and
	// one reservation-cache copy per op, not two per event.
	commits := make([]clsq.BatchCommit, len(batch))
	for i, req := range batch {
		commits[i] = clsq.BatchCommit{ID: req.r.id, Entries: [][]byte{req.data}}
	}
	// One replacement per consumed pooled reservation, up to the room.
	if refill {
		g.refills = min(len(batch), p.deficit(g.now, q.opts.PoolMax))
	}
	g.step = clsq.AddCommitBatch(g.op, commits, g.refills, q.opts.SlotSize, 1)
	g.stale = p.takeStale(32)
	for _, id := range g.stale {
		clsq.AddAbort(g.op, id)
	}
	return g
}

// groupDone records the outcome err of g (built by groupOp for batch on
// oid): ok when it committed; retry when it should be built again
// without refills (the shard had no room for them).
func (q *Queues) groupDone(oid string, p *shardPool, batch []*groupReq, g *groupOpState, err error) (ok, retry bool) {
	if err == nil {
		q.groupOps.Add(1)
		q.groupEvents.Add(uint64(len(batch)))
		var extra []uint64
		ids, _ := g.step.ReserveIDs()
		for _, id := range ids {
			if !p.put(pooled{id, g.now}, q.opts.PoolMax) {
				extra = append(extra, id)
			}
		}
		if len(extra) > 0 {
			go q.abortIDs(oid, extra)
		}
		if ms, err := g.step.Markers(); err == nil {
			for i, req := range batch {
				if len(ms[i]) == 1 {
					req.marker = ms[i][0]
				}
			}
		}
		return true, false
	}
	p.addStale(g.stale...)
	if errors.Is(err, objstore.ErrNoSpace) && g.refills > 0 {
		p.full(g.now.Add(noRefillPause))
		return false, true
	}
	// The op is atomic: a definite refusal applied nothing; anything
	// else (timeout, I/O) may have applied.
	definite := errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrInvalid) ||
		errors.Is(err, objstore.ErrNoSpace)
	for _, req := range batch {
		req.fallback, req.uncertain = true, !definite
	}
	if len(batch) > 1 || !definite {
		q.log.Debug("queue: group commit failed; committing one by one", "oid", oid, "events", len(batch), "err", err)
	}
	return false, false
}

// GroupStats reports how many group ops committed how many events since
// Open: events/ops is the mean batch size.
func (q *Queues) GroupStats() (ops, events uint64) {
	return q.groupOps.Load(), q.groupEvents.Load()
}

// ReserveOps reports how many reservations took a store op since Open
// (the pool had none ready).
func (q *Queues) ReserveOps() uint64 { return q.reserveOps.Load() }
