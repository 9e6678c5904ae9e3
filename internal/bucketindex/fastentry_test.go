package bucketindex

import (
	"encoding/json"
	"math/rand"
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
		// Inline runs: bytes of every kind in Data (standard base64), an
		// empty body (no "d"), and a stored run with a pool and key name.
		{Key: "i", Size: 6, ETag: "e", ModTime: t0, Tag: "t2", Manifest: Manifest{Runs: []Run{{Prefix: "t2", Size: 6, Inline: true, Data: []byte{0, 0xff, '"', '\\', '<', 'z'}}}}},
		{Key: "j", ETag: "e", ModTime: t0, Tag: "t3", Manifest: Manifest{Runs: []Run{{Prefix: "t3", Inline: true}, {Prefix: "t4", Size: 9, StripeSize: 4, Pool: "cold", KeyName: "kk"}}}},
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
	if fast != 5 {
		t.Fatalf("fast path took %d of the entries, want the 5 plain ones", fast)
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
	for _, t := range []string{"2026-11-26T10:00:00.5Z", "2026-11-26T10:00:00.123456789Z", "2026-11-26T10:00:00.1234567890Z",
		"2026-02-29T10:00:00Z", "2028-02-29T10:00:00Z", "1900-02-29T00:00:00Z", "2026-11-26T10:00:00+01:00", "2026-11-26T10:00:00.Z", "-026-11-26T10:00:00Z"} {
		f.Add([]byte(`{"k":"a","t":"` + t + `"}`))
	}
	f.Add([]byte(`{"s":-123456789012345678,"q":1234567890123456789}`))
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

// listingView is what a listing decode keeps of an entry.
func listingView(e Entry) Entry {
	e.Tag, e.Manifest = "", Manifest{}
	if len(e.Meta) == 0 {
		e.Meta = nil
	}
	return e
}

// A listing decode keeps every field but Tag and Manifest, as encoding/json
// reads them, through the fast path or the fallback.
func TestDecodeListing(t *testing.T) {
	es := append(sampleEntries(), Entry{Key: "c", ETag: "e", Class: "COLD", Owner: "o", VersionID: "v1", Seq: 2, Parts: 2,
		Manifest: Manifest{Runs: []Run{{Prefix: "a"}, {Prefix: "b"}}}, Meta: json.RawMessage(`{"acl":{"owner":{"id":"x"}}}`)})
	fast := 0
	for _, e := range es {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var want Entry
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeListing("", b)
		if err != nil || !reflect.DeepEqual(listingView(got), listingView(want)) {
			t.Fatalf("decodeListing(%s) = %+v, %v; want %+v", b, got, err, listingView(want))
		}
		// With the omap key known, or a wrong one: the same entry.
		for _, known := range []string{want.Key, want.Key + "x"} {
			var k Entry
			if err := decodeListingInto(&k, b, known); err != nil || !reflect.DeepEqual(listingView(k), listingView(want)) {
				t.Fatalf("decodeListingInto(%s, %q) = %+v, %v; want %+v", b, known, k, err, listingView(want))
			}
		}
		if _, ok := fastDecodeListing(b); ok {
			fast++
		}
	}
	if fast != 6 {
		t.Fatalf("fast path took %d of the entries, want the 6 plain ones", fast)
	}
}

// Whatever both fast paths accept, they agree on a listing's fields.
func FuzzFastDecodeListing(f *testing.F) {
	for _, e := range sampleEntries() {
		b, _ := json.Marshal(e)
		f.Add(b)
	}
	f.Add([]byte(`{"k":"a","sc":"C","o":"","i":"v","m":{"r":[{"p":"}"}]},"x":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := fastDecodeListing(b)
		if !ok {
			return
		}
		want, ok := fastDecodeEntry(b)
		if !ok {
			return // e.g. a meta that is not JSON: the listing does not check it
		}
		if !reflect.DeepEqual(listingView(got), listingView(want)) {
			t.Fatalf("%q: listing %+v, full %+v", b, got, want)
		}
		var k Entry
		if !fastDecodeInto(&k, b, true, want.Key) || !reflect.DeepEqual(listingView(k), listingView(want)) {
			t.Fatalf("%q: listing with the key known %+v, full %+v", b, k, want)
		}
	})
}

// BenchmarkDecodeListing decodes a plain PUT's entry for a listing: as
// JSON (a shard's entry, a view member of an earlier build) and as the
// listing record the view keeps now.
func BenchmarkDecodeListing(b *testing.B) {
	e := sampleEntries()[0]
	raw, _ := json.Marshal(e)
	for _, c := range []struct {
		name string
		v    []byte
	}{{"json", raw}, {"record", projectListing(e.Key, raw)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var got Entry
				if err := decodeListingInto(&got, c.v, e.Key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// plain agrees with a byte-by-byte check at every length and position.
func TestPlain(t *testing.T) {
	slow := func(b []byte) bool {
		for _, c := range b {
			if c == '\\' || c < 0x20 || c >= 0x80 {
				return false
			}
		}
		return true
	}
	base := []byte("o/0123456789abcdef-0123456789")
	for n := 0; n <= len(base); n++ {
		for i := 0; i < n; i++ {
			for _, c := range []byte{0, 0x1f, 0x20, '"', '\\', '[', ']', 0x5b, 0x5d, 0x7f, 0x80, 0xc3, 0xff, 'a'} {
				b := append([]byte(nil), base[:n]...)
				b[i] = c
				if got, want := plain(b), slow(b); got != want {
					t.Fatalf("plain(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
}

// utcTime reads what json.Marshal writes for a UTC time exactly as
// time's own parser does, across years, leap days and fractions.
func TestUTCTime(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	check := func(tm time.Time) {
		t.Helper()
		b, _ := tm.MarshalJSON()
		got, ok := utcTime(b[1 : len(b)-1])
		var want time.Time
		if err := want.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		if !ok && tm.Year() >= 1 {
			t.Fatalf("utcTime(%s) refused", b)
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("utcTime(%s) = %v, want %v", b, got, want)
		}
	}
	for _, s := range []string{"0001-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "1969-12-31T23:59:59.999999999Z",
		"2000-02-29T12:00:00Z", "2024-02-29T23:59:59.5Z", "2100-03-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z"} {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		check(tm.UTC())
	}
	for i := 0; i < 20000; i++ {
		check(time.Unix(rng.Int63n(253402300799+62135596800)-62135596800, rng.Int63n(1e9)/int64(1+rng.Intn(3)*999)).UTC())
	}
	for _, bad := range []string{"0000-01-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:00:60Z"} {
		if _, ok := utcTime([]byte(bad)); ok {
			t.Errorf("utcTime(%s) accepted", bad)
		}
	}
}
