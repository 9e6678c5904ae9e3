package embedded

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// TestBlobDirectIO writes blobs of aligned and unaligned sizes on the real
// disk (O_DIRECT where the filesystem allows it, the page cache otherwise),
// reads them back whole and in ranges, and again after a reopen.
func TestBlobDirectIO(t *testing.T) {
	dir := t.TempDir()
	sizes := []int{1 << 20, 4 << 20, 4<<20 + 1, 3<<20 + 777, 1<<20 + 4095, 2<<20 - 1}
	want := map[string][]byte{}
	rng := rand.New(rand.NewSource(1))
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	io := mustIO(t, s, "p")
	for i, n := range sizes {
		b := make([]byte, n)
		rng.Read(b)
		oid := string(rune('a' + i))
		want[oid] = b
		mustOp(t, io, oid, objstore.NewWriteOp().WriteFull(b))
	}
	if got := len(blobFiles(t, s)); got != len(sizes) {
		t.Fatalf("%d blob files, want %d", got, len(sizes))
	}
	t.Logf("O_DIRECT used: %v", s.directIO())
	check := func(s *Store) {
		t.Helper()
		io := mustIO(t, s, "p")
		for oid, b := range want {
			op := objstore.NewReadOp()
			st := op.Stat()
			whole := op.Read(0, 0)
			mid := op.Read(int64(len(b)/2-3), 4099)
			if err := io.OperateRead(bg, oid, op); err != nil {
				t.Fatal(err)
			}
			if st.Stat.Size != int64(len(b)) {
				t.Fatalf("%s: size %d, want %d", oid, st.Stat.Size, len(b))
			}
			if !bytes.Equal(whole.Data, b) {
				t.Fatalf("%s: whole read differs (len %d vs %d)", oid, len(whole.Data), len(b))
			}
			if !bytes.Equal(mid.Data, b[len(b)/2-3:len(b)/2-3+4099]) {
				t.Fatalf("%s: range read differs", oid)
			}
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(s)
}
