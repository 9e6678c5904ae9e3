package objstoretest

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

func testXattrs(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	operate(t, io, "o", objstore.NewWriteOp().SetXattr("b", []byte("2")).SetXattr("a", []byte("1")).
		SetXattr("empty", nil).SetXattr("bin", []byte{0, 0xff, 1}))
	op := objstore.NewReadOp()
	xs := op.GetXattrs()
	a := op.GetXattr("a")
	miss := op.GetXattrOptional("missing")
	readOp(t, io, "o", op)
	wantKVs(t, "getxattrs sorted", xs.Attrs, kv("a", "1"), kv("b", "2"), objstore.KV{Key: "bin", Value: []byte{0, 0xff, 1}}, kv("empty", ""))
	if !a.Found || string(a.Value) != "1" || miss.Found || miss.Value != nil {
		t.Fatalf("getxattr: a=%+v missing=%+v", a, miss)
	}
	op = objstore.NewReadOp()
	op.GetXattr("missing")
	wantErr(t, io.OperateRead(bg, "o", op), objstore.ErrNotFound, "getxattr missing")

	operate(t, io, "o", objstore.NewWriteOp().RmXattr("b").RmXattr("never").SetXattr("a", []byte("one")))
	op = objstore.NewReadOp()
	xs = op.GetXattrs()
	readOp(t, io, "o", op)
	wantKVs(t, "after rm", xs.Attrs, kv("a", "one"), objstore.KV{Key: "bin", Value: []byte{0, 0xff, 1}}, kv("empty", ""))
	// Max-size value round-trips.
	big := bytes.Repeat([]byte{7}, objstore.MaxXattrValueLen)
	operate(t, io, "o", objstore.NewWriteOp().SetXattr(strings.Repeat("n", objstore.MaxXattrNameLen), big))
	op = objstore.NewReadOp()
	g := op.GetXattr(strings.Repeat("n", objstore.MaxXattrNameLen))
	readOp(t, io, "o", op)
	wantData(t, "max xattr", g.Value, big)
}

func testOmap(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	var pairs []objstore.KV
	for _, k := range []string{"b1", "a2", "a1", "c", "a10", "b2", "a3"} {
		pairs = append(pairs, kv(k, "v"+k))
	}
	operate(t, io, "o", objstore.NewWriteOp().SetOmap(pairs...).SetOmapHeader([]byte("H")))
	all := []objstore.KV{kv("a1", "va1"), kv("a10", "va10"), kv("a2", "va2"), kv("a3", "va3"), kv("b1", "vb1"), kv("b2", "vb2"), kv("c", "vc")}

	vals := func(startAfter, prefix string, max int) ([]objstore.KV, bool) {
		op := objstore.NewReadOp()
		s := op.GetOmapValues(startAfter, prefix, max)
		readOp(t, io, "o", op)
		return s.Pairs, s.More
	}
	got, more := vals("", "", 0)
	wantKVs(t, "all", got, all...)
	if more {
		t.Fatal("more=true with no max")
	}
	got, more = vals("", "", 3)
	wantKVs(t, "max 3", got, all[:3]...)
	if !more {
		t.Fatal("more=false with 4 left")
	}
	got, more = vals("a3", "", 0)
	wantKVs(t, "start_after", got, all[4:]...)
	got, more = vals("a10", "a", 2)
	wantKVs(t, "start_after+prefix+max", got, all[2:4]...)
	if more {
		t.Fatal("more=true after last prefix match")
	}
	got, _ = vals("", "b", 0)
	wantKVs(t, "prefix b", got, all[4:6]...)
	got, _ = vals("zzz", "", 0)
	wantKVs(t, "start_after past end", got)
	got, _ = vals("", "a1", 0)
	wantKVs(t, "prefix a1", got, all[:2]...)
	got, _ = vals("b", "a", 0) // start_after beyond the prefix
	wantKVs(t, "start_after beyond prefix", got)
	got, more = vals("", "a", 4)
	if wantKVs(t, "prefix exactly max", got, all[:4]...); more {
		t.Fatal("more=true when exactly max keys match the prefix")
	}

	op := objstore.NewReadOp()
	keys := op.GetOmapKeys("a2", 3)
	byKeys := op.GetOmapValuesByKeys("c", "missing", "a1", "c")
	hdr := op.GetOmapHeader()
	readOp(t, io, "o", op)
	if fmt.Sprint(keys.Keys) != "[a3 b1 b2]" || !keys.More {
		t.Fatalf("get keys: %v more=%v", keys.Keys, keys.More)
	}
	wantKVs(t, "by keys", byKeys.Pairs, kv("a1", "va1"), kv("c", "vc"))
	if string(hdr.Header) != "H" {
		t.Fatalf("header %q", hdr.Header)
	}

	operate(t, io, "o", objstore.NewWriteOp().RmOmapKeys("a1", "nope").SetOmap(kv("a2", "new")))
	got, _ = vals("", "", 0)
	wantKVs(t, "rm keys", got, kv("a10", "va10"), kv("a2", "new"), kv("a3", "va3"), kv("b1", "vb1"), kv("b2", "vb2"), kv("c", "vc"))
	operate(t, io, "o", objstore.NewWriteOp().OmapRmRange("a2", "b2"))
	got, _ = vals("", "", 0)
	wantKVs(t, "rm range [a2,b2)", got, kv("a10", "va10"), kv("b2", "vb2"), kv("c", "vc"))
	operate(t, io, "o", objstore.NewWriteOp().OmapRmRange("b", ""))
	got, _ = vals("", "", 0)
	wantKVs(t, "rm range [b,)", got, kv("a10", "va10"))
	operate(t, io, "o", objstore.NewWriteOp().SetOmap(kv("x", "1")).OmapClear().SetOmap(kv("y", "2")))
	got, _ = vals("", "", 0)
	wantKVs(t, "clear then set", got, kv("y", "2"))
	op = objstore.NewReadOp()
	hdr = op.GetOmapHeader()
	readOp(t, io, "o", op)
	if string(hdr.Header) != "H" {
		t.Fatalf("omap clear changed the header to %q", hdr.Header)
	}

	// Many keys removed by range (a backend may switch strategies).
	var many []objstore.KV
	for i := 0; i < 1000; i++ {
		many = append(many, kv(fmt.Sprintf("k%04d", i), "v"))
	}
	operate(t, io, "many", objstore.NewWriteOp().SetOmap(many...))
	operate(t, io, "many", objstore.NewWriteOp().OmapRmRange("k0100", "k0900"))
	op = objstore.NewReadOp()
	ks := op.GetOmapKeys("", 0)
	readOp(t, io, "many", op)
	if len(ks.Keys) != 200 || ks.Keys[99] != "k0099" || ks.Keys[100] != "k0900" {
		t.Fatalf("after range removal: %d keys", len(ks.Keys))
	}
	operate(t, io, "many", objstore.NewWriteOp().SetOmap(many[:500]...).OmapClear())
	op = objstore.NewReadOp()
	ks = op.GetOmapKeys("", 0)
	readOp(t, io, "many", op)
	if len(ks.Keys) != 0 {
		t.Fatalf("after clear: %d keys", len(ks.Keys))
	}
}

// testOmapOddKeys: byte order with high bytes, control bytes and UTF-8,
// and paging that never skips or repeats.
func testOmapOddKeys(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	keys := []string{"\x01", "\x01\x01", "\x7f", "\xff", "\xff\xff", "a\xffb", "a", "a\x01", "ä", "日本", " ", "a b", "A", "~", strings.Repeat("k", objstore.MaxOmapKeyLen)}
	for i := 0; i < 300; i++ {
		keys = append(keys, fmt.Sprintf("p/%03d/\xfe%c", i, 'a'+i%26))
	}
	var pairs []objstore.KV
	for _, k := range keys {
		pairs = append(pairs, objstore.KV{Key: k, Value: []byte(k)})
	}
	operate(t, io, "o", objstore.NewWriteOp().SetOmap(pairs...))
	sort.Strings(keys)
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		op := objstore.NewReadOp()
		s := op.GetOmapValues(after, "", 7)
		readOp(t, io, "o", op)
		for _, p := range s.Pairs {
			if p.Key != string(p.Value) {
				t.Fatalf("key %q has value %q", p.Key, p.Value)
			}
			got = append(got, p.Key)
		}
		if !s.More {
			break
		}
		if len(s.Pairs) != 7 {
			t.Fatalf("page of %d with more=true", len(s.Pairs))
		}
		after = s.Pairs[len(s.Pairs)-1].Key
		if pages > 100 {
			t.Fatal("paging does not end")
		}
	}
	if strings.Join(got, "|") != strings.Join(keys, "|") {
		t.Fatalf("paged keys differ from sorted keys:\n got %q\nwant %q", got, keys)
	}
	// Prefix paging over the p/ keys.
	var pk []string
	after = ""
	for {
		op := objstore.NewReadOp()
		s := op.GetOmapValues(after, "p/", 64)
		readOp(t, io, "o", op)
		for _, p := range s.Pairs {
			pk = append(pk, p.Key)
		}
		if !s.More {
			break
		}
		after = s.Pairs[len(s.Pairs)-1].Key
	}
	if len(pk) != 300 || !sort.StringsAreSorted(pk) {
		t.Fatalf("prefix paging returned %d keys (sorted=%v)", len(pk), sort.StringsAreSorted(pk))
	}
	// A prefix ending in 0xff.
	op := objstore.NewReadOp()
	s := op.GetOmapValues("", "\xff", 0)
	readOp(t, io, "o", op)
	wantKVs(t, "prefix 0xff", s.Pairs, kv("\xff", "\xff"), kv("\xff\xff", "\xff\xff"))
}

func testStat(t *testing.T, st objstore.Store) {
	io := newPool(t, st)
	before := time.Now()
	v1 := operate(t, io, "o", objstore.NewWriteOp().WriteFull([]byte("12345")))
	after := time.Now()
	s, ok := stat(t, io, "o")
	if !ok || s.Size != 5 || s.Version != v1 || v1 == 0 {
		t.Fatalf("stat %+v exists=%v, op version %d", s, ok, v1)
	}
	if s.ModTime.Before(before.Add(-2*time.Second)) || s.ModTime.After(after.Add(2*time.Second)) {
		t.Fatalf("mtime %v not within [%v, %v]", s.ModTime, before, after)
	}
	mt := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	v2 := operate(t, io, "o", objstore.NewWriteOp().SetXattr("a", nil).SetMtime(mt))
	s, _ = stat(t, io, "o")
	if !s.ModTime.Equal(mt) || s.Version != v2 || v2 <= v1 {
		t.Fatalf("after set_mtime: %+v (v1=%d v2=%d)", s, v1, v2)
	}
	// Versions strictly increase, whatever the step.
	last := v2
	for _, op := range []*objstore.WriteOp{
		objstore.NewWriteOp().SetOmap(kv("k", "v")), objstore.NewWriteOp().Append([]byte("x")),
		objstore.NewWriteOp().Truncate(1), objstore.NewWriteOp().RmXattr("a"),
	} {
		v := operate(t, io, "o", op)
		if v <= last {
			t.Fatalf("version %d after %d", v, last)
		}
		last = v
	}
	op := objstore.NewReadOp()
	ss := op.Stat()
	readOp(t, io, "missing", op)
	if ss.Exists || ss.Stat.Version != 0 || ss.Stat.Size != 0 {
		t.Fatalf("stat of missing object: %+v", ss)
	}
}
