package embedded

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestOpenData(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir(), BlobThreshold: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ioc := mustIO(t, s, "p").(*ioctx)
	big := make([]byte, 200<<10)
	for i := range big {
		big[i] = byte(rand.Uint32())
	}
	mustOp(t, ioc, "big", objstore.NewWriteOp().WriteFull(big))
	mustOp(t, ioc, "small", objstore.NewWriteOp().WriteFull([]byte("inline")))

	read := func(oid string, off, n int64) []byte {
		t.Helper()
		f, ok, err := ioc.OpenData(bg, oid, off, n)
		if err != nil || !ok {
			t.Fatalf("OpenData(%s, %d, %d): ok %v, %v", oid, off, n, ok, err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, n))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, r := range [][2]int64{{0, int64(len(big))}, {1000, 5000}, {int64(len(big)) - 1, 1}, {7, 0}} {
		if got := read("big", r[0], r[1]); !bytes.Equal(got, big[r[0]:r[0]+r[1]]) {
			t.Errorf("range %v: wrong bytes", r)
		}
	}

	// A reader keeps the version it opened across an overwrite and a removal.
	f, ok, err := ioc.OpenData(bg, "big", 0, int64(len(big)))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	mustOp(t, ioc, "big", objstore.NewWriteOp().WriteFull(bytes.Repeat([]byte("x"), len(big))))
	mustOp(t, ioc, "big", objstore.NewWriteOp().Remove())
	if got, err := io.ReadAll(f); err != nil || !bytes.Equal(got, big) {
		t.Errorf("opened blob changed under its reader: %v", err)
	}
	f.Close()

	if f, ok, err := ioc.OpenData(bg, "small", 0, 6); err != nil || ok || f != nil {
		t.Errorf("inline object: %v %v %v", f, ok, err)
	}
	if _, _, err := ioc.OpenData(bg, "big", 0, 1); objstore.Code(err) != objstore.ErrNotFound {
		t.Errorf("removed object: %v", err)
	}
	mustOp(t, ioc, "big2", objstore.NewWriteOp().WriteFull(big))
	if _, _, err := ioc.OpenData(bg, "big2", 1, int64(len(big))); objstore.Code(err) != objstore.ErrInvalid {
		t.Errorf("range past the end: %v", err)
	}
	if _, _, err := ioc.OpenData(bg, "big2", -1, 1); objstore.Code(err) != objstore.ErrInvalid {
		t.Errorf("negative offset: %v", err)
	}

	// On another vfs.FS the data is never handed out as a file.
	ms, err := Open(Options{Dir: "/m", FS: vfs.NewMem(), BlobThreshold: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	mio := mustIO(t, ms, "p").(*ioctx)
	mustOp(t, mio, "big", objstore.NewWriteOp().WriteFull(big))
	if f, ok, err := mio.OpenData(bg, "big", 0, 1); err != nil || ok || f != nil {
		t.Errorf("MemFS: %v %v %v", f, ok, err)
	}
}

// BenchmarkStatAbsent looks up objects that do not exist in a store whose
// data sits in sstables: what every new stripe's write costs before it
// writes (the meta lookup), and what bloom filters (tuneReads) serve.
func BenchmarkStatAbsent(b *testing.B) {
	s, err := Open(Options{Dir: b.TempDir(), MemTableSize: 4 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ioc := mustIO(b, s, "p")
	val := make([]byte, 4<<10)
	for i := range 20000 {
		op := objstore.NewWriteOp().WriteFull(val)
		if err := ioc.Operate(bg, fmt.Sprintf("obj-%08d", i*2), op); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		op := objstore.NewReadOp()
		st := op.Stat()
		if err := ioc.OperateRead(bg, fmt.Sprintf("obj-%08d", (i*2+1)%40000), op); err != nil || st.Exists {
			b.Fatal(err, st.Exists)
		}
	}
}
