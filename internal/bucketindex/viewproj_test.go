package bucketindex

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// shown is what a listing shows of an entry (listedInfo's fields, with
// Meta only for its ACL).
func shown(e Entry) Entry {
	e.Tag, e.Manifest, e.Version = "", Manifest{}, 0
	if !bytes.Contains(e.Meta, []byte(MetaACLField)) {
		e.Meta = nil
	}
	return e
}

func projectionSamples() []Entry {
	return append(sampleEntries(),
		Entry{Key: "c", ETag: "e", Class: "COLD", Owner: "o", VersionID: "v1", Seq: 2, Parts: 2, Version: 7, Tag: "g",
			Manifest: Manifest{Runs: []Run{{Prefix: "a", Pool: "p"}, {Prefix: "b"}}}, Meta: json.RawMessage(`{"acl":{"owner":{"id":"x"}},"m":{"k":"a\"}{"}}`)},
		Entry{Key: `q"uo\te}{`, ETag: "e", Meta: json.RawMessage(`{"ct":"a,b}","m":{"x":"\u00e9"}}`)})
}

// The projection keeps what a listing reads, drops the rest, is
// idempotent, and decodes (through either path) to the entry's listing.
func TestProjectListing(t *testing.T) {
	for _, e := range projectionSamples() {
		for _, enc := range []func(*Entry) ([]byte, error){
			encodeEntry,
			func(e *Entry) ([]byte, error) { return json.Marshal(e) },
		} {
			full, err := enc(&e)
			if err != nil {
				t.Fatal(err)
			}
			p := projectListing(e.Key, full)
			if !json.Valid(p) {
				t.Fatalf("projection of %s is not JSON: %s", full, p)
			}
			var members map[string]json.RawMessage
			if err := json.Unmarshal(p, &members); err != nil {
				t.Fatal(err)
			}
			for _, gone := range []string{"g", "m", "v"} {
				if _, ok := members[gone]; ok {
					t.Fatalf("projection of %s keeps %q: %s", full, gone, p)
				}
			}
			if _, ok := members["x"]; ok != bytes.Contains(e.Meta, []byte(MetaACLField)) {
				t.Fatalf("projection of %s: meta kept %v: %s", full, ok, p)
			}
			if q := projectListing(e.Key, p); !bytes.Equal(q, p) {
				t.Fatalf("not idempotent: %s -> %s", p, q)
			}
			if len(p) > len(full) {
				t.Fatalf("projection grew: %s -> %s", full, p)
			}
			got, err := decodeListing(p)
			if err != nil {
				t.Fatal(err)
			}
			var want Entry
			if err := json.Unmarshal(full, &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(shown(got), shown(want)) {
				t.Fatalf("%s\nprojected %s\ndecodes to %+v\nwant       %+v", full, p, shown(got), shown(want))
			}
		}
	}
	// A typical PUT's entry loses about half its bytes.
	e := sampleEntries()[0]
	full, _ := encodeEntry(&e)
	if p := projectListing(e.Key, full); len(p)*10 > len(full)*6 {
		t.Fatalf("%d of %d bytes kept: %s", len(p), len(full), p)
	}
	for _, bad := range []string{"", "x", "{", `{"k"}`, `{"k":"a"`, `{"k":"a"}x`, `["k"]`, `{"k":"a",}`, `{"k":}`, `{"k":"a\"}`} {
		if got := projectListing("", []byte(bad)); string(got) != bad {
			t.Fatalf("%q projected to %q, want it unchanged", bad, got)
		}
	}
}

// Whatever the input, the projection of a projection is itself, and a
// projected entry decodes to the listing the whole entry decodes to.
func FuzzProjectListing(f *testing.F) {
	for _, e := range projectionSamples() {
		b, _ := json.Marshal(e)
		f.Add(b)
	}
	f.Add([]byte(`{"k":"a","x":{"acl":1},"g":[{"}":"{"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := projectListing("", b)
		if q := projectListing("", p); !bytes.Equal(q, p) {
			t.Fatalf("%q: not idempotent: %q -> %q", b, p, q)
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(b, &members) != nil {
			return
		}
		for name := range members {
			if entryFieldBit([]byte(name)) == 0 {
				return // not a name the encoders write (json matches names loosely)
			}
		}
		want, err := decodeListing(b)
		if err != nil {
			return // not an entry
		}
		got, err := decodeListing(p)
		if err != nil {
			t.Fatalf("%q: projected %q does not decode: %v", b, p, err)
		}
		if !reflect.DeepEqual(shown(got), shown(want)) {
			t.Fatalf("%q\nprojected %q\ndecodes to %+v\nwant %+v", b, p, shown(got), shown(want))
		}
	})
}

func BenchmarkProjectListing(b *testing.B) {
	e := sampleEntries()[0]
	full, _ := encodeEntry(&e)
	b.ReportAllocs()
	for b.Loop() {
		projectListing(e.Key, full)
	}
}
