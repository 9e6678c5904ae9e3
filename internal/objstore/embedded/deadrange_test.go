package embedded

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestDeadRangeCompaction: a scan that steps over many deleted keys asks
// for a compaction of the range it crossed; once it has run, the same
// scan meets few dead points and asks no more. A scan of live keys never
// asks.
func TestDeadRangeCompaction(t *testing.T) {
	defer func(d time.Duration) { deadCompactEvery = d }(deadCompactEvery)
	deadCompactEvery = 0
	s, err := Open(Options{Dir: "/d", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	io := mustIO(t, s, "p")
	const n, dead = 20000, 3 * deadScanMin / 2
	key := func(i int) string { return fmt.Sprintf("k%06d", i) }
	for i := 0; i < n; i += 1000 {
		var kvs []objstore.KV
		for j := i; j < i+1000; j++ {
			kvs = append(kvs, kv(key(j), "v"))
		}
		mustOp(t, io, "q", objstore.NewWriteOp().SetOmap(kvs...))
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	page := func() []objstore.KV {
		t.Helper()
		op := objstore.NewReadOp()
		vs := op.GetOmapValues("", "", 10)
		if err := io.OperateRead(bg, "q", op); err != nil {
			t.Fatal(err)
		}
		return vs.Pairs
	}
	if page(); s.deadAsked.Load() != 0 {
		t.Fatal("a scan of live keys asked for a compaction")
	}
	for i := 0; i < dead; i += 1000 {
		var ks []string
		for j := i; j < min(i+1000, dead); j++ {
			ks = append(ks, key(j))
		}
		mustOp(t, io, "q", objstore.NewWriteOp().RmOmapKeys(ks...))
	}
	if p := page(); len(p) != 10 || p[0].Key != key(dead) {
		t.Fatalf("page after the deletes starts at %v", p)
	}
	if asked, _ := s.DeadRangeCompactions(); asked != 1 {
		t.Fatalf("scan over %d deleted keys: %d compactions asked, want 1", dead, asked)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		if _, done := s.DeadRangeCompactions(); done == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the compaction did not finish")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p := page(); len(p) != 10 || p[0].Key != key(dead) {
		t.Fatalf("page after the compaction starts at %v", p)
	}
	if asked, _ := s.DeadRangeCompactions(); asked != 1 {
		t.Fatalf("the compacted range still has dead keys: %d compactions asked", asked)
	}
}
