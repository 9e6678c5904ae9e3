package lock

import (
	"errors"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/internal/clsfake"
	"github.com/cairn-s3/cairn/internal/objstore"
)

func newFake() *clsfake.Store {
	reg := objstore.NewRegistry()
	Register(reg)
	return clsfake.New(reg, time.Unix(1000, 0))
}

func lockCall(o Options) *clsfake.Call {
	return &clsfake.Call{Class: ClassName, Method: MethodLock, In: encodeLock(o)}
}

func nameCall(m string, n nameIn) *clsfake.Call {
	return &clsfake.Call{Class: ClassName, Method: m, In: encodeName(n)}
}

func info(t *testing.T, s *clsfake.Store, name string) Info {
	t.Helper()
	c := nameCall(MethodGetInfo, nameIn{name: name})
	if err := s.Exec("o", c); err != nil {
		t.Fatal(err)
	}
	in, err := decodeInfo(c.Out)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func is(t *testing.T, err, want error) {
	t.Helper()
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

func TestExclusive(t *testing.T) {
	s := newFake()
	a := Options{Name: "l", Type: Exclusive, Cookie: "a", Locker: "gw1", Duration: 10 * time.Second}
	is(t, s.Exec("o", lockCall(a)), nil)
	is(t, s.Exec("o", lockCall(a)), objstore.ErrExists)
	b := a
	b.Cookie, b.Locker = "b", "gw2"
	is(t, s.Exec("o", lockCall(b)), objstore.ErrBusy)
	bs := b
	bs.Type = Shared
	is(t, s.Exec("o", lockCall(bs)), objstore.ErrBusy)
	is(t, s.Exec("o", nameCall(MethodAssertLocked, nameIn{name: "l", cookie: "a", typ: Exclusive})), nil)
	is(t, s.Exec("o", nameCall(MethodAssertLocked, nameIn{name: "l", cookie: "a", typ: Shared})), objstore.ErrCanceled)
	is(t, s.Exec("o", nameCall(MethodAssertLocked, nameIn{name: "l", cookie: "b"})), objstore.ErrCanceled)

	// Renew extends from now.
	s.Advance(8 * time.Second)
	ar := a
	ar.Renew = true
	is(t, s.Exec("o", lockCall(ar)), nil)
	s.Advance(8 * time.Second)
	is(t, s.Exec("o", nameCall(MethodAssertLocked, nameIn{name: "l", cookie: "a"})), nil)
	if in := info(t, s, "l"); len(in.Lockers) != 1 || !in.Lockers[0].Expiration.Equal(time.Unix(1018, 0)) || in.Type != Exclusive {
		t.Fatalf("info %+v", in)
	}
	// Lapsed: assert fails, another cookie may lock, the old one cannot renew with MustRenew.
	s.Advance(2 * time.Second)
	is(t, s.Exec("o", nameCall(MethodAssertLocked, nameIn{name: "l", cookie: "a"})), objstore.ErrCanceled)
	if in := info(t, s, "l"); len(in.Lockers) != 0 || in.Type != 0 {
		t.Fatalf("lapsed lock still listed: %+v", in)
	}
	is(t, s.Exec("o", lockCall(b)), nil)
	am := a
	am.MustRenew = true
	is(t, s.Exec("o", lockCall(am)), objstore.ErrNotFound)
	is(t, s.Exec("o", nameCall(MethodUnlock, nameIn{name: "l", cookie: "a"})), objstore.ErrNotFound)
	is(t, s.Exec("o", nameCall(MethodBreakLock, nameIn{name: "l", locker: "gw1", cookie: "b"})), objstore.ErrNotFound)
	is(t, s.Exec("o", nameCall(MethodBreakLock, nameIn{name: "l", locker: "gw2", cookie: "b"})), nil)
	if _, ok := s.Objs["o"].Xattrs[XattrPrefix+"l"]; ok {
		t.Fatal("free lock left its xattr")
	}
}

func TestSharedAndForever(t *testing.T) {
	s := newFake()
	a := Options{Name: "l", Type: Shared, Cookie: "a", Tag: "t"}
	b := Options{Name: "l", Type: Shared, Cookie: "b", Tag: "t"}
	c := Options{Name: "l", Type: Shared, Cookie: "c", Tag: "other"}
	is(t, s.Exec("o", lockCall(a)), nil)
	is(t, s.Exec("o", lockCall(b)), nil)
	is(t, s.Exec("o", lockCall(c)), objstore.ErrBusy)
	x := Options{Name: "l", Type: Exclusive, Cookie: "x"}
	is(t, s.Exec("o", lockCall(x)), objstore.ErrBusy)
	s.Advance(1000 * time.Hour)
	if in := info(t, s, "l"); len(in.Lockers) != 2 || in.Tag != "t" || in.Type != Shared {
		t.Fatalf("info %+v", in)
	}
	is(t, s.Exec("o", nameCall(MethodUnlock, nameIn{name: "l", cookie: "a"})), nil)
	is(t, s.Exec("o", nameCall(MethodAssertLocked, nameIn{name: "l", cookie: "b", typ: Shared})), nil)
	// A second lock name is independent.
	is(t, s.Exec("o", lockCall(Options{Name: "m", Type: Exclusive, Cookie: "a"})), nil)
	lc := &clsfake.Call{Class: ClassName, Method: MethodListLocks}
	is(t, s.Exec("o", lc), nil)
	if n, _ := decodeNames(lc.Out); len(n) != 2 || n[0] != "l" || n[1] != "m" {
		t.Fatalf("list_locks %q", n)
	}
}

func TestFencing(t *testing.T) {
	s := newFake()
	is(t, s.Exec("o", lockCall(Options{Name: "l", Type: Exclusive, Cookie: "a", Duration: time.Second})), nil)
	s.Advance(2 * time.Second)
	is(t, s.Exec("o", lockCall(Options{Name: "l", Type: Exclusive, Cookie: "b", Duration: time.Minute})), nil)
	// The stale holder's guarded op (assert + unlock of the new holder) changes nothing.
	before := info(t, s, "l")
	err := s.Exec("o",
		nameCall(MethodAssertLocked, nameIn{name: "l", cookie: "a"}),
		nameCall(MethodUnlock, nameIn{name: "l", cookie: "b"}))
	is(t, err, objstore.ErrCanceled)
	if after := info(t, s, "l"); len(after.Lockers) != 1 || after.Lockers[0].Cookie != before.Lockers[0].Cookie {
		t.Fatalf("fenced op changed state: %+v", after)
	}
}

func TestBadInput(t *testing.T) {
	s := newFake()
	is(t, s.Exec("o", lockCall(Options{Type: Exclusive})), objstore.ErrInvalid)
	is(t, s.Exec("o", lockCall(Options{Name: "l", Type: 9})), objstore.ErrInvalid)
	is(t, s.Exec("o", &clsfake.Call{Class: ClassName, Method: MethodLock, In: []byte{1, 200}}), objstore.ErrInvalid)
}
