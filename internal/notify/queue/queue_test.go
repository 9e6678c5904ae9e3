package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/cls"
	clsq "github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cockroachdb/pebble/v2/vfs"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// countingIO counts Operate calls and can fail chosen ones, before or after
// applying them (an unknown outcome, as a timeout gives).
type countingIO struct {
	objstore.IOContext
	ops  atomic.Int64
	many atomic.Int64 // OperateMany calls (their ops count in ops)
	mu   sync.Mutex
	fail func(oid string, op *objstore.WriteOp) (err error, after bool)
}

func (c *countingIO) WithNamespace(ns string) objstore.IOContext {
	return &nsIO{c, c.IOContext.WithNamespace(ns)}
}

type nsIO struct {
	c *countingIO
	objstore.IOContext
}

func (n *nsIO) WithNamespace(ns string) objstore.IOContext { return n.c.WithNamespace(ns) }

func (n *nsIO) Operate(ctx context.Context, oid string, op *objstore.WriteOp) error {
	n.c.ops.Add(1)
	n.c.mu.Lock()
	f := n.c.fail
	n.c.mu.Unlock()
	if f != nil {
		if err, after := f(oid, op); err != nil {
			if after {
				if e := n.IOContext.Operate(ctx, oid, op); e != nil {
					return e
				}
			}
			return err
		}
	}
	return n.IOContext.Operate(ctx, oid, op)
}

// OperateMany applies the fail hook to each request and passes the rest
// to the store's OperateMany (the embedded store's shared batch).
func (n *nsIO) OperateMany(ctx context.Context, reqs []objstore.WriteReq) {
	n.c.many.Add(1)
	n.c.ops.Add(int64(len(reqs)))
	n.c.mu.Lock()
	f := n.c.fail
	n.c.mu.Unlock()
	var pass []objstore.WriteReq
	var idx []int
	late := map[int]error{}
	for i := range reqs {
		if f != nil {
			if err, after := f(reqs[i].OID, reqs[i].Op); err != nil {
				if !after {
					reqs[i].Err = err
					continue
				}
				late[i] = err
			}
		}
		pass = append(pass, objstore.WriteReq{OID: reqs[i].OID, Op: reqs[i].Op})
		idx = append(idx, i)
	}
	objstore.OperateMany(ctx, n.IOContext, pass)
	for k, i := range idx {
		reqs[i].Err = pass[k].Err
		if err, ok := late[i]; ok && reqs[i].Err == nil {
			reqs[i].Err = err
		}
	}
}

type env struct {
	store *embedded.Store
	clk   *clock
	io    *countingIO
	q     *Queues
	// commitOps: ops of the last deferredRun's commits (and
	// crossShardRun's, with its OperateMany calls in commitCalls).
	commitOps, commitCalls int64
}

func newEnv(t testing.TB, opts Options) *env {
	t.Helper()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	st, err := embedded.Open(embedded.Options{Dir: "/db", FS: vfs.NewMem(), Classes: reg, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	if err := st.CreatePool(ctx, Pool); err != nil {
		t.Fatal(err)
	}
	io, err := st.IOContext(ctx, Pool)
	if err != nil {
		t.Fatal(err)
	}
	cio := &countingIO{IOContext: io}
	if opts.Now == nil {
		opts.Now = clk.Now
	}
	return &env{store: st, clk: clk, io: cio, q: New(cio, opts)}
}

func (e *env) objects(t testing.TB) []string {
	t.Helper()
	var out []string
	marker := ""
	for {
		oids, more, err := e.q.IO().ListObjects(context.Background(), marker, 1000)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, oids...)
		if !more {
			return out
		}
		marker = oids[len(oids)-1]
	}
}

func TestNames(t *testing.T) {
	if got := Name("", "fish"); got != ":fish" {
		t.Fatal(got)
	}
	if got := ShardOIDs(":fish", 3); strings.Join(got, ",") != ":fish,:fish.1,:fish.2" {
		t.Fatal(got)
	}
	for _, c := range []struct {
		oid   string
		q     string
		i     int
		valid bool
	}{{":fish", ":fish", 0, true}, {":fish.10", ":fish", 10, true}, {":fish.0", "", 0, false},
		{":fish.01", "", 0, false}, {RegistryObject, "", 0, false}, {":fish.x", "", 0, false}} {
		q, i, ok := ParseShardOID(c.oid)
		if ok != c.valid || q != c.q || i != c.i {
			t.Errorf("ParseShardOID(%q) = %q %d %v", c.oid, q, i, ok)
		}
	}
}

// The shard function is fixed forever: these values must never change.
func TestShardIndexGolden(t *testing.T) {
	// Checked against an independent FNV-1a 64 implementation (Python):
	// fnv1a64("bk1:obj") = 0x5bb6b0a34a6f52b6.
	for _, c := range []struct {
		bucket, key string
		n, want     int
	}{
		{"bk1", "obj", 11, 8}, {"bk1", "photos/2020/a.jpg", 11, 6}, {"b", "", 7, 3},
		{"bucket", "key", 1000, 142}, {"bk1", "obj", 1, 0}, {"bk1", "obj", 0, 0},
	} {
		if got := ShardIndex(c.bucket, c.key, c.n); got != c.want {
			t.Fatalf("ShardIndex(%q, %q, %d) = %d, want %d (the hash must never change)", c.bucket, c.key, c.n, got, c.want)
		}
	}
	// Spread: 11000 keys over 11 shards land within 20% of even.
	counts := make([]int, 11)
	for i := range 11000 {
		counts[ShardIndex("bk", fmt.Sprintf("key-%d", i), 11)]++
	}
	for s, c := range counts {
		if c < 800 || c > 1200 {
			t.Fatalf("shard %d got %d of 11000 keys", s, c)
		}
	}
}

func TestCreateDeleteShards(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	for _, c := range []struct {
		name string
		n    int
	}{{":t", 11}, {":t-x", 2}, {":tt", 1}} {
		if err := e.q.Create(ctx, c.name, c.n); err != nil {
			t.Fatal(err)
		}
	}
	// Idempotent.
	if err := e.q.Create(ctx, ":t", 11); err != nil {
		t.Fatal(err)
	}
	want := []string{":t", ":t-x", ":t-x.1", ":t.1", ":t.10", ":t.2", ":t.3", ":t.4", ":t.5", ":t.6", ":t.7", ":t.8", ":t.9", ":tt", RegistryObject}
	if got := e.objects(t); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("objects:\n%v\nwant\n%v", got, want)
	}
	if n, err := e.q.Lookup(ctx, ":t"); err != nil || n != 11 {
		t.Fatal(n, err)
	}
	st, err := e.q.Stats(ctx, ":t", 11)
	if err != nil || len(st.PerShard) != 11 || st.Capacity != 11*DefaultCapacity || st.Entries != 0 {
		t.Fatalf("%+v %v", st, err)
	}
	if err := e.q.Delete(ctx, ":t"); err != nil {
		t.Fatal(err)
	}
	want = []string{":t-x", ":t-x.1", ":tt", RegistryObject}
	if got := e.objects(t); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("after delete: %v", got)
	}
	if _, err := e.q.Lookup(ctx, ":t"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatal(err)
	}
	if err := e.q.Delete(ctx, ":t"); err != nil { // idempotent
		t.Fatal(err)
	}
}

// RGW had registry paging bugs with many queues: page through 2500.
func TestRegistryPaging(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	const n = 2500
	var names []string
	for i := range n {
		name := fmt.Sprintf(":topic-%05d", i)
		names = append(names, name)
		op := objstore.NewWriteOp().Create(false).SetOmap(objstore.KV{Key: name, Value: []byte("3")})
		if err := e.q.IO().Operate(ctx, RegistryObject, op); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	pages := 0
	marker := ""
	for {
		page, more, err := e.q.List(ctx, marker, 0)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page) > MaxRegistryPage {
			t.Fatalf("page of %d", len(page))
		}
		for _, in := range page {
			if in.Shards != 3 {
				t.Fatal(in)
			}
			seen = append(seen, in.Name)
		}
		if !more {
			break
		}
		marker = page[len(page)-1].Name
	}
	if pages != 3 || strings.Join(seen, ",") != strings.Join(names, ",") {
		t.Fatalf("pages %d, saw %d names", pages, len(seen))
	}
	count := 0
	if err := e.q.ForEach(ctx, func(Info) error { count++; return nil }); err != nil || count != n {
		t.Fatal(count, err)
	}
	// Small pages too.
	page, more, err := e.q.List(ctx, ":topic-00998", 2)
	if err != nil || !more || len(page) != 2 || page[0].Name != ":topic-00999" || page[1].Name != ":topic-01000" {
		t.Fatal(page, more, err)
	}
}

func TestReserveCommitAbortAccounting(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	if err := e.q.Create(ctx, ":q", 2); err != nil {
		t.Fatal(err)
	}
	r, err := e.q.Reserve(ctx, ":q", 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	if r.OID() != ":q.1" || r.Bytes() != DefaultSlotSize {
		t.Fatal(r.OID(), r.Bytes())
	}
	m, err := r.Commit(ctx, []byte(`{"a":1}`))
	if err != nil || m == "" {
		t.Fatal(m, err)
	}
	r.Abort(ctx) // no-op after commit
	if _, err := r.Commit(ctx, []byte("x")); err == nil {
		t.Fatal("second commit accepted")
	}
	r2, err := e.q.Reserve(ctx, ":q", 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	r2.Abort(ctx)
	r2.Abort(ctx)
	st, _ := e.q.Stats(ctx, ":q", 2)
	// The pool's idle reservations are not pending writes.
	if st.Entries != 1 || st.Bytes != 7 || st.Reservations != 0 || st.PooledReservations != uint64(e.q.Pooled(":q.1")) || st.PooledReservations == 0 {
		t.Fatalf("%+v pooled %d", st, e.q.Pooled(":q.1"))
	}
	e.q.ReleasePool(ctx)
	st, _ = e.q.Stats(ctx, ":q", 2)
	if st.Reservations != 0 || st.ReservedBytes != 0 || st.Entries != 1 {
		t.Fatalf("after release %+v", st)
	}
	// Oversized: a dedicated reservation of that size.
	big, err := e.q.Reserve(ctx, ":q", 0, 10000)
	if err != nil || big.Bytes() != 10000 {
		t.Fatal(err)
	}
	big.Abort(ctx)
	st, _ = e.q.Stats(ctx, ":q", 2)
	if st.Reservations != 0 {
		t.Fatalf("big abort left %+v", st)
	}
	// Commit of more than reserved re-reserves the exact size.
	r3, _ := e.q.Reserve(ctx, ":q", 0, 10)
	if _, err := r3.Commit(ctx, make([]byte, 5000)); err != nil {
		t.Fatal(err)
	}
	e.q.ReleasePool(ctx)
	st, _ = e.q.Stats(ctx, ":q", 2)
	if st.Entries != 2 || st.Reservations != 0 {
		t.Fatalf("%+v", st)
	}
}

func TestFullShard(t *testing.T) {
	e := newEnv(t, Options{Capacity: 64 << 10})
	ctx := context.Background()
	if err := e.q.Create(ctx, ":f", 1); err != nil {
		t.Fatal(err)
	}
	var rs []*Reservation
	for {
		r, err := e.q.Reserve(ctx, ":f", 0, 100)
		if errors.Is(err, objstore.ErrNoSpace) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	if len(rs) != 16 {
		t.Fatalf("%d reservations of 4 KiB in 64 KiB", len(rs))
	}
	rs[0].Abort(ctx)
	if _, err := e.q.Reserve(ctx, ":f", 0, 100); err != nil {
		t.Fatal("room after abort:", err)
	}
	if _, err := e.q.Reserve(ctx, ":gone", 0, 100); !errors.Is(err, ErrQueueGone) {
		t.Fatal(err)
	}
}

// Steady state: one synced queue op per event (commit + replenish).
func TestPoolOneOpPerEvent(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	if err := e.q.Create(ctx, ":p", 1); err != nil {
		t.Fatal(err)
	}
	// Warm up.
	for range 3 {
		r, _ := e.q.Reserve(ctx, ":p", 0, 100)
		if _, err := r.Commit(ctx, []byte("w")); err != nil {
			t.Fatal(err)
		}
	}
	before := e.io.ops.Load()
	const n = 100
	for range n {
		r, err := e.q.Reserve(ctx, ":p", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Commit(ctx, []byte("event")); err != nil {
			t.Fatal(err)
		}
	}
	if ops := e.io.ops.Load() - before; ops != n {
		t.Fatalf("%d ops for %d events", ops, n)
	}
	// Pooled reservations expire out of the pool and are aborted.
	e.clk.Advance(DefaultReservationTTL)
	if _, err := e.q.ExpireReservations(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ := e.q.Stats(ctx, ":p", 1)
	if st.Reservations != 0 || e.q.Pooled(":p") != 0 {
		t.Fatalf("%+v pooled %d", st, e.q.Pooled(":p"))
	}
}

func TestExpiryAndLateCommit(t *testing.T) {
	e := newEnv(t, Options{PoolMax: -1})
	ctx := context.Background()
	if err := e.q.Create(ctx, ":x", 1); err != nil {
		t.Fatal(err)
	}
	r, _ := e.q.Reserve(ctx, ":x", 0, 100)
	e.clk.Advance(DefaultReservationTTL - time.Second)
	if n, _ := e.q.ExpireReservations(ctx); n != 0 {
		t.Fatal("expired too early")
	}
	e.clk.Advance(2 * time.Second)
	if n, _ := e.q.ExpireReservations(ctx); n != 1 {
		t.Fatal("not expired")
	}
	// A commit after expiry reserves afresh: the event is not lost.
	if _, err := r.Commit(ctx, []byte("late")); err != nil {
		t.Fatal(err)
	}
	st, _ := e.q.Stats(ctx, ":x", 1)
	if st.Entries != 1 || st.Reservations != 0 {
		t.Fatalf("%+v", st)
	}
}

func TestCommitRetries(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("applied=%v", after), func(t *testing.T) {
			e := newEnv(t, Options{})
			ctx := context.Background()
			if err := e.q.Create(ctx, ":r", 1); err != nil {
				t.Fatal(err)
			}
			r, _ := e.q.Reserve(ctx, ":r", 0, 100)
			var failed atomic.Bool
			e.io.mu.Lock()
			e.io.fail = func(oid string, op *objstore.WriteOp) (error, bool) {
				if failed.CompareAndSwap(false, true) {
					return objstore.Errorf(objstore.ErrTimedOut, "injected"), after
				}
				return nil, false
			}
			e.io.mu.Unlock()
			if _, err := r.Commit(ctx, []byte("once")); err != nil {
				t.Fatal(err)
			}
			res, err := clsq.List(ctx, e.q.IO(), ":r", "", 10)
			if err != nil || len(res.Entries) != 1 || string(res.Entries[0].Data) != "once" {
				t.Fatalf("entries %+v %v", res.Entries, err)
			}
		})
	}
}

func TestDumpPaging(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	if err := e.q.Create(ctx, ":d", 3); err != nil {
		t.Fatal(err)
	}
	// 0 entries on shard 1, 3 on shard 0, 4 on shard 2.
	var want []string
	for _, c := range []struct{ shard, n int }{{0, 3}, {2, 4}} {
		for i := range c.n {
			r, err := e.q.Reserve(ctx, ":d", c.shard, 10)
			if err != nil {
				t.Fatal(err)
			}
			d := fmt.Sprintf("s%d-%d", c.shard, i)
			want = append(want, d)
			if _, err := r.Commit(ctx, []byte(d)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, max := range []int{1, 2, 3, 7, 100} {
		var got []string
		marker := ""
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("no progress")
			}
			p, err := e.q.Dump(ctx, ":d", 3, marker, max)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Entries) > max {
				t.Fatalf("page of %d > %d", len(p.Entries), max)
			}
			for _, en := range p.Entries {
				got = append(got, string(en.Data))
			}
			if !p.Truncated {
				if p.Next != "" {
					t.Fatalf("untruncated page with next %q", p.Next)
				}
				break
			}
			marker = p.Next
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("max %d: %v", max, got)
		}
	}
	if _, err := e.q.Dump(ctx, ":d", 3, "bogus", 1); !errors.Is(err, objstore.ErrInvalid) {
		t.Fatal(err)
	}
	st, err := e.q.Stats(ctx, ":d", 3)
	if err != nil || st.Entries != 7 || st.Bytes != 7*4 || st.Oldest.IsZero() {
		t.Fatalf("%+v %v", st, err)
	}
}

func TestConcurrentReserveCommit(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	if err := e.q.Create(ctx, ":c", 11); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				key := fmt.Sprintf("k%d-%d", w, i)
				r, err := e.q.Reserve(ctx, ":c", ShardIndex("b", key, 11), 100)
				if err != nil {
					t.Error(err)
					return
				}
				if i%5 == 0 {
					r.Abort(ctx)
					continue
				}
				if _, err := r.Commit(ctx, []byte(key)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	e.q.ReleasePool(ctx)
	st, _ := e.q.Stats(ctx, ":c", 11)
	if st.Entries != 16*40 || st.Reservations != 0 {
		t.Fatalf("%+v", st)
	}
}

// Stats asks each shard past the bound SetStatsBound gives (the delivery
// owner's: every entry up to it is gone), so with a bound past the first
// entry the oldest reported is the second's.
func TestStatsUsesBound(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	if err := e.q.Create(ctx, ":s", 1); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r, err := e.q.Reserve(ctx, ":s", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Commit(ctx, []byte("x")); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(time.Second)
	}
	res, err := clsq.List(ctx, e.q.IO(), ":s", "", 10)
	if err != nil || len(res.Entries) != 3 {
		t.Fatal(len(res.Entries), err)
	}
	before, err := e.q.Stats(ctx, ":s", 1)
	if err != nil || !before.Oldest.Equal(res.Entries[0].Committed) {
		t.Fatalf("no bound: %+v %v", before, err)
	}
	var asked []string
	e.q.SetStatsBound(func(oid string) clsq.Marker { asked = append(asked, oid); return res.Entries[0].Marker })
	st, err := e.q.Stats(ctx, ":s", 1)
	if err != nil || !st.Oldest.Equal(res.Entries[1].Committed) || st.Entries != 3 || len(asked) != 1 || asked[0] != ":s" {
		t.Fatalf("bound %s: %+v %v (asked %v)", res.Entries[0].Marker, st, err, asked)
	}
}
