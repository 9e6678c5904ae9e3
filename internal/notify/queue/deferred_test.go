package queue

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clsq "github.com/cairn-s3/cairn/internal/cls/queue"
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
