package lock

import (
	"errors"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Register adds the lock class's methods to reg.
func Register(reg *objstore.Registry) {
	reg.Register(ClassName, MethodLock, objstore.MethodRead|objstore.MethodWrite, lockMethod)
	reg.Register(ClassName, MethodUnlock, objstore.MethodRead|objstore.MethodWrite, unlockMethod)
	reg.Register(ClassName, MethodBreakLock, objstore.MethodRead|objstore.MethodWrite, breakMethod)
	reg.Register(ClassName, MethodGetInfo, objstore.MethodRead, getInfoMethod)
	reg.Register(ClassName, MethodListLocks, objstore.MethodRead, listMethod)
	reg.Register(ClassName, MethodAssertLocked, objstore.MethodRead, assertMethod)
}

// readLock returns the lock's live state: lockers whose hold lapsed at or
// before now are dropped, as cls_lock does on every read.
func readLock(ctx objstore.MethodContext, name string) (Info, error) {
	if !ctx.Exists() {
		return Info{}, nil
	}
	b, err := ctx.GetXattr(XattrPrefix + name)
	if errors.Is(err, objstore.ErrNotFound) {
		return Info{}, nil
	}
	if err != nil {
		return Info{}, err
	}
	in, err := decodeInfo(b)
	if err != nil {
		return Info{}, err
	}
	now := ctx.Now()
	live := in.Lockers[:0]
	for _, l := range in.Lockers {
		if l.Expiration.IsZero() || now.Before(l.Expiration) {
			live = append(live, l)
		}
	}
	in.Lockers = live
	if len(live) == 0 {
		in.Type, in.Tag = 0, ""
	}
	return in, nil
}

func writeLock(ctx objstore.MethodContext, name string, in Info) error {
	if len(in.Lockers) == 0 {
		return ctx.RmXattr(XattrPrefix + name)
	}
	return ctx.SetXattr(XattrPrefix+name, encodeInfo(in))
}

func find(in Info, cookie string) int {
	for i, l := range in.Lockers {
		if l.Cookie == cookie {
			return i
		}
	}
	return -1
}

func checkName(name string) error {
	if name == "" {
		return objstore.Errorf(objstore.ErrInvalid, "lock: empty name")
	}
	return nil
}

// lockMethod errors: ErrInvalid (bad input), ErrExists (cookie already holds
// it and no renew flag), ErrNotFound (MustRenew and not held), ErrBusy (held
// by others in a conflicting way: exclusive, other type, other tag).
func lockMethod(ctx objstore.MethodContext, b []byte) ([]byte, error) {
	o, err := decodeLock(b)
	if err != nil {
		return nil, err
	}
	if err := checkName(o.Name); err != nil {
		return nil, err
	}
	if !o.Type.valid() {
		return nil, objstore.Errorf(objstore.ErrInvalid, "lock %q: bad type %d", o.Name, o.Type)
	}
	in, err := readLock(ctx, o.Name)
	if err != nil {
		return nil, err
	}
	var exp time.Time
	if o.Duration > 0 {
		exp = ctx.Now().Add(o.Duration)
	}
	if i := find(in, o.Cookie); i >= 0 {
		if !o.Renew && !o.MustRenew {
			return nil, objstore.Errorf(objstore.ErrExists, "lock %q: cookie already holds it", o.Name)
		}
		if in.Type != o.Type {
			return nil, objstore.Errorf(objstore.ErrBusy, "lock %q: held as %s", o.Name, in.Type)
		}
		in.Lockers[i].Expiration = exp
		in.Lockers[i].Description = o.Description
		in.Lockers[i].Locker = o.Locker
	} else {
		if o.MustRenew {
			return nil, objstore.Errorf(objstore.ErrNotFound, "lock %q: not held by this cookie", o.Name)
		}
		if len(in.Lockers) > 0 {
			if in.Type == Exclusive || o.Type == Exclusive {
				return nil, objstore.Errorf(objstore.ErrBusy, "lock %q: held %s by %q", o.Name, in.Type, in.Lockers[0].Locker)
			}
			if in.Tag != o.Tag {
				return nil, objstore.Errorf(objstore.ErrBusy, "lock %q: held with another tag", o.Name)
			}
		}
		in.Type, in.Tag = o.Type, o.Tag
		in.Lockers = append(in.Lockers, Locker{Locker: o.Locker, Cookie: o.Cookie, Description: o.Description, Expiration: exp})
	}
	// Locking creates the object, as cls_lock does.
	if err := ctx.Create(false); err != nil {
		return nil, err
	}
	return nil, writeLock(ctx, o.Name, in)
}

// unlockMethod: ErrNotFound unless the cookie holds the lock (a lapsed hold
// no longer counts).
func unlockMethod(ctx objstore.MethodContext, b []byte) ([]byte, error) {
	n, err := decodeName(b)
	if err != nil {
		return nil, err
	}
	return nil, remove(ctx, n, false)
}

// breakMethod: as unlock, but the locker name must match too.
func breakMethod(ctx objstore.MethodContext, b []byte) ([]byte, error) {
	n, err := decodeName(b)
	if err != nil {
		return nil, err
	}
	return nil, remove(ctx, n, true)
}

func remove(ctx objstore.MethodContext, n nameIn, matchLocker bool) error {
	if err := checkName(n.name); err != nil {
		return err
	}
	in, err := readLock(ctx, n.name)
	if err != nil {
		return err
	}
	i := find(in, n.cookie)
	if i < 0 || (matchLocker && in.Lockers[i].Locker != n.locker) {
		return objstore.Errorf(objstore.ErrNotFound, "lock %q: not held by locker %q cookie %q", n.name, n.locker, n.cookie)
	}
	in.Lockers = append(in.Lockers[:i], in.Lockers[i+1:]...)
	return writeLock(ctx, n.name, in)
}

func getInfoMethod(ctx objstore.MethodContext, b []byte) ([]byte, error) {
	n, err := decodeName(b)
	if err != nil {
		return nil, err
	}
	if err := checkName(n.name); err != nil {
		return nil, err
	}
	if !ctx.Exists() {
		return nil, objstore.Errorf(objstore.ErrNotFound, "lock %q: no object", n.name)
	}
	in, err := readLock(ctx, n.name)
	if err != nil {
		return nil, err
	}
	return encodeInfo(in), nil
}

func listMethod(ctx objstore.MethodContext, _ []byte) ([]byte, error) {
	if !ctx.Exists() {
		return nil, objstore.Errorf(objstore.ErrNotFound, "list_locks: no object")
	}
	xs, err := ctx.GetXattrs()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, kv := range xs {
		if name, ok := strings.CutPrefix(kv.Key, XattrPrefix); ok {
			if in, err := readLock(ctx, name); err == nil && len(in.Lockers) > 0 {
				names = append(names, name)
			}
		}
	}
	return encodeNames(names), nil
}

// assertMethod fails with ErrCanceled (a failed guard; cls_lock returns
// EBUSY) unless cookie holds the lock with the given type (and tag, when
// one is given) and the hold has not lapsed.
func assertMethod(ctx objstore.MethodContext, b []byte) ([]byte, error) {
	n, err := decodeName(b)
	if err != nil {
		return nil, err
	}
	if err := checkName(n.name); err != nil {
		return nil, err
	}
	in, err := readLock(ctx, n.name)
	if err != nil {
		return nil, err
	}
	i := find(in, n.cookie)
	switch {
	case i < 0:
		return nil, objstore.Errorf(objstore.ErrCanceled, "assert_locked %q: cookie %q does not hold it", n.name, n.cookie)
	case n.typ != 0 && in.Type != n.typ:
		return nil, objstore.Errorf(objstore.ErrCanceled, "assert_locked %q: held %s, not %s", n.name, in.Type, n.typ)
	case n.tag != "" && in.Tag != n.tag:
		return nil, objstore.Errorf(objstore.ErrCanceled, "assert_locked %q: tag mismatch", n.name)
	}
	return nil, nil
}
