package bucketindex

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	gojson "github.com/goccy/go-json"
)

// entryClass's scan must agree with a full decode, also when the key or
// the metadata look like a class field.
func TestEntryClassMatchesDecode(t *testing.T) {
	for _, key := range []string{"a", `,"sc":"COLD"}`, `x"}`} {
		for _, meta := range []string{"", `{"sc":"GLACIER"}`, `{"um":{"a":",\"sc\":\"X\"}"}}`} {
			for _, class := range []string{"", "COLD", "STANDARD_IA"} {
				e := Entry{Key: key, Size: 3, Tag: "t", Class: class,
					Manifest: Manifest{Runs: []Run{{Prefix: "t", Size: 3, StripeSize: 4 << 20}}}}
				if meta != "" {
					e.Meta = json.RawMessage(meta)
				}
				for _, marshal := range []func(any) ([]byte, error){json.Marshal, gojson.Marshal} {
					b, err := marshal(e)
					if err != nil {
						t.Fatal(err)
					}
					got, err := entryClass(b)
					if err != nil || string(got) != class {
						t.Fatalf("entryClass(%s) = %q, %v; want %q", b, got, err, class)
					}
				}
			}
		}
	}
	// A shape the scan does not know is decoded.
	got, err := entryClass([]byte(`{"sc":"COLD","k":"a","s":1}`))
	if err != nil || string(got) != "COLD" {
		t.Fatalf("reordered entry: %q %v", got, err)
	}
}

// Old headers decode with no class stats; new ones round-trip; a
// truncated class record is refused.
func TestShardHeaderClasses(t *testing.T) {
	h := shardHeader{Stats: Stats{NumObjects: 3, Size: 30, NumVersions: 5, VersionSize: 50, Legacy: 1}, LogSeq: 9}
	old := h.encode()
	if len(old) != 48 {
		t.Fatalf("a header without classes is %d bytes, want 48 (the format before classes)", len(old))
	}
	if d, err := decodeHeader(old); err != nil || !reflect.DeepEqual(d, h) {
		t.Fatalf("48-byte header: %+v %v", d, err)
	}
	h.addClass([]byte("GLACIER"), 1, 10, 2, 20, 1)
	h.addClass([]byte("COLD"), 0, 0, 1, 7, 1)
	b := h.encode()
	d, err := decodeHeader(b)
	if err != nil || !reflect.DeepEqual(d, h) {
		t.Fatalf("round trip: %+v %v want %+v", d, err, h)
	}
	if d.Classes[0].Class != "COLD" || d.Classes[1].Class != "GLACIER" {
		t.Fatalf("classes not sorted: %+v", d.Classes)
	}
	if !bytes.Equal(b[:48], old) {
		t.Fatal("class records changed the first 48 bytes")
	}
	if _, err := decodeHeader(b[:len(b)-1]); err == nil {
		t.Fatal("truncated class record accepted")
	}
	// Removing the last of a class drops its record; removing from a
	// class never counted (a header from before classes) stays at 0.
	h.addClass([]byte("COLD"), 0, 0, 1, 7, -1)
	h.addClass([]byte("NEW"), 1, 1, 1, 1, -1)
	h.addClass([]byte("GLACIER"), 2, 100, 2, 100, -1)
	if len(h.Classes) != 0 || len(h.encode()) != 48 {
		t.Fatalf("classes left: %+v", h.Classes)
	}
}

func accountInputs() (std, cold []byte) {
	e := Entry{Key: "some/key", Size: 4096, Seq: 9, VersionID: VersionID(9, "t"), ETag: "e", Tag: "t",
		Manifest: Manifest{Runs: []Run{{Prefix: "t", Size: 4096, StripeSize: 4 << 20}}}, Meta: json.RawMessage(`{"ct":"text/plain"}`)}
	std, _ = gojson.Marshal(e)
	e.Class = "COLD"
	cold, _ = gojson.Marshal(e)
	return std, cold
}

// account runs twice per index write: class accounting must not
// allocate once the shard has a record for the class.
func TestAccountAllocs(t *testing.T) {
	std, cold := accountInputs()
	var h shardHeader
	if err := account(&h, "some/key", cold, 1); err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string][]byte{"STANDARD": std, "COLD": cold} {
		if n := testing.AllocsPerRun(100, func() {
			_ = account(&h, "some/key", raw, 1)
			_ = account(&h, "some/key", raw, -1)
		}); n != 0 {
			t.Errorf("%s: account allocates %.0f times", name, n)
		}
	}
	if len(h.Classes) != 1 || h.Classes[0].NumObjects != 1 {
		t.Fatalf("header %+v", h)
	}
}

func BenchmarkAccount(b *testing.B) {
	std, cold := accountInputs()
	for name, raw := range map[string][]byte{"STANDARD": std, "COLD": cold} {
		b.Run(name, func(b *testing.B) {
			var h shardHeader
			_ = account(&h, "other", cold, 1) // the shard holds COLD data
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_ = account(&h, "some/key", raw, 1)
				_ = account(&h, "some/key", raw, -1)
			}
		})
	}
}
