package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	clsq "github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/notify/config"
	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cockroachdb/pebble/v2/vfs"
)

type env struct {
	store objstore.Store
	svc   *Service
	drv   *driver.Driver
	b     driver.BucketInfo
}

func openStore(t testing.TB, dir string, fs vfs.FS) *embedded.Store {
	t.Helper()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: dir, FS: fs, Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newEnv(t testing.TB, opts Options) *env {
	t.Helper()
	st := opts.Store
	if st == nil {
		st = openStore(t, "/db", vfs.NewMem())
	}
	return newEnvOn(t, st, opts)
}

func newEnvOn(t testing.TB, st objstore.Store, opts Options) *env {
	t.Helper()
	ctx := context.Background()
	opts.Store = st
	svc, err := New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	drv, err := driver.New(ctx, driver.Options{Store: st, Notifier: svc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drv.Close() })
	if err := drv.CreateBucket(ctx, "alice", "bk1", "", 0); err != nil && !errors.Is(err, driver.ErrBucketOwnedByYou) {
		t.Fatal(err)
	}
	b, err := drv.GetBucket(ctx, "bk1")
	if err != nil {
		t.Fatal(err)
	}
	return &env{store: st, svc: svc, drv: drv, b: b}
}

func reqCtx() context.Context {
	return driver.WithRequest(context.Background(), driver.RequestMeta{RequestID: "req-1", HostID: "host-1", SourceIP: "10.0.0.1", Principal: "alice"})
}

func (e *env) topic(t testing.TB, name string, attrs map[string]string) *topic.Topic {
	t.Helper()
	st, _, err := topic.Parse(attrs, topic.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := e.svc.CreateTopic(context.Background(), CreateTopicInput{Name: name, Owner: "alice", Settings: st})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func (e *env) configure(t testing.TB, xml string) {
	t.Helper()
	c, err := config.Parse([]byte(xml))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.PutBucketNotification(context.Background(), e.b, c); err != nil {
		t.Fatal(err)
	}
}

func topicConf(id, topicName, extra string) string {
	return `<TopicConfiguration><Id>` + id + `</Id><Topic>arn:aws:sns:default::` + topicName + `</Topic>` + extra + `</TopicConfiguration>`
}

func notifConf(tcs ...string) string {
	return `<NotificationConfiguration>` + strings.Join(tcs, "") + `</NotificationConfiguration>`
}

func (e *env) put(t testing.TB, key string, body []byte, meta driver.ObjectMeta) (driver.ObjectInfo, error) {
	t.Helper()
	return e.drv.PutObject(reqCtx(), driver.PutObjectInput{Bucket: "bk1", Key: key, Body: bytes.NewReader(body), Size: int64(len(body)), Meta: meta})
}

// events returns every committed record of topic name, in dump order.
func (e *env) events(t testing.TB, name string) []*event.Record {
	t.Helper()
	var out []*event.Record
	marker := ""
	for {
		p, err := e.svc.DumpTopic(context.Background(), name, marker, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range p.Entries {
			r, err := event.Unmarshal(en.Data)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		if !p.Truncated {
			return out
		}
		marker = p.Next
	}
}

func (e *env) notifObjects(t testing.TB) []string {
	t.Helper()
	io, err := e.store.IOContext(context.Background(), queue.Pool)
	if err != nil {
		t.Fatal(err)
	}
	oids, _, err := io.WithNamespace(queue.Namespace).ListObjects(context.Background(), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	return oids
}

func TestPutCommitsOneEntryOnItsShard(t *testing.T) {
	e := newEnv(t, Options{})
	e.topic(t, "fishtopic", map[string]string{"push-endpoint": "http://127.0.0.1:1/", "persistent": "true", "OpaqueData": "me@example.com"})
	e.configure(t, notifConf(topicConf("notif1", "fishtopic", "")))
	oi, err := e.put(t, "photos/a b.jpg", []byte("hello"), driver.ObjectMeta{UserMeta: map[string]string{"color": "red"}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.svc.TopicStats(context.Background(), "fishtopic")
	if err != nil {
		t.Fatal(err)
	}
	want := queue.ShardIndex("bk1", "photos/a b.jpg", 11)
	if st.Entries != 1 || st.Shards != 11 {
		t.Fatalf("%+v", st)
	}
	for _, ps := range st.PerShard {
		if (ps.Entries == 1) != (ps.Shard == want) {
			t.Fatalf("entry on shard %d, want %d", ps.Shard, want)
		}
	}
	recs := e.events(t, "fishtopic")
	r := recs[0]
	if r.EventName != "ObjectCreated:Put" || r.S3.ConfigurationID != "notif1" || r.OpaqueData != "me@example.com" ||
		r.ObjectKey() != "photos/a b.jpg" || r.S3.Object.Size != 5 || r.S3.Object.ETag != oi.ETag ||
		r.ResponseElements.RequestID != "req-1" || r.RequestParameters.SourceIPAddress != "10.0.0.1" ||
		r.UserIdentity.PrincipalID != "alice" || r.S3.Bucket.Name != "bk1" || r.S3.Bucket.ID != e.b.ID ||
		len(r.S3.Object.Sequencer) != 16 || len(r.S3.Object.Metadata) != 1 || r.S3.Object.Metadata[0].Key != "x-amz-meta-color" {
		t.Fatalf("record %+v", r)
	}
	// DELETE produces ObjectRemoved:Delete on the same shard.
	if err := e.drv.DeleteObject(reqCtx(), "bk1", "photos/a b.jpg"); err != nil {
		t.Fatal(err)
	}
	// Deleting a missing key produces nothing.
	if err := e.drv.DeleteObject(reqCtx(), "bk1", "nope"); err != nil {
		t.Fatal(err)
	}
	recs = e.events(t, "fishtopic")
	if len(recs) != 2 || recs[1].EventName != "ObjectRemoved:Delete" || recs[1].S3.Object.Sequencer <= recs[0].S3.Object.Sequencer {
		t.Fatalf("%d records; second %+v", len(recs), recs[len(recs)-1])
	}
}

type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("client went away")
	}
	n := min(len(p), f.n)
	f.n -= n
	return n, nil
}

func TestFailedPutLeavesNothing(t *testing.T) {
	for _, pool := range []int{0, -1} {
		t.Run(fmt.Sprintf("pool=%d", pool), func(t *testing.T) {
			e := newEnv(t, Options{Queue: queue.Options{PoolMax: pool}})
			e.topic(t, "t", map[string]string{"persistent": "true"})
			e.configure(t, notifConf(topicConf("n", "t", "")))
			_, err := e.drv.PutObject(reqCtx(), driver.PutObjectInput{Bucket: "bk1", Key: "k", Body: &failingReader{n: 100}, Size: 1000})
			if err == nil {
				t.Fatal("PUT succeeded")
			}
			// Wrong size also fails after the reservation.
			if _, err := e.drv.PutObject(reqCtx(), driver.PutObjectInput{Bucket: "bk1", Key: "k", Body: strings.NewReader("abc"), Size: 10}); err == nil {
				t.Fatal("short PUT succeeded")
			}
			if _, err := e.drv.HeadObject(context.Background(), "bk1", "k"); !errors.Is(err, driver.ErrNoSuchKey) {
				t.Fatal(err)
			}
			st, _ := e.svc.TopicStats(context.Background(), "t")
			pooled := 0
			for _, oid := range queue.ShardOIDs(":t", 11) {
				pooled += e.svc.Queues().Pooled(oid)
			}
			if st.Entries != 0 || st.Reservations != 0 || st.PooledReservations != uint64(pooled) {
				t.Fatalf("%+v, pooled %d", st, pooled)
			}
			e.svc.Queues().ReleasePool(context.Background())
			st, _ = e.svc.TopicStats(context.Background(), "t")
			if st.Reservations != 0 || st.ReservedBytes != 0 || st.PooledReservations != 0 {
				t.Fatalf("leaked reservations: %+v", st)
			}
		})
	}
}

func TestFullShardIsSlowDownAndWritesNothing(t *testing.T) {
	e := newEnv(t, Options{NumShards: 1, Queue: queue.Options{Capacity: 64 << 10}})
	e.topic(t, "small", map[string]string{"persistent": "true"})
	e.configure(t, notifConf(topicConf("n", "small", "")))
	// Fill the shard with other writers' reservations.
	for {
		_, err := e.svc.Queues().Reserve(context.Background(), ":small", 0, 4096)
		if errors.Is(err, objstore.ErrNoSpace) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.put(t, "k", []byte("data"), driver.ObjectMeta{})
	if !errors.Is(err, driver.ErrSlowDown) || !strings.Contains(err.Error(), "full") {
		t.Fatalf("want SlowDown, got %v", err)
	}
	if _, err := e.drv.HeadObject(context.Background(), "bk1", "k"); !errors.Is(err, driver.ErrNoSuchKey) {
		t.Fatalf("object written despite SlowDown: %v", err)
	}
	if e.svc.Counters.SlowDowns.Load() != 1 {
		t.Fatal("SlowDown not counted")
	}
}

func TestTopicLifecycleAndShards(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	tp := e.topic(t, "fish", map[string]string{"persistent": "true"})
	if tp.NumShards != 11 || tp.ARN != "arn:aws:sns:default::fish" {
		t.Fatalf("%+v", tp)
	}
	want := []string{":fish", ":fish.1", ":fish.10", ":fish.2", ":fish.3", ":fish.4", ":fish.5", ":fish.6", ":fish.7", ":fish.8", ":fish.9", queue.RegistryObject}
	if got := e.notifObjects(t); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("notif objects %v", got)
	}
	// A gateway with notif-shards 3 creates new topics with 3 shards and
	// leaves fish alone, even when updating it.
	e3 := newEnvOn(t, e.store, Options{NumShards: 3})
	st, _, _ := topic.Parse(map[string]string{"persistent": "true", "OpaqueData": "x"}, topic.Options{})
	up, err := e3.svc.CreateTopic(ctx, CreateTopicInput{Name: "fish", Owner: "alice", Settings: st})
	if err != nil || up.NumShards != 11 || up.Settings.OpaqueData != "x" {
		t.Fatalf("%+v %v", up, err)
	}
	if _, err := e3.svc.CreateTopic(ctx, CreateTopicInput{Name: "fish", Owner: "bob", Settings: st}); !errors.Is(err, ErrNotOwner) {
		t.Fatal(err)
	}
	three, err := e3.svc.CreateTopic(ctx, CreateTopicInput{Name: "three", Owner: "bob", Settings: st})
	if err != nil || three.NumShards != 3 {
		t.Fatal(three, err)
	}
	if n, err := e.svc.Queues().Lookup(ctx, ":three"); err != nil || n != 3 {
		t.Fatal(n, err)
	}
	// Persistent off removes the shards; on re-creates all 11.
	if _, err := e.svc.SetTopicAttribute(ctx, "fish", "alice", false, "persistent", "false", topic.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, oid := range e.notifObjects(t) {
		if strings.HasPrefix(oid, ":fish") {
			t.Fatalf("shard %s survived the switch", oid)
		}
	}
	if _, err := e.svc.Queues().Lookup(ctx, ":fish"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatal("still registered", err)
	}
	if _, err := e.svc.SetTopicAttribute(ctx, "fish", "alice", false, "persistent", "true", topic.Options{}); err != nil {
		t.Fatal(err)
	}
	if n, err := e.svc.Queues().Lookup(ctx, ":fish"); err != nil || n != 11 {
		t.Fatal(n, err)
	}
	if _, err := e.svc.SetTopicAttribute(ctx, "fish", "alice", false, "bogus", "1", topic.Options{}); err == nil {
		t.Fatal("unknown attribute accepted")
	}
	// A notification referencing fish survives its deletion and stops firing.
	e.configure(t, notifConf(topicConf("n", "fish", "")))
	if err := e.svc.DeleteTopic(ctx, "fish", "alice", false); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteTopic(ctx, "fish", "alice", false); err != nil {
		t.Fatal("second delete:", err)
	}
	for _, oid := range e.notifObjects(t) {
		if strings.HasPrefix(oid, ":fish") {
			t.Fatalf("shard %s survived delete", oid)
		}
	}
	if _, err := e.svc.GetTopic(ctx, "fish"); !errors.Is(err, ErrTopicNotFound) {
		t.Fatal(err)
	}
	c, _ := e.svc.GetBucketNotification(ctx, e.b)
	if len(c.Topics) != 1 {
		t.Fatal("notification deleted with its topic")
	}
	if _, err := e.put(t, "k", []byte("x"), driver.ObjectMeta{}); err != nil {
		t.Fatal("PUT with a dangling notification:", err)
	}
}

func TestListTopicsPaging(t *testing.T) {
	e := newEnv(t, Options{})
	for i := range 25 {
		e.topic(t, fmt.Sprintf("t%02d", i), map[string]string{})
	}
	var names []string
	marker := ""
	pages := 0
	for {
		ts, next, err := e.svc.ListTopics(context.Background(), marker, 10)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, tp := range ts {
			names = append(names, tp.Name)
		}
		if next == "" {
			break
		}
		marker = next
	}
	if pages != 3 || len(names) != 25 || names[0] != "t00" || names[24] != "t24" {
		t.Fatal(pages, names)
	}
}

func TestConfigurationRejectsUnknownTopic(t *testing.T) {
	e := newEnv(t, Options{})
	e.topic(t, "ok", map[string]string{})
	e.configure(t, notifConf(topicConf("a", "ok", "")))
	c, _ := config.Parse([]byte(notifConf(topicConf("a", "ok", ""), topicConf("b", "missing", ""))))
	err := e.svc.PutBucketNotification(context.Background(), e.b, c)
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Code != config.CodeInvalidArgument || !strings.Contains(ce.Message, "missing") {
		t.Fatalf("%v", err)
	}
	got, _ := e.svc.GetBucketNotification(context.Background(), e.b)
	if len(got.Topics) != 1 || got.Topics[0].ID != "a" {
		t.Fatal("configuration changed")
	}
	// Delete one by id, then unknown id.
	if err := e.svc.DeleteBucketNotification(context.Background(), e.b, "a"); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteBucketNotification(context.Background(), e.b, "a"); !errors.Is(err, ErrNoSuchNotification) {
		t.Fatal(err)
	}
}

func TestFilters(t *testing.T) {
	e := newEnv(t, Options{NumShards: 2})
	e.topic(t, "f", map[string]string{"persistent": "true"})
	e.configure(t, notifConf(
		topicConf("prefix", "f", `<Event>s3:ObjectCreated:*</Event><Filter><S3Key><FilterRule><Name>prefix</Name><Value>img/</Value></FilterRule><FilterRule><Name>suffix</Name><Value>.jpg</Value></FilterRule></S3Key></Filter>`),
		topicConf("regex", "f", `<Event>s3:ObjectCreated:Put</Event><Filter><S3Key><FilterRule><Name>regex</Name><Value>log-[0-9]+</Value></FilterRule></S3Key></Filter>`),
		topicConf("meta", "f", `<Filter><S3Metadata><FilterRule><Name>x-amz-meta-team</Name><Value>blue</Value></FilterRule></S3Metadata></Filter>`),
		topicConf("tags", "f", `<Filter><S3Tags><FilterRule><Name>env</Name><Value>prod</Value></FilterRule></S3Tags></Filter>`),
		topicConf("removed", "f", `<Event>s3:ObjectRemoved:*</Event><Filter><S3Key><FilterRule><Name>prefix</Name><Value>img/</Value></FilterRule></S3Key></Filter>`),
	))
	put := func(key string, meta driver.ObjectMeta) {
		if _, err := e.put(t, key, []byte("x"), meta); err != nil {
			t.Fatal(err)
		}
	}
	put("img/a.jpg", driver.ObjectMeta{})                                       // prefix
	put("img/a.png", driver.ObjectMeta{})                                       // nothing
	put("log-123", driver.ObjectMeta{})                                         // regex
	put("xlog-123", driver.ObjectMeta{})                                        // nothing (whole-key match)
	put("m", driver.ObjectMeta{UserMeta: map[string]string{"team": "blue"}})    // meta
	put("m2", driver.ObjectMeta{UserMeta: map[string]string{"team": "red"}})    // nothing
	put("t", driver.ObjectMeta{Tags: map[string]string{"env": "prod"}})         // tags
	put("img/b.jpg", driver.ObjectMeta{Tags: map[string]string{"env": "prod"}}) // prefix + tags
	if err := e.drv.DeleteObject(reqCtx(), "bk1", "img/a.png"); err != nil {    // removed
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range e.events(t, "f") {
		got[r.S3.ConfigurationID+" "+r.ObjectKey()+" "+r.EventName] = true
	}
	want := []string{
		"prefix img/a.jpg ObjectCreated:Put", "regex log-123 ObjectCreated:Put", "meta m ObjectCreated:Put",
		"tags t ObjectCreated:Put", "prefix img/b.jpg ObjectCreated:Put", "tags img/b.jpg ObjectCreated:Put",
		"removed img/a.png ObjectRemoved:Delete",
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("missing %q", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d events: %v", len(got), got)
	}
}

func TestSequencerIncreasesPerKey(t *testing.T) {
	e := newEnv(t, Options{NumShards: 1})
	e.topic(t, "s", map[string]string{"persistent": "true"})
	e.configure(t, notifConf(topicConf("n", "s", "")))
	for i := range 20 {
		if _, err := e.put(t, "same", []byte{byte(i)}, driver.ObjectMeta{}); err != nil {
			t.Fatal(err)
		}
	}
	prev := ""
	recs := e.events(t, "s")
	if len(recs) != 20 {
		t.Fatal(len(recs))
	}
	for _, r := range recs {
		if r.S3.Object.Sequencer <= prev {
			t.Fatalf("sequencer %s after %s", r.S3.Object.Sequencer, prev)
		}
		prev = r.S3.Object.Sequencer
	}
}

func TestTwoPersistentTopicsOnePut(t *testing.T) {
	e := newEnv(t, Options{NumShards: 3})
	e.topic(t, "a", map[string]string{"persistent": "true"})
	e.topic(t, "b", map[string]string{"persistent": "true"})
	e.configure(t, notifConf(topicConf("na", "a", ""), topicConf("nb", "b", "")))
	if _, err := e.put(t, "k", []byte("x"), driver.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	ra, rb := e.events(t, "a"), e.events(t, "b")
	if len(ra) != 1 || len(rb) != 1 || ra[0].EventID == rb[0].EventID || ra[0].S3.ConfigurationID != "na" {
		t.Fatalf("%v %v", ra, rb)
	}
}

func TestNonPersistentPush(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		st := status
		mu.Unlock()
		w.WriteHeader(st)
	}))
	defer srv.Close()
	var logBuf bytes.Buffer
	e := newEnv(t, Options{PushTimeout: 2 * time.Second, Logger: slog.New(slog.NewJSONHandler(&logBuf, nil))})
	e.topic(t, "np", map[string]string{"push-endpoint": srv.URL + "/hook", "OpaqueData": "od"})
	e.configure(t, notifConf(topicConf("n", "np", "")))
	if _, err := e.put(t, "k1", []byte("x"), driver.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(bodies) != 1 {
		mu.Unlock()
		t.Fatalf("%d pushes", len(bodies))
	}
	m, err := event.UnmarshalMessage(bodies[0])
	status = http.StatusInternalServerError
	mu.Unlock()
	if err != nil || len(m.Records) != 1 || m.Records[0].ObjectKey() != "k1" || m.Records[0].OpaqueData != "od" {
		t.Fatalf("%v %+v", err, m)
	}
	// A failing endpoint does not fail the request.
	if _, err := e.put(t, "k2", []byte("x"), driver.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	if e.svc.Counters.PushOK.Load() != 1 || e.svc.Counters.PushFailed.Load() != 1 {
		t.Fatalf("ok %d failed %d", e.svc.Counters.PushOK.Load(), e.svc.Counters.PushFailed.Load())
	}
	// Failures are logged at warn once per endpoint (rate-limited), and
	// the recovery once.
	if _, err := e.put(t, "k3", []byte("x"), driver.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	status = http.StatusOK
	mu.Unlock()
	if _, err := e.put(t, "k4", []byte("x"), driver.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	logs := logBuf.String()
	if n := strings.Count(logs, `"level":"WARN","msg":"notification push failed"`); n != 1 ||
		strings.Count(logs, `"msg":"notification endpoint recovered"`) != 1 || !strings.Contains(logs, `"endpoint":"http://127.0.0.1`) {
		t.Fatalf("%d warn lines for two failures:\n%s", n, logs)
	}
	// No queue objects for a non-persistent topic.
	for _, oid := range e.notifObjects(t) {
		if strings.HasPrefix(oid, ":np") {
			t.Fatal("non-persistent topic has shard", oid)
		}
	}
}

// A commit whose reservation was taken by the expiry job still lands.
func TestCommitAfterExpiry(t *testing.T) {
	e := newEnv(t, Options{NumShards: 1})
	e.topic(t, "x", map[string]string{"persistent": "true"})
	e.configure(t, notifConf(topicConf("n", "x", "")))
	res, err := e.svc.Reserve(reqCtx(), driver.PendingEvent{Bucket: e.b, Key: "k", EventName: "ObjectCreated:Put"})
	if err != nil || res == nil {
		t.Fatal(res, err)
	}
	io := e.svc.Queues().IO()
	if n, err := clsq.ExpireReservations(context.Background(), io, ":x", 0); err != nil || n == 0 {
		t.Fatal(n, err)
	}
	if err := res.Commit(reqCtx(), driver.ObjectInfo{Bucket: "bk1", Key: "k", Size: 1}); err != nil {
		t.Fatal(err)
	}
	if recs := e.events(t, "x"); len(recs) != 1 {
		t.Fatal(len(recs))
	}
	res.Abort(context.Background()) // no-op after commit
}

func TestTopicSourceNotFound(t *testing.T) {
	e := newEnv(t, Options{})
	e.topic(t, "src", map[string]string{})
	if tp, err := e.svc.Topic(context.Background(), "", "src"); err != nil || tp.Name != "src" {
		t.Fatal(tp, err)
	}
	_, err := e.svc.Topic(context.Background(), "", "none")
	if !errors.Is(err, ErrTopicNotFound) || !errors.Is(err, objstore.ErrNotFound) {
		t.Fatal(err)
	}
}
