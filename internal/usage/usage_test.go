package usage_test

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cairn-s3/cairn/internal/usage"
)

func newIO(t *testing.T) objstore.IOContext {
	t.Helper()
	st, err := embedded.Open(embedded.Options{Dir: "/d", FS: vfs.NewMem(), Classes: objstore.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	if err := st.CreatePool(ctx, "log"); err != nil {
		t.Fatal(err)
	}
	io, err := st.IOContext(ctx, "log")
	if err != nil {
		t.Fatal(err)
	}
	return io
}

// Two gateways (boot ids) count into the same hour; show sums them, per
// bucket and hour, with a summary; trim by user removes them.
func TestShowSumsGatewaysAndHours(t *testing.T) {
	ctx := context.Background()
	io := newIO(t)
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	a, _ := usage.New(usage.Options{IO: io, BootID: "gwa", Now: clock})
	b, _ := usage.New(usage.Options{IO: io, BootID: "gwb", Now: clock})
	a.Record("alice", "bk", "put_obj", 0, 100, true)
	a.Record("alice", "bk", "put_obj", 0, 50, false)
	b.Record("alice", "bk", "get_obj", 40, 0, true)
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	a.Record("alice", "bk", "put_obj", 0, 1, true) // cumulative: overwrites a's key
	now = now.Add(time.Hour)
	a.Record("alice", "", "list_buckets", 7, 0, true)
	a.Record("bob", "bb", "put_obj", 0, 3, true)
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := a.Show(ctx, usage.Query{UID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Entries) != 1 || len(rep.Entries[0].Buckets) != 2 {
		t.Fatalf("entries: %+v", rep.Entries)
	}
	first := rep.Entries[0].Buckets[0]
	if first.Bucket != "bk" || len(first.Categories) != 2 {
		t.Fatalf("first hour: %+v", first)
	}
	put := first.Categories[1]
	if put.Category != "put_obj" || put.Ops != 3 || put.SuccessfulOps != 2 || put.BytesReceived != 151 {
		t.Fatalf("put_obj: %+v", put)
	}
	if tot := rep.Summary[0].Total; tot.Ops != 5 || tot.BytesSent != 47 || tot.BytesReceived != 151 || tot.SuccessfulOps != 4 {
		t.Fatalf("summary: %+v", rep.Summary[0])
	}
	// A window of the first hour only.
	rep, _ = a.Show(ctx, usage.Query{UID: "alice", End: time.Unix(1_700_000_000, 0).Add(time.Minute)})
	if len(rep.Entries[0].Buckets) != 1 {
		t.Fatalf("windowed: %+v", rep.Entries)
	}
	if err := a.Trim(ctx, usage.Query{UID: "alice"}); err != nil {
		t.Fatal(err)
	}
	rep, _ = a.Show(ctx, usage.Query{})
	if len(rep.Entries) != 1 || rep.Entries[0].User != "bob" {
		t.Fatalf("after trim: %+v", rep.Entries)
	}
}
