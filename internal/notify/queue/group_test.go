package queue

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	clsq "github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// groupRun reserves n events on one shard, holds the first commit op at a
// gate until the other n-1 commits have queued behind it, then lets them
// run. prepare may tamper with the reservations; hook sees every later op.
// It returns the Commit results.
func groupRun(t *testing.T, e *env, oid string, n int, prepare func([]*Reservation),
	hook func(op *objstore.WriteOp) (error, bool)) ([]string, []error) {
	t.Helper()
	ctx := context.Background()
	rs := reserveN(t, e, oid, n, prepare)
	gate := make(chan struct{})
	var once sync.Once
	e.io.mu.Lock()
	e.io.fail = func(_ string, op *objstore.WriteOp) (error, bool) {
		first := false
		once.Do(func() { first = true })
		if first {
			<-gate
			return nil, false
		}
		if hook != nil {
			return hook(op)
		}
		return nil, false
	}
	e.io.mu.Unlock()
	markers := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			markers[i], errs[i] = r.Commit(ctx, fmt.Appendf(nil, "event-%03d", i))
		}()
		if i == 0 {
			// The first commit leads and blocks at the gate.
			waitFor(t, func() bool { return e.io.ops.Load() > 0 })
		}
	}
	g := &e.q.pool(oid).group
	waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.waiting) == n-1 })
	close(gate)
	wg.Wait()
	e.io.mu.Lock()
	e.io.fail = nil
	e.io.mu.Unlock()
	return markers, errs
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
	}
}

// entriesOf lists the shard's entries' data, sorted.
func entriesOf(t *testing.T, e *env, oid string) []string {
	t.Helper()
	res, err := clsq.List(context.Background(), e.q.IO(), oid, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, en := range res.Entries {
		out = append(out, string(en.Data))
	}
	sort.Strings(out)
	return out
}

func wantEvents(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("event-%03d", i)
	}
	return out
}

func sameStrings(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// Commits queued behind a running op share the next one: 40 events, two
// ops, every event committed once with its own marker.
func TestGroupCommitShares(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	if err := e.q.Create(ctx, ":g", 1); err != nil {
		t.Fatal(err)
	}
	const n = 40
	before := e.io.ops.Load()
	markers, errs := groupRun(t, e, ":g", n, nil, nil)
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil || markers[i] == "" || seen[markers[i]] {
			t.Fatalf("commit %d: marker %q err %v", i, markers[i], errs[i])
		}
		seen[markers[i]] = true
	}
	// The synchronous reserves ran before the gate was set.
	if ops := e.io.ops.Load() - before; ops > int64(n)/2 {
		t.Fatalf("%d ops for %d commits: no grouping", ops, n)
	}
	if got := entriesOf(t, e, ":g"); !sameStrings(got, wantEvents(n)) {
		t.Fatalf("entries %v", got)
	}
	st, _ := e.q.Stats(ctx, ":g", 1)
	if st.Reservations != 0 || st.PooledReservations != uint64(e.q.Pooled(":g")) {
		t.Fatalf("%+v, %d pooled: reservations leaked", st, e.q.Pooled(":g"))
	}
	if ops, evs := e.q.GroupStats(); evs < n || ops >= evs {
		t.Fatalf("group stats %d ops %d events", ops, evs)
	}
}

// One expired reservation makes the shared op fail as a whole; everyone
// falls back to committing alone and no event is lost or doubled.
func TestGroupCommitOneExpired(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	if err := e.q.Create(ctx, ":x", 1); err != nil {
		t.Fatal(err)
	}
	const n = 12
	markers, errs := groupRun(t, e, ":x", n, func(rs []*Reservation) {
		// Drop reservation 5 as the expiry job would.
		if err := clsq.Abort(ctx, e.q.IO(), ":x", rs[5].id); err != nil {
			t.Fatal(err)
		}
	}, nil)
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("commit %d: %v", i, errs[i])
		}
	}
	_ = markers
	if got := entriesOf(t, e, ":x"); !sameStrings(got, wantEvents(n)) {
		t.Fatalf("entries %v", got)
	}
}

// A shared op that failed with an unknown outcome is retried per event as
// a retry: applied → nothing committed twice; not applied → committed.
func TestGroupCommitUncertain(t *testing.T) {
	for _, applied := range []bool{false, true} {
		t.Run(fmt.Sprintf("applied=%v", applied), func(t *testing.T) {
			e := newEnv(t, Options{})
			ctx := context.Background()
			if err := e.q.Create(ctx, ":u", 1); err != nil {
				t.Fatal(err)
			}
			const n = 10
			var mu sync.Mutex
			failed := false
			_, errs := groupRun(t, e, ":u", n, nil, func(op *objstore.WriteOp) (error, bool) {
				mu.Lock()
				defer mu.Unlock()
				if !failed && batchCommits(op) >= n-1 {
					failed = true
					return objstore.Errorf(objstore.ErrTimedOut, "injected"), applied
				}
				return nil, false
			})
			if !failed {
				t.Fatal("the shared op never ran")
			}
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("commit %d: %v", i, errs[i])
				}
			}
			if got := entriesOf(t, e, ":u"); !sameStrings(got, wantEvents(n)) {
				t.Fatalf("entries %v", got)
			}
		})
	}
}

// batchCommits is the number of commits in op's commit_batch step (0: none).
func batchCommits(op *objstore.WriteOp) int {
	for _, s := range op.Steps {
		if x, ok := s.(*objstore.ExecStep); ok && x.Method == clsq.MethodCommitBatch && len(x.In) > 1 {
			k, _ := binary.Uvarint(x.In[1:]) // after the version byte
			return int(k)
		}
	}
	return 0
}

// reserveN makes n reservations of 100 bytes on oid and hands them to
// prepare (if any).
func reserveN(t *testing.T, e *env, oid string, n int, prepare func([]*Reservation)) []*Reservation {
	t.Helper()
	rs := make([]*Reservation, n)
	for i := range rs {
		r, err := e.q.Reserve(context.Background(), oid, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = r
	}
	if prepare != nil {
		prepare(rs)
	}
	return rs
}
