package queue

import (
	"context"
	"errors"
	"time"

	clsq "github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// ExpireReservations drops, on every shard of every registered queue,
// reservations older than ReservationTTL (left by crashed gateways or
// lost aborts), and aborts this gateway's pooled reservations that grew
// too old to hand out. It returns how many were dropped. Every gateway
// may run it; it is idempotent.
func (q *Queues) ExpireReservations(ctx context.Context) (int, error) {
	q.tidyPools(ctx)
	total := 0
	err := q.ForEach(ctx, func(in Info) error {
		for _, oid := range ShardOIDs(in.Name, in.Shards) {
			n, err := clsq.ExpireReservations(ctx, q.io, oid, q.opts.ReservationTTL)
			if err != nil && !errors.Is(err, objstore.ErrNotFound) {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				q.log.Warn("queue: expiring reservations failed", "oid", oid, "err", err)
				continue
			}
			if n > 0 {
				q.log.Info("queue: expired stale reservations", "oid", oid, "count", n)
			}
			total += n
		}
		return nil
	})
	return total, err
}

func (q *Queues) tidyPools(ctx context.Context) {
	now := q.opts.Now()
	q.pmu.Lock()
	pools := make(map[string]*shardPool, len(q.pools))
	for k, v := range q.pools {
		pools[k] = v
	}
	q.pmu.Unlock()
	for oid, p := range pools {
		p.ageOut(now, q.maxPoolAge())
		if ids := p.takeStale(1 << 20); len(ids) > 0 {
			q.abortIDs(oid, ids)
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// RunExpiry calls ExpireReservations every ExpiryInterval until ctx is
// done (RGW: every 30 s, reservations older than 120 s).
func (q *Queues) RunExpiry(ctx context.Context) {
	t := time.NewTicker(q.opts.ExpiryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := q.ExpireReservations(ctx); err != nil && ctx.Err() == nil {
				q.log.Warn("queue: expiry pass failed", "err", err)
			}
		}
	}
}
