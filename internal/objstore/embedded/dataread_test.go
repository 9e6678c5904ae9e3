package embedded

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

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

// TestReadOneChunk: a read within one chunk is a point lookup (bloom
// filtered), not a bounded scan, and returns the same bytes: whole, partial,
// past a short chunk's end, and from a hole. A read the chunk covers is
// that lookup alone, without the meta's (readCovered).
func TestReadOneChunk(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ioc := mustIO(t, s, "p")
	small := []byte("a small object's bytes")
	mustOp(t, ioc, "small", objstore.NewWriteOp().WriteFull(small))
	// Chunk 0 holds 3 bytes, the rest of the 100 is a hole.
	mustOp(t, ioc, "sparse", objstore.NewWriteOp().WriteFull([]byte("abc")).Truncate(100))
	// Chunk 1 only: chunk 0 is a hole.
	mustOp(t, ioc, "tail", objstore.NewWriteOp().Write([]byte("xyz"), chunkSize+5))
	two := bytes.Repeat([]byte("0123456789"), chunkSize/5)
	mustOp(t, ioc, "two", objstore.NewWriteOp().WriteFull(two))
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	read := func(oid string, off, n int64) ([]byte, uint64) {
		t.Helper()
		op := objstore.NewReadOp()
		r := op.Read(off, n)
		g0 := s.PointGets()
		if err := ioc.OperateRead(bg, oid, op); err != nil {
			t.Fatal(err)
		}
		return r.Data, s.PointGets() - g0
	}
	sparse := append([]byte("abc"), make([]byte, 97)...)
	tail := append(make([]byte, chunkSize+5), "xyz"...)
	for _, c := range []struct {
		oid    string
		off, n int64
		want   []byte
		gets   uint64 // point lookups, the meta's included
	}{
		{"small", 0, 0, small, 2}, // to the end: the meta gives the size
		{"small", 2, 5, small[2:7], 1},
		{"small", 0, int64(len(small)), small, 1},
		{"small", 20, 10, small[20:], 2}, // past the end
		{"sparse", 0, 0, sparse, 2},
		{"sparse", 1, 10, sparse[1:11], 2}, // past the chunk: a hole
		{"sparse", 50, 10, sparse[50:60], 2},
		{"tail", 0, 10, tail[:10], 2}, // no chunk: a hole
		{"tail", chunkSize, 0, tail[chunkSize:], 2},
		{"tail", chunkSize + 5, 3, tail[chunkSize+5:], 1},
		{"tail", chunkSize - 2, 8, tail[chunkSize-2 : chunkSize+6], 1}, // two chunks: the meta, then a scan
		{"two", 0, 0, two, 1},
		{"two", chunkSize + 1, 10, two[chunkSize+1 : chunkSize+11], 1},
	} {
		got, gets := read(c.oid, c.off, c.n)
		if !bytes.Equal(got, c.want) {
			t.Errorf("%s [%d,+%d): %d bytes, want %d, or wrong bytes", c.oid, c.off, c.n, len(got), len(c.want))
		}
		if gets != c.gets {
			t.Errorf("%s [%d,+%d): %d point lookups, want %d", c.oid, c.off, c.n, gets, c.gets)
		}
	}
}

// TestReadCoveredStates: the one-lookup read still tells a missing, removed,
// replaced or blob-backed object apart, and while writers replace and
// remove the object, every read sees one whole version of it.
func TestReadCoveredStates(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir(), BlobThreshold: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ioc := mustIO(t, s, "p")
	read := func(oid string, off, n int64) ([]byte, error) {
		op := objstore.NewReadOp()
		r := op.Read(off, n)
		err := ioc.OperateRead(bg, oid, op)
		return r.Data, err
	}
	if _, err := read("nothing", 0, 10); objstore.Code(err) != objstore.ErrNotFound {
		t.Errorf("missing object: %v", err)
	}
	mustOp(t, ioc, "gone", objstore.NewWriteOp().WriteFull([]byte("0123456789")))
	mustOp(t, ioc, "gone", objstore.NewWriteOp().Remove())
	if _, err := read("gone", 0, 10); objstore.Code(err) != objstore.ErrNotFound {
		t.Errorf("removed object: %v", err)
	}
	// Replaced by a shorter object: the old length is not read.
	mustOp(t, ioc, "shrunk", objstore.NewWriteOp().WriteFull([]byte("0123456789")))
	mustOp(t, ioc, "shrunk", objstore.NewWriteOp().WriteFull([]byte("abc")))
	if got, err := read("shrunk", 0, 10); err != nil || string(got) != "abc" {
		t.Errorf("shrunk object: %q %v", got, err)
	}
	// Truncated below the range.
	mustOp(t, ioc, "cut", objstore.NewWriteOp().WriteFull([]byte("0123456789")).Truncate(4))
	if got, err := read("cut", 2, 6); err != nil || string(got) != "23" {
		t.Errorf("truncated object: %q %v", got, err)
	}
	// Inline replaced by a blob: no chunks remain, the blob is read.
	big := bytes.Repeat([]byte("B"), 8<<10)
	mustOp(t, ioc, "toblob", objstore.NewWriteOp().WriteFull([]byte("inline bytes")))
	mustOp(t, ioc, "toblob", objstore.NewWriteOp().WriteFull(big))
	if got, err := read("toblob", 3, 9); err != nil || !bytes.Equal(got, big[3:12]) {
		t.Errorf("blob-backed object: %q %v", got, err)
	}
	// And back: the blob's bytes are not read.
	mustOp(t, ioc, "toblob", objstore.NewWriteOp().WriteFull([]byte("inline again")))
	if got, err := read("toblob", 0, 12); err != nil || string(got) != "inline again" {
		t.Errorf("inline after blob: %q %v", got, err)
	}

	// Writers alternate versions of different lengths and removals; a
	// read of [0, 64) sees all of one version or ErrNotFound.
	versions := [][]byte{bytes.Repeat([]byte("a"), 64), bytes.Repeat([]byte("b"), 40), bytes.Repeat([]byte("c"), 100)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 600 {
			op := objstore.NewWriteOp().WriteFull(versions[i%3])
			if i%4 == 3 {
				op = objstore.NewWriteOp().Remove()
			}
			if err := ioc.Operate(bg, "busy", op); err != nil && objstore.Code(err) != objstore.ErrNotFound {
				t.Error(err)
				return
			}
		}
	}()
	for reads := 0; ; reads++ {
		select {
		case <-done:
			return
		default:
		}
		got, err := read("busy", 0, 64)
		if objstore.Code(err) == objstore.ErrNotFound {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		ok := false
		for _, v := range versions {
			ok = ok || bytes.Equal(got, v[:min(64, len(v))])
		}
		if !ok {
			t.Fatalf("read %d: %q is no version's bytes", reads, got)
		}
	}
}

// BenchmarkReadSmallCPU reads random 64-byte objects from a store whose
// 200k objects sit in several levels of sstables: stat+read is a Stat and
// a Read in one op, read a Read alone (a GET's data read: the driver knows
// the size from the index entry). cpu-µs/op is the process's CPU time, so
// the figure holds on a loaded machine; gets/op counts point lookups.
func BenchmarkReadSmallCPU(b *testing.B) {
	s, err := Open(Options{Dir: b.TempDir(), MemTableSize: 2 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ioc := mustIO(b, s, "p")
	const n = 200000
	val := make([]byte, 64)
	// Written in random order: older writes sink to deeper levels, so a
	// random object may sit in any of them.
	for _, i := range rand.Perm(n) {
		op := objstore.NewWriteOp().WriteFull(val)
		if err := ioc.Operate(bg, fmt.Sprintf("obj-%08d", i), op); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	// Compactions settled (none running or started for a second: a quiet
	// store may keep "owing" a small L0 forever), so that they are not in
	// the figure and every run reads the same shape of tree.
	for last, quiet := int64(-1), 0; quiet < 20; time.Sleep(50 * time.Millisecond) {
		m := s.db.Metrics()
		if m.Compact.NumInProgress == 0 && m.Compact.Count == last {
			quiet++
		} else {
			quiet = 0
		}
		last = m.Compact.Count
	}
	for _, stat := range []bool{true, false} {
		name := "read"
		if stat {
			name = "stat+read"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			c0, g0 := cpuNow(), s.PointGets()
			for i := 0; b.Loop(); i++ {
				op := objstore.NewReadOp()
				if stat {
					op.Stat()
				}
				r := op.Read(0, int64(len(val)))
				if err := ioc.OperateRead(bg, fmt.Sprintf("obj-%08d", rand.IntN(n)), op); err != nil || len(r.Data) != len(val) {
					b.Fatal(err, len(r.Data))
				}
			}
			b.ReportMetric(float64(cpuNow()-c0)/float64(b.N)/1e3, "cpu-µs/op")
			b.ReportMetric(float64(s.PointGets()-g0)/float64(b.N), "gets/op")
		})
	}
}
