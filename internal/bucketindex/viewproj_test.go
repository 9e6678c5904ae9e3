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
// idempotent, and decodes (through either path) to the entry's listing:
// as a listing record when the record holds the entry exactly, else as
// JSON. A view member of an earlier build (the JSON projection, with the
// key) projects to the same bytes as the entry, which CheckView needs.
func TestProjectListing(t *testing.T) {
	records := 0
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
			if isListingRecord(p) {
				records++
				if bytes.Contains(p, []byte(e.Key)) && len(e.Key) > 2 {
					t.Fatalf("record of %s holds the key: %q", full, p)
				}
			} else {
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
			}
			if q := projectListing(e.Key, p); !bytes.Equal(q, p) {
				t.Fatalf("not idempotent: %q -> %q", p, q)
			}
			if old := projectListingJSON(full); !bytes.Equal(projectListing(e.Key, old), p) {
				t.Fatalf("an earlier build's member %s projects to %q, the entry to %q", old, projectListing(e.Key, old), p)
			}
			if len(p) > len(full) {
				t.Fatalf("projection grew: %s -> %q", full, p)
			}
			var want Entry
			if err := json.Unmarshal(full, &want); err != nil {
				t.Fatal(err)
			}
			got, err := decodeListing(e.Key, p)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(shown(got), shown(want)) {
				t.Fatalf("%s\nprojected %q\ndecodes to %+v\nwant       %+v", full, p, shown(got), shown(want))
			}
			// List's decode: the same entry, Meta its own.
			listed, err := listEntry(e.Key, p)
			if err != nil || !reflect.DeepEqual(listed, shown(want)) {
				t.Fatalf("%s\nlisted %+v, %v\nwant   %+v", full, listed, err, shown(want))
			}
		}
	}
	// All but the entry whose time is not UTC, by both encoders.
	if want := 2 * (len(projectionSamples()) - 1); records != want {
		t.Fatalf("%d listing records, want %d", records, want)
	}
	// A typical PUT's entry keeps about a fifth of its bytes.
	e := sampleEntries()[0]
	full, _ := encodeEntry(&e)
	if p := projectListing(e.Key, full); len(p)*5 > len(full) {
		t.Fatalf("%d of %d bytes kept: %q", len(p), len(full), p)
	}
	for _, bad := range []string{"", "x", "{", `{"k"}`, `{"k":"a"`, `{"k":"a"}x`, `["k"]`, `{"k":"a",}`, `{"k":}`, `{"k":"a\"}`} {
		if got := projectListing("a", []byte(bad)); string(got) != bad {
			t.Fatalf("%q projected to %q, want it unchanged", bad, got)
		}
	}
	// A member k that is not the omap key stays JSON (the key is kept).
	if p := projectListing("b", full); isListingRecord(p) || !bytes.Contains(p, []byte(`"k":"o/0123456789abcdef"`)) {
		t.Fatalf("entry under another key projected to %q", p)
	}
}

// A corrupt listing record fails its decode; it never decodes to another
// entry.
func TestListingRecordCorrupt(t *testing.T) {
	e := projectionSamples()[len(sampleEntries())] // every optional field, and an ACL
	full, _ := encodeEntry(&e)
	p := projectListing(e.Key, full)
	if !isListingRecord(p) {
		t.Fatalf("not a record: %q", p)
	}
	for n := 1; n < len(p); n++ {
		if p[1]&lrMeta != 0 && n > len(p)-len(e.Meta) {
			break // a cut Meta is the rest of the record: JSON's to refuse
		}
		if _, err := decodeListing(e.Key, p[:n]); err == nil {
			t.Fatalf("record cut to %d of %d bytes decoded", n, len(p))
		}
	}
	if _, err := decodeListing(e.Key, append(bytes.Clone(p[:len(p)-len(e.Meta)]), 0)); err != nil {
		t.Fatalf("record with a meta of one byte: %v", err) // the format's to carry, the driver's to refuse
	}
	q := bytes.Clone(p)
	q[1] &^= lrMeta
	if _, err := decodeListing(e.Key, q); err == nil {
		t.Fatalf("record with trailing bytes decoded")
	}
}

// Whatever the input, the projection of a projection is itself, a
// projected entry decodes to the listing the whole entry decodes to, and
// an earlier build's JSON member projects as the entry does.
func FuzzProjectListing(f *testing.F) {
	for _, e := range projectionSamples() {
		b, _ := json.Marshal(e)
		f.Add(e.Key, b)
		f.Add(e.Key+"x", b)
	}
	f.Add("a", []byte(`{"k":"a","x":{"acl":1},"g":[{"}":"{"}]}`))
	f.Add("a", []byte(`{"k":"a","x":{},"x":{"acl":{}},"\u0067":1}`))
	f.Fuzz(func(t *testing.T, key string, b []byte) {
		p := projectListing(key, b)
		if q := projectListing(key, p); !bytes.Equal(q, p) {
			t.Fatalf("%q: not idempotent: %q -> %q", b, p, q)
		}
		if q := projectListing(key, projectListingJSON(b)); !bytes.Equal(q, p) {
			t.Fatalf("%q: its JSON projection projects to %q, it to %q", b, q, p)
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
		want, err := decodeListing(key, b)
		if err != nil {
			return // not an entry
		}
		got, err := decodeListing(key, p)
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

// Whatever bytes a listing record holds, its decode does not panic, and
// what it decodes to encodes (through an entry's JSON and the projection)
// to a record that decodes to the same listing.
func FuzzDecodeListingRecord(f *testing.F) {
	for _, e := range projectionSamples() {
		full, _ := encodeEntry(&e)
		if p := projectListing(e.Key, full); isListingRecord(p) {
			f.Add(p)
		}
	}
	f.Add([]byte{listingRecord, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != listingRecord {
			b = append([]byte{listingRecord}, b...)
		}
		var e Entry
		if decodeListingRecord(&e, b, "k") != nil {
			return
		}
		var viaKey Entry
		if err := decodeListingRecordKey(&viaKey, b, "", []byte("k")); err != nil || !reflect.DeepEqual(viaKey, e) {
			t.Fatalf("%q: with the key as bytes %+v, %v; as a string %+v", b, viaKey, err, e)
		}
		full, err := json.Marshal(e)
		if err != nil || len(e.Meta) > 0 && !bytes.Contains(full, e.Meta) {
			return // a Meta that is not (compact) JSON: the record carries it as it is
		}
		p := projectListing("k", full)
		if !isListingRecord(p) {
			return // the JSON holds what a record does not (escapes)
		}
		got, err := decodeListing("k", p)
		if err != nil || !reflect.DeepEqual(shown(got), shown(e)) {
			t.Fatalf("%q decodes to %+v; its entry's record %q to %+v, %v", b, e, p, got, err)
		}
	})
}
