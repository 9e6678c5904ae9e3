package bucketindex

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// parseRawLog must agree with a full decode for every record mutate can
// write, and refuse (so the caller decodes fully) what it cannot read.
func TestParseRawLogMatchesDecode(t *testing.T) {
	keys := []string{"a", "obj/000001", "with space", "ünïcödé/ключ", `quote"d`, `back\slash`, "<html>&amp;", "tab\tkey", "\xffnot-utf8"}
	for _, key := range keys {
		for _, op := range []string{"link", "unlink"} {
			e := Entry{Key: key, Tag: "tag1"}
			if op == "link" {
				e = Entry{Key: key, Size: 42, ETag: `"abc"`, ModTime: time.Unix(1700000000, 5).UTC(), Owner: "u", Tag: "tag1"}
			}
			v, err := json.Marshal(LogRecord{Op: op, Entry: e})
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				Op string          `json:"op"`
				E  json.RawMessage `json:"e"`
			}
			var k struct {
				K string `json:"k"`
			}
			if err := json.Unmarshal(v, &rec); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(rec.E, &k); err != nil {
				t.Fatal(err)
			}
			gotOp, entry, gotKey, ok := parseRawLog(v)
			if !ok {
				if !bytes.Contains(v, []byte(`\`)) {
					t.Fatalf("%s %q: fast path refused %s", op, key, v)
				}
				continue // escaped key: the full decode handles it
			}
			if gotKey != k.K || gotOp != op[0] || !bytes.Equal(entry, rec.E) {
				t.Fatalf("%s %q: fast path gave op %c key %q entry %s; decode: key %q entry %s", op, key, gotOp, gotKey, entry, k.K, rec.E)
			}
		}
	}
	for _, bad := range []string{``, `{}`, `{"op":"link","e":{}}`, `{"op":"link","e":{"k":"x"}`, `{"op":"move","e":{"k":"x"}}`, `{"op":"link", "e":{"k":"x"}}`} {
		if _, _, _, ok := parseRawLog([]byte(bad)); ok {
			t.Fatalf("fast path accepted %s", bad)
		}
	}
}
