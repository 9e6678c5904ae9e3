package embedded

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestMmapFSReadAt: a table opened through mmapFS reads what the file
// holds, with io.ReaderAt's end-of-file rules; other files, and empty
// tables, are the plain file.
func TestMmapFSReadAt(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 10_000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for name, b := range map[string][]byte{"000001.sst": data, "MANIFEST-000001": data, "000002.sst": nil} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fs := mmapFS{vfs.Default}
	if vfs.Root(fs) != vfs.Default {
		t.Error("vfs.Root of the wrapper is not the disk")
	}
	for name, mapped := range map[string]bool{"000001.sst": true, "MANIFEST-000001": false, "000002.sst": false} {
		f, err := fs.Open(filepath.Join(dir, name), vfs.RandomReadsOption)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := f.(*mmapFile); ok != mapped {
			t.Errorf("%s: mapped %v, want %v", name, ok, mapped)
		}
		f.Close()
	}
	f, err := fs.Open(filepath.Join(dir, "000001.sst"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, c := range []struct {
		off  int64
		n    int
		want int
		eof  bool
	}{
		{0, 4096, 4096, false},
		{5000, 5000, 5000, false}, // up to the last byte
		{9000, 4096, 1000, true},  // across the end
		{10_000, 10, 0, true},
		{20_000, 10, 0, true},
	} {
		p := make([]byte, c.n)
		n, err := f.ReadAt(p, c.off)
		if n != c.want || (err == io.EOF) != c.eof || (err != nil && err != io.EOF) {
			t.Errorf("ReadAt(%d, %d) = %d, %v; want %d, eof %v", c.n, c.off, n, err, c.want, c.eof)
		}
		if n > 0 && !bytes.Equal(p[:n], data[c.off:c.off+int64(n)]) {
			t.Errorf("ReadAt(%d, %d): wrong bytes", c.n, c.off)
		}
	}
	if _, err := f.ReadAt(make([]byte, 1), -1); !errors.Is(err, errNegativeOffset) {
		t.Errorf("negative offset: %v", err)
	}
}

// TestMmapFSFault: a page the kernel cannot supply (here the file was cut
// short after it was mapped: SIGBUS) fails that read with an error and
// leaves the process running.
func TestMmapFSFault(t *testing.T) {
	name := filepath.Join(t.TempDir(), "000001.sst")
	if err := os.WriteFile(name, make([]byte, 3*4096), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := mmapFS{vfs.Default}.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := f.(*mmapFile); !ok {
		t.Fatal("not mapped")
	}
	if err := os.Truncate(name, 0); err != nil {
		t.Fatal(err)
	}
	if n, err := f.ReadAt(make([]byte, 100), 5000); err == nil || err == io.EOF {
		t.Fatalf("read of a page past the file's end: %d, %v", n, err)
	}
}

// TestStoreMapsTables: a store on the real disk reads its tables through
// mappings (DisableMmap: none), finds every value after a reopen (an empty
// block cache: each block comes from a table), and unmaps them on Close.
func TestStoreMapsTables(t *testing.T) {
	for _, disable := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableMmap=%v", disable), func(t *testing.T) {
			dir := t.TempDir()
			value := func(i int) string { return fmt.Sprintf("%0200d", i*7919) }
			s, err := Open(Options{Dir: dir, DisableMmap: disable})
			if err != nil {
				t.Fatal(err)
			}
			ioc := mustIO(t, s, "p")
			op := objstore.NewWriteOp()
			for i := range 3000 {
				op.SetOmap(kv(fmt.Sprintf("k%05d", i), value(i)))
			}
			mustOp(t, ioc, "o", op)
			if err := s.db.Compact(bg, []byte{0}, []byte{0xff}, true); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = Open(Options{Dir: dir, DisableMmap: disable})
			if err != nil {
				t.Fatal(err)
			}
			ioc = mustIO(t, s, "p")
			for i := range 3000 {
				k := fmt.Sprintf("k%05d", i)
				rop := objstore.NewReadOp()
				st := rop.GetOmapValuesByKeys(k)
				if err := ioc.OperateRead(bg, "o", rop); err != nil {
					t.Fatal(err)
				}
				if len(st.Pairs) != 1 || string(st.Pairs[0].Value) != value(i) {
					t.Fatalf("%s: %v", k, st.Pairs)
				}
			}
			if n := mappedTables(t, dir); (n > 0) == disable {
				t.Errorf("%d tables of the store mapped, DisableMmap %v", n, disable)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if n := mappedTables(t, dir); n != 0 {
				t.Errorf("%d tables still mapped after Close", n)
			}
		})
	}
}

// mappedTables counts this process's mappings of tables below dir.
func mappedTables(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps:", err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, dir) && strings.HasSuffix(l, ".sst") {
			n++
		}
	}
	return n
}

// BenchmarkTableReadAt: a 4 KiB read at a random offset of a 64 MiB table
// (in the page cache) through the mapping and through pread; the mapped
// read includes its fault recovery (SetPanicOnFault, a deferred recover).
func BenchmarkTableReadAt(b *testing.B) {
	name := filepath.Join(b.TempDir(), "000001.sst")
	const size = 64 << 20
	if err := os.WriteFile(name, make([]byte, size), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		fs   vfs.FS
	}{{"mmap", mmapFS{vfs.Default}}, {"pread", vfs.Default}} {
		b.Run(c.name, func(b *testing.B) {
			f, err := c.fs.Open(name, vfs.RandomReadsOption)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			p := make([]byte, 4096)
			r := rand.New(rand.NewPCG(1, 2))
			b.SetBytes(int64(len(p)))
			for b.Loop() {
				if _, err := f.ReadAt(p, r.Int64N(size/4096)*4096); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
