package bucketindex

import (
	"encoding/json"
	"testing"
	"time"
)

// entrySizeSeq's scan must agree with a full decode for every entry shape
// the class writes (the stats of copy and replay depend on it).
func TestEntrySizeSeqMatchesDecode(t *testing.T) {
	for _, key := range []string{"a", `q"uote`, `,"s":7`, `,"q":9`, "ünï\x01code", "a\\b"} {
		for _, e := range []Entry{
			{Key: key, Size: 42, ETag: "x", Tag: "t"},
			{Key: key, Size: 0, Seq: 7, VersionID: "null", Tag: "t"},
			{Key: key, Size: 1 << 40, Seq: 1 << 62, VersionID: VersionID(1<<62, "t"), Tag: "t", ModTime: time.Unix(1, 0)},
			{Key: key, Seq: 3, Marker: true, Tag: "m"},
		} {
			b, _ := json.Marshal(e)
			sz, seq, err := entrySizeSeq(b)
			if err != nil || sz != e.Size || seq != e.Seq {
				t.Fatalf("%s: size %d seq %d err %v; want %d %d", b, sz, seq, err, e.Size, e.Seq)
			}
		}
	}
	b, _ := json.Marshal(nullPtr{K: "k", Q: 5})
	if sz, seq, err := entrySizeSeq(b); err != nil || sz != 0 || seq != 5 {
		t.Fatalf("null pointer: %d %d %v", sz, seq, err)
	}
}

// Version record keys round-trip, sort by (name, newest first), and place
// with their object name.
func FuzzVerKey(f *testing.F) {
	f.Add("a", uint64(1))
	f.Add("a\x01b\x01\x01", uint64(1<<63))
	f.Fuzz(func(t *testing.T, key string, seq uint64) {
		if validKey(key) != nil || seq == 0 {
			return
		}
		k := verKey(key, seq)
		got, s, ok := decodeVerKey(k)
		if !ok || got != key || s != seq {
			t.Fatalf("%q %d → %q → %q %d %v", key, seq, k, got, s, ok)
		}
		if seq > 1 && verKey(key, seq) >= verKey(key, seq-1) {
			t.Fatalf("newer version does not sort first")
		}
		if PlaceOf(k, 13) != ShardOf(key, 13) || PlaceOf(nullKey(key), 13) != ShardOf(key, 13) {
			t.Fatalf("placement of %q differs from its name's", key)
		}
		if other := key + "\x01"; verKey(other, 1<<63) <= verKey(key, 1) {
			t.Fatalf("a longer name sorts among %q's versions", key)
		}
	})
}
