package service

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// RecoverIntent commits the event of a linked write whose commit never
// happened, under the original reservation and with the intent's eventId;
// it adds nothing for a write whose own commit consumed the reservation
// (the crash fell between commit and intent removal), nor when resolving
// the same intent twice; it leaves other gateways' intents alone.
func TestRecoverIntent(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := reqCtx()
	e.topic(t, "t1", map[string]string{"push-endpoint": "http://127.0.0.1:1/", "persistent": "true"})
	e.configure(t, notifConf(topicConf("c1", "t1", "")))
	e.svc.SetOwner("gw1", true)
	reserve := func(key string) (driver.Reservation, []byte) {
		t.Helper()
		r, err := e.svc.Reserve(ctx, driver.PendingEvent{Bucket: e.b, Key: key, EventName: "ObjectCreated:Put"})
		if err != nil || r == nil {
			t.Fatalf("reserve: %v %v", r, err)
		}
		in := r.(driver.IntentReservation).Intent(ctx, driver.ObjectInfo{})
		if in == nil {
			t.Fatal("no intent with an owner and a persistent topic")
		}
		return r, in
	}
	obj := func(key string) driver.ObjectInfo {
		return driver.ObjectInfo{Bucket: "bk1", Key: key, Size: 3, ETag: "abc", ModTime: time.Now()}
	}

	// Linked, never committed (the writer died): recovery commits it.
	_, in1 := reserve("a")
	done, err := e.svc.RecoverIntent(context.Background(), in1, obj("a"), true, true)
	if err != nil || !done {
		t.Fatalf("recover: %v %v", done, err)
	}
	recs := e.events(t, "t1")
	if len(recs) != 1 || recs[0].ObjectKey() != "a" || recs[0].ResponseElements.RequestID != "req-1" || recs[0].S3.ConfigurationID != "c1" {
		t.Fatalf("recovered records %+v", recs)
	}
	// Resolved again (its removal was lost): the reservation is consumed.
	if done, err := e.svc.RecoverIntent(context.Background(), in1, obj("a"), true, true); err != nil || !done {
		t.Fatalf("second recovery: %v %v", done, err)
	}
	// Committed by the writer, intent not yet removed: nothing added, and
	// the writer's record carries the intent's eventId.
	r2, in2 := reserve("b")
	if err := r2.Commit(ctx, obj("b")); err != nil {
		t.Fatal(err)
	}
	if done, err := e.svc.RecoverIntent(context.Background(), in2, obj("b"), true, true); err != nil || !done {
		t.Fatalf("recovery of a committed write: %v %v", done, err)
	}
	recs = e.events(t, "t1")
	if len(recs) != 2 || recs[0].ObjectKey() == recs[1].ObjectKey() {
		t.Fatalf("records after recovering committed intents: %d", len(recs))
	}
	ids := map[string]bool{recs[0].EventID: true, recs[1].EventID: true}
	if len(ids) != 2 {
		t.Fatalf("event ids %v", ids)
	}
	// A noncurrent version is ordered by its mtime, below a newer one.
	_, in3 := reserve("c")
	old := obj("c")
	old.ModTime = time.Unix(1, 0)
	if done, err := e.svc.RecoverIntent(context.Background(), in3, old, true, false); err != nil || !done {
		t.Fatalf("recover noncurrent: %v %v", done, err)
	}
	recs = e.events(t, "t1")
	seq := ""
	for _, r := range recs {
		if r.ObjectKey() == "c" {
			seq = r.S3.Object.Sequencer
		}
	}
	if len(recs) != 3 || seq != "000000003B9ACA00" {
		t.Fatalf("%d records, noncurrent record's sequencer %q", len(recs), seq)
	}
	// Another gateway's, or ours without exclusive identity: left alone.
	_, in4 := reserve("d")
	for _, o := range []struct {
		id   string
		excl bool
	}{{"gw2", true}, {"gw1", false}} {
		e.svc.SetOwner(o.id, o.excl)
		if done, err := e.svc.RecoverIntent(context.Background(), in4, obj("d"), true, true); err != nil || done {
			t.Fatalf("owner %v: resolved someone else's intent (%v)", o, err)
		}
	}
	// Gone: nothing to announce, resolved.
	e.svc.SetOwner("gw1", true)
	if done, err := e.svc.RecoverIntent(context.Background(), in4, driver.ObjectInfo{}, false, false); err != nil || !done {
		t.Fatalf("gone: %v %v", done, err)
	}
	if n := len(e.events(t, "t1")); n != 3 {
		t.Fatalf("%d records, want 3", n)
	}
}

// A lifecycle expiration is sent under two types (event.SentAs); the
// intent names each target's own, so recovery commits each record under
// the type the writer would have.
func TestRecoverIntentTwoEventNames(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := reqCtx()
	e.topic(t, "t1", map[string]string{"push-endpoint": "http://127.0.0.1:1/", "persistent": "true"})
	e.configure(t, notifConf(
		topicConf("new", "t1", "<Event>s3:ObjectLifecycle:Expiration:*</Event>"),
		topicConf("legacy", "t1", "<Event>s3:LifecycleExpiration:*</Event>")))
	e.svc.SetOwner("gw1", true)
	r, err := e.svc.Reserve(ctx, driver.PendingEvent{Bucket: e.b, Key: "k", EventName: "ObjectLifecycle:Expiration:Current"})
	if err != nil || r == nil {
		t.Fatalf("reserve: %v %v", r, err)
	}
	in := r.(driver.IntentReservation).Intent(ctx, driver.ObjectInfo{})
	obj := driver.ObjectInfo{Bucket: "bk1", Key: "k", Size: 3, ETag: "abc", ModTime: time.Now()}
	if done, err := e.svc.RecoverIntent(context.Background(), in, obj, true, true); err != nil || !done {
		t.Fatalf("recover: %v %v", done, err)
	}
	got := map[string]string{}
	for _, rec := range e.events(t, "t1") {
		got[rec.S3.ConfigurationID] = rec.EventName
	}
	if len(got) != 2 || got["new"] != "ObjectLifecycle:Expiration:Current" || got["legacy"] != "LifecycleExpiration:Delete" {
		t.Fatalf("recovered records: %v", got)
	}
}

// With DeferCommits a reservation whose intent was taken commits after
// the call, batched (the linger is an hour here, so nothing is in the
// queue until FlushDeferred); done hears once, after every target; the
// records carry the intent's event ids, so a recovery of the same intent
// adds nothing. Without an intent it is not deferrable.
func TestDeferredCommit(t *testing.T) {
	e := newEnv(t, Options{DeferCommits: true, Queue: queue.Options{DeferLinger: time.Hour}})
	ctx := reqCtx()
	for _, tp := range []string{"t1", "t2"} {
		e.topic(t, tp, map[string]string{"push-endpoint": "http://127.0.0.1:1/", "persistent": "true"})
	}
	e.configure(t, notifConf(topicConf("c1", "t1", ""), topicConf("c2", "t2", "")))
	e.svc.SetOwner("gw1", true)
	pe := driver.PendingEvent{Bucket: e.b, Key: "k", EventName: "ObjectCreated:Put"}
	r, err := e.svc.Reserve(ctx, pe)
	if err != nil || r == nil {
		t.Fatalf("reserve: %v %v", r, err)
	}
	dr := r.(driver.DeferringReservation)
	if dr.Deferrable() {
		t.Fatal("deferrable before its intent was taken")
	}
	in := dr.Intent(ctx, driver.ObjectInfo{})
	if !dr.Deferrable() {
		t.Fatal("not deferrable with an intent and DeferCommits")
	}
	obj := driver.ObjectInfo{Bucket: "bk1", Key: "k", Size: 3, ETag: "abc", ModTime: time.Now()}
	done := make(chan error, 2)
	dr.CommitDeferred(ctx, obj, func(err error) { done <- err })
	if n := len(e.events(t, "t1")) + len(e.events(t, "t2")); n != 0 {
		t.Fatalf("%d records before the linger ended or a flush", n)
	}
	if err := e.svc.FlushDeferred(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var intent struct {
		Targets []struct {
			Queue   string `json:"q"`
			EventID string `json:"e"`
		} `json:"t"`
	}
	if err := json.Unmarshal(in, &intent); err != nil {
		t.Fatal(err)
	}
	for _, tg := range intent.Targets {
		recs := e.events(t, tg.Queue[1:])
		if len(recs) != 1 || recs[0].EventID != tg.EventID {
			t.Fatalf("%s: %d records (want 1 with event id %s)", tg.Queue, len(recs), tg.EventID)
		}
	}
	if done, err := e.svc.RecoverIntent(context.Background(), in, obj, true, true); err != nil || !done {
		t.Fatalf("recovery after the deferred commit: %v %v", done, err)
	}
	if n := len(e.events(t, "t1")) + len(e.events(t, "t2")); n != 2 {
		t.Fatalf("%d records after recovering a committed intent, want 2", n)
	}
	select {
	case err := <-done:
		t.Fatalf("done called twice (%v)", err)
	default:
	}

	off := newEnv(t, Options{})
	off.topic(t, "t1", map[string]string{"push-endpoint": "http://127.0.0.1:1/", "persistent": "true"})
	off.configure(t, notifConf(topicConf("c1", "t1", "")))
	off.svc.SetOwner("gw1", true)
	r, err = off.svc.Reserve(ctx, driver.PendingEvent{Bucket: off.b, Key: "k", EventName: "ObjectCreated:Put"})
	if err != nil || r == nil {
		t.Fatalf("reserve: %v %v", r, err)
	}
	r.(driver.IntentReservation).Intent(ctx, driver.ObjectInfo{})
	if r.(driver.DeferringReservation).Deferrable() {
		t.Fatal("deferrable without DeferCommits")
	}
	r.Abort(ctx)
}

// A version gone by recovery time (replaced or deleted after its write
// was answered with a deferred commit) still gets its event, described by
// the intent (size, ETag, mtime) and ordered by its mtime.
func TestRecoverIntentOfReplacedVersion(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := reqCtx()
	e.topic(t, "t1", map[string]string{"push-endpoint": "http://127.0.0.1:1/", "persistent": "true"})
	e.configure(t, notifConf(topicConf("c1", "t1", "")))
	e.svc.SetOwner("gw1", true)
	r, err := e.svc.Reserve(ctx, driver.PendingEvent{Bucket: e.b, Key: "k", EventName: "ObjectCreated:Put"})
	if err != nil || r == nil {
		t.Fatalf("reserve: %v %v", r, err)
	}
	mtime := time.Unix(5, 0)
	in := r.(driver.IntentReservation).Intent(ctx, driver.ObjectInfo{Bucket: "bk1", Key: "k", Size: 7, ETag: "e7", ModTime: mtime})
	gone := driver.ObjectInfo{Bucket: "bk1", Key: "k"}
	if done, err := e.svc.RecoverIntent(context.Background(), in, gone, false, false); err != nil || !done {
		t.Fatalf("recover: %v %v", done, err)
	}
	recs := e.events(t, "t1")
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	o := recs[0].S3.Object
	if recs[0].ObjectKey() != "k" || o.Size != 7 || o.ETag != "e7" || o.Sequencer != event.FormatSequencer(uint64(mtime.UnixNano())) {
		t.Fatalf("record of the replaced version: %+v", o)
	}
}

// The hand-written intent encoder writes exactly json.Marshal's bytes.
func TestIntentEncodingMatchesJSON(t *testing.T) {
	odd := "a\"b\\c<d>&e\u2028f\x00g\xffh\tü"
	cases := []intent{
		{V: 1, Owner: "gw", EventName: "ObjectCreated:Put", Bucket: "bk", BOwner: "u", BucketID: "id",
			Targets: []intentTarget{{Queue: ":t", Config: "c", OID: ":t.3", Res: 7, Bytes: 4096, Created: 1700000000123456789, EventID: "e1"}},
			Obj:     &intentObject{Size: 4096, ETag: "abc", MTime: 1700000000000000001}},
		{V: 1, Owner: odd, EventName: odd, Bucket: odd, BOwner: odd, BucketID: odd, Principal: odd, SourceIP: odd,
			RequestID: odd, HostID: odd, Targets: []intentTarget{
				{Queue: odd, Config: odd, OID: odd, Res: math.MaxUint64, Bytes: 0, Created: -1, EventID: odd, EventName: odd},
				{Queue: "q2", EventID: "e2"}},
			Obj: &intentObject{Size: -1, ETag: odd, MTime: math.MinInt64}},
		{V: 1},
		{V: 2, Targets: []intentTarget{}},
	}
	for i, in := range cases {
		want, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := in.append(nil); string(got) != string(want) {
			t.Errorf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// BenchmarkIntentEncode: the hand encoder (/append) against json.Marshal
// (/json) for a one-target intent (-cpu 1).
func BenchmarkIntentEncode(b *testing.B) {
	in := intent{V: 1, Owner: "gw1-5f3a", EventName: "ObjectCreated:Put", Bucket: "nb-r1-put-4kib-shards11", BOwner: "admin",
		BucketID: "8c5f0a4e-2b1d.1", Principal: "admin", SourceIP: "127.0.0.1", RequestID: "tx000000000000000000123-0065a1b2c3",
		HostID: "cairn", Targets: []intentTarget{{Queue: ":bench11", Config: "n1", OID: ":bench11.7", Res: 123456,
			Bytes: 4096, Created: 1700000000123456789, EventID: "0123456789abcdef0123456789abcdef"}},
		Obj: &intentObject{Size: 4096, ETag: "d41d8cd98f00b204e9800998ecf8427e", MTime: 1700000000000000001}}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			in.append(make([]byte, 0, 512))
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(in)
		}
	})
}

// A crash under an earlier binary left link intents whose reservations
// are one "r" key each (docs/format/cls.md, before reservation blocks):
// raw v1 keys, as that binary wrote them. Recovery commits the event of
// the one still reserved, once, and adds nothing for the one its writer
// had committed (its key gone while young).
func TestRecoverIntentOfLegacyReservation(t *testing.T) {
	e := newEnv(t, Options{NumShards: 1})
	ctx := context.Background()
	e.topic(t, "t1", map[string]string{"push-endpoint": "http://127.0.0.1:1/", "persistent": "true"})
	e.configure(t, notifConf(topicConf("c1", "t1", "")))
	e.svc.SetOwner("gw1", true)
	io, err := e.store.IOContext(ctx, queue.Pool)
	if err != nil {
		t.Fatal(err)
	}
	io = io.WithNamespace(queue.Namespace)
	oid := queue.ShardOID(e.svc.queueName(mustTopic(t, e, "t1")), 0)
	now := time.Now()
	// Header: reservations +1, reserved +4096, next_res past ids 901, 902.
	rd := objstore.NewReadOp()
	hs := rd.GetOmapHeader()
	if err := io.OperateRead(ctx, oid, rd); err != nil {
		t.Fatal(err)
	}
	h := hs.Header
	var f [7]uint64
	p := h[1:]
	for i := range f {
		v, n := binary.Uvarint(p)
		f[i], p = v, p[n:]
	}
	f[3]++
	f[4] += 4096
	f[5] = 903
	nh := []byte{1}
	for _, v := range f {
		nh = binary.AppendUvarint(nh, v)
	}
	rv := binary.AppendVarint(binary.AppendUvarint(binary.AppendUvarint([]byte{1}, 4096), 1), now.UnixNano())
	op := objstore.NewWriteOp().SetOmapHeader(nh).SetOmap(objstore.KV{Key: "r0000000000000385", Value: rv}) // id 901
	if err := io.Operate(ctx, oid, op); err != nil {
		t.Fatal(err)
	}
	intentFor := func(key string, res uint64) []byte {
		in := intent{V: 1, Owner: "gw1", EventName: "ObjectCreated:Put", Bucket: "bk1", BOwner: e.b.Owner, BucketID: e.b.ID,
			Targets: []intentTarget{{Queue: e.svc.queueName(mustTopic(t, e, "t1")), Config: "c1", OID: oid, Res: res,
				Bytes: 4096, Created: now.UnixNano(), EventID: "legacy-" + key}}}
		return in.append(nil)
	}
	obj := func(key string) driver.ObjectInfo {
		return driver.ObjectInfo{Bucket: "bk1", Key: key, Size: 3, ETag: "abc", ModTime: now}
	}
	for i, c := range []struct {
		key string
		res uint64
	}{{"reserved", 901}, {"reserved", 901}, {"committed", 902}} {
		if done, err := e.svc.RecoverIntent(ctx, intentFor(c.key, c.res), obj(c.key), true, true); err != nil || !done {
			t.Fatalf("recovery %d: %v %v", i, done, err)
		}
	}
	recs := e.events(t, "t1")
	if len(recs) != 1 || recs[0].ObjectKey() != "reserved" || recs[0].EventID != "legacy-reserved" {
		t.Fatalf("recovered %d records %+v", len(recs), recs)
	}
	st, err := e.svc.TopicStats(ctx, "t1")
	if err != nil || st.Reservations != 0 || st.ReservedBytes != 0 || st.Entries != 1 {
		t.Fatalf("stats %+v %v", st, err)
	}
}

func mustTopic(t *testing.T, e *env, name string) *topic.Topic {
	t.Helper()
	tp, err := e.svc.GetTopic(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}
