package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	randv2 "math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/clstest"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/objstoretest"
	"github.com/cockroachdb/pebble/v2/vfs"
)

var bg = context.Background()

func mustIO(t testing.TB, s *Store, pool string) objstore.IOContext {
	t.Helper()
	if err := s.CreatePool(bg, pool); err != nil && objstore.Code(err) != objstore.ErrExists {
		t.Fatal(err)
	}
	io, err := s.IOContext(bg, pool)
	if err != nil {
		t.Fatal(err)
	}
	return io
}

func mustOp(t testing.TB, io objstore.IOContext, oid string, op *objstore.WriteOp) {
	t.Helper()
	if err := io.Operate(bg, oid, op); err != nil {
		t.Fatalf("Operate(%q): %v", oid, err)
	}
}

func statOf(t testing.TB, io objstore.IOContext, oid string) (objstore.Stat, bool) {
	t.Helper()
	op := objstore.NewReadOp()
	s := op.Stat()
	if err := io.OperateRead(bg, oid, op); err != nil {
		t.Fatal(err)
	}
	return s.Stat, s.Exists
}

// TestClassSuite runs the object class suite (internal/cls) on this
// backend, with the conformance test classes registered alongside.
func TestClassSuite(t *testing.T) {
	clstest.Run(t, func(t *testing.T, reg *objstore.Registry, now func() time.Time) func() objstore.Store {
		objstoretest.RegisterTestClasses(reg)
		fs := vfs.NewMem()
		return func() objstore.Store {
			s, err := Open(Options{Dir: "/data", FS: fs, Classes: reg, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}

func TestOptionsValidate(t *testing.T) {
	o := Options{CacheSize: -1, MemTableSize: 10, MaxCachedObjects: -1, TargetFileSize: -1}
	err := o.Validate()
	if err == nil {
		t.Fatal("bad options validated")
	}
	for _, want := range []string{"Dir is required", "CacheSize", "MemTableSize", "MaxCachedObjects", "TargetFileSize"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not mention %s", err, want)
		}
	}
	o = Options{Dir: "x"}
	if err := o.EnsureDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
	if o.BlobThreshold != DefaultBlobThreshold || o.FS == nil || o.Now == nil || o.Logger == nil {
		t.Fatalf("defaults not filled: %+v", o)
	}
}

func TestDirLock(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "held by another process") {
		t.Fatalf("second Open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatalf("reopen after Close: %v", err)
	}
	s.Close()
}

// TestReopen: data, pools and version order survive a restart; class
// caches do not.
func TestReopen(t *testing.T) {
	fs := vfs.NewMem()
	reg := testRegistry()
	open := func() *Store {
		s, err := Open(Options{Dir: "/d", FS: fs, Classes: reg, BlobThreshold: 4096})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	io := mustIO(t, s, "p")
	big := bytes.Repeat([]byte("b"), 10000)
	mustOp(t, io, "small", objstore.NewWriteOp().WriteFull([]byte("s")).SetOmap(objstore.KV{Key: "k", Value: []byte("v")}))
	mustOp(t, io, "big", objstore.NewWriteOp().WriteFull(big))
	op := objstore.NewWriteOp()
	op.Exec(objstoretest.TestClass, "cache_set", []byte("x=1"))
	mustOp(t, io, "small", op)
	st1, _ := statOf(t, io, "small")
	mustOp(t, io, "gone", objstore.NewWriteOp().Create(true))
	mustOp(t, io, "gone", objstore.NewWriteOp().Remove())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := io.ListObjects(bg, "", 0); objstore.Code(err) != objstore.ErrInvalid {
		t.Fatalf("list on a closed store: %v", err)
	}

	s = open()
	defer s.Close()
	if pools, _ := s.ListPools(bg); len(pools) != 1 || pools[0] != "p" {
		t.Fatalf("pools after reopen: %q", pools)
	}
	io = mustIO(t, s, "p")
	rop := objstore.NewReadOp()
	d := rop.Read(0, 0)
	g := rop.Exec(objstoretest.TestClass, "cache_get", []byte("x"))
	if err := io.OperateRead(bg, "small", rop); err != nil {
		t.Fatal(err)
	}
	if string(d.Data) != "s" || string(g.Out) != "<miss>" {
		t.Fatalf("after reopen: data %q cache %q", d.Data, g.Out)
	}
	rop = objstore.NewReadOp()
	bd := rop.Read(0, 0)
	if err := io.OperateRead(bg, "big", rop); err != nil || !bytes.Equal(bd.Data, big) {
		t.Fatalf("blob after reopen: %d bytes, %v", len(bd.Data), err)
	}
	wop := objstore.NewWriteOp().Create(true)
	mustOp(t, io, "gone", wop)
	if wop.Version <= st1.Version {
		t.Fatalf("version after reopen %d not above %d", wop.Version, st1.Version)
	}
	wop = objstore.NewWriteOp().Append([]byte("x"))
	mustOp(t, io, "small", wop)
	if wop.Version <= st1.Version {
		t.Fatalf("version after reopen %d not above %d", wop.Version, st1.Version)
	}
}

func blobFiles(t *testing.T, s *Store) []string {
	t.Helper()
	names, err := s.opts.FS.List(s.blobDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, ".blob") {
			out = append(out, n)
		}
	}
	return out
}

// TestBlobPlacement: large WriteFull goes to a blob file; replacing,
// partially overwriting, removing and pool deletion leave no stray files;
// an orphan (crash before commit) is collected at Open.
func TestBlobPlacement(t *testing.T) {
	fs := vfs.NewMem()
	open := func() *Store {
		s, err := Open(Options{Dir: "/d", FS: fs, BlobThreshold: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	io := mustIO(t, s, "p")
	want := func(n int, what string) {
		t.Helper()
		if got := blobFiles(t, s); len(got) != n {
			t.Fatalf("%s: %d blob files (%q), want %d", what, len(got), got, n)
		}
	}
	mustOp(t, io, "small", objstore.NewWriteOp().WriteFull(make([]byte, 999)))
	want(0, "below threshold")
	mustOp(t, io, "a", objstore.NewWriteOp().WriteFull(make([]byte, 1000)))
	want(1, "at threshold")
	mustOp(t, io, "a", objstore.NewWriteOp().WriteFull(make([]byte, 2000)))
	want(1, "replaced")
	mustOp(t, io, "b", objstore.NewWriteOp().WriteFull(make([]byte, 2000)).WriteFull(make([]byte, 3000)))
	want(2, "two write_full in one op")
	mustOp(t, io, "b", objstore.NewWriteOp().Append([]byte("x")))
	want(1, "copy-on-write to chunks")
	if err := io.Operate(bg, "a", objstore.NewWriteOp().WriteFull(make([]byte, 5000)).AssertVersion(1)); err == nil {
		t.Fatal("guard passed")
	}
	want(1, "failed op")
	mustOp(t, io, "a", objstore.NewWriteOp().Remove())
	want(0, "removed")
	mustOp(t, io, "c", objstore.NewWriteOp().WriteFull(make([]byte, 5000)))
	mustOp(t, io.WithNamespace("n"), "d", objstore.NewWriteOp().WriteFull(make([]byte, 5000)))
	want(2, "two objects")
	if err := s.DeletePool(bg, "p"); err != nil {
		t.Fatal(err)
	}
	want(0, "pool deleted")

	// An orphan blob, as left by a crash between the blob write and the
	// commit, is collected at the next Open.
	if _, err := s.writeBlob([]byte("orphan")); err != nil {
		t.Fatal(err)
	}
	io = mustIO(t, s, "p2")
	mustOp(t, io, "kept", objstore.NewWriteOp().WriteFull(make([]byte, 5000)))
	want(2, "orphan + kept")
	s.Close()
	s = open()
	defer s.Close()
	want(1, "after reopen")
}

// TestReadWaitsForSync: a read that sees an applied write does not return
// before that write's sync.
func TestReadWaitsForSync(t *testing.T) {
	s := openMem(t, nil)
	io := mustIO(t, s, "p")
	mustOp(t, io, "o", objstore.NewWriteOp().Create(true))
	c := io.(*ioctx)
	e := s.locks.acquire(c.lockKey("o"))
	tk := newTicket()
	e.chain.Store(&pendNode{tk: tk, wide: true}) // as if an applied write were waiting for its sync
	done := make(chan struct{})
	go func() {
		op := objstore.NewReadOp()
		op.Stat()
		io.OperateRead(bg, "o", op)
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("read returned before the pending sync")
	case <-time.After(50 * time.Millisecond):
	}
	// Listing waits for every in-flight write.
	s.registerInflight(tk)
	listed := make(chan struct{})
	go func() {
		io.ListObjects(bg, "", 0)
		close(listed)
	}()
	select {
	case <-listed:
		t.Fatal("listing returned before the pending sync")
	case <-time.After(20 * time.Millisecond):
	}
	e.chain.Store(nil)
	s.finishInflight(tk, nil)
	<-done
	<-listed
	s.locks.release(e)
}

// TestCoveredReadWaitsForSync: a read answered by its chunk alone
// (readCovered) waits for the pending sync too, and returns the bytes.
func TestCoveredReadWaitsForSync(t *testing.T) {
	s := openMem(t, nil)
	io := mustIO(t, s, "p")
	mustOp(t, io, "d", objstore.NewWriteOp().WriteFull([]byte("some bytes")))
	e := s.locks.acquire(io.(*ioctx).lockKey("d"))
	defer s.locks.release(e)
	tk := newTicket()
	e.chain.Store(&pendNode{tk: tk, wide: true}) // as if an applied write were waiting for its sync
	op := objstore.NewReadOp()
	r := op.Read(5, 5)
	done := make(chan error)
	g0 := s.PointGets()
	go func() { done <- io.OperateRead(bg, "d", op) }()
	select {
	case <-done:
		t.Fatal("read returned before the pending sync")
	case <-time.After(50 * time.Millisecond):
	}
	e.chain.Store(nil)
	close(tk.done)
	if err := <-done; err != nil || string(r.Data) != "bytes" {
		t.Fatalf("read %q, %v", r.Data, err)
	}
	if got := s.PointGets() - g0; got != 1 {
		t.Fatalf("%d point reads, want 1 (the chunk)", got)
	}
}

// TestCacheOtherClass: a write by another class's method drops this
// class's cache entries (the backend cannot know what they depend on).
func TestCacheOtherClass(t *testing.T) {
	s := openMem(t, testRegistry())
	io := mustIO(t, s, "p")
	op := objstore.NewWriteOp()
	op.Exec(objstoretest.TestClass, "cache_set", []byte("s=1"))
	mustOp(t, io, "o", op.Create(false))
	op = objstore.NewWriteOp()
	op.Exec(objstoretest.TestClass, "cache_set", []byte("s=1"))
	mustOp(t, io, "o", op)
	get := func() string {
		rop := objstore.NewReadOp()
		g := rop.Exec(objstoretest.TestClass, "cache_get", []byte("s"))
		if err := io.OperateRead(bg, "o", rop); err != nil {
			t.Fatal(err)
		}
		return string(g.Out)
	}
	if g := get(); g != "1" {
		t.Fatalf("cache = %q, want a hit", g)
	}
	op = objstore.NewWriteOp()
	op.Exec(objstoretest.OtherClass, "touch", []byte("x"))
	mustOp(t, io, "o", op)
	if g := get(); g != "<miss>" {
		t.Fatalf("cache after another class wrote = %q", g)
	}
}

// TestCrashClone is the fast in-process crash test: writers and readers run
// while the filesystem is cloned in its synced-only state; the clone must
// hold every acknowledged op and every state a reader saw, and each object
// must be internally consistent.
func TestCrashClone(t *testing.T) {
	for round := 0; round < 3; round++ {
		fs := vfs.NewCrashableMem()
		s, err := Open(Options{Dir: "/d", FS: fs, BlobThreshold: 32 << 10})
		if err != nil {
			t.Fatal(err)
		}
		io := mustIO(t, s, "p")
		const objects = 8
		var acked [objects]atomic.Int64 // highest acknowledged sequence
		var seen [objects]atomic.Int64  // highest sequence a reader saw
		var stop atomic.Bool
		var wg sync.WaitGroup
		for w := 0; w < objects; w++ {
			wg.Add(2)
			go func() { // writer
				defer wg.Done()
				r := rand.New(rand.NewSource(int64(w + round*100)))
				for seq := int64(1); !stop.Load(); seq++ {
					if err := io.Operate(bg, fmt.Sprint("o", w), crashOp(seq, r)); err != nil {
						t.Error(err)
						return
					}
					acked[w].Store(seq)
				}
			}()
			go func() { // reader
				defer wg.Done()
				for !stop.Load() {
					if seq, ok := readConsistent(t, io, fmt.Sprint("o", w)); ok && seq > seen[w].Load() {
						seen[w].Store(seq)
					}
				}
			}()
		}
		// One more writer commits several objects per call
		// (OperateMany): each acknowledged call is durable whole.
		const manyObjs = 4
		var ackedMany atomic.Int64
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(round + 1000)))
			for seq := int64(1); !stop.Load(); seq++ {
				reqs := make([]objstore.WriteReq, manyObjs)
				for i := range reqs {
					reqs[i] = objstore.WriteReq{OID: fmt.Sprint("m", i), Op: crashOp(seq, r)}
				}
				objstore.OperateMany(bg, io, reqs)
				for _, rq := range reqs {
					if rq.Err != nil {
						t.Error(rq.Err)
						return
					}
				}
				ackedMany.Store(seq)
			}
		}()
		time.Sleep(time.Duration(50+round*40) * time.Millisecond)
		var floor [objects]int64
		for w := range floor {
			floor[w] = max(acked[w].Load(), seen[w].Load())
		}
		floorMany := ackedMany.Load()
		clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 30 * round, RNG: randv2.New(randv2.NewPCG(uint64(round), 1))})
		stop.Store(true)
		wg.Wait()
		s.Close()

		s, err = Open(Options{Dir: "/d", FS: clone, BlobThreshold: 32 << 10})
		if err != nil {
			t.Fatalf("open crash clone: %v", err)
		}
		if io, err = s.IOContext(bg, "p"); err != nil {
			t.Fatalf("round %d: pool lost in crash: %v", round, err)
		}
		for w := 0; w < objects; w++ {
			seq, ok := readConsistent(t, io, fmt.Sprint("o", w))
			if floor[w] > 0 && (!ok || seq < floor[w]) {
				t.Fatalf("round %d object %d: recovered seq %d, but %d was acknowledged or read", round, w, seq, floor[w])
			}
		}
		for i := 0; i < manyObjs; i++ {
			seq, ok := readConsistent(t, io, fmt.Sprint("m", i))
			if floorMany > 0 && (!ok || seq < floorMany) {
				t.Fatalf("round %d object m%d: recovered seq %d, but OperateMany acknowledged %d", round, i, seq, floorMany)
			}
		}
		s.Close()
	}
}

// crashOp writes seq into data, xattr, omap and header at once; every
// fourth op is large enough for a blob, every third appends to the data.
func crashOp(seq int64, r *rand.Rand) *objstore.WriteOp {
	tag := []byte(fmt.Sprintf("%010d", seq))
	n := 1 + r.Intn(200)
	if seq%4 == 0 {
		n = 4000 + r.Intn(1000) // ×10 bytes: ≥ 40 KiB
	}
	op := objstore.NewWriteOp()
	if seq%3 == 0 {
		op.Truncate(0).Append(bytes.Repeat(tag, n))
	} else {
		op.WriteFull(bytes.Repeat(tag, n))
	}
	return op.SetXattr("seq", tag).SetOmap(objstore.KV{Key: "seq", Value: tag}).SetOmapHeader(tag)
}

// readConsistent returns the object's sequence, failing the test if its
// parts disagree.
func readConsistent(t testing.TB, io objstore.IOContext, oid string) (int64, bool) {
	op := objstore.NewReadOp()
	st := op.Stat()
	if err := io.OperateRead(bg, oid, op); err != nil {
		t.Error(err)
		return 0, false
	}
	if !st.Exists {
		return 0, false
	}
	op = objstore.NewReadOp()
	d := op.Read(0, 0)
	x := op.GetXattr("seq")
	o := op.GetOmapValuesByKeys("seq")
	h := op.GetOmapHeader()
	if err := io.OperateRead(bg, oid, op); err != nil {
		t.Error(err)
		return 0, false
	}
	tag := x.Value
	seq, _ := strconv.ParseInt(string(tag), 10, 64) // not Sscan: leading zeros mean octal
	if len(o.Pairs) != 1 || !bytes.Equal(o.Pairs[0].Value, tag) || !bytes.Equal(h.Header, tag) ||
		len(d.Data) == 0 || len(d.Data)%10 != 0 || !bytes.Equal(d.Data, bytes.Repeat(tag, len(d.Data)/10)) {
		t.Errorf("object %s half-applied: xattr %q omap %v header %q data %d bytes (%.20q)", oid, tag, o.Pairs, h.Header, len(d.Data), d.Data)
		return 0, false
	}
	return seq, true
}

func TestDefaultCacheSizeIsClamped(t *testing.T) {
	got := DefaultCacheSize()
	if got < MinCacheSize || got > MaxDefaultCacheSize {
		t.Fatalf("DefaultCacheSize() = %d, want within [%d, %d]", got, MinCacheSize, MaxDefaultCacheSize)
	}
	if m := physicalMemory(); m > 0 && m/8 >= MinCacheSize && m/8 <= MaxDefaultCacheSize && got != m/8 {
		t.Fatalf("DefaultCacheSize() = %d with %d bytes of RAM, want %d", got, m, m/8)
	}
	var o Options
	o.Dir = "x"
	if o.EnsureDefaults().CacheSize != got {
		t.Fatalf("EnsureDefaults left CacheSize %d, want %d", o.CacheSize, got)
	}
}

// lockFailFS fails Lock with err, as a read-only mount (EROFS) or a
// directory the user may not write (EACCES) does.
type lockFailFS struct {
	vfs.FS
	err error
}

func (f lockFailFS) Lock(name string) (io.Closer, error) {
	return nil, &os.PathError{Op: "open", Path: name, Err: f.err}
}

// A data directory that cannot be written is reported as read-only, not
// as held by another process.
func TestDirLockReadOnly(t *testing.T) {
	for _, errno := range []error{syscall.EROFS, syscall.EACCES} {
		_, err := Open(Options{Dir: "/d", FS: lockFailFS{vfs.NewMem(), errno}})
		if err == nil || !strings.Contains(err.Error(), "read-only") || strings.Contains(err.Error(), "another process") ||
			!errors.Is(err, errno) {
			t.Errorf("%v: %v", errno, err)
		}
	}
}

// A context deferring syncs to one store defers writes on that store only
// (any pool or namespace of it), never another store's.
func TestDeferredSyncScope(t *testing.T) {
	s1, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	a, b, c := mustIO(t, s1, "a"), mustIO(t, s1, "b").WithNamespace("ns"), mustIO(t, s2, "a")
	ctx := objstore.WithDeferredSync(bg, a)
	if !b.(*ioctx).deferredBy(ctx) || !a.(*ioctx).deferredBy(ctx) {
		t.Fatal("same store: not deferred")
	}
	if c.(*ioctx).deferredBy(ctx) {
		t.Fatal("other store: deferred")
	}
	if a.(*ioctx).deferredBy(objstore.WithDeferredSync(ctx, nil)) || a.(*ioctx).deferredBy(bg) {
		t.Fatal("undone or plain context: deferred")
	}
}
