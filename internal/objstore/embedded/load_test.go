package embedded

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestOmapLoad: a committed load's pairs are in the objects' omaps
// (replacing a key's value, beside keys it did not touch), durably; keys
// out of order, a missing object or a view member fail it with nothing
// loaded; an aborted load and the tables a crash left leave nothing.
func TestOmapLoad(t *testing.T) {
	fs := vfs.NewMem()
	open := func() (*Store, objstore.IOContext) {
		s, err := Open(Options{Dir: "/d", FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		return s, mustIO(t, s, "p")
	}
	s, io := open()
	mustOp(t, io, "a", objstore.NewWriteOp().Create(false))
	mustOp(t, io, "b", objstore.NewWriteOp().SetOmap(kv("x", "old"), kv("z", "keep")))
	mustOp(t, io, "v", objstore.NewWriteOp().SetView("V", "", ""))
	newLoad := func() objstore.OmapLoad {
		l, err := io.(objstore.OmapLoader).NewOmapLoad(bg)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	add := func(l objstore.OmapLoad, oid, k, v string) {
		t.Helper()
		if err := l.Add(oid, k, []byte(v)); err != nil {
			t.Fatalf("add %s %s: %v", oid, k, err)
		}
	}

	l := newLoad()
	add(l, "a", "k1", "1")
	add(l, "b", "x", "new")
	add(l, "a", "k2", "2")
	if err := l.Add("a", "k2", []byte("again")); objstore.Code(err) != objstore.ErrInvalid {
		t.Fatalf("a repeated key: %v", err)
	}
	if err := l.Add("a", "k0", []byte("back")); objstore.Code(err) != objstore.ErrInvalid {
		t.Fatalf("a key out of order: %v", err)
	}
	add(l, "b", "y", "3")
	if err := l.Commit(bg); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "k1=1 k2=2", "b": "x=new y=3 z=keep"}
	for oid, w := range want {
		if got := omapOf(t, io, oid); got != w {
			t.Fatalf("%s: omap %q, want %q", oid, got, w)
		}
	}

	for _, c := range []struct {
		oid  string
		code objstore.Errno
	}{{"missing", objstore.ErrNotFound}, {"v", objstore.ErrInvalid}} {
		l = newLoad()
		add(l, "a", "k3", "3")
		add(l, c.oid, "k", "1")
		if err := l.Commit(bg); objstore.Code(err) != c.code {
			t.Fatalf("load into %s: %v, want %v", c.oid, err, c.code)
		}
	}
	// Guards hold with the load, or nothing loads.
	mustOp(t, io, "a", objstore.NewWriteOp().SetXattr("epoch", []byte("7")))
	for _, c := range []struct {
		epoch uint64
		err   objstore.Errno
	}{{6, objstore.ErrCanceled}, {7, 0}} {
		l = newLoad()
		if err := l.Guard("a", objstore.NewReadOp().CmpXattrU64("epoch", objstore.CmpEQ, c.epoch)); err != nil {
			t.Fatal(err)
		}
		add(l, "a", "k3", fmt.Sprint(c.epoch))
		if err := l.Commit(bg); objstore.Code(err) != c.err {
			t.Fatalf("guard epoch %d: %v", c.epoch, err)
		}
	}
	want["a"] = "k1=1 k2=2 k3=7"
	read := objstore.NewReadOp()
	read.GetXattr("epoch")
	if err := newLoad().Guard("a", read); objstore.Code(err) != objstore.ErrInvalid {
		t.Fatalf("a read step as a guard: %v", err)
	}
	l = newLoad()
	add(l, "a", "k4", "4")
	l.Abort()
	if got := omapOf(t, io, "a"); got != want["a"] {
		t.Fatalf("a failed or aborted load changed a: %q", got)
	}
	if names, err := fs.List("/d/load"); err != nil || len(names) != 0 {
		t.Fatalf("load directory after commit and aborts: %v %v", names, err)
	}

	// A crash's leftovers go at the next Open; the loaded pairs stay.
	l = newLoad()
	add(l, "a", "k5", "5")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, io = open()
	defer s.Close()
	if names, err := fs.List("/d/load"); err != nil || len(names) != 0 {
		t.Fatalf("load directory after reopen: %v %v", names, err)
	}
	for oid, w := range want {
		if got := omapOf(t, io, oid); got != w {
			t.Fatalf("%s after reopen: omap %q, want %q", oid, got, w)
		}
	}
}

// TestOmapLoadDurable: a committed load's tables were synced before
// their ingest, many at a time (syncTables): a crash right after the
// commit (only synced data survives) keeps every loaded pair.
func TestOmapLoadDurable(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s, err := Open(Options{Dir: "/d", FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	io := mustIO(t, s, "p")
	const objects = 2*maxTableSyncs + 3 // more tables than concurrent syncs
	want := map[string]string{}
	l, err := io.(objstore.OmapLoader).NewOmapLoad(bg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range objects {
		oid := fmt.Sprintf("o%03d", i)
		mustOp(t, io, oid, objstore.NewWriteOp().Create(false))
		var pairs []string
		for k := range 50 {
			key, val := fmt.Sprintf("k%04d", k), strings.Repeat(fmt.Sprint(i), 100)
			if err := l.Add(oid, key, []byte(val)); err != nil {
				t.Fatal(err)
			}
			pairs = append(pairs, key+"="+val)
		}
		want[oid] = strings.Join(pairs, " ")
	}
	mustOp(t, io, "empty", objstore.NewWriteOp().Create(false))
	if err := l.Guard("empty", objstore.NewReadOp().AssertExists()); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(bg); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{}) // only what was synced
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(Options{Dir: "/d", FS: crashed})
	if err != nil {
		t.Fatalf("open after the crash: %v", err)
	}
	defer s.Close()
	io = mustIO(t, s, "p")
	for oid, w := range want {
		if got := omapOf(t, io, oid); got != w {
			t.Fatalf("%s after the crash: %d bytes of omap, want %d", oid, len(got), len(w))
		}
	}
	if names, err := crashed.List("/d/load"); err != nil || len(names) != 0 {
		t.Fatalf("load directory after the crash: %v %v", names, err)
	}
}

// TestOmapLoadLandsAtBottom: a loaded object whose keys sit between two
// other objects' keys, in the span of one table of the lowest level, is
// ingested into that level (the table is split around it), not above it:
// a reshard's targets sit between other objects' keys, and its loads
// landed in L0 half the time (stop 41), to be compacted again.
func TestOmapLoadLandsAtBottom(t *testing.T) {
	for _, split := range []bool{true, false} {
		s, err := Open(Options{Dir: t.TempDir(), NoIngestSplit: !split})
		if err != nil {
			t.Fatal(err)
		}
		io := mustIO(t, s, "p")
		for _, oid := range []string{"a", "b", "c"} {
			mustOp(t, io, oid, objstore.NewWriteOp().Create(false))
		}
		for _, oid := range []string{"a", "c"} {
			op := objstore.NewWriteOp()
			for i := range 100 {
				op.SetOmap(kv(fmt.Sprintf("k%03d", i), "v"))
			}
			mustOp(t, io, oid, op)
		}
		// Everything into the lowest level, in one table spanning a..c.
		if err := s.db.Compact(bg, []byte{0}, []byte{0xff}, true); err != nil {
			t.Fatal(err)
		}
		l, err := io.(objstore.OmapLoader).NewOmapLoad(bg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			if err := l.Add("b", fmt.Sprintf("k%03d", i), []byte("loaded")); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Commit(bg); err != nil {
			t.Fatal(err)
		}
		in := s.LSMStats().IngestedBytes
		if len(in) == 0 {
			t.Fatalf("split %v: nothing ingested", split)
		}
		bottom := in[len(in)-1] > 0
		if bottom != split {
			t.Fatalf("split %v: ingested bytes by level %v", split, in)
		}
		if got := omapOf(t, io, "b"); len(got) == 0 {
			t.Fatal("loaded omap empty")
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// The file cache: the default keeps more tables open than pebble's 1,000
// where the open file limit allows (it is within 1,000..16,384), a store
// takes the option, and LSMCounters counts table lookups (a read of a
// flushed object looks its table up).
func TestFileCacheCounters(t *testing.T) {
	if n := DefaultMaxOpenFiles(); n < 1000 || n > 16384 {
		t.Fatalf("DefaultMaxOpenFiles %d outside 1000..16384", n)
	}
	if fileLimit() >= 4000 && DefaultMaxOpenFiles() < 2000 {
		t.Fatalf("open file limit %d, default %d: not half of it", fileLimit(), DefaultMaxOpenFiles())
	}
	s, err := Open(Options{Dir: t.TempDir(), MaxOpenFiles: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.po.MaxOpenFiles != 200 {
		t.Fatalf("pebble MaxOpenFiles %d, want 200", s.po.MaxOpenFiles)
	}
	io := mustIO(t, s, "p")
	mustOp(t, io, "a", objstore.NewWriteOp().Create(false).SetOmap(kv("k", "v")))
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	c0 := s.LSMCounters()
	op := objstore.NewReadOp()
	om := op.GetOmapValues("", "", 10)
	if err := io.OperateRead(bg, "a", op); err != nil || len(om.Pairs) != 1 {
		t.Fatalf("read: %v, %d pairs", err, len(om.Pairs))
	}
	c1 := s.LSMCounters()
	if n := (c1.FileCacheHits + c1.FileCacheMisses) - (c0.FileCacheHits + c0.FileCacheMisses); n <= 0 {
		t.Fatalf("a read of a flushed object made %d file cache lookups", n)
	}
}

// TestOmapLoadWriterMemory: a load staging 2,048 index-like pairs into
// each of many objects holds well under 96 KiB of live heap per object
// (its open table writer; ~200 KiB before loadWriterOptions, 53 after),
// and the tables it ingests keep the store's bloom filter, read through
// its policy, with a one-level index.
func TestOmapLoadWriterMemory(t *testing.T) {
	s := openDisk(t, nil)
	io := mustIO(t, s, "p")
	const objs, keys = 300, 2048
	for i := range objs {
		mustOp(t, io, fmt.Sprintf("shard.%d", i), objstore.NewWriteOp().Create(false))
	}
	l, err := io.(objstore.OmapLoader).NewOmapLoad(bg)
	if err != nil {
		t.Fatal(err)
	}
	live := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	before := live()
	val := bytes.Repeat([]byte("v"), 300)
	for k := range keys {
		for i := range objs {
			if err := l.Add(fmt.Sprintf("shard.%d", i), fmt.Sprintf("photos/2026/%08d/%03d.jpg", k, i), val); err != nil {
				t.Fatal(err)
			}
		}
	}
	per := (int64(live()) - int64(before)) / objs
	t.Logf("live heap per open writer: %d KiB", per>>10)
	if per > 96<<10 {
		t.Fatalf("a load holds %d KiB per object it fills, want < 96", per>>10)
	}
	if err := l.Commit(bg); err != nil {
		t.Fatal(err)
	}
	levels, err := s.db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	tables := 0
	for _, lv := range levels {
		for _, tb := range lv {
			tables++
			p := tb.Properties
			if p.FilterPolicyName != bloom.FilterPolicy(10).Name() || p.FilterSize == 0 || p.IndexPartitions != 0 || p.NumEntries != keys {
				t.Fatalf("table %v: filter %q (%d bytes), %d index partitions, %d entries", tb.FileNum, p.FilterPolicyName, p.FilterSize, p.IndexPartitions, p.NumEntries)
			}
		}
	}
	if tables != objs {
		t.Fatalf("%d tables, want %d", tables, objs)
	}
	if got := omapOf(t, io, "shard.7"); !strings.HasPrefix(got, "photos/2026/00000000/007.jpg=") {
		t.Fatalf("shard.7's omap starts %.60q", got)
	}
}
