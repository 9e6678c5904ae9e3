package driver_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Collection keeps up with replacements at a rate well above what the
// queue's size allows through per gc-min-wait (the scale run's aging:
// ~2,000 replacements/s against a queue of 65,536 items each waiting
// 30 s): records in the shards stay bounded by what is not due yet, and
// drain once writes stop. Before, a record's wait began when it was
// queued and spilled records were queued only when the queue was half
// empty, so the backlog grew by the difference every second.
func TestGCKeepsUpWithOverwrites(t *testing.T) {
	ctx := context.Background()
	const (
		queueMax = 64
		wait     = 30 * time.Second
		rate     = 20 // replacements per simulated second: ~10x max/wait
		keys     = 50
		seconds  = 240
	)
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	st := newMemStore(t)
	defer st.Close()
	d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 3, GCMinWait: wait, GCQueueMax: queueMax, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.CreateBucket(ctx, "u", "keep", "", 0); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("x"), 64)
	put := func(i int) {
		t.Helper()
		key := fmt.Sprintf("k%03d", i%keys)
		if i%7 == 3 { // deletes feed the collector too
			if err := d.DeleteObject(ctx, "keep", key); err != nil && !errors.Is(err, driver.ErrNoSuchKey) {
				t.Fatal(err)
			}
			return
		}
		if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "keep", Key: key, Body: bytes.NewReader(body), Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
	}
	records := func() int {
		t.Helper()
		n, err := driver.GCRecords(d)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Not due yet: rate×wait; due but waiting for the next walk (at most
	// every wait/2): half that again; the rest is slack.
	bound := 2*rate*int(wait/time.Second) + queueMax
	peak := 0
	for s := 0; s < seconds; s++ {
		for i := 0; i < rate; i++ {
			put(s*rate + i)
		}
		clock.Advance(time.Second)
		driver.GCPass(d)
		n := records()
		peak = max(peak, n)
		if b := d.GCBacklog(); b < n {
			t.Fatalf("after %d s: GCBacklog %d, but %d records wait", s+1, b, n)
		}
		if n > bound {
			t.Fatalf("after %d s at %d replacements/s: %d GC records wait, bound %d", s+1, rate, n, bound)
		}
		if q := driver.GCQueued(d); q > queueMax {
			t.Fatalf("collector holds %d manifests, bound %d", q, queueMax)
		}
	}
	read, collected := driver.GCWalkStats(d)
	t.Logf("peak %d GC records (bound %d); walks read %d records for %d collected", peak, bound, read, collected)
	// Writes stop: all is collected within a few passes.
	for p := 0; p < 3 && records() > 0; p++ {
		clock.Advance(wait)
		driver.GCPass(d)
	}
	if n := records(); n != 0 {
		t.Fatalf("%d GC records left after writes stopped", n)
	}
	if b := d.GCBacklog(); b != 0 {
		t.Fatalf("backlog %d after collection", b)
	}
	// Only the live objects' data is left.
	data, err := st.IOContext(ctx, driver.PoolData)
	if err != nil {
		t.Fatal(err)
	}
	oids, _, err := data.ListObjects(ctx, "", 10000)
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.ListObjects(ctx, driver.ListObjectsInput{Bucket: "keep", MaxKeys: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(oids) != len(l.Objects) {
		t.Fatalf("%d data objects for %d live objects", len(oids), len(l.Objects))
	}
}

// A record is due gc-min-wait after it was written, by the writer's clock,
// however it reaches the collector: one left by an earlier run is collected
// at the first pass after a restart, not gc-min-wait after the sweep. A
// record without a written time (an older gateway's) is due gc-min-wait
// after the collector first saw it.
func TestGCDueFromWritten(t *testing.T) {
	ctx := context.Background()
	const wait = 30 * time.Second
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	st := newMemStore(t)
	defer st.Close()
	open := func() *driver.Driver {
		t.Helper()
		d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 1, GCMinWait: wait, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := open()
	if err := d.CreateBucket(ctx, "u", "due", "", 0); err != nil {
		t.Fatal(err)
	}
	body := []byte("data")
	for i := 0; i < 2; i++ {
		if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "due", Key: "k", Body: bytes.NewReader(body), Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
	}
	d.Close() // the record of the first PUT's data stays in its shard
	clock.Advance(wait)
	d = open()
	defer d.Close()
	if _, err := d.SweepGC(ctx); err != nil {
		t.Fatal(err)
	}
	driver.GCPass(d)
	if n, _ := driver.GCRecords(d); n != 0 {
		t.Fatalf("%d records left: a record written gc-min-wait ago waits again after a restart", n)
	}
	// An older gateway's record: no written time.
	inst, err := d.Instance(ctx, "due")
	if err != nil {
		t.Fatal(err)
	}
	ix := driver.IndexFor(d, inst)
	dataIO, _ := st.IOContext(ctx, driver.PoolData)
	if err := dataIO.Operate(ctx, "old_1", objstore.NewWriteOp().WriteFull(body)); err != nil {
		t.Fatal(err)
	}
	rec := objstore.KV{Key: "\xffg/old_1", Value: []byte(`{"r":[{"p":"old_1","s":4,"z":4194304}]}`)}
	if err := ix.IO.Operate(ctx, ix.ShardFor("k"), objstore.NewWriteOp().SetOmap(rec)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SweepGC(ctx); err != nil { // first seen now
		t.Fatal(err)
	}
	clock.Advance(wait - time.Second)
	driver.GCPass(d)
	if n, _ := driver.GCRecords(d); n != 1 {
		t.Fatalf("%d records: an old record was collected before gc-min-wait from its first sighting", n)
	}
	clock.Advance(time.Second)
	driver.GCPass(d)
	if n, _ := driver.GCRecords(d); n != 0 {
		t.Fatalf("%d records: an old record was not collected gc-min-wait after its first sighting", n)
	}
	stat := objstore.NewReadOp()
	ss := stat.Stat()
	if err := dataIO.OperateRead(ctx, "old_1", stat); err != nil || ss.Exists {
		t.Fatalf("old record's data: exists %v (%v), want removed", ss.Exists, err)
	}
}

// Records this gateway never handed over or spilled (another gateway's,
// which stopped for good) are found by the periodic walk over every shard.
func TestGCFindsOthersRecords(t *testing.T) {
	ctx := context.Background()
	const wait = 30 * time.Second
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	st := newMemStore(t)
	defer st.Close()
	d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 1, GCMinWait: wait, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.CreateBucket(ctx, "u", "others", "", 0); err != nil {
		t.Fatal(err)
	}
	inst, err := d.Instance(ctx, "others")
	if err != nil {
		t.Fatal(err)
	}
	// The other gateway's overwrite: straight to the index, not through d.
	ix := driver.IndexFor(d, inst)
	dataIO, _ := st.IOContext(ctx, driver.PoolData)
	for _, tag := range []string{"other_1", "other_2"} {
		if err := dataIO.Operate(ctx, tag, objstore.NewWriteOp().WriteFull([]byte("data"))); err != nil {
			t.Fatal(err)
		}
		e := bucketindex.Entry{Key: "k", Size: 4, ETag: "e", Tag: tag, ModTime: clock.Now(),
			Manifest: bucketindex.Manifest{Runs: []bucketindex.Run{{Prefix: tag, Size: 4, StripeSize: driver.StripeSize}}}}
		if _, err := ix.LinkVersion(ctx, bucketindex.ModeUnversioned, e, bucketindex.VersionCond{}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(wait)
	driver.GCPass(d)
	if n, _ := driver.GCRecords(d); n != 1 {
		t.Fatalf("%d records; want the other gateway's 1 (nothing told this one about it yet)", n)
	}
	clock.Advance(5 * time.Minute)
	driver.GCPass(d)
	if n, _ := driver.GCRecords(d); n != 0 {
		t.Fatalf("%d records left: the periodic walk did not find another gateway's record", n)
	}
	stat := objstore.NewReadOp()
	ss := stat.Stat()
	if err := dataIO.OperateRead(ctx, "other_1", stat); err != nil || ss.Exists {
		t.Fatalf("replaced data: exists %v (%v), want removed", ss.Exists, err)
	}
}
