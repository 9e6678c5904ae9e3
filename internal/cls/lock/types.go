package lock

import (
	"time"

	"github.com/cairn-s3/cairn/internal/cls/internal/wire"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// ClassName is the name the class is registered under.
const ClassName = "lock"

// Method names.
const (
	MethodLock         = "lock"
	MethodUnlock       = "unlock"
	MethodBreakLock    = "break_lock"
	MethodGetInfo      = "get_info"
	MethodListLocks    = "list_locks"
	MethodAssertLocked = "assert_locked"
)

// XattrPrefix starts the xattr holding lock <name>: "lock.<name>".
const XattrPrefix = "lock."

// Type is the lock type (ClsLockType).
type Type uint8

const (
	Exclusive Type = 1 // LOCK_EXCLUSIVE
	Shared    Type = 2 // LOCK_SHARED
)

func (t Type) valid() bool { return t == Exclusive || t == Shared }

func (t Type) String() string {
	switch t {
	case Exclusive:
		return "exclusive"
	case Shared:
		return "shared"
	}
	return "none"
}

// Options describe a lock request (cls_lock_lock_op).
type Options struct {
	// Name of the lock; one object can carry several independent locks.
	Name string
	Type Type
	// Cookie identifies the holder: unique per holder, so that a holder
	// that restarts with a new cookie cannot renew or assert its old lease.
	Cookie string
	// Tag: every shared holder must use the same tag.
	Tag string
	// Locker names the holder for people (gateway id, host:pid); it is
	// recorded and must match in BreakLock.
	Locker      string
	Description string
	// Duration until the lock expires; 0 means never.
	Duration time.Duration
	// Renew lets a holder re-lock with its cookie to extend the lock
	// (LOCK_FLAG_MAY_RENEW); without it re-locking fails with ErrExists.
	Renew bool
	// MustRenew fails with ErrNotFound unless the cookie already holds the
	// lock (LOCK_FLAG_MUST_RENEW): a lease holder renewing detects a loss.
	MustRenew bool
}

// Locker is one holder of a lock.
type Locker struct {
	Locker      string
	Cookie      string
	Description string
	// Expiration is when the hold lapses; zero means never.
	Expiration time.Time
}

// Info is a lock's state (cls_lock_get_info_reply). A lock nobody holds has
// no lockers and Type 0.
type Info struct {
	Type    Type
	Tag     string
	Lockers []Locker
}

const (
	flagRenew     = 1
	flagMustRenew = 2
)

// lockIn v1: name, type u8, cookie, tag, locker, description, duration
// (ns, uvarint), flags u8.
func encodeLock(o Options) []byte {
	var f uint8
	if o.Renew {
		f |= flagRenew
	}
	if o.MustRenew {
		f |= flagMustRenew
	}
	return wire.NewEnc(1, 32+len(o.Name)+len(o.Cookie)+len(o.Tag)+len(o.Locker)+len(o.Description)).
		String(o.Name).U8(uint8(o.Type)).String(o.Cookie).String(o.Tag).String(o.Locker).
		String(o.Description).Uvarint(uint64(o.Duration)).U8(f).B
}

func decodeLock(b []byte) (Options, error) {
	d, _ := wire.NewDec(b, 1, "lock input")
	var o Options
	o.Name = d.String()
	o.Type = Type(d.U8())
	o.Cookie = d.String()
	o.Tag = d.String()
	o.Locker = d.String()
	o.Description = d.String()
	o.Duration = time.Duration(d.Uvarint())
	f := d.U8()
	o.Renew, o.MustRenew = f&flagRenew != 0, f&flagMustRenew != 0
	if err := d.Err(); err != nil {
		return o, err
	}
	if o.Duration < 0 {
		return o, objstore.Errorf(objstore.ErrInvalid, "lock: negative duration")
	}
	return o, nil
}

// nameIn v1 (unlock, get_info, assert_locked, break_lock): name, type u8,
// locker, cookie, tag.
type nameIn struct {
	name, locker, cookie, tag string
	typ                       Type
}

func encodeName(in nameIn) []byte {
	return wire.NewEnc(1, 8+len(in.name)+len(in.locker)+len(in.cookie)+len(in.tag)).
		String(in.name).U8(uint8(in.typ)).String(in.locker).String(in.cookie).String(in.tag).B
}

func decodeName(b []byte) (nameIn, error) {
	d, _ := wire.NewDec(b, 1, "lock name input")
	var in nameIn
	in.name = d.String()
	in.typ = Type(d.U8())
	in.locker = d.String()
	in.cookie = d.String()
	in.tag = d.String()
	return in, d.Err()
}

// Info v1 (stored xattr and get_info output): type u8, tag, count, then per
// locker: locker, cookie, description, expiration (unix ns, zigzag varint).
func encodeInfo(in Info) []byte {
	e := wire.NewEnc(1, 16+len(in.Tag)+len(in.Lockers)*48).U8(uint8(in.Type)).String(in.Tag).
		Uvarint(uint64(len(in.Lockers)))
	for _, l := range in.Lockers {
		e.String(l.Locker).String(l.Cookie).String(l.Description).Time(l.Expiration)
	}
	return e.B
}

func decodeInfo(b []byte) (Info, error) {
	d, _ := wire.NewDec(b, 1, "lock info")
	var in Info
	in.Type = Type(d.U8())
	in.Tag = d.String()
	n := d.Count(4)
	for i := 0; i < n; i++ {
		var l Locker
		l.Locker = d.String()
		l.Cookie = d.String()
		l.Description = d.String()
		l.Expiration = d.Time()
		in.Lockers = append(in.Lockers, l)
	}
	return in, d.Err()
}

func encodeNames(names []string) []byte {
	e := wire.NewEnc(1, 16*len(names)).Uvarint(uint64(len(names)))
	for _, n := range names {
		e.String(n)
	}
	return e.B
}

func decodeNames(b []byte) ([]string, error) {
	d, _ := wire.NewDec(b, 1, "lock names")
	n := d.Count(1)
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, d.String())
	}
	return out, d.Err()
}
