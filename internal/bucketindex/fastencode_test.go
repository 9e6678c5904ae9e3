package bucketindex

import (
	"bytes"
	stdjson "encoding/json"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// The fast encoders write json.Marshal's bytes, and leave escapes,
// non-ASCII and uncompact Meta to it.
func TestFastEncode(t *testing.T) {
	fast := 0
	es := sampleEntries()
	for i := range es {
		want, err := json.Marshal(es[i])
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := appendEntry(nil, &es[i]); ok {
			fast++
			if !bytes.Equal(got, want) {
				t.Fatalf("entry %d:\nfast %s\nwant %s", i, got, want)
			}
		}
		if got, err := encodeEntry(&es[i]); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("encodeEntry %d: %s, %v; want %s", i, got, err, want)
		}
	}
	if fast != 5 {
		t.Fatalf("fast path took %d of the entries, want the 5 plain ones", fast)
	}
	ins := []linkVersionIn{
		{Entry: es[0], Mode: ModeEnabled, IfAbsent: true, IfExists: true, IfETag: "a", IfNoneETag: "b", IfTag: "c", GCTime: -7},
		{Entry: es[1]},
		{Entry: es[2], IfETag: "x"},   // fallback: the entry
		{Entry: es[0], IfTag: "a\"b"}, // fallback: a condition
	}
	for i := range ins {
		want, _ := json.Marshal(ins[i])
		if got, err := encodeLinkVersionIn(&ins[i]); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("link input %d:\nfast %s\nwant %s", i, got, want)
		}
	}
	rs := []VersionResult{
		{Entry: es[0], Retry: true, Freed: es[:2], Current: &es[1], MarkerCurrent: true, CurrentIsEntry: true},
		{Entry: es[1]},
		{Entry: es[0], Freed: es[1:3]}, // fallback in Freed
		{Entry: es[0], Current: &es[3]},
	}
	for i := range rs {
		want, _ := json.Marshal(rs[i])
		if got, err := encodeVersionResult(&rs[i]); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("result %d:\nfast %s\nwant %s", i, got, want)
		}
	}
}

// Whatever the fast path writes, json.Marshal writes the same bytes.
func FuzzFastEncodeEntry(f *testing.F) {
	f.Add("o/k", "etag", "tag", "b1/k.tag", "", []byte(`{"ct":"text/plain; x=1","m":{"a":"{b}"}}`), int64(1764138600), 0, int64(64), uint64(3))
	f.Add("a<b", "e", "t", "p", "pool", []byte(`{"a": 1}`), int64(0), 3600, int64(-1), uint64(0))
	f.Add("k", "", "", "", "", []byte(`"\u2028\"x"`), int64(-62135596801), -5400, int64(0), uint64(1))
	f.Add("k", "e", "g", "p", "", []byte(`{"a":"\\"}`), int64(253402300800), 59, int64(1), uint64(1))
	f.Fuzz(func(t *testing.T, key, etag, tag, prefix, pool string, meta []byte, secs int64, off int, size int64, seq uint64) {
		if off < -100000 || off > 100000 {
			return
		}
		e := Entry{Key: key, Size: size, Seq: seq, ETag: etag, ModTime: time.Unix(secs, 123456789).In(time.FixedZone("z", off)), Tag: tag,
			Manifest: Manifest{Runs: []Run{{Prefix: prefix, Size: size, StripeSize: 4 << 20, Pool: pool}}}, Meta: meta, Class: pool}
		// Writers store only Meta that json.Marshal accepts (they make it
		// with json.Marshal); go-json's Valid takes `""}0` and its Marshal
		// refuses numbers beyond float64, so ask both.
		if _, err := json.Marshal(json.RawMessage(meta)); err != nil || !stdjson.Valid(meta) {
			e.Meta = nil
		}
		got, ok := appendEntry(nil, &e)
		if !ok {
			return
		}
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("fast path wrote %s, json.Marshal failed: %v", got, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("\nfast %s\nwant %s", got, want)
		}
	})
}

func BenchmarkEncodeEntry(b *testing.B) {
	e := sampleEntries()[0]
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeEntry(&e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
