package version

import (
	"errors"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/internal/clsfake"
	"github.com/cairn-s3/cairn/internal/objstore"
)

func TestVersion(t *testing.T) {
	reg := objstore.NewRegistry()
	Register(reg)
	s := clsfake.New(reg, time.Unix(1, 0))
	read := func() Version {
		c := &clsfake.Call{Class: ClassName, Method: MethodRead}
		if err := s.Exec("o", c); err != nil {
			t.Fatal(err)
		}
		v, err := decodeVersion(c.Out)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if err := s.Exec("o", &clsfake.Call{Class: ClassName, Method: MethodRead}); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("read of missing object: %v", err)
	}
	inc := &clsfake.Call{Class: ClassName, Method: MethodInc, In: encodeChecks(nil)}
	if err := s.Exec("o", inc); err != nil {
		t.Fatal(err)
	}
	v := read()
	if v.Ver != 1 || v.Tag == "" {
		t.Fatalf("after inc: %+v", v)
	}
	chk := func(cs ...Check) error {
		return s.Exec("o", &clsfake.Call{Class: ClassName, Method: MethodCheck, In: encodeChecks(cs)})
	}
	for _, c := range []struct {
		c  Check
		ok bool
	}{
		{Check{CondEQ, Version{Ver: 1}}, true},
		{Check{CondEQ, Version{Ver: 2}}, false},
		{Check{CondGT, Version{Ver: 0}}, true},
		{Check{CondGE, Version{Ver: 2}}, false},
		{Check{CondLT, Version{Ver: 2}}, true},
		{Check{CondLE, Version{Ver: 0}}, false},
		{Check{CondTagEQ, Version{Tag: v.Tag}}, true},
		{Check{CondTagNE, Version{Tag: v.Tag}}, false},
	} {
		err := chk(c.c)
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, objstore.ErrCanceled)) {
			t.Errorf("%+v: %v", c.c, err)
		}
	}
	if err := chk(Check{Cond: 99}); !errors.Is(err, objstore.ErrInvalid) {
		t.Fatalf("bad cond: %v", err)
	}
	// A conditional inc that fails changes nothing.
	bad := &clsfake.Call{Class: ClassName, Method: MethodInc, In: encodeChecks([]Check{{CondEQ, Version{Ver: 7}}})}
	if err := s.Exec("o", bad); !errors.Is(err, objstore.ErrCanceled) {
		t.Fatal(err)
	}
	if read().Ver != 1 {
		t.Fatal("failed inc changed the version")
	}
	if err := s.Exec("o", &clsfake.Call{Class: ClassName, Method: MethodSet, In: encodeVersion(Version{Ver: 40, Tag: "x"})}); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec("o", inc); err != nil {
		t.Fatal(err)
	}
	if got, _ := decodeVersion(inc.Out); got != (Version{41, "x"}) || read() != got {
		t.Fatalf("inc after set: %+v", got)
	}
}
