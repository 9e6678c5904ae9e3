package bucketindex

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func sampleEntries() []Entry {
	t0 := time.Date(2026, 11, 26, 6, 30, 0, 123456789, time.UTC)
	return []Entry{
		{Key: "o/0123456789abcdef", Size: 64, Seq: 3, ETag: "0123456789abcdef0123456789abcdef", ModTime: t0, Owner: "bench", Tag: "tag_1",
			Manifest: Manifest{Runs: []Run{{Prefix: "b1/k.tag", Size: 64, StripeSize: 4 << 20}}}, Meta: json.RawMessage(`{"ct":"text/plain","m":{"a":"{b}"}}`)},
		{Key: "k", VersionID: "null", Marker: true, ModTime: t0.In(time.FixedZone("x", 3600)), Tag: "t", Parts: 3, Version: 9,
			Manifest: Manifest{Runs: []Run{{Prefix: "p", Size: 5, StripeSize: 1, Enc: true, Plain: 4}, {Prefix: "q"}}}},
		{Key: "a key with spaces & <html>", ETag: "e"}, // json.Marshal escapes <>&: the fallback decodes it
		{Key: "ключ", Size: -1},                        // non-ASCII: the fallback
		{},
	}
}

// The fast path decodes what json.Marshal writes exactly as encoding/json
// does, and leaves escapes and non-ASCII to it.
func TestFastDecodeEntry(t *testing.T) {
	fast := 0
	for _, e := range sampleEntries() {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var want Entry
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeEntry(b)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeEntry(%s) = %+v, %v; want %+v", b, got, err, want)
		}
		if _, ok := fastDecodeEntry(b); ok {
			fast++
		}
	}
	if fast != 3 {
		t.Fatalf("fast path took %d of the entries, want the 3 plain ones", fast)
	}
}

// Whatever the fast path accepts, encoding/json decodes to the same entry.
func FuzzFastDecodeEntry(f *testing.F) {
	for _, e := range sampleEntries() {
		b, _ := json.Marshal(e)
		f.Add(b)
	}
	f.Add([]byte(`{"k":"a","k":"b"}`))
	f.Add([]byte(`{"K":"a"}`))
	f.Add([]byte(`{"s":01}`))
	f.Add([]byte(`{"t":"2026-11-26T24:00:00Z"}`))
	f.Add([]byte(`{"m":{"r":[]},"x":{"a":[1,{"b":"}"}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := fastDecodeEntry(b)
		if !ok {
			return
		}
		var want Entry
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json: %v", b, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fast %+v, encoding/json %+v", b, got, want)
		}
	})
}

func BenchmarkDecodeEntry(b *testing.B) {
	raw, _ := json.Marshal(sampleEntries()[0])
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeEntry(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var e Entry
			if err := json.Unmarshal(raw, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
