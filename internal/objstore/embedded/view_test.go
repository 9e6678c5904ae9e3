package embedded

import (
	"bytes"
	"encoding/binary"
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
	// vt.upper keeps a value's upper case in the view.
	reg.RegisterProjection("vt", "upper", func(_ string, v []byte) []byte { return bytes.ToUpper(v) })
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

// openViewStore opens a store on fs with reg's classes, and its pool p.
func openViewStore(t *testing.T, fs vfs.FS, reg *objstore.Registry) (*Store, objstore.IOContext, objstore.Viewer) {
	t.Helper()
	s, err := Open(Options{Dir: "/d", FS: fs, Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	io := mustIO(t, s, "p")
	return s, io, io.(objstore.Viewer)
}

// omapOf is an object's omap as "k=v" strings joined by spaces.
func omapOf(t *testing.T, io objstore.IOContext, oid string) string {
	t.Helper()
	op := objstore.NewReadOp()
	vs := op.GetOmapValues("", "", 0)
	if err := io.OperateRead(bg, oid, op); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range vs.Pairs {
		out = append(out, p.Key+"="+string(p.Value))
	}
	return strings.Join(out, " ")
}

// TestViewKeepsMembersOmap: every way an op changes a member's omap below
// the bound reaches the view in the same commit, and nothing else does.
func TestViewKeepsMembersOmap(t *testing.T) {
	fs := vfs.NewMem()
	reg := viewRegistry()
	s, io, v := openViewStore(t, fs, reg)
	var err error

	// Joining copies nothing; keys at or above the bound stay out.
	mustOp(t, io, "a", objstore.NewWriteOp().SetOmap(kv("old", "1")))
	mustOp(t, io, "a", objstore.NewWriteOp().SetView("V", "\xff", ""))
	mustOp(t, io, "b", objstore.NewWriteOp().Create(false).SetView("V", "\xff", ""))
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
	s, io, v = openViewStore(t, fs, reg)
	defer s.Close()
	mustOp(t, io, "b", objstore.NewWriteOp().SetOmap(kv("b2", "r")))
	wantView(t, v, "V", "a2=p", "b1=q", "b2=r")

	// Leaving and removal keep the view; writes after them do not reach it.
	mustOp(t, io, "b", objstore.NewWriteOp().SetView("", "", ""))
	mustOp(t, io, "b", objstore.NewWriteOp().SetOmap(kv("b3", "s")).RmOmapKeys("b1"))
	mustOp(t, io, "a", objstore.NewWriteOp().SetOmap(kv("a5", "t")))
	mustOp(t, io, "a", objstore.NewWriteOp().Remove())
	mustOp(t, io, "a", objstore.NewWriteOp().SetOmap(kv("a6", "u")))
	wantView(t, v, "V", "a2=p", "a5=t", "b1=q", "b2=r")

	// A batch (OperateMany) keeps views as single ops do.
	mustOp(t, io, "c", objstore.NewWriteOp().Create(false).SetView("V", "", ""))
	mustOp(t, io, "d", objstore.NewWriteOp().Create(false).SetView("W", "", ""))
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
	mustOp(t, ns, "a", objstore.NewWriteOp().SetView("V", "", "").SetOmap(kv("n", "1")))
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

// legacyMeta is m as an earlier build wrote it (meta format 2 or 3: the
// view's names in the record).
func legacyMeta(m meta) []byte {
	b := (meta{version: m.version, size: m.size, mtime: m.mtime, blob: m.blob}).encode()
	b[0] = 2
	b = append(binary.AppendUvarint(b, uint64(len(m.view))), m.view...)
	b = append(binary.AppendUvarint(b, uint64(len(m.below))), m.below...)
	if m.proj != "" {
		b[0] = 3
		b = append(binary.AppendUvarint(b, uint64(len(m.proj))), m.proj...)
	}
	return b
}

// TestViewMetaFormat: format 1 and 4 records are 33 bytes and round-trip
// (format 4's view in the v part), formats 2 and 3 as earlier builds wrote
// them still decode, and truncated or padded records are corrupt, as is a
// format 3 record with an empty projection.
func TestViewMetaFormat(t *testing.T) {
	for _, m := range []meta{
		{version: 7, size: 3, mtime: 9, blob: 0},
		{version: 7, size: 3, mtime: 9, blob: 2, view: "bucket-id", below: "\xff"},
		{version: 1, view: strings.Repeat("v", 300)},
		{version: 7, size: 3, view: "bucket-id", below: "\xff", proj: "cls.listing"},
	} {
		b := m.encode()
		if len(b) != metaLen || b[0] != map[bool]byte{false: 1, true: 4}[m.view != ""] {
			t.Fatalf("%+v: record %x", m, b)
		}
		got, err := decodeMeta(b)
		if err == nil && m.view != "" {
			if !got.viewPart {
				t.Fatalf("%+v: format 4 without its view part", m)
			}
			err = got.decodeView(m.encodeView())
			got.viewPart = false
		}
		if err != nil || got != m {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", m, got, err)
		}
		records := [][]byte{b}
		if m.view != "" {
			if got, err := decodeMeta(legacyMeta(m)); err != nil || got != m {
				t.Fatalf("an earlier build's record of %+v: %+v, %v", m, got, err)
			}
			records = append(records, legacyMeta(m))
			v := m.encodeView()
			for _, bad := range [][]byte{v[:len(v)-1], append(slices.Clone(v), 0), nil} {
				var x meta
				if x.decodeView(bad) == nil {
					t.Fatalf("corrupt view part %q of %+v decoded", bad, m)
				}
			}
		}
		for _, b := range records {
			for _, bad := range [][]byte{b[:len(b)-1], append(slices.Clone(b), 0)} {
				if _, err := decodeMeta(bad); err == nil {
					t.Fatalf("corrupt record %q of %+v decoded", bad, m)
				}
			}
		}
	}
	empty := append(legacyMeta(meta{view: "v", below: "b"}), 0)
	empty[0] = 3
	if _, err := decodeMeta(empty); err == nil {
		t.Fatal("a format 3 record with an empty projection decoded")
	}
}

// TestViewPartWrittenOnJoin: a member's meta is 33 bytes (format 4) and
// its view is written to its v part when it joins or changes views, not
// at every op; a member an earlier build recorded (format 3, the names in
// every meta) keeps its view and projection through a restart and is
// rewritten to format 4 by its next op; leaving the view or removing the
// object removes the part.
func TestViewPartWrittenOnJoin(t *testing.T) {
	fs := vfs.NewMem()
	reg := viewRegistry()
	s, io, v := openViewStore(t, fs, reg)
	raw := func(key []byte) []byte {
		t.Helper()
		b, ok, err := s.getSys(key) // any key: a point read of the store
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return nil
		}
		return b
	}
	pid := io.(*ioctx).pool.id
	mkey := func(oid string) []byte { return metaKey(pid, "", oid) }
	vkey := func(oid string) []byte { return append(objPrefix(pid, "", oid), partView) }
	exec := func(kv string, join bool) *objstore.WriteOp {
		op := objstore.NewWriteOp()
		if join {
			op.SetView("V", "\xff", "vt.upper")
		}
		op.Exec("vt", "set", []byte(kv))
		return op
	}
	// Joined by a class method's op, whose meta the store keeps cached
	// (a hot object's, as index shards are), so that later ops read
	// neither meta nor part.
	mustOp(t, io, "a", exec("a1=x", true))
	if m := raw(mkey("a")); len(m) != metaLen || m[0] != 4 {
		t.Fatalf("member's meta %x", m)
	}
	part := raw(vkey("a"))
	if want := (meta{view: "V", below: "\xff", proj: "vt.upper"}).encodeView(); !bytes.Equal(part, want) {
		t.Fatalf("view part %q, want %q", part, want)
	}
	// Ops that do not change the membership do not write the part: a
	// marker put in its place stays.
	marker := []byte("not rewritten")
	if err := s.db.Set(vkey("a"), marker, syncOpts); err != nil {
		t.Fatal(err)
	}
	mustOp(t, io, "a", exec("a2=m", false))
	mustOp(t, io, "a", exec("a3=y", true)) // joins again: unchanged
	if got := raw(vkey("a")); !bytes.Equal(got, marker) {
		t.Fatalf("the view part was rewritten: %q", got)
	}
	if err := s.db.Set(vkey("a"), part, syncOpts); err != nil {
		t.Fatal(err)
	}
	wantView(t, v, "V", "a1=X", "a2=M", "a3=Y")

	// A member as an earlier build left it: format 3, no v part.
	if err := s.db.Set(mkey("b"), legacyMeta(meta{version: 1, view: "V", below: "\xff", proj: "vt.upper"}), syncOpts); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, io, v = openViewStore(t, fs, reg)
	defer s.Close()
	// A read of a member keeps its meta, view included, for the next op:
	// a marker in its part's place goes unread.
	omapOf(t, io, "a")
	if err := s.db.Set(vkey("a"), marker, syncOpts); err != nil {
		t.Fatal(err)
	}
	mustOp(t, io, "a", exec("a5=u", false))
	if err := s.db.Set(vkey("a"), part, syncOpts); err != nil {
		t.Fatal(err)
	}
	mustOp(t, io, "b", objstore.NewWriteOp().SetOmap(kv("b1", "z")))
	mustOp(t, io, "a", objstore.NewWriteOp().SetOmap(kv("a4", "w"))) // format 4, read back from disk
	wantView(t, v, "V", "a1=X", "a2=M", "a3=Y", "a4=W", "a5=U", "b1=Z")
	if m, p := raw(mkey("b")), raw(vkey("b")); len(m) != metaLen || m[0] != 4 || !bytes.Equal(p, part) {
		t.Fatalf("an earlier build's member after a write: meta %x, view part %q", m, p)
	}
	// Leaving the view, and removing a member, remove the part.
	mustOp(t, io, "a", objstore.NewWriteOp().SetView("", "", ""))
	mustOp(t, io, "b", objstore.NewWriteOp().Remove())
	for _, oid := range []string{"a", "b"} {
		if p := raw(vkey(oid)); p != nil {
			t.Fatalf("%s: view part %q left", oid, p)
		}
	}
	if m := raw(mkey("a")); len(m) != metaLen || m[0] != 1 {
		t.Fatalf("meta after leaving %x", m)
	}
	mustOp(t, io, "a", objstore.NewWriteOp().SetOmap(kv("a6", "v")))
	wantView(t, v, "V", "a1=X", "a2=M", "a3=Y", "a4=W", "a5=U", "b1=Z")
}

// TestViewValidation: bad names and bounds, and SetView in a fresh op,
// are refused before anything applies.
func TestViewValidation(t *testing.T) {
	for _, op := range []*objstore.WriteOp{
		objstore.NewWriteOp().SetView("a\x00b", "", ""),
		objstore.NewWriteOp().SetView("v", strings.Repeat("k", objstore.MaxOmapKeyLen+1), ""),
		objstore.NewWriteOp().SetView(strings.Repeat("v", objstore.MaxObjectNameLen+1), "", ""),
	} {
		if err := objstore.ValidateWriteOp(op); objstore.Code(err) != objstore.ErrInvalid {
			t.Fatalf("%+v: %v", op.Steps[0], err)
		}
	}
	fresh := objstore.NewWriteOp().SetView("v", "", "")
	fresh.Fresh = true
	if err := objstore.ValidateWriteOp(fresh); objstore.Code(err) != objstore.ErrInvalid {
		t.Fatalf("fresh SetView: %v", err)
	}
}

// TestFormatUpgrade: a format 1 or 2 directory opens and is marked 3
// (older builds then refuse it rather than meet records they cannot
// read); a newer format is refused.
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
	for f := uint64(1); f < formatVersion; f++ {
		setFormat(f)
		s, err := Open(Options{Dir: "/d", FS: fs})
		if err != nil {
			t.Fatalf("format %d: %v", f, err)
		}
		if v, ok, err := s.getSys(sysFormat); err != nil || !ok || string(v) != string(u64(nil, formatVersion)) {
			t.Fatalf("format %d after open: %x %v %v", f, v, ok, err)
		}
		s.Close()
	}
	setFormat(formatVersion + 1)
	if s, err := Open(Options{Dir: "/d", FS: fs}); err == nil {
		s.Close()
		t.Fatal("a newer format opened")
	}
}

// TestViewProjection: a member that names a projection keeps the
// projected value in the view, through every write path, across a
// reopen (meta format 3); an unknown projection fails the join, and a
// projection without a view is invalid.
func TestViewProjection(t *testing.T) {
	fs := vfs.NewMem()
	reg := viewRegistry()
	s, io, v := openViewStore(t, fs, reg)
	var err error
	mustOp(t, io, "a", objstore.NewWriteOp().SetView("V", "", "vt.upper").SetOmap(kv("a1", "x")))
	mustOp(t, io, "b", objstore.NewWriteOp().SetView("V", "", "").SetOmap(kv("b1", "y")))
	ex := objstore.NewWriteOp()
	ex.Exec("vt", "set", []byte("a2=m"))
	mustOp(t, io, "a", ex)
	wantView(t, v, "V", "a1=X", "a2=M", "b1=y")
	if got := omapOf(t, io, "a"); got != "a1=x a2=m" {
		t.Fatalf("the member's own omap changed: %s", got)
	}
	if err := io.Operate(bg, "c", objstore.NewWriteOp().SetView("V", "", "vt.nosuch")); objstore.Code(err) != objstore.ErrNotSupported {
		t.Fatalf("unknown projection: %v", err)
	}
	if err := io.Operate(bg, "c", objstore.NewWriteOp().SetView("", "", "vt.upper")); objstore.Code(err) != objstore.ErrInvalid {
		t.Fatalf("projection without a view: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, io, v = openViewStore(t, fs, reg)
	defer s.Close()
	mustOp(t, io, "a", objstore.NewWriteOp().SetOmap(kv("a3", "z")))
	wantView(t, v, "V", "a1=X", "a2=M", "a3=Z", "b1=y")
	// A build without the projection refuses the member's writes rather
	// than fill the view with whole values.
	s.Close()
	if s, err = Open(Options{Dir: "/d", FS: fs}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	io = mustIO(t, s, "p")
	if err := io.Operate(bg, "a", objstore.NewWriteOp().SetOmap(kv("a4", "w"))); objstore.Code(err) != objstore.ErrNotSupported {
		t.Fatalf("write to a member whose projection is unknown: %v", err)
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
	mustOp(t, io, "m", objstore.NewWriteOp().SetView("V", "", "").SetOmap(kv("a", "1"), kv("b", "1"), kv("c", "1"), kv("d", "1")))
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
