package delivery

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/lock"
	"github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// errLeaseLost ends a worker whose shard op was fenced or whose renewal
// failed: another gateway may own the shard now.
var errLeaseLost = errors.New("delivery: shard lease lost")

// errShardGone ends a worker whose shard object no longer exists (topic
// deleted or made non-persistent).
var errShardGone = errors.New("delivery: shard object gone")

// lease is one exclusive hold on a shard object's LockName lock. The cookie
// is random per acquisition, so a restarted gateway (same Owner) cannot
// renew or assert the hold of its previous incarnation; with
// Config.ReclaimOwnLeases it breaks that hold instead (acquire).
type lease struct {
	io     objstore.IOContext
	oid    string
	owner  string
	cookie string
	dur    time.Duration
}

func newCookie() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// acquire takes the lease. The op asserts the object exists, because the
// lock method creates missing objects and a deleted topic's shard must stay
// deleted. Errors: ErrBusy (held by another gateway), ErrNotFound (no
// shard object), others from the store.
//
// With reclaim, a hold of owner under another cookie is taken over at
// once: the caller guarantees that owner names this gateway only, so such
// a hold is left by an earlier incarnation that died (or by one of its own
// workers that ended without unlocking). The old hold is broken and the new
// one taken in one op, guarded by the old cookie, so no other gateway can
// slip in between and the old incarnation's fenced ops fail from then on.
// prev is the cookie taken over, if any.
func acquire(ctx context.Context, io objstore.IOContext, oid, owner string, dur time.Duration, reclaim bool) (l *lease, prev string, err error) {
	l = &lease{io: io, oid: oid, owner: owner, cookie: newCookie(), dur: dur}
	op := objstore.NewWriteOp().AssertExists()
	lock.AddLock(op, l.options(false))
	err = io.Operate(ctx, oid, op)
	if err == nil {
		return l, "", nil
	}
	if !reclaim || !errors.Is(err, objstore.ErrBusy) {
		return nil, "", err
	}
	info, ierr := lock.GetInfo(ctx, io, oid, LockName)
	if ierr != nil {
		return nil, "", ierr
	}
	if len(info.Lockers) != 1 || info.Lockers[0].Locker != owner {
		return nil, "", err // another gateway's: wait for it
	}
	prev = info.Lockers[0].Cookie
	op = objstore.NewWriteOp().AssertExists()
	lock.AddBreakLock(op, LockName, owner, prev)
	lock.AddLock(op, l.options(false))
	if err := io.Operate(ctx, oid, op); err != nil {
		if errors.Is(err, objstore.ErrNotFound) {
			// The old hold lapsed or changed meanwhile (or the shard
			// went): the next scan tries again.
			return nil, "", objstore.ErrBusy
		}
		return nil, "", err
	}
	return l, prev, nil
}

// breakOwn breaks a hold of owner on oid, if there is one, so that other
// gateways can lease the shard at once. Same guarantee as acquire's
// reclaim; it reports whether it broke one.
func breakOwn(ctx context.Context, io objstore.IOContext, oid, owner string) (bool, error) {
	info, err := lock.GetInfo(ctx, io, oid, LockName)
	if err != nil {
		if errors.Is(err, objstore.ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	if len(info.Lockers) != 1 || info.Lockers[0].Locker != owner {
		return false, nil
	}
	err = lock.BreakLock(ctx, io, oid, LockName, owner, info.Lockers[0].Cookie)
	if errors.Is(err, objstore.ErrNotFound) {
		return false, nil // lapsed meanwhile
	}
	return err == nil, err
}

func (l *lease) options(renew bool) lock.Options {
	return lock.Options{Name: LockName, Type: lock.Exclusive, Cookie: l.cookie, Locker: l.owner,
		Description: "notification delivery", Duration: l.dur, MustRenew: renew}
}

// renew extends the hold. ErrNotFound (mapped to errLeaseLost) when the
// hold lapsed or was broken: someone else may own the shard.
func (l *lease) renew(ctx context.Context) error {
	op := objstore.NewWriteOp().AssertExists()
	lock.AddLock(op, l.options(true))
	err := l.io.Operate(ctx, l.oid, op)
	if errors.Is(err, objstore.ErrNotFound) {
		// MustRenew without a hold, or the object is gone: either way the
		// lease is over.
		return errLeaseLost
	}
	return err
}

// release drops the hold; a lapsed hold is fine.
func (l *lease) release(ctx context.Context) error {
	err := lock.Unlock(ctx, l.io, l.oid, LockName, l.cookie)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil
	}
	return err
}

// guard makes op fail with ErrCanceled unless this lease holds right now.
func (l *lease) guard(op lock.Execer) { lock.AssertLocked(op, LockName, l.cookie, lock.Exclusive) }

// fenced maps a guarded op's error: ErrCanceled means the lease is gone.
func fenced(err error) error {
	if errors.Is(err, objstore.ErrCanceled) {
		return errLeaseLost
	}
	return err
}

// list reads a page of entries after marker, under the lease.
func (l *lease) list(ctx context.Context, marker queue.Marker, max int) (queue.ListResult, error) {
	op := objstore.NewReadOp()
	l.guard(op)
	s := queue.AddList(op, marker, max)
	if err := l.io.OperateRead(ctx, l.oid, op); err != nil {
		if errors.Is(err, objstore.ErrNotFound) {
			return queue.ListResult{}, errShardGone
		}
		return queue.ListResult{}, fenced(err)
	}
	return s.Result()
}

// removeAndList removes markers and lists a page after marker in one
// fenced op: the removal a worker owes and the list it wants share the
// store op (and its sync) instead of costing one each.
func (l *lease) removeAndList(ctx context.Context, remove []queue.Marker, marker queue.Marker, max int) (queue.ListResult, error) {
	op := objstore.NewWriteOp()
	l.guard(op)
	if _, err := queue.AddRemoveMarkers(op, remove...); err != nil {
		return queue.ListResult{}, err
	}
	s := queue.AddList(op, marker, max)
	if err := l.io.Operate(ctx, l.oid, op); err != nil {
		if errors.Is(err, objstore.ErrNotFound) {
			return queue.ListResult{}, errShardGone
		}
		return queue.ListResult{}, fenced(err)
	}
	return s.Result()
}

// update is one entry's new delivery state.
type update struct {
	marker  queue.Marker
	retries uint32
	next    time.Time
}

// commit removes markers and stores updates in one op under the lease:
// either all apply or none. ErrNotFound from the store means the object
// or an updated entry is gone; the caller retries without updates to tell
// the two apart.
func (l *lease) commit(ctx context.Context, remove []queue.Marker, updates []update) error {
	op := objstore.NewWriteOp()
	l.guard(op)
	if len(remove) > 0 {
		if _, err := queue.AddRemoveMarkers(op, remove...); err != nil {
			return err
		}
	}
	for _, u := range updates {
		if err := queue.AddUpdate(op, u.marker, u.retries, u.next); err != nil {
			return err
		}
	}
	return fenced(l.io.Operate(ctx, l.oid, op))
}
