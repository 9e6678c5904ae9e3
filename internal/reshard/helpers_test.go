package reshard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cairn-s3/cairn/internal/reshard"
)

// env is one store with a driver; managers come and go on it as gateways
// (and crashed gateways) would.
type env struct {
	t  testing.TB
	st objstore.Store
	d  *driver.Driver
	// clock offset applied to every Manager made after it changes:
	// advancing it makes earlier managers' leases look expired.
	mu   sync.Mutex
	skew time.Duration
	// copyLoad: managers made after it is set copy by bulk load.
	copyLoad bool
	// onHit, if set, sees every failpoint that crashing managers pass.
	onHit func(point string)
	// dyn is the transcripts' dynamic-check gateway (command "dynamic"),
	// on a clock that only "grow" and "reshard-dynamic" move.
	dyn     *reshard.Manager
	dynNow  time.Time
	dynHold time.Duration // added to the clock when a reshard copies
}

func newEnv(t testing.TB) *env { return newEnvView(t, true) }

// newEnvView: view false makes new buckets list by merging shards
// (driver.Options.NoIndexView), as on RADOS.
func newEnvView(t testing.TB, view bool) *env {
	t.Helper()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: "/d", FS: vfs.NewMem(), Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	d, err := driver.New(context.Background(), driver.Options{Store: st, DefaultShards: 3, GCMinWait: -1, NoIndexView: !view})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); st.Close() })
	return &env{t: t, st: st, d: d}
}

// manager returns a new Manager (a new gateway). crashAt names failpoints
// that stop its engine.
func (e *env) manager(crashAt ...string) *reshard.Manager {
	e.t.Helper()
	e.mu.Lock()
	skew := e.skew
	e.mu.Unlock()
	cfg := reshard.Config{
		Driver: e.d, Store: e.st, CopyBatch: 64, LeaseDuration: 5 * time.Second,
		Now: func() time.Time { return time.Now().Add(skew) }, CopyLoad: e.copyLoad,
		LoadChunk: 100, // several chunks for the tests' few hundred keys
		// A range replay round at every copy batch between chunks.
		MidReplayEvery: time.Nanosecond,
	}
	if len(crashAt) > 0 {
		// "point#k" fires at the k-th hit of point (a later chunk's).
		var mu sync.Mutex
		hits := map[string]int{}
		onHit := e.onHit
		cfg.Failpoints = &reshard.Failpoints{Hit: func(_, p string) bool {
			if onHit != nil {
				onHit(p)
			}
			mu.Lock()
			defer mu.Unlock()
			hits[p]++
			for _, c := range crashAt {
				name, k, _ := strings.Cut(c, "#")
				if name == p && (k == "" || k == strconv.Itoa(hits[p])) {
					return true
				}
			}
			return false
		}}
	}
	m, err := reshard.New(context.Background(), cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// expireLeases makes managers created from now on see every existing lease
// as lapsed (a crashed gateway's lease).
func (e *env) expireLeases() {
	e.mu.Lock()
	e.skew += time.Minute
	e.mu.Unlock()
}

func (e *env) bucket(name string, shards int) {
	e.t.Helper()
	if err := e.d.CreateBucket(context.Background(), "u", name, "", shards); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) put(bucket, key string, size int) error {
	_, err := e.d.PutObject(context.Background(), driver.PutObjectInput{
		Bucket: bucket, Key: key, Body: bytes.NewReader(make([]byte, size)), Size: int64(size),
	})
	return err
}

func (e *env) mustPut(bucket, key string, size int) {
	e.t.Helper()
	if err := e.put(bucket, key, size); err != nil {
		e.t.Fatalf("put %s: %v", key, err)
	}
}

// list returns every key of bucket, paging through ListObjects, and fails
// on unsorted or duplicate keys.
func (e *env) list(bucket string, page int) ([]string, error) {
	var keys []string
	after := ""
	for {
		res, err := e.d.ListObjects(context.Background(), driver.ListObjectsInput{Bucket: bucket, StartAfter: after, MaxKeys: page})
		if err != nil {
			return nil, err
		}
		for _, o := range res.Objects {
			if len(keys) > 0 && o.Key <= keys[len(keys)-1] {
				return nil, fmt.Errorf("listing out of order or duplicated: %q after %q", o.Key, keys[len(keys)-1])
			}
			keys = append(keys, o.Key)
		}
		if !res.IsTruncated {
			return keys, nil
		}
		after = res.NextMarker
	}
}

// model is the expected content: key → size.
type model map[string]int

func (md model) keys() []string {
	out := make([]string, 0, len(md))
	for k := range md {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// verify checks the bucket against the model: listing, stats, no reshard
// record, and no index objects but the current generation's shards.
func (e *env) verify(bucket string, md model) {
	e.t.Helper()
	ctx := context.Background()
	keys, err := e.list(bucket, 97)
	if err != nil {
		e.t.Fatal(err)
	}
	want := md.keys()
	if strings.Join(keys, ",") != strings.Join(want, ",") {
		e.t.Fatalf("listing has %d keys, model %d\n got %.300v\nwant %.300v", len(keys), len(want), keys, want)
	}
	st, err := e.d.BucketStats(ctx, bucket)
	if err != nil {
		e.t.Fatal(err)
	}
	var size uint64
	for _, s := range md {
		size += uint64(s)
	}
	if st.NumObjects != uint64(len(md)) || st.Size != size {
		e.t.Fatalf("stats %d objects %d bytes, model %d objects %d bytes", st.NumObjects, st.Size, len(md), size)
	}
	if st.ReshardState != "none" {
		e.t.Fatalf("reshard state %q after the reshard", st.ReshardState)
	}
	if _, diff, err := e.d.CheckIndexView(ctx, bucket, 10); err != nil || len(diff) > 0 {
		e.t.Fatalf("index view differs from the shards at %q (%v)", diff, err)
	}
	// Only the current generation's shards may exist (plus non-shard
	// objects such as the uploads index).
	prefix := ".dir." + st.ID + "."
	var shards []string
	oids, _, err := e.d.IndexIO().ListObjects(ctx, "", 100000)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, o := range oids {
		if strings.HasPrefix(o, prefix) {
			shards = append(shards, o)
		}
	}
	if len(shards) != st.NumShards {
		e.t.Fatalf("index objects %v, want the %d shards of generation %d", shards, st.NumShards, st.Generation)
	}
	for _, o := range shards {
		if !strings.HasPrefix(o, fmt.Sprintf("%s%d.", prefix, st.Generation)) {
			e.t.Fatalf("orphaned index object %s (generation %d)", o, st.Generation)
		}
	}
	// Shards are open and keep no log.
	ix := bucketindex.Index{IO: e.d.IndexIO(), BucketID: st.ID, Layout: bucketindex.Layout{Gen: st.Generation, NumShards: st.NumShards}}
	for i := 0; i < st.NumShards; i++ {
		si, err := ix.ShardInfo(ctx, i)
		if err != nil {
			e.t.Fatal(err)
		}
		if si.State != bucketindex.StateOpen {
			e.t.Fatalf("shard %d is %q", i, si.State)
		}
		if recs, _, _ := ix.ReadLogRaw(ctx, i, 0, 1); len(recs) > 0 {
			e.t.Fatalf("shard %d keeps a reshard log", i)
		}
	}
	m := e.manager()
	if l, err := m.List(ctx); err != nil || len(l) != 0 {
		e.t.Fatalf("reshard queue: %v, %v", l, err)
	}
}

func isCrash(err error) bool { var c *reshard.Crash; return errors.As(err, &c) }
