package embedded

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func viewRegistry() *objstore.Registry {
	reg := objstore.NewRegistry()
	// vt.set "k=v" sets one omap key from a class method; vt.fail does the
	// same and then fails the op.
	set := func(ctx objstore.MethodContext, in []byte) ([]byte, error) {
		k, v, _ := strings.Cut(string(in), "=")
		return nil, ctx.SetOmap(objstore.KV{Key: k, Value: []byte(v)})
	}
	reg.Register("vt", "set", objstore.MethodWrite, set)
	reg.Register("vt", "fail", objstore.MethodWrite, func(ctx objstore.MethodContext, in []byte) ([]byte, error) {
		if _, err := set(ctx, in); err != nil {
			return nil, err
		}
		return nil, objstore.Errorf(objstore.ErrCanceled, "vt.fail")
	})
	return reg
}

// viewDump is the view's whole content as "k=v" strings, checking that a
// paged read (every start-after, page sizes 1..3) agrees with it.
func viewDump(t *testing.T, v objstore.Viewer, name string) []string {
	t.Helper()
	kvs, more, err := v.ReadView(bg, name, "", "", 0)
	if err != nil || more {
		t.Fatalf("ReadView(%q): more %v, %v", name, more, err)
	}
	var out []string
	for _, kv := range kvs {
		out = append(out, kv.Key+"="+string(kv.Value))
	}
	for page := 1; page <= 3; page++ {
		var paged []string
		after := ""
		for {
			kvs, more, err := v.ReadView(bg, name, after, "", page)
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range kvs {
				paged = append(paged, kv.Key+"="+string(kv.Value))
				after = kv.Key
			}
			if !more {
				break
			}
		}
		if !slices.Equal(paged, out) {
			t.Fatalf("view %q read %d at a time: %v, whole: %v", name, page, paged, out)
		}
	}
	return out
}

func wantView(t *testing.T, v objstore.Viewer, name string, want ...string) {
	t.Helper()
	if got := viewDump(t, v, name); !slices.Equal(got, want) {
		t.Fatalf("view %q = %v, want %v", name, got, want)
	}
}

func kv(k, v string) objstore.KV { return objstore.KV{Key: k, Value: []byte(v)} }

// TestViewKeepsMembersOmap: every way an op changes a member's omap below
// the bound reaches the view in the same commit, and nothing else does.
func TestViewKeepsMembersOmap(t *testing.T) {
	fs := vfs.NewMem()
	reg := viewRegistry()
	s, err := Open(Options{Dir: "/d", FS: fs, Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	io := mustIO(t, s, "p")
	v := io.(objstore.Viewer)

	// Joining copies nothing; keys at or above the bound stay out.
	mustOp(t, io, "a", objstore.NewWriteOp().SetOmap(kv("old", "1")))
	mustOp(t, io, "a", objstore.NewWriteOp().SetView("V", "\xff"))
	mustOp(t, io, "b", objstore.NewWriteOp().Create(false).SetView("V", "\xff"))
	mustOp(t, io, "a", objstore.NewWriteOp().SetOmap(kv("a1", "x"), kv("a3", "y"), kv("\xffspecial", "z")))
	mustOp(t, io, "b", objstore.NewWriteOp().SetOmap(kv("a2", "p"), kv("b1", "q")))
	ex := objstore.NewWriteOp()
	ex.Exec("vt", "set", []byte("a4=m"))
	mustOp(t, io, "a", ex)
	wantView(t, v, "V", "a1=x", "a2=p", "a3=y", "a4=m", "b1=q")

	// Prefix and start-after.
	kvs, more, err := v.ReadView(bg, "V", "a2", "a", 2)
	if err != nil || more || len(kvs) != 2 || kvs[0].Key != "a3" || kvs[1].Key != "a4" {
		t.Fatalf("ReadView(after a2, prefix a, 2) = %v more %v, %v", kvs, more, err)
	}
	if kvs, more, err = v.ReadView(bg, "V", "", "a", 3); err != nil || !more || len(kvs) != 3 || kvs[2].Key != "a3" {
		t.Fatalf("ReadView(prefix a, 3) = %v more %v, %v", kvs, more, err)
	}

	// A failed op (class error, failed guard after a write) changes nothing.
	ex = objstore.NewWriteOp()
	ex.Exec("vt", "fail", []byte("zz=1"))
	if err := io.Operate(bg, "a", ex); objstore.Code(err) != objstore.ErrCanceled {
		t.Fatalf("vt.fail: %v", err)
	}
	op := objstore.NewWriteOp().SetOmap(kv("a1", "changed")).AssertVersion(1)
	if err := io.Operate(bg, "a", op); err == nil {
		t.Fatal("a guard that cannot hold passed")
	}
	wantView(t, v, "V", "a1=x", "a2=p", "a3=y", "a4=m", "b1=q")

	// Removal of a member's keys: one key, a range (b's a2 inside the
	// range stays), the whole omap.
	mustOp(t, io, "a", objstore.NewWriteOp().RmOmapKeys("a4", "nosuch"))
	mustOp(t, io, "a", objstore.NewWriteOp().OmapRmRange("a1", "a3"))
	wantView(t, v, "V", "a2=p", "a3=y", "b1=q")
	mustOp(t, io, "a", objstore.NewWriteOp().SetOmap(kv("c", "1")))
	mustOp(t, io, "a", objstore.NewWriteOp().OmapClear())
	wantView(t, v, "V", "a2=p", "b1=q")

	// Membership is persistent (meta format 2) and survives a reopen.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(Options{Dir: "/d", FS: fs, Classes: reg}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	io = mustIO(t, s, "p")
	v = io.(objstore.Viewer)
	mustOp(t, io, "b", objstore.NewWriteOp().SetOmap(kv("b2", "r")))
	wantView(t, v, "V", "a2=p", "b1=q", "b2=r")

	// Leaving and removal keep the view; writes after them do not reach it.
	mustOp(t, io, "b", objstore.NewWriteOp().SetView("", ""))
	mustOp(t, io, "b", objstore.NewWriteOp().SetOmap(kv("b3", "s")).RmOmapKeys("b1"))
	mustOp(t, io, "a", objstore.NewWriteOp().SetOmap(kv("a5", "t")))
	mustOp(t, io, "a", objstore.NewWriteOp().Remove())
	mustOp(t, io, "a", objstore.NewWriteOp().SetOmap(kv("a6", "u")))
	wantView(t, v, "V", "a2=p", "a5=t", "b1=q", "b2=r")

	// A batch (OperateMany) keeps views as single ops do.
	mustOp(t, io, "c", objstore.NewWriteOp().Create(false).SetView("V", ""))
	mustOp(t, io, "d", objstore.NewWriteOp().Create(false).SetView("W", ""))
	reqs := []objstore.WriteReq{
		{OID: "c", Op: objstore.NewWriteOp().SetOmap(kv("c1", "1"), kv("\xffc", "2"))},
		{OID: "d", Op: objstore.NewWriteOp().SetOmap(kv("d1", "3"))},
	}
	objstore.OperateMany(bg, io, reqs)
	for _, r := range reqs {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	wantView(t, v, "V", "a2=p", "a5=t", "b1=q", "b2=r", "c1=1", "\xffc=2")
	wantView(t, v, "W", "d1=3")

	// Views of another namespace, and removal.
	ns := io.WithNamespace("other")
	mustOp(t, ns, "a", objstore.NewWriteOp().SetView("V", "").SetOmap(kv("n", "1")))
	wantView(t, ns.(objstore.Viewer), "V", "n=1")
	if err := v.RemoveView(bg, "V"); err != nil {
		t.Fatal(err)
	}
	wantView(t, v, "V")
	wantView(t, v, "W", "d1=3")
	wantView(t, ns.(objstore.Viewer), "V", "n=1")
	if err := s.DeletePool(bg, "p"); err != nil {
		t.Fatal(err)
	}
	it, err := s.db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	for it.SeekGE([]byte{kView}); it.Valid() && it.Key()[0] == kView; it.Next() {
		t.Errorf("view key %q left after the pool's deletion", it.Key())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := v.ReadView(bg, "", "", "", 0); objstore.Code(err) != objstore.ErrInvalid {
		t.Fatalf("empty view name: %v", err)
	}
}

// TestViewMetaFormat: format 2 round-trips, format 1 is unchanged, and
// truncated or padded records are corrupt.
func TestViewMetaFormat(t *testing.T) {
	for _, m := range []meta{
		{version: 7, size: 3, mtime: 9, blob: 0},
		{version: 7, size: 3, mtime: 9, blob: 2, view: "bucket-id", below: "\xff"},
		{version: 1, view: strings.Repeat("v", 300)},
	} {
		b := m.encode()
		if m.view == "" && len(b) != metaLen {
			t.Fatalf("format 1 record of %d bytes", len(b))
		}
		got, err := decodeMeta(b)
		if err != nil || got != m {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", m, got, err)
		}
		for _, bad := range [][]byte{b[:len(b)-1], append(slices.Clone(b), 0)} {
			if _, err := decodeMeta(bad); err == nil {
				t.Fatalf("corrupt record %q of %+v decoded", bad, m)
			}
		}
	}
}

// TestViewValidation: bad names and bounds, and SetView in a fresh op,
// are refused before anything applies.
func TestViewValidation(t *testing.T) {
	for _, op := range []*objstore.WriteOp{
		objstore.NewWriteOp().SetView("a\x00b", ""),
		objstore.NewWriteOp().SetView("v", strings.Repeat("k", objstore.MaxOmapKeyLen+1)),
		objstore.NewWriteOp().SetView(strings.Repeat("v", objstore.MaxObjectNameLen+1), ""),
	} {
		if err := objstore.ValidateWriteOp(op); objstore.Code(err) != objstore.ErrInvalid {
			t.Fatalf("%+v: %v", op.Steps[0], err)
		}
	}
	fresh := objstore.NewWriteOp().SetView("v", "")
	fresh.Fresh = true
	if err := objstore.ValidateWriteOp(fresh); objstore.Code(err) != objstore.ErrInvalid {
		t.Fatalf("fresh SetView: %v", err)
	}
}

// TestFormatUpgrade: a format 1 directory opens and is marked 2 (older
// builds then refuse it rather than meet view records); a newer format is
// refused.
func TestFormatUpgrade(t *testing.T) {
	fs := vfs.NewMem()
	setFormat := func(f uint64) {
		s, err := Open(Options{Dir: "/d", FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.db.Set(sysFormat, u64(nil, f), syncOpts); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	setFormat(1)
	s, err := Open(Options{Dir: "/d", FS: fs})
	if err != nil {
		t.Fatalf("format 1: %v", err)
	}
	if v, ok, err := s.getSys(sysFormat); err != nil || !ok || string(v) != string(u64(nil, formatVersion)) {
		t.Fatalf("format after open: %x %v %v", v, ok, err)
	}
	s.Close()
	setFormat(formatVersion + 1)
	if s, err := Open(Options{Dir: "/d", FS: fs}); err == nil {
		s.Close()
		t.Fatal("a newer format opened")
	}
}

// TestViewReadWaitsForViewWrites: a view read waits for the sync of an
// in-flight write that set or removed view keys in the range its page
// covers, and not for any other: a write without view keys (a GC batch,
// a reshard's copy), one to another view, or one to keys past a
// truncated page (PUTs elsewhere in the bucket), which held listings up
// under load.
func TestViewReadWaitsForViewWrites(t *testing.T) {
	s := openMem(t, nil)
	io := mustIO(t, s, "p")
	v := io.(objstore.Viewer)
	mustOp(t, io, "m", objstore.NewWriteOp().SetView("V", "").SetOmap(kv("a", "1"), kv("b", "1"), kv("c", "1"), kv("d", "1")))
	key := func(view, k string) []byte {
		return append(viewPrefix(io.(*ioctx).pool.id, "", view), k...)
	}
	inflight := func(keys ...[]byte) *ticket {
		tk := newTicket()
		for _, k := range keys {
			tk.views.add(k)
		}
		s.registerInflight(tk)
		return tk
	}
	// blocks reports whether a read waits (for the 50 ms it is given);
	// returns, that it does not (it has 10 s: a loaded machine is slow,
	// and a wait for an unsynced write never ends).
	read := func(startAfter string, max int, give time.Duration) bool {
		done := make(chan struct{})
		go func() {
			v.ReadView(bg, "V", startAfter, "", max)
			close(done)
		}()
		select {
		case <-done:
			return true
		case <-time.After(give):
			return false
		}
	}
	blocks := func(startAfter string, max int) bool { return !read(startAfter, max, 50*time.Millisecond) }
	returns := func(startAfter string, max int) bool { return read(startAfter, max, 10*time.Second) }
	noView := inflight()
	other := inflight(key("W", "a"))
	past := inflight(key("V", "c"), key("V", "d")) // after a page of 2
	if !returns("", 2) {
		t.Fatal("a page of a, b waited for writes outside it")
	}
	in := inflight(key("V", "b"))
	if !blocks("", 2) || !blocks("a", 1) {
		t.Fatal("a page holding b returned before b's write synced")
	}
	if !blocks("b", 0) {
		t.Fatal("a page of c, d returned before their write synced")
	}
	for _, tk := range []*ticket{noView, other, past, in} {
		s.finishInflight(tk, nil)
	}
	if !returns("", 0) {
		t.Fatal("a read waited with nothing in flight")
	}
}

// TestKeySpan: spans meet a half-open range as closed intervals do.
func TestKeySpan(t *testing.T) {
	var s keySpan
	if s.meets(nil, nil) {
		t.Fatal("an empty span meets everything")
	}
	s.add([]byte("m"))
	s.add([]byte("c"))
	var o keySpan
	o.add([]byte("x"))
	s.union(o)
	for _, c := range []struct {
		lo, hi string
		want   bool
	}{{"a", "c", false}, {"a", "c\x00", true}, {"c", "d", true}, {"n", "o", true}, {"x", "", true}, {"x\x00", "", false}, {"y", "z", false}} {
		var hi []byte
		if c.hi != "" {
			hi = []byte(c.hi)
		}
		if got := s.meets([]byte(c.lo), hi); got != c.want {
			t.Errorf("[%q, %q): %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
}
