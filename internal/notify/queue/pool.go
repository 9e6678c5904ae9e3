package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	clsq "github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// The reservation protocol, and why pooling keeps it safe.
//
// RGW does, per event: reserve (one synced op on the queue object), the S3
// write, commit (a second synced op). Cairn keeps the protocol but moves
// the reserve off the request path: each gateway holds a few durable
// reservations per shard ("the pool"), made earlier by synced ops. A PUT
// takes one (no I/O), and its commit op also reserves a replacement, in
// the same atomic WriteOp. So a PUT costs one synced queue op.
//
// Why this keeps every guarantee of the two-op protocol:
//   - Room: a pooled reservation is a real, durable reservation in the
//     shard's header accounting, made before the S3 write started; the
//     commit under it cannot fail for lack of space. A shard whose room is
//     exhausted refuses new reservations, so a PUT that finds the pool
//     empty reserves synchronously and gets ErrNoSpace (503 SlowDown)
//     before writing anything.
//   - Durability: commit is unchanged (one synced op before the reply). The
//     replenishing reserve rides in that op; if it fails (ErrNoSpace) the
//     op is retried without it, so it never costs the commit.
//   - Crashes: a crashed gateway's pooled reservations are ordinary stale
//     reservations; the expiry job drops them after ReservationTTL, as it
//     does in-flight ones. They hold SlotSize bytes each, at most PoolMax
//     per shard per gateway.
//   - Expiry race: the pool hands out only reservations younger than
//     ReservationTTL/4, so a PUT has at least 3/4 of the TTL to commit.
//     Older ones are aborted in a later commit op or by RunExpiry.
//   - Abort: a failed PUT's untouched reservation goes back to the pool
//     (it is exactly as good as before); Close aborts the whole pool.
//
// Commit retries: an op that fails with an unknown outcome (timeout, I/O)
// is retried with the same reservation id. If the retry finds the id gone
// and the reservation is young enough that expiry cannot explain it, the
// first attempt committed: done, no duplicate. Only when the id is gone
// and old enough to have expired does Commit reserve afresh and commit
// again, which can duplicate the event (same bytes, same eventId) if the
// earlier attempt had in fact applied. Events are never lost for a
// Commit that returned nil.

// Reservation is room reserved on one shard for one event. Commit or
// Abort it exactly once; Abort after Commit is a no-op.
type Reservation struct {
	q       *Queues
	oid     string
	shard   int
	id      uint64
	bytes   uint64
	created time.Time // gateway time just before the reserving op: >= true age
	state   atomic.Int32
	// resumed: made by another process (Resume); its commit may have
	// happened already, so Commit treats the first attempt as a retry.
	resumed bool
}

const (
	stOpen int32 = iota
	stBusy
	stDone
)

// OID is the shard object; Shard its index; Bytes the reserved room; ID
// the class's reservation id; Created the gateway time it was made at
// (what Resume needs).
func (r *Reservation) OID() string        { return r.oid }
func (r *Reservation) Shard() int         { return r.shard }
func (r *Reservation) Bytes() uint64      { return r.bytes }
func (r *Reservation) ID() uint64         { return r.id }
func (r *Reservation) Created() time.Time { return r.created }

// Resume returns a handle on reservation id of shard oid made by an
// earlier process (one that crashed between its write and its commit).
// Commit under it treats its first attempt as a retry: a reservation that
// is gone while too young to have expired was consumed by the earlier
// process's commit, and nothing is committed twice; one that is gone and
// old enough to have expired is committed afresh (a possible duplicate,
// never a loss). Abort aborts it on the shard (never into the pool).
func (q *Queues) Resume(oid string, id, bytes uint64, created time.Time) *Reservation {
	_, shard, _ := ParseShardOID(oid)
	return &Reservation{q: q, oid: oid, shard: shard, id: id, bytes: bytes, created: created, resumed: true}
}

type pooled struct {
	id      uint64
	created time.Time
}

type shardPool struct {
	oid           string
	mu            sync.Mutex
	free          []pooled // oldest first
	stale         []uint64 // too old to hand out; abort when convenient
	noRefillUntil time.Time

	group group    // commits waiting to share an op (group.go)
	later deferred // deferred commits, under Queues.later.mu (deferred.go)
}

// noRefillPause is how long a shard that refused a pool refill gets no
// further refill attempts.
const noRefillPause = time.Second

func (q *Queues) pool(oid string) *shardPool {
	q.pmu.Lock()
	defer q.pmu.Unlock()
	p := q.pools[oid]
	if p == nil {
		p = &shardPool{oid: oid}
		q.pools[oid] = p
	}
	return p
}

func (q *Queues) dropPools(oids []string) {
	q.pmu.Lock()
	defer q.pmu.Unlock()
	for _, oid := range oids {
		delete(q.pools, oid)
	}
}

func (q *Queues) maxPoolAge() time.Duration { return q.opts.ReservationTTL / 4 }

// take pops the oldest reservation still young enough to hand out.
func (p *shardPool) take(now time.Time, maxAge time.Duration) (pooled, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.free) > 0 {
		r := p.free[0]
		p.free = p.free[1:]
		if now.Sub(r.created) < maxAge {
			return r, true
		}
		p.stale = append(p.stale, r.id)
	}
	return pooled{}, false
}

func (p *shardPool) put(r pooled, max int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) >= max {
		return false
	}
	// Keep oldest first; returned reservations are usually the oldest.
	i := len(p.free)
	for i > 0 && p.free[i-1].created.After(r.created) {
		i--
	}
	p.free = append(p.free, pooled{})
	copy(p.free[i+1:], p.free[i:])
	p.free[i] = r
	return true
}

func (p *shardPool) wantRefill(now time.Time, max int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max > 0 && len(p.free) < max && !now.Before(p.noRefillUntil)
}

// deficit is how many reservations the pool lacks (0 while refills pause).
func (p *shardPool) deficit(now time.Time, limit int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if limit <= 0 || now.Before(p.noRefillUntil) {
		return 0
	}
	return max(limit-len(p.free), 0)
}

func (p *shardPool) full(until time.Time) {
	p.mu.Lock()
	p.noRefillUntil = until
	p.mu.Unlock()
}

func (p *shardPool) addStale(ids ...uint64) {
	if len(ids) == 0 {
		return
	}
	p.mu.Lock()
	p.stale = append(p.stale, ids...)
	p.mu.Unlock()
}

func (p *shardPool) takeStale(n int) []uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.stale) < n {
		n = len(p.stale)
	}
	out := append([]uint64(nil), p.stale[:n]...)
	p.stale = p.stale[n:]
	return out
}

// drain removes every pooled and stale id.
func (p *shardPool) drain() []uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.stale
	for _, r := range p.free {
		out = append(out, r.id)
	}
	p.free, p.stale = nil, nil
	return out
}

// age out moves reservations past maxAge to the stale list.
func (p *shardPool) ageOut(now time.Time, maxAge time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.free) > 0 && now.Sub(p.free[0].created) >= maxAge {
		p.stale = append(p.stale, p.free[0].id)
		p.free = p.free[1:]
	}
}

// Reserve reserves bytes on shard of queue name for one event. Up to
// SlotSize it comes from the pool when possible (no I/O). Errors:
// objstore.ErrNoSpace when the shard is full (map it to 503 SlowDown),
// ErrQueueGone when the shard does not exist.
func (q *Queues) Reserve(ctx context.Context, name string, shard int, bytes uint64) (*Reservation, error) {
	oid := ShardOID(name, shard)
	r := &Reservation{q: q, oid: oid, shard: shard}
	slot := q.opts.SlotSize
	p := q.pool(oid)
	now := q.opts.Now()
	if bytes <= slot && q.opts.PoolMax > 0 {
		if pr, ok := p.take(now, q.maxPoolAge()); ok {
			r.id, r.bytes, r.created = pr.id, slot, pr.created
			return r, nil
		}
	}
	want := bytes
	extra := 0
	if bytes <= slot {
		want = slot
		if p.wantRefill(now, q.opts.PoolMax) {
			extra = 3 // fill the pool in the same op
		}
	}
	for {
		op := objstore.NewWriteOp()
		var ids func() ([]uint64, error)
		if want == slot {
			// One call for the slot and the pool's: one reservation block.
			s := clsq.AddCommitBatch(op, nil, 1+extra, slot, 1)
			ids = s.ReserveIDs
		} else {
			s := clsq.AddReserve(op, want, 1)
			ids = func() ([]uint64, error) { id, err := s.ID(); return []uint64{id}, err }
		}
		q.reserveOps.Add(1)
		err := q.io.Operate(ctx, oid, op)
		if errors.Is(err, objstore.ErrNoSpace) && extra > 0 {
			p.full(now.Add(noRefillPause))
			extra = 0
			continue
		}
		if errors.Is(err, objstore.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s: %v", ErrQueueGone, oid, err)
		}
		if err != nil {
			return nil, fmt.Errorf("queue: reserve %d bytes on %s: %w", want, oid, err)
		}
		got, err := ids()
		if err != nil || len(got) == 0 {
			return nil, fmt.Errorf("queue: reserve on %s: %d ids, %v", oid, len(got), err)
		}
		r.id, r.bytes, r.created = got[0], want, now
		for _, id := range got[1:] {
			if !p.put(pooled{id, now}, q.opts.PoolMax) {
				p.addStale(id) // lost a race to fill the pool; abort later
			}
		}
		return r, nil
	}
}

// commitTimeout bounds Commit's retries: the object is already written, so
// Commit tries hard, but a client must get an answer.
const commitTimeout = 30 * time.Second

var commitBackoff = []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond, time.Second}

// Commit stores data under the reservation, durably, and returns the
// entry's marker ("" when a retried attempt is known to have committed
// without reporting its marker). It ignores ctx's cancellation (the S3
// write it follows is already visible) but not its values. Errors:
// ErrQueueGone when the shard was removed (the topic was deleted; the
// event has nowhere to go), objstore.ErrNoSpace when the reservation had
// expired and the shard is now full; anything else after retries.
//
// The commit is always a synced write, even when ctx defers syncs
// (objstore.WithDeferredSync, bucket logging's journal mode): on the
// embedded store its sync makes every earlier write of the request durable
// with it (one ordered WAL), and no reader (the delivery) sees the entry
// before that sync. So an event is never delivered, nor kept after a
// crash, without the write it reports. (A deferred commit would also be
// the group op of every request queued behind it.)
func (r *Reservation) Commit(ctx context.Context, data []byte) (string, error) {
	if !r.state.CompareAndSwap(stOpen, stBusy) {
		return "", errors.New("queue: reservation already committed or aborted")
	}
	defer r.state.Store(stDone)
	ctx = objstore.WithDeferredSync(ctx, nil)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	q := r.q
	p := q.pool(r.oid)
	if m, err, ok := r.commitBehindDeferred(p, data); ok {
		return m, err
	}
	if uint64(len(data)) > r.bytes {
		return r.recommit(ctx, data)
	}
	uncertain := r.resumed
	if r.resumed {
		// Alone: a consumed id must not fail a shared op.
	} else if m, ok, unc := r.groupCommit(ctx, p, data); ok {
		return m, nil
	} else if unc {
		// The shared op may have applied: retry as a retry.
		uncertain = true
		sleep(ctx, commitBackoff[0])
	}
	return r.commitAlone(ctx, data, uncertain)
}

// commitAlone is Commit's one-event path with its retries; uncertain says
// an earlier attempt may have applied.
func (r *Reservation) commitAlone(ctx context.Context, data []byte, uncertain bool) (string, error) {
	q := r.q
	p := q.pool(r.oid)
	refill := true
	for attempt := 0; ; attempt++ {
		now := q.opts.Now()
		op := objstore.NewWriteOp()
		cs := clsq.AddCommit(op, r.id, data)
		var rs *clsq.ReserveStep
		if refill && p.wantRefill(now, q.opts.PoolMax) {
			s := clsq.AddReserve(op, q.opts.SlotSize, 1)
			rs = &s
		}
		stale := p.takeStale(32)
		for _, id := range stale {
			clsq.AddAbort(op, id)
		}
		err := q.io.Operate(ctx, r.oid, op)
		if err == nil {
			q.committed(r.oid)
			if rs != nil {
				if id, err := rs.ID(); err == nil && !p.put(pooled{id, now}, q.opts.PoolMax) {
					go q.abortIDs(r.oid, []uint64{id})
				}
			}
			ms, err := cs.Markers()
			if err != nil || len(ms) != 1 {
				return "", nil // committed; the marker is informational
			}
			return ms[0], nil
		}
		// The op failed as a whole: stale ids are still outstanding.
		p.addStale(stale...)
		switch {
		case errors.Is(err, objstore.ErrNoSpace) && rs != nil:
			p.full(now.Add(noRefillPause))
			refill = false
			attempt--
			continue
		case errors.Is(err, objstore.ErrInvalid):
			return r.recommit(ctx, data)
		case errors.Is(err, objstore.ErrNotFound):
			if uncertain && q.opts.Now().Sub(r.created) < q.opts.ReservationTTL/2 {
				// Too young to have expired: our earlier attempt committed.
				return "", nil
			}
			return r.recommit(ctx, data)
		}
		if attempt >= len(commitBackoff) || ctx.Err() != nil {
			return "", fmt.Errorf("queue: commit on %s: %w", r.oid, err)
		}
		uncertain = true
		q.log.Warn("queue: commit failed, retrying", "oid", r.oid, "attempt", attempt+1, "err", err)
		sleep(ctx, commitBackoff[attempt])
	}
}

// recommit replaces the reservation by a fresh one of the exact size and
// commits under it: for data larger than reserved, or a reservation that
// expired. The old id is aborted in the same op (a no-op if it is gone).
func (r *Reservation) recommit(ctx context.Context, data []byte) (string, error) {
	q := r.q
	now := q.opts.Now()
	op := objstore.NewWriteOp()
	clsq.AddAbort(op, r.id)
	rs := clsq.AddReserve(op, uint64(len(data)), 1)
	if err := q.io.Operate(ctx, r.oid, op); err != nil {
		if errors.Is(err, objstore.ErrNotFound) {
			return "", fmt.Errorf("%w: %s", ErrQueueGone, r.oid)
		}
		return "", fmt.Errorf("queue: re-reserve on %s: %w", r.oid, err)
	}
	id, err := rs.ID()
	if err != nil {
		return "", err
	}
	r.id, r.bytes, r.created = id, uint64(len(data)), now
	q.log.Info("queue: committing under a fresh reservation", "oid", r.oid)
	uncertain := false
	for attempt := 0; ; attempt++ {
		op := objstore.NewWriteOp()
		cs := clsq.AddCommit(op, id, data)
		err := q.io.Operate(ctx, r.oid, op)
		if err == nil {
			q.committed(r.oid)
			ms, _ := cs.Markers()
			if len(ms) == 1 {
				return ms[0], nil
			}
			return "", nil
		}
		if errors.Is(err, objstore.ErrNotFound) && uncertain {
			return "", nil // a young reservation only disappears by our commit
		}
		if errors.Is(err, objstore.ErrNotFound) || attempt >= len(commitBackoff) || ctx.Err() != nil {
			return "", fmt.Errorf("queue: commit on %s: %w", r.oid, err)
		}
		uncertain = true
		sleep(ctx, commitBackoff[attempt])
	}
}

// Abort releases the reservation. Idempotent, and a no-op after Commit.
// An untouched pool-sized reservation goes back to the pool (no I/O);
// others are aborted on the shard, errors logged (expiry is the backstop).
func (r *Reservation) Abort(ctx context.Context) {
	if !r.state.CompareAndSwap(stOpen, stDone) {
		return
	}
	q := r.q
	if !r.resumed && r.bytes == q.opts.SlotSize && q.opts.PoolMax > 0 && q.opts.Now().Sub(r.created) < q.maxPoolAge() {
		if q.pool(r.oid).put(pooled{r.id, r.created}, q.opts.PoolMax) {
			return
		}
	}
	if err := clsq.Abort(context.WithoutCancel(ctx), q.io, r.oid, r.id); err != nil && !errors.Is(err, objstore.ErrNotFound) {
		q.log.Warn("queue: abort failed; the reservation will expire", "oid", r.oid, "id", r.id, "err", err)
	}
}

func (q *Queues) abortIDs(oid string, ids []uint64) {
	for len(ids) > 0 {
		n := min(len(ids), 512)
		op := objstore.NewWriteOp()
		for _, id := range ids[:n] {
			clsq.AddAbort(op, id)
		}
		ids = ids[n:]
		err := q.io.Operate(context.Background(), oid, op)
		if err != nil && !errors.Is(err, objstore.ErrNotFound) {
			q.log.Warn("queue: abort of pooled reservations failed; they will expire", "oid", oid, "err", err)
		}
	}
}

// Pooled reports how many ready reservations this gateway holds on oid.
func (q *Queues) Pooled(oid string) int {
	p := q.pool(oid)
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free) + len(p.stale)
}

// ReleasePool aborts every pooled reservation on every shard (shutdown, or
// tests that check accounting).
func (q *Queues) ReleasePool(ctx context.Context) {
	q.pmu.Lock()
	pools := make(map[string]*shardPool, len(q.pools))
	for k, v := range q.pools {
		pools[k] = v
	}
	q.pmu.Unlock()
	for oid, p := range pools {
		if ids := p.drain(); len(ids) > 0 {
			q.abortIDs(oid, ids)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
