package bucketindex_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// IfTag: a metadata-only rewrite (PutObjectAcl) applies only while the key
// still names the same write, and keeps the stats and GC state unchanged.
func TestLinkIfTag(t *testing.T) {
	ctx := context.Background()
	ix := newIndex(t, 1)
	e := entry("a", 10, "t1")
	if _, err := ix.Link(ctx, e, bucketindex.LinkCond{}); err != nil {
		t.Fatal(err)
	}
	e.Meta = json.RawMessage(`{"acl":{}}`)
	old, err := ix.Link(ctx, e, bucketindex.LinkCond{IfTag: "t1"})
	if err != nil || old == nil || old.Tag != "t1" {
		t.Fatalf("same-tag rewrite: %v %v", old, err)
	}
	got, err := ix.Get(ctx, "a")
	if err != nil || string(got.Meta) != `{"acl":{}}` {
		t.Fatalf("meta not rewritten: %+v %v", got, err)
	}
	if st, _ := ix.Stats(ctx); st.NumObjects != 1 || st.Size != 10 {
		t.Fatalf("stats %+v", st)
	}
	// An overwrite in between: the stale rewrite is refused.
	if _, err := ix.Link(ctx, entry("a", 4, "t2"), bucketindex.LinkCond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Link(ctx, e, bucketindex.LinkCond{IfTag: "t1"}); !errors.Is(err, objstore.ErrCanceled) {
		t.Fatalf("stale tag: %v", err)
	}
	if got, _ := ix.Get(ctx, "a"); got.Tag != "t2" {
		t.Fatalf("stale rewrite resurrected %s", got.Tag)
	}
	if _, err := ix.Link(ctx, entry("z", 1, "t9"), bucketindex.LinkCond{IfTag: "t9"}); !errors.Is(err, objstore.ErrCanceled) {
		t.Fatalf("missing key: %v", err)
	}
}
