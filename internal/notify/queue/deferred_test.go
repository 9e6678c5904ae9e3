package queue

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clsq "github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// deferredRun reserves n events on oid, lets prepare tamper with them,
// hands them to CommitDeferred in order and waits for every done. It
// returns the outcomes.
func deferredRun(t *testing.T, e *env, oid string, n int, prepare func([]*Reservation), flush bool) ([]string, []error) {
	t.Helper()
	ctx := context.Background()
	rs := reserveN(t, e, oid, n, prepare)
	before := e.io.ops.Load()
	defer func() { e.commitOps = e.io.ops.Load() - before }()
	markers := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		r.CommitDeferred(fmt.Appendf(nil, "event-%03d", i), func(m string, err error) {
			markers[i], errs[i] = m, err
			wg.Done()
		})
	}
	if flush {
		if err := e.q.FlushDeferred(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	return markers, errs
}

// entriesInOrder lists the shard's entries' data in queue order.
func entriesInOrder(t *testing.T, e *env, oid string) []string {
	t.Helper()
	res, err := clsq.List(context.Background(), e.q.IO(), oid, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, en := range res.Entries {
		out = append(out, string(en.Data))
	}
	return out
}

// DeferBatch deferred commits share one op, in the order they were handed over; nothing runs before the batch is full
// while the linger is an hour.
func TestDeferredCommitsShareOneOp(t *testing.T) {
	const n = 40
	e := newEnv(t, Options{DeferLinger: time.Hour, DeferBatch: n})
	ctx := context.Background()
	if err := e.q.Create(ctx, ":d", 1); err != nil {
		t.Fatal(err)
	}
	markers, errs := deferredRun(t, e, ":d", n, nil, false)
	commitOps := e.commitOps
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil || markers[i] == "" || seen[markers[i]] {
			t.Fatalf("commit %d: marker %q err %v", i, markers[i], errs[i])
		}
		seen[markers[i]] = true
	}
	if commitOps != 1 {
		t.Fatalf("%d ops for %d deferred commits, want 1", commitOps, n)
	}
	if got := entriesInOrder(t, e, ":d"); !sameStrings(got, wantEvents(n)) {
		t.Fatalf("entries %v", got)
	}
}

// Commits waiting for their linger wait for nothing once FlushDeferred
// runs them (shutdown).
func TestFlushDeferred(t *testing.T) {
	e := newEnv(t, Options{DeferLinger: time.Hour})
	ctx := context.Background()
	if err := e.q.Create(ctx, ":f", 2); err != nil {
		t.Fatal(err)
	}
	r, err := e.q.Reserve(ctx, ":f", 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	r.CommitDeferred([]byte("other-shard"), func(_ string, err error) { done <- err })
	_, errs := deferredRun(t, e, ":f", 5, nil, true)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := entriesInOrder(t, e, ":f"); !sameStrings(got, wantEvents(5)) {
		t.Fatalf("entries %v", got)
	}
	if got := entriesInOrder(t, e, ":f.1"); !sameStrings(got, []string{"other-shard"}) {
		t.Fatalf("entries of shard 1: %v", got)
	}
}

// One expired reservation fails the shared op; the batch is then
// committed one by one, in order: nothing lost, doubled or reordered.
func TestDeferredFallbackKeepsOrder(t *testing.T) {
	const n = 12
	e := newEnv(t, Options{DeferLinger: time.Hour, DeferBatch: n})
	ctx := context.Background()
	if err := e.q.Create(ctx, ":o", 1); err != nil {
		t.Fatal(err)
	}
	_, errs := deferredRun(t, e, ":o", n, func(rs []*Reservation) {
		if err := clsq.Abort(ctx, e.q.IO(), ":o", rs[5].id); err != nil {
			t.Fatal(err)
		}
	}, false)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	if got := entriesInOrder(t, e, ":o"); !sameStrings(got, wantEvents(n)) {
		t.Fatalf("entries %v", got)
	}
}

// A Commit does not overtake deferred commits waiting on its shard: it
// joins their queue, starts it and returns once its own event is in,
// behind theirs.
func TestCommitWaitsBehindDeferred(t *testing.T) {
	e := newEnv(t, Options{DeferLinger: time.Hour})
	ctx := context.Background()
	if err := e.q.Create(ctx, ":w", 1); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 3)
	for i := range 3 {
		r, err := e.q.Reserve(ctx, ":w", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		r.CommitDeferred(fmt.Appendf(nil, "event-%03d", i), func(_ string, err error) { done <- err })
	}
	r, err := e.q.Reserve(ctx, ":w", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(ctx, []byte("event-003")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := entriesInOrder(t, e, ":w"); !sameStrings(got, wantEvents(4)) {
		t.Fatalf("entries %v", got)
	}
}

// crossShardRun hands perShard deferred commits to each of n shards of
// queue name, shard by shard (DeferBatch is perShard+1 and the linger an
// hour, so none starts a round), then one more to the last shard, which
// starts one round for all. prepare may tamper with each shard's
// reservations; arm runs just before the commits are handed over. It
// returns the outcomes by shard; e.commitOps and e.commitCalls count the
// commits' ops and store calls.
func crossShardRun(t *testing.T, e *env, name string, n, perShard int, prepare func(shard int, rs []*Reservation), arm func()) [][]error {
	t.Helper()
	ctx := context.Background()
	if err := e.q.Create(ctx, name, n); err != nil {
		t.Fatal(err)
	}
	oids := ShardOIDs(name, n)
	rs := make([][]*Reservation, n)
	for i := range oids {
		k := perShard
		if i == n-1 {
			k++
		}
		for range k {
			r, err := e.q.Reserve(ctx, name, i, 100)
			if err != nil {
				t.Fatal(err)
			}
			rs[i] = append(rs[i], r)
		}
		if prepare != nil {
			prepare(i, rs[i])
		}
	}
	if arm != nil {
		arm()
	}
	ops, calls := e.io.ops.Load(), e.io.many.Load()
	defer func() { e.commitOps, e.commitCalls = e.io.ops.Load()-ops, e.io.many.Load()-calls }()
	errs := make([][]error, n)
	var wg sync.WaitGroup
	for i := range oids {
		errs[i] = make([]error, len(rs[i]))
		for j, r := range rs[i] {
			wg.Add(1)
			r.CommitDeferred(fmt.Appendf(nil, "event-%03d", j), func(_ string, err error) {
				errs[i][j] = err
				wg.Done()
			})
		}
	}
	wg.Wait()
	return errs
}

// The deferred commits of many shards go to the store in one call, one
// op per shard, each shard's events in order.
func TestDeferredCommitsShareOneCallAcrossShards(t *testing.T) {
	const shards, per = 11, 3
	e := newEnv(t, Options{DeferLinger: time.Hour, DeferBatch: per + 1})
	errs := crossShardRun(t, e, ":x", shards, per, nil, nil)
	if got := e.commitCalls; got != 1 {
		t.Fatalf("%d store calls for the deferred commits of %d shards, want 1", got, shards)
	}
	if got := e.commitOps; got != shards {
		t.Fatalf("%d ops, want one per shard (%d)", got, shards)
	}
	checkShardEvents(t, e, ShardOIDs(":x", shards), per, errs)
}

// One shard's op failing in the shared call (an expired reservation
// there, or an op whose outcome is unknown) neither fails nor delays the
// others' ops; that shard commits one by one, in order: nothing lost,
// doubled or reordered anywhere.
func TestDeferredCrossShardFailureStaysOnItsShard(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("applied=%v", after), func(t *testing.T) {
			const shards, per = 5, 4
			e := newEnv(t, Options{DeferLinger: time.Hour, DeferBatch: per + 1})
			ctx := context.Background()
			oids := ShardOIDs(":y", shards)
			var once sync.Once
			errs := crossShardRun(t, e, ":y", shards, per, func(shard int, rs []*Reservation) {
				if shard == 1 {
					if err := clsq.Abort(ctx, e.q.IO(), oids[1], rs[2].id); err != nil {
						t.Fatal(err)
					}
				}
			}, func() {
				e.io.mu.Lock()
				e.io.fail = func(oid string, op *objstore.WriteOp) (error, bool) {
					var hit bool
					if oid == oids[3] {
						once.Do(func() { hit = true })
					}
					if hit {
						return objstore.Errorf(objstore.ErrTimedOut, "injected"), after
					}
					return nil, false
				}
				e.io.mu.Unlock()
			})
			if got := e.commitCalls; got != 1 {
				t.Fatalf("%d shared store calls, want 1", got)
			}
			checkShardEvents(t, e, oids, per, errs)
			// Shards 0, 2 and 4 committed in the shared call, the other
			// two one by one after it.
			if ops, events := e.q.GroupStats(); ops != 3 || events != 3*per+1 {
				t.Fatalf("%d group ops with %d events, want 3 with %d", ops, events, 3*per+1)
			}
		})
	}
}

// A commit handed over while a round runs waits for its own linger
// instead of starting a round of its own at once (a round per event or
// two, one op per shard each, is what the linger is there to avoid);
// FlushDeferred still takes it at once.
func TestDeferredCommitDuringRoundWaitsForLinger(t *testing.T) {
	e := newEnv(t, Options{DeferLinger: time.Hour, DeferBatch: 2})
	ctx := context.Background()
	if err := e.q.Create(ctx, ":l", 2); err != nil {
		t.Fatal(err)
	}
	oids := ShardOIDs(":l", 2)
	r0, r1, r2 := reserveOn(t, e, ":l", 0), reserveOn(t, e, ":l", 0), reserveOn(t, e, ":l", 1)
	gate, inOp := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.io.mu.Lock()
	e.io.fail = func(string, *objstore.WriteOp) (error, bool) {
		once.Do(func() { close(inOp); <-gate })
		return nil, false
	}
	e.io.mu.Unlock()
	done := make(chan error, 3)
	cb := func(_ string, err error) { done <- err }
	r0.CommitDeferred([]byte("event-000"), cb)
	r1.CommitDeferred([]byte("event-001"), cb) // a full batch: a round starts
	<-inOp
	r2.CommitDeferred([]byte("event-000"), cb) // shard 1, during the round
	close(gate)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	c := &e.q.later
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return !c.running })
	if got := entriesInOrder(t, e, oids[1]); len(got) != 0 {
		t.Fatalf("a commit handed over during a round ran before its linger: %v", got)
	}
	if err := e.q.FlushDeferred(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := entriesInOrder(t, e, oids[1]); !sameStrings(got, wantEvents(1)) {
		t.Fatalf("shard 1 entries %v", got)
	}
}

func reserveOn(t *testing.T, e *env, name string, shard int) *Reservation {
	t.Helper()
	r, err := e.q.Reserve(context.Background(), name, shard, 100)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkShardEvents: every commit succeeded, and each shard holds its per
// events in order (the last shard one more), as crossShardRun commits them.
func checkShardEvents(t *testing.T, e *env, oids []string, per int, errs [][]error) {
	t.Helper()
	for i, oid := range oids {
		want := per
		if i == len(oids)-1 {
			want++
		}
		for j, err := range errs[i] {
			if err != nil {
				t.Fatalf("shard %d commit %d: %v", i, j, err)
			}
		}
		if got := entriesInOrder(t, e, oid); !sameStrings(got, wantEvents(want)) {
			t.Fatalf("shard %d entries %v", i, got)
		}
	}
}
