package embedded

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// TestOmapByKeysPointReads: a read of up to pointKeys omap keys is that
// many point lookups (bloom filters apply); more keys take one iterator.
// Both find the same pairs, absent keys skipped, in key order.
func TestOmapByKeysPointReads(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ioc := mustIO(t, s, "p")
	var kvs []objstore.KV
	for i := range 10 {
		kvs = append(kvs, objstore.KV{Key: fmt.Sprintf("k%02d", i), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	mustOp(t, ioc, "o", objstore.NewWriteOp().SetOmap(kvs...))
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		keys []string
		want string
		gets uint64 // the object's meta is one when not cached
	}{
		{[]string{"k07", "nope", "k03"}, "k03=v3 k07=v7 ", 3},
		{[]string{"k01", "k01", "x", "y"}, "k01=v1 ", 3}, // duplicates read once
		{[]string{"k09", "k00", "k05", "k02", "zz"}, "k00=v0 k02=v2 k05=v5 k09=v9 ", 0},
	} {
		op := objstore.NewReadOp()
		st := op.GetOmapValuesByKeys(c.keys...)
		g0 := s.PointGets()
		if err := ioc.OperateRead(bg, "o", op); err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, kv := range st.Pairs {
			got += kv.Key + "=" + string(kv.Value) + " "
		}
		if got != c.want {
			t.Errorf("%q: %q, want %q", c.keys, got, c.want)
		}
		if n := s.PointGets() - g0; n < c.gets || n > c.gets+1 {
			t.Errorf("%q: %d point reads, want %d (+1 for the meta)", c.keys, n, c.gets)
		}
	}
}

// TestOmapByKeysUsesFilters: a read of many keys, most absent, skips the
// tables whose bloom filters rule a key out, the lowest level's too, where
// a plain seek read a data block per key and level (a reshard's replay
// reads its batch's keys this way, most of them new).
func TestOmapByKeysUsesFilters(t *testing.T) {
	s, ioc := compactedEvenKeys(t)
	var keys []string
	for i := range 50 {
		keys = append(keys, fmt.Sprintf("k%05d", 80*i+1)) // odd: absent
	}
	keys = append(keys, "k00002")
	f0 := s.db.Metrics().Filter.Hits
	rop := objstore.NewReadOp()
	st := rop.GetOmapValuesByKeys(keys...)
	if err := ioc.OperateRead(bg, "o", rop); err != nil {
		t.Fatal(err)
	}
	if len(st.Pairs) != 1 || st.Pairs[0].Key != "k00002" {
		t.Fatalf("pairs %v", st.Pairs)
	}
	// The bloom filter has false positives (~1 % at 10 bits per key).
	if n := s.db.Metrics().Filter.Hits - f0; n < 45 {
		t.Fatalf("%d of 50 absent keys skipped by a filter", n)
	}
}

// TestWriteProbeUsesL6Filters: a write op's read of an omap key (here
// OmapCmp guards; in production a class method's GetOmapVal, e.g. an index
// link looking for the entry of a new object) consults the lowest level's
// bloom filters, which pebble's Get skips: absent keys read no data block.
func TestWriteProbeUsesL6Filters(t *testing.T) {
	s, ioc := compactedEvenKeys(t)
	if m := s.db.Metrics(); m.Levels[6].TablesCount == 0 {
		t.Fatalf("no table in L6 after the compaction:\n%s", m)
	}
	wop := objstore.NewWriteOp()
	for i := range 50 {
		wop.OmapCmp(fmt.Sprintf("k%05d", 80*i+1), objstore.CmpEQ, nil) // odd: absent
	}
	wop.OmapCmp("k00002", objstore.CmpEQ, []byte("v")) // present: found through the filter
	wop.SetOmap(kv("new", "x"))
	f0 := s.db.Metrics().Filter.Hits
	if err := ioc.Operate(bg, "o", wop); err != nil {
		t.Fatal(err)
	}
	// The bloom filter has false positives (~1 % at 10 bits per key).
	if n := s.db.Metrics().Filter.Hits - f0; n < 45 {
		t.Fatalf("%d of 50 absent keys skipped by a filter", n)
	}
	// A guard on a present key still sees it.
	bad := objstore.NewWriteOp().OmapCmp("k00002", objstore.CmpEQ, []byte("other"))
	bad.SetOmap(kv("never", "x"))
	if err := ioc.Operate(bg, "o", bad); !errors.Is(err, objstore.ErrCanceled) {
		t.Fatalf("guard on a present key with another value: %v", err)
	}
	// A key set earlier in the same op is found (the batch is read too).
	same := objstore.NewWriteOp().SetOmap(kv("fresh", "1")).OmapCmp("fresh", objstore.CmpEQ, []byte("1"))
	if err := ioc.Operate(bg, "o", same); err != nil {
		t.Fatalf("guard on a key the op set: %v", err)
	}
}

// compactedEvenKeys opens a store whose object "o" in pool "p" holds the
// omap keys k00000, k00002, ... k03998 ("v"), compacted to the lowest level.
func compactedEvenKeys(t *testing.T) (*Store, objstore.IOContext) {
	t.Helper()
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ioc := mustIO(t, s, "p")
	op := objstore.NewWriteOp()
	for i := range 2000 {
		op.SetOmap(kv(fmt.Sprintf("k%05d", 2*i), "v"))
	}
	mustOp(t, ioc, "o", op)
	if err := s.db.Compact(bg, []byte{0}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	return s, ioc
}
