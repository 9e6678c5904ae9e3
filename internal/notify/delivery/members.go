package delivery

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Membership: every gateway heartbeats into one object, one omap key per
// gateway (its Owner id) whose value is the heartbeat's expiry in decimal
// Unix nanoseconds. A member is live while its expiry is in the future.
// Members only use the live count to size their fair share, so a stale view
// costs balance for a scan interval, never correctness (leases do that).

// heartbeat records this gateway as live until now+ttl and returns the
// number of live members (at least 1: this one). Expired keys are removed
// with a guard on their value, so a member that heartbeats concurrently is
// never dropped.
func heartbeat(ctx context.Context, io objstore.IOContext, oid, owner string, now time.Time, ttl time.Duration) (int, error) {
	val := []byte(strconv.FormatInt(now.Add(ttl).UnixNano(), 10))
	if err := io.Operate(ctx, oid, objstore.NewWriteOp().Create(false).SetOmap(objstore.KV{Key: owner, Value: val})); err != nil {
		return 0, err
	}
	live := 0
	var stale []objstore.KV
	after := ""
	for {
		op := objstore.NewReadOp()
		s := op.GetOmapValues(after, "", 1000)
		if err := io.OperateRead(ctx, oid, op); err != nil {
			return 0, err
		}
		for _, kv := range s.Pairs {
			exp, err := strconv.ParseInt(string(kv.Value), 10, 64)
			if err == nil && time.Unix(0, exp).After(now) {
				live++
			} else {
				stale = append(stale, kv)
			}
			after = kv.Key
		}
		if !s.More {
			break
		}
	}
	for _, kv := range stale {
		op := objstore.NewWriteOp().OmapCmp(kv.Key, objstore.CmpEQ, kv.Value).RmOmapKeys(kv.Key)
		if err := io.Operate(ctx, oid, op); err != nil && !errors.Is(err, objstore.ErrCanceled) {
			return max(live, 1), err
		}
	}
	return max(live, 1), nil
}

// leave removes this gateway's key so the others grow their share at once.
func leave(ctx context.Context, io objstore.IOContext, oid, owner string) error {
	err := io.Operate(ctx, oid, objstore.NewWriteOp().AssertExists().RmOmapKeys(owner))
	if errors.Is(err, objstore.ErrNotFound) {
		return nil
	}
	return err
}
