package embedded

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// syncGateFS holds every WAL sync while closed: writes are applied
// (visible) but not durable until open is called.
type syncGateFS struct {
	vfs.FS
	mu     sync.Mutex
	closed bool
	opened chan struct{}
}

func (fs *syncGateFS) close() {
	fs.mu.Lock()
	fs.closed, fs.opened = true, make(chan struct{})
	fs.mu.Unlock()
}

func (fs *syncGateFS) open() {
	fs.mu.Lock()
	if fs.closed {
		fs.closed = false
		close(fs.opened)
	}
	fs.mu.Unlock()
}

func (fs *syncGateFS) wait() {
	fs.mu.Lock()
	closed, ch := fs.closed, fs.opened
	fs.mu.Unlock()
	if closed {
		<-ch
	}
}

func (fs *syncGateFS) gate(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &gatedFile{File: f, fs: fs}, nil
}

func (fs *syncGateFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return fs.gate(f, name, err)
}

func (fs *syncGateFS) ReuseForWrite(old, name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(old, name, c)
	return fs.gate(f, name, err)
}

type gatedFile struct {
	vfs.File
	fs *syncGateFS
}

func (f *gatedFile) Sync() error     { f.fs.wait(); return f.File.Sync() }
func (f *gatedFile) SyncData() error { f.fs.wait(); return f.File.SyncData() }
func (f *gatedFile) SyncTo(n int64) (bool, error) {
	f.fs.wait()
	return f.File.SyncTo(n)
}

// TestKeyReadWaitsOnlyForItsKeys: a read of named omap keys (an index
// entry's lookup, under a state guard) waits for the unsynced writes that
// changed those keys, the object's existence or its xattrs, and not for a
// write of other keys of the same object (with 11 index shards under
// load every GET waited for an unrelated PUT's WAL sync). Any other read
// still waits for every unsynced write of the object.
func TestKeyReadWaitsOnlyForItsKeys(t *testing.T) {
	fs := &syncGateFS{FS: vfs.NewMem()}
	s, err := Open(Options{Dir: "/d", FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	io := mustIO(t, s, "p")
	mustOp(t, io, "shard", objstore.NewWriteOp().SetXattr("state", []byte("open")).
		SetOmap(kv("a", "1"), kv("b", "1"), kv("c", "1")))
	e := s.locks.acquire(io.(*ioctx).lockKey("shard"))
	defer s.locks.release(e)

	// write starts op with WAL syncs held and returns once it is applied.
	write := func(op *objstore.WriteOp) chan error {
		before := e.newest()
		done := make(chan error, 1)
		go func() { done <- io.Operate(bg, "shard", op) }()
		for e.newest() == before {
			select {
			case err := <-done:
				t.Fatalf("write returned with syncs held: %v", err)
			case <-time.After(time.Millisecond):
			}
		}
		return done
	}
	type result struct {
		vals map[string]string
		err  error
	}
	// read starts a read of keys as an index lookup does (guard: under
	// the shard's state guard); its result comes on the channel.
	read := func(guard bool, keys ...string) chan result {
		out := make(chan result, 1)
		go func() {
			op := objstore.NewReadOp()
			if guard {
				op.CmpXattr("state", objstore.CmpNE, []byte("closed"))
			}
			st := op.GetOmapValuesByKeys(keys...)
			err := io.OperateRead(bg, "shard", op)
			vals := map[string]string{}
			for _, p := range st.Pairs {
				vals[p.Key] = string(p.Value)
			}
			out <- result{vals, err}
		}()
		return out
	}
	get := func(keys ...string) chan result { return read(true, keys...) }
	// blocks: no result within 50 ms (a read waiting for a held sync).
	blocks := func(ch chan result) bool {
		select {
		case r := <-ch:
			ch <- r
			return false
		case <-time.After(50 * time.Millisecond):
			return true
		}
	}
	// returns: the read ends while the syncs are held (it has 10 s: a
	// loaded machine is slow, and a wait for a held sync never ends).
	returns := func(ch chan result, want map[string]string) {
		t.Helper()
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatal(r.err)
			}
			for k, v := range want {
				if r.vals[k] != v {
					t.Fatalf("read %v, want %v", r.vals, want)
				}
			}
		case <-time.After(10 * time.Second):
			fs.open()
			t.Fatal("a read of other keys waited for an unsynced write")
		}
	}
	// release opens the gate and waits for the write and the reads held.
	release := func(done chan error, held ...chan result) []result {
		t.Helper()
		fs.open()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		var rs []result
		for _, ch := range held {
			rs = append(rs, <-ch)
		}
		return rs
	}

	// A write of a and of another key z: a read of b, c returns.
	fs.close()
	w := write(objstore.NewWriteOp().SetOmap(kv("a", "2"), kv("z", "x")))
	returns(get("b", "c"), map[string]string{"b": "1", "c": "1"})
	ra, rba := get("a"), get("b", "a")
	if !blocks(ra) || !blocks(rba) {
		fs.open()
		t.Fatal("a read of a returned before the write of a synced")
	}
	// Two writes in flight, the newer of another key: a still waits, b not.
	w2 := write(objstore.NewWriteOp().RmOmapKeys("c"))
	returns(get("b"), map[string]string{"b": "1"})
	ra2 := get("a")
	if !blocks(ra2) {
		fs.open()
		t.Fatal("a read of a behind a newer write of c did not wait")
	}
	// Any other read (a stat) waits for the object's newest write.
	statDone := make(chan error, 1)
	go func() {
		op := objstore.NewReadOp()
		op.Stat()
		statDone <- io.OperateRead(bg, "shard", op)
	}()
	select {
	case <-statDone:
		fs.open()
		t.Fatal("a stat returned before the object's writes synced")
	case <-time.After(50 * time.Millisecond):
	}
	for _, r := range release(w, ra, rba, ra2) {
		if r.err != nil || r.vals["a"] != "2" {
			t.Fatalf("read %v, %v after the write of a synced", r.vals, r.err)
		}
	}
	if err := <-w2; err != nil {
		t.Fatal(err)
	}
	if err := <-statDone; err != nil {
		t.Fatal(err)
	}

	// Writes that change more than named keys: a read of any key waits.
	for _, c := range []struct {
		name string
		op   *objstore.WriteOp
	}{
		{"an xattr", objstore.NewWriteOp().SetXattr("state", []byte("logging"))},
		{"a key range", objstore.NewWriteOp().OmapRmRange("x", "y")},
		{"a cleared omap", objstore.NewWriteOp().OmapClear().SetOmap(kv("a", "3"), kv("b", "3"))},
	} {
		fs.close()
		w := write(c.op)
		rb := get("b")
		if !blocks(rb) {
			fs.open()
			t.Fatalf("a read of b did not wait for a write of %s", c.name)
		}
		if r := release(w, rb)[0]; r.err != nil {
			t.Fatal(r.err)
		}
	}
	fs.close()
	w = write(objstore.NewWriteOp().Remove())
	rb := read(false, "b")
	if !blocks(rb) {
		fs.open()
		t.Fatal("a read of b did not wait for the object's removal")
	}
	if r := release(w, rb)[0]; objstore.Code(r.err) != objstore.ErrNotFound {
		t.Fatalf("read of a removed object: %v", r.err)
	}
	// Creation: a read of a key of a new object waits for it.
	fs.close()
	w = write(objstore.NewWriteOp().SetOmap(kv("b", "new")))
	rb = read(false, "b")
	if !blocks(rb) {
		fs.open()
		t.Fatal("a read of b did not wait for the object's creation")
	}
	if r := release(w, rb)[0]; r.err != nil || r.vals["b"] != "new" {
		t.Fatalf("read %v, %v after the creation synced", r.vals, r.err)
	}
	if n := e.chain.Load(); n != nil {
		t.Fatalf("chain holds %v after every write synced", n.keys)
	}
}
