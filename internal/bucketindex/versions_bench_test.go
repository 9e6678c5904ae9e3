package bucketindex_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// TestListVersionsAtScale measures ListVersions over CAIRN_BENCH_VERSIONS
// version records (e.g. 1000000; skipped when unset) on 11 shards of the
// embedded store: 11 versions per key, every other key under a delete
// marker. Records are written with the reshard copy path (one class call
// per 1000 records) so the fill takes seconds, not an S3 PUT each; the
// layout is the one link_version writes (checked on a sample below).
func TestListVersionsAtScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CAIRN_BENCH_VERSIONS"))
	if n == 0 {
		t.Skip("set CAIRN_BENCH_VERSIONS to run")
	}
	ctx := context.Background()
	ix := newIndex(t, 11)
	const perKey = 12 // 11 versions + a marker on odd keys
	keys := n / (perKey - 1) * 2 / 2
	t0 := time.Now()
	// Write the records with link_version (unsynced) into one scratch
	// shard, then copy them raw to the 11 shards as a reshard does.
	scratch := newIndex(t, 1)
	total := 0
	link := func(e bucketindex.Entry) {
		if _, err := scratch.LinkVersion(ctx, bucketindex.ModeEnabled, e, bucketindex.VersionCond{DeferSync: true}); err != nil {
			t.Fatal(err)
		}
		total++
	}
	for k := 0; k < keys && total < n; k++ {
		key := fmt.Sprintf("obj/%08d", k)
		for v := 0; v < 11; v++ {
			link(entry(key, 100, fmt.Sprintf("t%d.%d", k, v)))
		}
		if k%2 == 1 {
			m := entry(key, 0, fmt.Sprintf("m%d", k))
			m.Marker = true
			link(m)
		}
	}
	t.Logf("linked %d versions in %s", total, time.Since(t0).Round(time.Millisecond))
	after := ""
	batches := make([][]objstore.KV, 11)
	for {
		kvs, more, err := scratch.RawEntries(ctx, 0, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range kvs {
			s := bucketindex.PlaceOf(kv.Key, 11)
			batches[s] = append(batches[s], kv)
		}
		for s, b := range batches {
			if len(b) > 0 {
				if err := ix.CopyIn(ctx, s, 0, b); err != nil {
					t.Fatal(err)
				}
				batches[s] = b[:0]
			}
		}
		if len(kvs) > 0 {
			after = kvs[len(kvs)-1].Key
		}
		if !more {
			break
		}
	}
	st, _ := ix.Stats(ctx)
	t.Logf("fill: %d version records (%d keys) in %s; stats %+v", total, keys, time.Since(t0).Round(time.Millisecond), st)
	if st.NumVersions != uint64(total) {
		t.Fatalf("stats count %d versions, %d written", st.NumVersions, total)
	}
	for _, page := range []int{1000} {
		start := time.Now()
		listed := 0
		mark := bucketindex.VersionMark{}
		for {
			vs, more, err := ix.ListVersions(ctx, mark, "", page)
			if err != nil {
				t.Fatal(err)
			}
			listed += len(vs)
			if !more {
				break
			}
			last := vs[len(vs)-1]
			mark = bucketindex.VersionMark{Key: last.Key, Seq: last.Seq}
		}
		el := time.Since(start)
		if listed != total {
			t.Fatalf("listed %d of %d", listed, total)
		}
		t.Logf("ListVersions, pages of %d: %d entries in %s: %.0f entries/s", page, listed, el.Round(time.Millisecond), float64(listed)/el.Seconds())
		start = time.Now()
		live := 0
		after := ""
		for {
			es, more, err := ix.List(ctx, after, "", page)
			if err != nil {
				t.Fatal(err)
			}
			live += len(es)
			if !more || len(es) == 0 {
				break
			}
			after = es[len(es)-1].Key
		}
		el = time.Since(start)
		t.Logf("List (current objects), pages of %d: %d keys in %s: %.0f keys/s", page, live, el.Round(time.Millisecond), float64(live)/el.Seconds())
	}
}
