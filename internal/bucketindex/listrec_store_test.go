package bucketindex

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestListEarlierBuildsView: a store whose view holds the JSON members an
// earlier build's listing projection wrote (with the key) lists unchanged
// after a restart with listing records, through List, Iter and CheckView,
// also once new writes have mixed records into the view; FixView turns
// every member into a record.
func TestListEarlierBuildsView(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	open := func(proj objstore.Projection) (*embedded.Store, Index) {
		reg := objstore.NewRegistry()
		register(reg, proj)
		st, err := embedded.Open(embedded.Options{Dir: "/ix", FS: fs, Classes: reg})
		if err != nil {
			t.Fatal(err)
		}
		st.CreatePool(ctx, "idx") // exists after the restart: fine
		io, err := st.IOContext(ctx, "idx")
		if err != nil {
			t.Fatal(err)
		}
		return st, Index{IO: io, BucketID: "bo", Layout: Layout{NumShards: 3, View: true}}
	}
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 5e8, time.UTC)
	mk := func(i int, tag string) Entry {
		e := Entry{Key: fmt.Sprintf("k/%03d", i), Size: int64(i), ETag: fmt.Sprintf("%032x", i*7919), ModTime: t0.Add(time.Duration(i) * time.Second),
			Tag: tag, Manifest: Manifest{Runs: []Run{{Prefix: tag, Size: int64(i), StripeSize: 4 << 20}}}}
		switch i % 5 {
		case 1:
			e.Owner, e.Class = "alice", "COLD"
		case 2:
			e.Meta = json.RawMessage(`{"acl":{"owner":{"id":"bob"}},"ct":"text/plain"}`)
		case 3:
			e.Meta = json.RawMessage(`{"ct":"text/plain"}`)
			e.ETag += "-3"
			e.Parts = 3
		case 4:
			e.Key += " é<&>" // escaped by json.Marshal, not ASCII
		}
		return e
	}
	st, ix := open(func(_ string, v []byte) []byte { return projectListingJSON(v) })
	if err := ix.Init(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if _, err := ix.Link(ctx, mk(i, fmt.Sprint("a", i)), LinkCond{}); err != nil {
			t.Fatal(err)
		}
	}
	records := func() (recs, jsons int) {
		kvs, _, err := ix.IO.(objstore.Viewer).ReadView(ctx, ix.BucketID, "", "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range kvs {
			switch {
			case isListingRecord(kv.Value):
				recs++
			case bytes.HasPrefix(kv.Value, []byte(`{"k":`)):
				jsons++
			default:
				t.Fatalf("view member %q: %q", kv.Key, kv.Value)
			}
		}
		return recs, jsons
	}
	if r, j := records(); r != 0 || j != 40 {
		t.Fatalf("the earlier build's view: %d records, %d JSON members", r, j)
	}
	want := func() []Entry {
		merge := ix
		merge.Layout.View = false
		es, _, err := merge.List(ctx, "", "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	check := func(stage string) {
		t.Helper()
		w := want()
		got, _, err := ix.List(ctx, "", "", 1000)
		if err != nil || !reflect.DeepEqual(got, w) {
			t.Fatalf("%s: view lists %+v (%v)\nwant %+v", stage, got, err, w)
		}
		it, err := ix.NewIter(ctx, "", "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		var walked []Entry
		for {
			e, ok, err := it.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			walked = append(walked, *e)
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		for i := range walked { // List leaves no empty Meta
			if len(walked[i].Meta) == 0 {
				walked[i].Meta = nil
			}
		}
		if !reflect.DeepEqual(walked, w) {
			t.Fatalf("%s: the view's iterator walks %+v\nwant %+v", stage, walked, w)
		}
		if diff, err := ix.CheckView(ctx, 0); err != nil || len(diff) != 0 {
			t.Fatalf("%s: CheckView reports %q (%v)", stage, diff, err)
		}
	}
	check("earlier build")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, ix = open(projectListing)
	defer st.Close()
	check("restarted")
	for i := 30; i < 50; i++ { // 10 overwritten, 10 new
		if _, err := ix.Link(ctx, mk(i, fmt.Sprint("b", i)), LinkCond{}); err != nil {
			t.Fatal(err)
		}
	}
	if r, j := records(); r != 20 || j != 30 {
		t.Fatalf("mixed view: %d records, %d JSON members; want 20, 30", r, j)
	}
	check("mixed")
	var keys []string
	for _, e := range want() {
		keys = append(keys, e.Key)
	}
	if err := ix.FixView(ctx, keys); err != nil {
		t.Fatal(err)
	}
	if r, j := records(); r != 50 || j != 0 {
		t.Fatalf("after FixView: %d records, %d JSON members", r, j)
	}
	check("fixed")
}
