package driver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// intentNotifier is a fake notifier whose reservations carry intents; its
// commits fail while failCommit is set (a crash between link and commit
// looks the same to the index).
type intentNotifier struct {
	mu         sync.Mutex
	failCommit bool
	ours       bool // RecoverIntent resolves (true) or leaves (false)
	committed  []string
	recovered  []string
}

type intentRes struct {
	n   *intentNotifier
	key string
}

func (n *intentNotifier) Reserve(_ context.Context, ev driver.PendingEvent) (driver.Reservation, error) {
	return &intentRes{n: n, key: ev.Key}, nil
}

func (r *intentRes) Intent(context.Context, driver.ObjectInfo) []byte {
	b, _ := json.Marshal(map[string]string{"key": r.key})
	return b
}

func (r *intentRes) Commit(_ context.Context, oi driver.ObjectInfo) error {
	r.n.mu.Lock()
	defer r.n.mu.Unlock()
	if r.n.failCommit {
		return errors.New("queue unreachable")
	}
	r.n.committed = append(r.n.committed, oi.Key+" "+oi.VersionID)
	return nil
}

func (r *intentRes) Abort(context.Context) {}

func (n *intentNotifier) RecoverIntent(_ context.Context, data []byte, oi driver.ObjectInfo, found, current bool) (bool, error) {
	var in map[string]string
	if err := json.Unmarshal(data, &in); err != nil {
		return false, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.ours {
		return false, nil
	}
	n.recovered = append(n.recovered, fmt.Sprintf("%s %s found=%v current=%v", in["key"], oi.VersionID, found, current))
	return true, nil
}

func intentsOf(t *testing.T, d *driver.Driver, bucket string) int {
	t.Helper()
	inst, err := d.Instance(context.Background(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	ix := bucketindex.Index{IO: d.IndexIO(), BucketID: inst.ID, Layout: inst.Layout}
	n := 0
	for s := 0; s < inst.Layout.NumShards; s++ {
		recs, err := ix.Intents(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		n += len(recs)
	}
	return n
}

// A notified link stores an intent with the version; a committed write's
// intent is removed; one whose commit never happened is handed to the
// notifier by RecoverIntents with the version it was linked with, and is
// removed once the notifier resolves it.
func TestLinkIntents(t *testing.T) {
	ctx := context.Background()
	st := newMemStore(t)
	n := &intentNotifier{}
	d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 3, GCMinWait: -1, Notifier: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); st.Close() })
	if err := d.CreateBucket(ctx, "u", "ibk", "", 0); err != nil {
		t.Fatal(err)
	}
	if err := d.PutBucketVersioning(ctx, "ibk", driver.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	putErr := func(key, body string) (driver.ObjectInfo, error) {
		return d.PutObject(ctx, driver.PutObjectInput{Bucket: "ibk", Key: key, Body: bytes.NewReader([]byte(body)), Size: int64(len(body))})
	}
	for i := 0; i < 5; i++ {
		if _, err := putErr(fmt.Sprintf("ok%d", i), "x"); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for intentsOf(t, d, "ibk") > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d intents of committed writes never removed", intentsOf(t, d, "ibk"))
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Commits fail: the versions are linked (visible), their events not
	// committed; the intents stay.
	n.failCommit = true
	if _, err := putErr("k", "v2"); err == nil {
		t.Fatal("a write whose event could not be committed was answered")
	}
	if _, err := putErr("gone", "g"); err == nil {
		t.Fatal("a write whose event could not be committed was answered")
	}
	n.failCommit = false
	v3, err := putErr("k", "v3") // k's failed version is now noncurrent
	if err != nil {
		t.Fatal(err)
	}
	vs, err := d.ListObjectVersions(ctx, driver.ListVersionsInput{Bucket: "ibk", Prefix: "gone", MaxKeys: 1000})
	if err != nil || len(vs.Versions) != 1 {
		t.Fatalf("versions of gone: %+v %v", vs, err)
	}
	if _, err := d.DeleteObjectVersion(ctx, driver.DeleteObjectInput{Bucket: "ibk", Key: "gone", VersionID: vs.Versions[0].VersionID}); err != nil {
		t.Fatal(err)
	}
	// (v3's intent goes in the background.)
	deadline = time.Now().Add(10 * time.Second)
	for intentsOf(t, d, "ibk") != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d intents, want the 2 of the uncommitted writes", intentsOf(t, d, "ibk"))
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Not this gateway's: left alone.
	done, left, err := d.RecoverIntents(ctx)
	if err != nil || done != 0 || left != 2 || intentsOf(t, d, "ibk") != 2 {
		t.Fatalf("foreign intents: resolved %d, left %d, %v", done, left, err)
	}
	n.ours = true
	done, left, err = d.RecoverIntents(ctx)
	if err != nil || done != 2 || left != 0 {
		t.Fatalf("resolved %d, left %d, %v", done, left, err)
	}
	var kv2 string
	for _, v := range mustVersions(t, d, "ibk", "k") {
		if v != v3.VersionID {
			kv2 = v
		}
	}
	want := map[string]bool{"k " + kv2 + " found=true current=false": true, "gone  found=false current=false": true}
	if len(n.recovered) != 2 || !want[n.recovered[0]] || !want[n.recovered[1]] {
		t.Fatalf("recovered %q, want %v", n.recovered, want)
	}
	if got := intentsOf(t, d, "ibk"); got != 0 {
		t.Fatalf("%d intents left after recovery", got)
	}
}

func mustVersions(t *testing.T, d *driver.Driver, bucket, key string) []string {
	t.Helper()
	vs, err := d.ListObjectVersions(context.Background(), driver.ListVersionsInput{Bucket: bucket, Prefix: key, MaxKeys: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range vs.Versions {
		if v.Key == key {
			out = append(out, v.VersionID)
		}
	}
	return out
}

// deferNotifier's reservations commit after the reply
// (driver.DeferringReservation); their done callbacks wait in pending
// until the test calls them.
type deferNotifier struct {
	mu      sync.Mutex
	pending []func(error)
}

type deferRes struct {
	intentRes
	dn *deferNotifier
}

func (n *deferNotifier) Reserve(_ context.Context, ev driver.PendingEvent) (driver.Reservation, error) {
	return &deferRes{intentRes: intentRes{n: &intentNotifier{}, key: ev.Key}, dn: n}, nil
}

func (r *deferRes) Persistent() bool { return true } // as the service's: a synced queue commit
func (r *deferRes) Synced() bool     { return false }
func (r *deferRes) Deferrable() bool { return true }
func (r *deferRes) CommitDeferred(_ context.Context, _ driver.ObjectInfo, done func(error)) {
	r.dn.mu.Lock()
	defer r.dn.mu.Unlock()
	r.dn.pending = append(r.dn.pending, done)
}

// A deferred commit: the PUT is answered before the commit, and its link,
// with the intent, is durable when it is answered (a crash right after
// the reply keeps both, and recovery would commit the event); a failed
// commit leaves the intent, a done one has it removed.
func TestDeferredCommitLinkIsDurable(t *testing.T) {
	ctx := context.Background()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	fs := vfs.NewCrashableMem()
	st, err := embedded.Open(embedded.Options{Dir: "/d", FS: fs, Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	n := &deferNotifier{}
	d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 3, GCMinWait: -1, Notifier: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); st.Close() })
	if err := d.CreateBucket(ctx, "u", "dbk", "", 0); err != nil {
		t.Fatal(err)
	}
	if err := d.PutBucketVersioning(ctx, "dbk", driver.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	// k1, k2, then five versions of v.
	for i, k := range []string{"k1", "k2", "v", "v", "v", "v", "v"} {
		body := []byte(fmt.Sprint(i))
		if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "dbk", Key: k, Body: bytes.NewReader(body), Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
	}
	n.mu.Lock()
	pending := n.pending
	n.mu.Unlock()
	if len(pending) != 7 {
		t.Fatalf("%d deferred commits, want 7", len(pending))
	}

	// Crash now: only what was synced survives.
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	st2, err := embedded.Open(embedded.Options{Dir: "/d", FS: crashed, Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	rec := &intentNotifier{ours: true}
	d2, err := driver.New(ctx, driver.Options{Store: st2, DefaultShards: 3, GCMinWait: -1, Notifier: rec})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"k1", "k2", "v"} {
		if _, err := d2.HeadObject(ctx, "dbk", k); err != nil {
			t.Fatalf("%s answered but lost in a crash: %v", k, err)
		}
	}
	if got := intentsOf(t, d2, "dbk"); got != 7 {
		t.Fatalf("%d intents after the crash, want 7", got)
	}
	// Recovery resolves v's five in link order, oldest first.
	if done, left, err := d2.RecoverIntents(ctx); err != nil || done != 7 || left != 0 {
		t.Fatalf("recovery: %d resolved, %d left, %v", done, left, err)
	}
	vs := mustVersions(t, d2, "dbk", "v") // newest first
	var want, got []string
	for i := len(vs) - 1; i >= 0; i-- {
		want = append(want, vs[i])
	}
	for _, r := range rec.recovered {
		var k, vid string
		fmt.Sscan(r, &k, &vid)
		if k == "v" {
			got = append(got, vid)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("v's intents recovered in order %v, want link order %v", got, want)
	}
	d2.Close()
	st2.Close()

	// Live: k1's commit fails (its intent stays), the others succeed.
	pending[0](errors.New("queue unreachable"))
	for _, done := range pending[1:] {
		done(nil)
	}
	deadline := time.Now().Add(10 * time.Second)
	for intentsOf(t, d, "dbk") != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d intents, want k1's", intentsOf(t, d, "dbk"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
