package delivery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/cls"
	clsq "github.com/cairn-s3/cairn/internal/cls/queue"
	httpep "github.com/cairn-s3/cairn/internal/notify/endpoint/http"
	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/push"
	nq "github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// clock is real time plus an offset that tests advance to jump over lease
// durations and TTLs without sleeping. The store, the queues and the
// managers share it, so lock expiry and entry ages agree.
type clock struct{ off atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) Advance(d time.Duration) { c.off.Add(int64(d)) }

// env is one embedded store (pebble on vfs.NewMem, every class registered)
// with the real queues, a topic table and a clock.
type env struct {
	t      testing.TB
	ctx    context.Context
	clock  *clock
	store  objstore.Store
	q      *nq.Queues
	mu     sync.Mutex
	topics map[string]*topic.Topic // by queue name
	seq    atomic.Uint64
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvOn(t, embedded.Options{Dir: "/db", FS: vfs.NewMem(), MemTableSize: 4 << 20, CacheSize: 8 << 20})
}

// newEnvOn is newEnv on the store o describes (its Classes and Now are set
// here).
func newEnvOn(t testing.TB, o embedded.Options) *env {
	t.Helper()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	c := &clock{}
	o.Classes, o.Now = reg, c.Now
	st, err := embedded.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	q, err := nq.Open(ctx, st, nq.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, clock: c, store: st, q: q, topics: map[string]*topic.Topic{}}
}

// createTopic makes a persistent topic with n shards pushing to url.
func (e *env) createTopic(name, url string, n int, mod func(*topic.Settings)) *topic.Topic {
	e.t.Helper()
	s := topic.Settings{PushEndpoint: url, Persistent: true, TimeToLive: topic.UseGlobal,
		MaxRetries: topic.UseGlobal, RetrySleepDuration: topic.UseGlobal}
	if mod != nil {
		mod(&s)
	}
	tp := topic.New(topic.ARN{Zonegroup: topic.DefaultZonegroup, Name: name}, "tester", s, n, e.clock.Now())
	if err := e.q.Create(e.ctx, nq.Name("", name), n); err != nil {
		e.t.Fatal(err)
	}
	e.mu.Lock()
	e.topics[nq.Name("", name)] = tp
	e.mu.Unlock()
	return tp
}

func (e *env) Topic(_ context.Context, tenant, name string) (*topic.Topic, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t := e.topics[nq.Name(tenant, name)]; t != nil {
		return t, nil
	}
	return nil, ErrTopicNotFound
}

// publishEvenly publishes events for keys k0, k1, ... of bucket until each
// of the topic's shards holds perShard of them (keys of a full shard are
// skipped) and returns their sequencers by "bucket/key", in order.
func (e *env) publishEvenly(tp *topic.Topic, bucket string, shards, perShard int) map[string][]uint64 {
	e.t.Helper()
	count := make([]int, shards)
	seqs := map[string][]uint64{}
	for i := 0; slices.Min(count) < perShard; i++ {
		key := fmt.Sprintf("k%d", i)
		if sh := nq.ShardIndex(bucket, key, shards); count[sh] < perShard {
			count[sh]++
			seqs[bucket+"/"+key] = append(seqs[bucket+"/"+key], e.publish(tp, bucket, key))
		}
	}
	return seqs
}

// publish commits one event for bucket/key through the write path's API
// (reserve, commit) and returns its sequencer.
func (e *env) publish(tp *topic.Topic, bucket, key string) uint64 {
	e.t.Helper()
	seq := e.seq.Add(1)
	rec := event.New(event.Params{Type: event.ObjectCreatedPut, Time: e.clock.Now(), Region: "default",
		Bucket: bucket, Key: key, Size: 1, ETag: "x", Sequencer: seq, EventID: fmt.Sprintf("ev-%d", seq)})
	data, err := event.Marshal(rec)
	if err != nil {
		e.t.Fatal(err)
	}
	shard := nq.ShardIndex(bucket, key, tp.NumShards)
	r, err := e.q.Reserve(e.ctx, nq.Name("", tp.Name), shard, uint64(len(data)))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := r.Commit(e.ctx, data); err != nil {
		e.t.Fatal(err)
	}
	return seq
}

// entries counts committed entries over a topic's shards.
func (e *env) entries(tp *topic.Topic) int {
	e.t.Helper()
	st, err := e.q.Stats(e.ctx, nq.Name("", tp.Name), tp.NumShards)
	if err != nil {
		e.t.Fatal(err)
	}
	return int(st.Entries)
}

// listAll returns every committed entry of one shard.
func (e *env) listAll(oid string) []clsq.Entry {
	e.t.Helper()
	res, err := clsq.List(e.ctx, e.q.IO(), oid, "", clsq.MaxListMax)
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Entries
}

// endpoints builds real endpoints from topic attributes: HTTP through
// internal/notify/endpoint/http, others through extra.
func (e *env) endpoints(extra func(*topic.Topic) (push.Endpoint, error)) Endpoints {
	var mu sync.Mutex
	cache := map[string]push.Endpoint{}
	return EndpointsFunc(func(_ context.Context, t *topic.Topic) (push.Endpoint, error) {
		mu.Lock()
		defer mu.Unlock()
		if ep := cache[t.Settings.PushEndpoint]; ep != nil {
			return ep, nil
		}
		u, err := t.Settings.Endpoint()
		if err != nil {
			return nil, err
		}
		var ep push.Endpoint
		switch u.Scheme {
		case topic.SchemeHTTP:
			ep, err = httpep.New(httpep.Options{URL: t.Settings.PushEndpoint, CloudEvents: t.Settings.CloudEvents, Timeout: 10 * time.Second})
		default:
			if extra == nil {
				return nil, fmt.Errorf("no endpoint for %s", u.Scheme)
			}
			ep, err = extra(t)
		}
		if err != nil {
			return nil, err
		}
		cache[t.Settings.PushEndpoint] = ep
		e.t.Cleanup(func() { ep.Close() })
		return ep, nil
	})
}

type managerOpt func(*Config)

func (e *env) manager(owner string, eps Endpoints, opts ...managerOpt) *Manager {
	e.t.Helper()
	cfg := Config{
		Owner: owner, IO: e.q.IO(), Registry: e.q, Topics: e, Endpoints: eps,
		LeaseDuration: 2 * time.Second, ScanInterval: 100 * time.Millisecond, RenewInterval: 300 * time.Millisecond,
		PollInterval: 20 * time.Millisecond, InitialBackoff: 5 * time.Millisecond, MaxBackoff: 40 * time.Millisecond,
		PushTimeout: 10 * time.Second, Now: e.clock.Now, Registerer: prometheus.NewRegistry(),
		Logger: testLogger(),
	}
	for _, o := range opts {
		o(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := m.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = m.Stop(ctx)
	})
	return m
}

func testLogger() *slog.Logger {
	if os.Getenv("DELIVERY_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// eventually polls cond until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// receiver is a real HTTP server on 127.0.0.1 that checks per-key order
// and exclusivity on everything it acknowledges.
type receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	inflight map[string]bool
	cur, max int
	got      map[string][]uint64 // acknowledged sequencers per key
	ids      map[string]int      // acknowledged deliveries per event id
	overlaps []string            // a key pushed while its previous push was open
	requests int
	// status decides the answer (0 = 200); delay how long to hold the
	// request. Both may be nil.
	status func(key string, seq uint64) int
	delay  func() time.Duration
	gate   chan struct{} // when non-nil, requests wait for it to close
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{inflight: map[string]bool{}, got: map[string][]uint64{}, ids: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) url() string { return r.srv.URL + "/events" }

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	msg, err := event.UnmarshalMessage(body)
	if err != nil || len(msg.Records) != 1 {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rec := msg.Records[0]
	key := rec.S3.Bucket.Name + "/" + rec.ObjectKey()
	seq, _ := event.ParseSequencer(rec.S3.Object.Sequencer)
	r.mu.Lock()
	r.requests++
	if r.inflight[key] {
		r.overlaps = append(r.overlaps, fmt.Sprintf("%s seq %d", key, seq))
	}
	r.inflight[key] = true
	r.cur++
	r.max = max(r.max, r.cur)
	status, delay, gate := r.status, r.delay, r.gate
	r.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-req.Context().Done():
		}
	}
	if delay != nil {
		time.Sleep(delay())
	}
	code := 200
	if status != nil {
		if c := status(key, seq); c != 0 {
			code = c
		}
	}
	r.mu.Lock()
	r.inflight[key] = false
	r.cur--
	if code == 200 {
		r.got[key] = append(r.got[key], seq)
		r.ids[rec.EventID]++
	}
	r.mu.Unlock()
	w.WriteHeader(code)
}

func (r *receiver) set(f func(r *receiver)) { r.mu.Lock(); f(r); r.mu.Unlock() }

func (r *receiver) delivered() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids)
}

// checkOrder verifies that every key's first deliveries came in sequencer
// order and that want (key → sequencers) all arrived. It returns the
// number of duplicate deliveries.
func (r *receiver) checkOrder(t *testing.T, want map[string][]uint64) (dups int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.overlaps) > 0 {
		t.Errorf("%d pushes of a key while its previous push was open, e.g. %s", len(r.overlaps), r.overlaps[0])
	}
	for key, seqs := range want {
		seen := map[uint64]bool{}
		var first []uint64
		for _, s := range r.got[key] {
			if seen[s] {
				dups++
				continue
			}
			seen[s] = true
			first = append(first, s)
		}
		if !sort.SliceIsSorted(first, func(i, j int) bool { return first[i] < first[j] }) {
			t.Errorf("key %s: out of order: %v", key, first)
		}
		if len(first) != len(seqs) {
			t.Errorf("key %s: got %d distinct events, want %d", key, len(first), len(seqs))
		}
	}
	return dups
}

// counter sums a counter family's samples in reg whose labels include
// match.
func counter(t testing.TB, reg prometheus.Gatherer, name string, match map[string]string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.Metric {
			if !labelsMatch(m, match) {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum
}

func labelsMatch(m *dto.Metric, match map[string]string) bool {
	for k, v := range match {
		ok := false
		for _, l := range m.Label {
			if l.GetName() == k && l.GetValue() == v {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

var errNoEndpoint = errors.New("test: no endpoint")
