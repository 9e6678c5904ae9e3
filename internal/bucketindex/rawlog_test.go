package bucketindex

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cockroachdb/pebble/v2/vfs"
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

// TestLogNamesKeys: while a reshard copies a shard, each change logs the
// omap key it wrote (a record of a few bytes, not the entry: the entry
// went through the WAL and every compaction twice), and Resolve turns
// the records into what the target needs, from the source's current
// values: one per key, in the order of its last record, an unlink for a
// key gone. Records of the format before read as naming their key.
func TestLogNamesKeys(t *testing.T) {
	ctx := context.Background()
	reg := objstore.NewRegistry()
	Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: "/ix", FS: vfs.NewMem(), Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.CreatePool(ctx, "idx")
	io, _ := st.IOContext(ctx, "idx")
	ix := Index{IO: io, BucketID: "b1", Layout: Layout{Gen: 0, NumShards: 1}}
	if err := ix.Init(ctx); err != nil {
		t.Fatal(err)
	}
	entry := func(key string, size int64, tag string) Entry {
		return Entry{Key: key, Size: size, ETag: "e-" + tag, Tag: tag}
	}
	if _, err := ix.Link(ctx, entry("gone", 1, "t0"), LinkCond{}); err != nil {
		t.Fatal(err)
	}
	if err := ix.SetShardState(ctx, 0, StateChange{To: StateLogging}); err != nil {
		t.Fatal(err)
	}
	for i, k := range []string{"a", "b", "a", "ünï code"} {
		if _, err := ix.Link(ctx, entry(k, int64(i+1), fmt.Sprint("t", i+1)), LinkCond{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ix.Unlink(ctx, "gone", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.LinkVersion(ctx, "enabled", entry("v", 9, "t9"), VersionCond{}); err != nil {
		t.Fatal(err)
	}
	// A record as the format before wrote it, after the others.
	old, _ := json.Marshal(LogRecord{Op: "unlink", Entry: Entry{Key: "b"}})
	op := objstore.NewWriteOp()
	op.SetOmap(objstore.KV{Key: logKey(100), Value: old})
	if err := ix.IO.Operate(ctx, ix.ShardOID(0), op); err != nil {
		t.Fatal(err)
	}

	recs, more, err := ix.ReadLogRaw(ctx, 0, 0, 0)
	if err != nil || more {
		t.Fatalf("read log: %v more=%v", err, more)
	}
	var keys []string
	for _, r := range recs {
		if r.Op != 'k' || r.Entry != nil {
			t.Fatalf("record %+v: want a key", r)
		}
		keys = append(keys, r.Key)
	}
	// The versioned link logs its version record and, maybe, more keys
	// of "v" (null pointer, bare entry); every key it logs is one of v's.
	if len(keys) < 7 || !slices.Equal(keys[:5], []string{"a", "b", "a", "ünï code", "gone"}) || keys[len(keys)-1] != "b" {
		t.Fatalf("logged keys %q", keys)
	}
	for _, k := range keys[5 : len(keys)-1] {
		if !strings.Contains(k, "v") {
			t.Fatalf("versioned link logged %q", k)
		}
	}
	vals, _, err := ix.RawEntries(ctx, 0, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	cur := map[string][]byte{}
	for _, kv := range vals {
		cur[kv.Key] = kv.Value
	}
	res, err := ix.Resolve(ctx, 0, recs)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range res {
		order = append(order, r.Key)
		switch v, ok := cur[r.Key]; {
		case r.Op == 'l' && ok && bytes.Equal(r.Entry, v):
		case r.Op == 'u' && !ok && r.Key == "gone":
		case r.Op == 'l' && strings.Contains(r.Key, "v") && r.Entry != nil:
			// a version record or null pointer (RawEntries lists entries)
		default:
			t.Fatalf("resolved %c %q %s; current %q", r.Op, r.Key, r.Entry, v)
		}
	}
	if !slices.Equal(order[:3], []string{"a", "ünï code", "gone"}) || order[len(order)-1] != "b" {
		t.Fatalf("resolved keys %q, want a, ünï code, gone, v's, b", order)
	}
	// Stored records are small: the key and a mark.
	op2 := objstore.NewReadOp()
	lv := op2.GetOmapValues(logPrefix, logPrefix, 0)
	if err := ix.IO.OperateRead(ctx, ix.ShardOID(0), op2); err != nil {
		t.Fatal(err)
	}
	for _, kv := range lv.Pairs[:len(lv.Pairs)-1] {
		if len(kv.Value) > 1+len("\xffv/ünï code")+32 || kv.Value[0] != logMark {
			t.Fatalf("log record %q", kv.Value)
		}
	}
}
