package embedded

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// stallFS blocks the first sstable read after arm until release: a read
// that must go to a slow disk.
type stallFS struct {
	vfs.FS
	mu      sync.Mutex
	armed   bool
	blocked chan struct{}
	release chan struct{}
}

func (fs *stallFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	return &stallFile{File: f, fs: fs}, nil
}

type stallFile struct {
	vfs.File
	fs *stallFS
}

func (f *stallFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	stall := f.fs.armed
	f.fs.armed = false
	f.fs.mu.Unlock()
	if stall {
		close(f.fs.blocked)
		<-f.fs.release
	}
	return f.File.ReadAt(p, off)
}

// A read that waits for the disk must not hold up writes of the same
// object: with the object's lock held through the read, the next writer
// waited for it, and every reader queued behind that writer (issue 24's
// RWLD stalls). The read still sees the object as of its start.
func TestSlowReadDoesNotBlockWriter(t *testing.T) {
	fs := &stallFS{FS: vfs.NewMem(), blocked: make(chan struct{}), release: make(chan struct{})}
	open := func() *Store {
		s, err := Open(Options{Dir: "/d", FS: fs, CacheSize: MinCacheSize})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	io := mustIO(t, s, "p")
	var kvs []objstore.KV
	for i := 0; i < 2000; i++ {
		kvs = append(kvs, objstore.KV{Key: fmt.Sprintf("k%05d", i), Value: make([]byte, 100)})
	}
	mustOp(t, io, "shard", objstore.NewWriteOp().SetOmap(kvs...))
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open() // an empty block cache: the omap is on "disk"
	defer s.Close()
	io = mustIO(t, s, "p")
	// Meta in the memtable, so only the omap page reads the sstable.
	mustOp(t, io, "shard", objstore.NewWriteOp().SetXattr("x", []byte("1")))

	fs.mu.Lock()
	fs.armed = true
	fs.mu.Unlock()
	type readRes struct {
		n   int
		err error
	}
	readDone := make(chan readRes, 1)
	go func() {
		op := objstore.NewReadOp()
		st := op.GetOmapValues("", "", 5000)
		err := io.OperateRead(context.Background(), "shard", op)
		readDone <- readRes{len(st.Pairs), err}
	}()
	<-fs.blocked // the reader waits for the disk

	wrote := make(chan error, 1)
	go func() {
		wrote <- io.Operate(context.Background(), "shard", objstore.NewWriteOp().SetOmap(objstore.KV{Key: "new", Value: []byte("v")}))
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // a deadlock detector, not a timing window
		close(fs.release)
		t.Fatal("the write waited for a read blocked on the disk")
	}
	close(fs.release)
	r := <-readDone
	if r.err != nil || r.n != 2000 {
		t.Fatalf("the read returned %d pairs, %v; want the 2000 of its start", r.n, r.err)
	}
}
