package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// ErrLost: a lease's holder found on renewal that it no longer holds the
// lock (it lapsed or was broken), so someone else may hold it now.
var ErrLost = errors.New("lock: lease lost")

// Lease is one holder's exclusive, expiring hold of a lock, kept alive by
// the holder calling Hold as it works (before each step that is only safe
// under the lease).
type Lease struct {
	io      objstore.IOContext
	oid     string
	o       Options
	now     func() time.Time
	renewed time.Time // local time just before the last (re)take began
}

// Take takes lock o.Name on oid exclusively for o.Duration (> 0) under a
// fresh cookie; now is the holder's clock (nil: time.Now). Errors as Lock:
// ErrBusy when someone else holds it.
func Take(ctx context.Context, io objstore.IOContext, oid string, o Options, now func() time.Time) (*Lease, error) {
	if o.Duration <= 0 {
		return nil, objstore.Errorf(objstore.ErrInvalid, "lock %q: a lease needs a duration", o.Name)
	}
	if now == nil {
		now = time.Now
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	o.Type, o.Cookie, o.Renew, o.MustRenew = Exclusive, hex.EncodeToString(b[:]), false, false
	l := &Lease{io: io, oid: oid, o: o, now: now, renewed: now()}
	if err := Lock(ctx, io, oid, o); err != nil {
		return nil, err
	}
	return l, nil
}

// Hold renews the lease once a third of its duration has passed since the
// last renewal, so between two calls less than two thirds of it may pass
// safely. ErrLost when the lock is no longer this holder's: the caller
// must stop before its next step.
func (l *Lease) Hold(ctx context.Context) error {
	t := l.now()
	if t.Sub(l.renewed) < l.o.Duration/3 {
		return nil
	}
	o := l.o
	o.MustRenew = true
	err := Lock(ctx, l.io, l.oid, o)
	if errors.Is(err, objstore.ErrNotFound) {
		return ErrLost
	}
	if err != nil {
		return err
	}
	l.renewed = t
	return nil
}

// Release drops the hold; a lapsed or broken hold is fine.
func (l *Lease) Release(ctx context.Context) error {
	err := Unlock(ctx, l.io, l.oid, l.o.Name, l.o.Cookie)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil
	}
	return err
}
