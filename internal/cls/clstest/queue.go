package clstest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/lock"
	"github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/objstore"
)

func ok[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func testQueueCapacity(t *testing.T, e *env) {
	_, err := queue.Reserve(e.ctx, e.io, "q", 1, 1)
	is(t, err, objstore.ErrNotFound)
	is(t, queue.Init(e.ctx, e.io, "q", 1000), nil)
	is(t, queue.Init(e.ctx, e.io, "q", 1000), objstore.ErrExists)

	r1 := ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 600, 2))
	_, err = queue.Reserve(e.ctx, e.io, "q", 401, 1)
	is(t, err, objstore.ErrNoSpace)
	r2 := ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 400, 1))
	_, err = queue.Reserve(e.ctx, e.io, "q", 1, 1)
	is(t, err, objstore.ErrNoSpace)

	// Committing more than reserved fails and keeps the reservation.
	_, err = queue.Commit(e.ctx, e.io, "q", r2, make([]byte, 401))
	is(t, err, objstore.ErrInvalid)
	_, err = queue.Commit(e.ctx, e.io, "q", r2, []byte("a"), []byte("b"))
	is(t, err, objstore.ErrInvalid)
	ms := ok[[]string](t)(queue.Commit(e.ctx, e.io, "q", r1, make([]byte, 100), make([]byte, 200)))
	if len(ms) != 2 || ms[0] >= ms[1] {
		t.Fatalf("markers %q", ms)
	}
	_, err = queue.Commit(e.ctx, e.io, "q", r1, []byte("x"))
	is(t, err, objstore.ErrNotFound)

	// Abort is idempotent; unknown ids are fine.
	is(t, queue.Abort(e.ctx, e.io, "q", r2), nil)
	is(t, queue.Abort(e.ctx, e.io, "q", r2), nil)
	is(t, queue.Abort(e.ctx, e.io, "q", 12345), nil)
	_, err = queue.Commit(e.ctx, e.io, "q", r2, []byte("x"))
	is(t, err, objstore.ErrNotFound)

	// 300 used: 700 fit, 701 do not.
	_, err = queue.Reserve(e.ctx, e.io, "q", 701, 1)
	is(t, err, objstore.ErrNoSpace)
	r3 := ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 700, 1))
	st := ok[queue.Stats](t)(queue.GetStats(e.ctx, e.io, "q"))
	want := queue.Stats{Capacity: 1000, Entries: 2, Bytes: 300, Reservations: 1, ReservedBytes: 700, Oldest: e.clock.Now()}
	if st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	// Past a bound the caller vouches for (nothing below the first entry):
	// the same answer.
	if st2 := ok[queue.Stats](t)(queue.GetStatsAfter(e.ctx, e.io, "q", ok[queue.Marker](t)(queue.MarkerBefore(ms[0])))); st2 != want {
		t.Fatalf("stats after a bound %+v, want %+v", st2, want)
	}
	// Counters survive a restart (header cache gone).
	e.reopen()
	if st2 := ok[queue.Stats](t)(queue.GetStats(e.ctx, e.io, "q")); st2 != want {
		t.Fatalf("stats after reopen %+v", st2)
	}
	is(t, queue.Abort(e.ctx, e.io, "q", r3), nil)
	ok[int](t)(queue.RemoveUpTo(e.ctx, e.io, "q", ms[1]))
	st = ok[queue.Stats](t)(queue.GetStats(e.ctx, e.io, "q"))
	if st.Entries != 0 || st.Bytes != 0 || st.Reservations != 0 || st.ReservedBytes != 0 || !st.Oldest.IsZero() {
		t.Fatalf("drained stats %+v", st)
	}
	ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 1000, 1))
}

func testQueueExpire(t *testing.T, e *env) {
	is(t, queue.Init(e.ctx, e.io, "q", 1000), nil)
	stale := ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 500, 1))
	e.clock.Advance(100 * time.Second)
	fresh := ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 500, 1))
	e.clock.Advance(21 * time.Second)
	if n := ok[int](t)(queue.ExpireReservations(e.ctx, e.io, "q", 120*time.Second)); n != 1 {
		t.Fatalf("expired %d, want 1", n)
	}
	_, err := queue.Commit(e.ctx, e.io, "q", stale, []byte("late"))
	is(t, err, objstore.ErrNotFound)
	ok[[]string](t)(queue.Commit(e.ctx, e.io, "q", fresh, []byte("ok")))
	st := ok[queue.Stats](t)(queue.GetStats(e.ctx, e.io, "q"))
	if st.Reservations != 0 || st.ReservedBytes != 0 || st.Entries != 1 || st.Bytes != 2 {
		t.Fatalf("stats %+v", st)
	}
	if n := ok[int](t)(queue.ExpireReservations(e.ctx, e.io, "q", 0)); n != 0 {
		t.Fatalf("second expiry %d", n)
	}
}

func testQueuePaging(t *testing.T, e *env) {
	is(t, queue.Init(e.ctx, e.io, "q", 1<<20), nil)
	var markers []string
	for i := 0; i < 57; i++ {
		// Several entries per reservation, as a multi-record commit does.
		id := ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 64, 3))
		n := 1 + i%3
		var ds [][]byte
		for j := 0; j < n; j++ {
			ds = append(ds, []byte(fmt.Sprintf("%03d", len(markers)+j)))
		}
		markers = append(markers, ok[[]string](t)(queue.Commit(e.ctx, e.io, "q", id, ds...))...)
		e.clock.Advance(time.Millisecond)
	}
	total := len(markers)
	list := func() []queue.Entry {
		var all []queue.Entry
		m := ""
		for {
			r := ok[queue.ListResult](t)(queue.List(e.ctx, e.io, "q", m, 7))
			all = append(all, r.Entries...)
			if len(r.Entries) > 7 {
				t.Fatalf("page of %d", len(r.Entries))
			}
			if !r.Truncated {
				return all
			}
			m = r.Next
		}
	}
	all := list()
	if len(all) != total {
		t.Fatalf("listed %d of %d", len(all), total)
	}
	for i, en := range all {
		if en.Marker != markers[i] || string(en.Data) != fmt.Sprintf("%03d", i) {
			t.Fatalf("entry %d: %s %q", i, en.Marker, en.Data)
		}
		if i > 0 && en.Committed.Before(all[i-1].Committed) {
			t.Fatalf("commit times out of order at %d", i)
		}
	}
	// Retry state persists with the entry, across a restart.
	next := e.clock.Now().Add(time.Hour)
	is(t, queue.Update(e.ctx, e.io, "q", markers[20], 3, next), nil)
	e.reopen()
	r := ok[queue.ListResult](t)(queue.List(e.ctx, e.io, "q", markers[19], 1))
	if en := r.Entries[0]; en.Marker != markers[20] || en.Retries != 3 || !en.NextAttempt.Equal(next) || string(en.Data) != "020" {
		t.Fatalf("updated entry %+v", en)
	}
	is(t, queue.Update(e.ctx, e.io, "q", "ffffffffffffffff", 1, next), objstore.ErrNotFound)

	// Out-of-order acks across keys, repeated acks, then a prefix removal.
	if n := ok[int](t)(queue.RemoveMarkers(e.ctx, e.io, "q", markers[30], markers[2], markers[30])); n != 2 {
		t.Fatalf("removed %d", n)
	}
	if n := ok[int](t)(queue.RemoveMarkers(e.ctx, e.io, "q", markers[2])); n != 0 {
		t.Fatalf("re-ack removed %d", n)
	}
	if n := ok[int](t)(queue.RemoveUpTo(e.ctx, e.io, "q", markers[9])); n != 9 {
		t.Fatalf("remove up to: %d", n)
	}
	all = list()
	if len(all) != total-11 || all[0].Marker != markers[10] {
		t.Fatalf("after removals: %d entries, first %s", len(all), all[0].Marker)
	}
	for _, en := range all {
		if en.Marker == markers[30] {
			t.Fatal("acked entry still listed")
		}
	}
	st := ok[queue.Stats](t)(queue.GetStats(e.ctx, e.io, "q"))
	if st.Entries != uint64(total-11) || st.Bytes != uint64(3*(total-11)) || !st.Oldest.Equal(all[0].Committed) {
		t.Fatalf("stats %+v", st)
	}
	_, err := queue.List(e.ctx, e.io, "q", "not-a-marker", 1)
	is(t, err, objstore.ErrInvalid)
}

// testQueueFenced: every queue method runs inside a WriteOp with
// lock.AssertLocked; with a lost lease none of them changes anything.
func testQueueFenced(t *testing.T, e *env) {
	lease := lock.Options{Name: "owner", Type: lock.Exclusive, Cookie: "me", Duration: 30 * time.Second}
	is(t, queue.Init(e.ctx, e.io, "q", 1<<20), nil)
	is(t, lock.Lock(e.ctx, e.io, "q", lease), nil)
	fenced := func(cookie string, build func(op *objstore.WriteOp)) error {
		op := objstore.NewWriteOp()
		lock.AssertLocked(op, "owner", cookie, lock.Exclusive)
		build(op)
		return e.io.Operate(e.ctx, "q", op)
	}
	var rs queue.ReserveStep
	is(t, fenced("me", func(op *objstore.WriteOp) { rs = queue.AddReserve(op, 100, 2) }), nil)
	id := ok[uint64](t)(rs.ID())
	var cs queue.CommitStep
	is(t, fenced("me", func(op *objstore.WriteOp) { cs = queue.AddCommit(op, id, []byte("a"), []byte("b")) }), nil)
	ms := ok[[]string](t)(cs.Markers())
	is(t, fenced("me", func(op *objstore.WriteOp) { is(t, queue.AddUpdate(op, ms[0], 1, e.clock.Now()), nil) }), nil)
	var ls queue.ListStep
	rop := objstore.NewReadOp()
	lock.AssertLocked(rop, "owner", "me", lock.Exclusive)
	ls = queue.AddList(rop, "", 10)
	sts := queue.AddStats(rop)
	is(t, e.io.OperateRead(e.ctx, "q", rop), nil)
	if r := ok[queue.ListResult](t)(ls.Result()); len(r.Entries) != 2 || r.Entries[0].Retries != 1 {
		t.Fatalf("list %+v", r)
	}
	if st := ok[queue.Stats](t)(sts.Stats()); st.Entries != 2 {
		t.Fatalf("stats %+v", st)
	}
	id2 := ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 10, 1))

	// The lease lapses and another gateway takes it.
	e.clock.Advance(31 * time.Second)
	is(t, lock.Lock(e.ctx, e.io, "q", lock.Options{Name: "owner", Type: lock.Exclusive, Cookie: "other", Duration: time.Minute}), nil)
	before := ok[queue.Stats](t)(queue.GetStats(e.ctx, e.io, "q"))
	ver := e.stat("q").Version
	steps := map[string]func(op *objstore.WriteOp){
		"reserve": func(op *objstore.WriteOp) { queue.AddReserve(op, 1, 1) },
		"commit":  func(op *objstore.WriteOp) { queue.AddCommit(op, id2, []byte("x")) },
		"abort":   func(op *objstore.WriteOp) { queue.AddAbort(op, id2) },
		"remove":  func(op *objstore.WriteOp) { queue.AddRemoveUpTo(op, ms[1]) },
		"remove_markers": func(op *objstore.WriteOp) {
			ok[queue.CountStep](t)(queue.AddRemoveMarkers(op, ms[0]))
		},
		"update": func(op *objstore.WriteOp) { queue.AddUpdate(op, ms[0], 9, time.Time{}) },
		"expire": func(op *objstore.WriteOp) { queue.AddExpireReservations(op, 0) },
		"list":   func(op *objstore.WriteOp) { queue.AddList(op, "", 1) },
		"stats":  func(op *objstore.WriteOp) { queue.AddStats(op) },
	}
	for name, build := range steps {
		if err := fenced("me", build); err == nil || !isCanceled(err) {
			t.Fatalf("%s with a lost lease: %v", name, err)
		}
	}
	after := ok[queue.Stats](t)(queue.GetStats(e.ctx, e.io, "q"))
	if after != before || e.stat("q").Version != ver {
		t.Fatalf("fenced ops changed the queue: %+v → %+v", before, after)
	}
	// The new owner can.
	is(t, fenced("other", func(op *objstore.WriteOp) { queue.AddRemoveUpTo(op, ms[1]) }), nil)
}

func isCanceled(err error) bool { return objstore.Code(err) == objstore.ErrCanceled }

// testQueueCache: the cached header must follow writes made outside the
// class and come back correct after a restart.
func testQueueCache(t *testing.T, e *env) {
	is(t, queue.Init(e.ctx, e.io, "q", 100), nil)
	ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 50, 1))
	// Rewrite the queue outside the class: wipe it and re-init it smaller.
	op := objstore.NewWriteOp()
	op.OmapClear()
	op.SetOmapHeader(nil)
	is(t, e.io.Operate(e.ctx, "q", op), nil)
	_, err := queue.Reserve(e.ctx, e.io, "q", 1, 1)
	is(t, err, objstore.ErrNotFound)
	is(t, queue.Init(e.ctx, e.io, "q", 10), nil)
	_, err = queue.Reserve(e.ctx, e.io, "q", 11, 1)
	is(t, err, objstore.ErrNoSpace)
	// A lock taken on the queue object (another class writing) must not
	// leave a stale header behind either.
	is(t, lock.Lock(e.ctx, e.io, "q", lock.Options{Name: "l", Type: lock.Exclusive, Cookie: "c"}), nil)
	id := ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 10, 1))
	e.reopen()
	_, err = queue.Reserve(e.ctx, e.io, "q", 1, 1)
	is(t, err, objstore.ErrNoSpace)
	ok[[]string](t)(queue.Commit(e.ctx, e.io, "q", id, []byte("12345")))
	ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 5, 1))
}

// testQueueConcurrent: many writers reserving and committing or aborting
// at once keep the counters exact.
func testQueueConcurrent(t *testing.T, e *env) {
	is(t, queue.Init(e.ctx, e.io, "q", 1<<30), nil)
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id, err := queue.Reserve(e.ctx, e.io, "q", 4096, 1)
				if err != nil {
					errs <- err
					return
				}
				if i%5 == 4 {
					err = queue.Abort(e.ctx, e.io, "q", id)
				} else {
					_, err = queue.Commit(e.ctx, e.io, "q", id, []byte(fmt.Sprintf("w%d-%d", w, i)))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := ok[queue.Stats](t)(queue.GetStats(e.ctx, e.io, "q"))
	n := uint64(writers * each * 4 / 5)
	if st.Entries != n || st.Reservations != 0 || st.ReservedBytes != 0 {
		t.Fatalf("stats %+v, want %d entries", st, n)
	}
	r := ok[queue.ListResult](t)(queue.List(e.ctx, e.io, "q", "", 0))
	if uint64(len(r.Entries)) != n {
		t.Fatalf("listed %d", len(r.Entries))
	}
	var bytes uint64
	for _, en := range r.Entries {
		bytes += uint64(len(en.Data))
	}
	if bytes != st.Bytes {
		t.Fatalf("bytes %d, stats say %d", bytes, st.Bytes)
	}
}

// testQueueReservationCache: commit and abort trust a per-object cache of
// the reservations this client made; an aborted or committed reservation
// must never be found there again, and removals read dense markers in one
// range without miscounting gaps, repeats or missing entries.
func testQueueReservationCache(t *testing.T, e *env) {
	is(t, queue.Init(e.ctx, e.io, "q", 1000), nil)
	a := ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 100, 1))
	b := ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 100, 1))
	is(t, queue.Abort(e.ctx, e.io, "q", a), nil)
	_, err := queue.Commit(e.ctx, e.io, "q", a, []byte("x"))
	is(t, err, objstore.ErrNotFound)
	is(t, queue.Abort(e.ctx, e.io, "q", a), nil) // idempotent
	// Several commits and a new reservation in one op.
	op := objstore.NewWriteOp()
	c1 := queue.AddCommit(op, b, []byte("0123456789"))
	r := queue.AddReserve(op, 100, 1)
	is(t, e.io.Operate(e.ctx, "q", op), nil)
	m1 := ok[[]string](t)(c1.Markers())
	c := ok[uint64](t)(r.ID())
	_, err = queue.Commit(e.ctx, e.io, "q", b, []byte("again"))
	is(t, err, objstore.ErrNotFound)
	markers := append([]string(nil), m1...)
	for i := range 9 {
		id := c
		if i > 0 {
			id = ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 10, 1))
		}
		markers = append(markers, ok[[]string](t)(queue.Commit(e.ctx, e.io, "q", id, []byte{byte('a' + i)}))...)
	}
	st := ok[queue.Stats](t)(queue.GetStats(e.ctx, e.io, "q"))
	if st.Entries != 10 || st.Bytes != 19 || st.Reservations != 0 || st.ReservedBytes != 0 {
		t.Fatalf("after commits: %+v", st)
	}
	// Remove entries 1 and 3 alone, then a dense set with gaps (0, 2, 4, 5,
	// 7), a repeat (4) and two already gone (1, 3).
	if n := ok[int](t)(queue.RemoveMarkers(e.ctx, e.io, "q", markers[1], markers[3])); n != 2 {
		t.Fatalf("removed %d, want 2", n)
	}
	n := ok[int](t)(queue.RemoveMarkers(e.ctx, e.io, "q", markers[7], markers[0], markers[2], markers[4], markers[4], markers[5], markers[1], markers[3]))
	if n != 5 {
		t.Fatalf("removed %d, want 5", n)
	}
	st = ok[queue.Stats](t)(queue.GetStats(e.ctx, e.io, "q"))
	if st.Entries != 3 || st.Bytes != 3 {
		t.Fatalf("after removals: %+v (want entries 6, 8, 9 of one byte each)", st)
	}
	left := ok[queue.ListResult](t)(queue.List(e.ctx, e.io, "q", "", 100))
	if len(left.Entries) != 3 || left.Entries[0].Marker != markers[6] || left.Entries[2].Marker != markers[9] {
		t.Fatalf("left %+v", left.Entries)
	}
}

// testQueueCommitBatch: commit_batch does what its commits and reserves
// would as separate steps, and fails whole as the first failing one would.
func testQueueCommitBatch(t *testing.T, e *env) {
	is(t, queue.Init(e.ctx, e.io, "q", 1000), nil)
	a := ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 100, 2))
	b := ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 100, 1))
	e.reopen()                                                  // b only on disk: a cache miss
	c := ok[uint64](t)(queue.Reserve(e.ctx, e.io, "q", 100, 1)) // cached
	run := func(commits []queue.BatchCommit, refills int, bytes uint64) (queue.BatchStep, error) {
		op := objstore.NewWriteOp()
		s := queue.AddCommitBatch(op, commits, refills, bytes, 1)
		return s, e.io.Operate(e.ctx, "q", op)
	}
	before := ok[queue.Stats](t)(queue.GetStats(e.ctx, e.io, "q"))
	// Failures apply nothing: an unknown id, one id twice, too many
	// bytes, refills past the capacity (700 left), an empty call.
	for _, tc := range []struct {
		commits []queue.BatchCommit
		refills int
		want    error
	}{
		{[]queue.BatchCommit{{ID: a, Entries: [][]byte{[]byte("x")}}, {ID: 99, Entries: [][]byte{[]byte("y")}}}, 0, objstore.ErrNotFound},
		{[]queue.BatchCommit{{ID: c, Entries: [][]byte{[]byte("x")}}, {ID: c, Entries: [][]byte{[]byte("y")}}}, 0, objstore.ErrNotFound},
		{[]queue.BatchCommit{{ID: b, Entries: [][]byte{make([]byte, 101)}}}, 0, objstore.ErrInvalid},
		{[]queue.BatchCommit{{ID: b, Entries: [][]byte{[]byte("x")}}}, 8, objstore.ErrNoSpace},
		{nil, 0, objstore.ErrInvalid},
	} {
		_, err := run(tc.commits, tc.refills, 100)
		is(t, err, tc.want)
	}
	if st := ok[queue.Stats](t)(queue.GetStats(e.ctx, e.io, "q")); st != before {
		t.Fatalf("a failed batch changed the queue: %+v, was %+v", st, before)
	}
	s, err := run([]queue.BatchCommit{
		{ID: b, Entries: [][]byte{[]byte("b0")}},
		{ID: a, Entries: [][]byte{[]byte("a0"), []byte("a1")}},
		{ID: c, Entries: [][]byte{[]byte("c0")}},
	}, 3, 50)
	is(t, err, nil)
	ms := ok[[][]string](t)(s.Markers())
	ids := ok[[]uint64](t)(s.ReserveIDs())
	if len(ms) != 3 || len(ms[0]) != 1 || len(ms[1]) != 2 || len(ms[2]) != 1 || len(ids) != 3 || ids[0] != c+1 || ids[2] != c+3 {
		t.Fatalf("markers %v ids %v (c=%d)", ms, ids, c)
	}
	st := ok[queue.Stats](t)(queue.GetStats(e.ctx, e.io, "q"))
	if st.Entries != 4 || st.Bytes != 8 || st.Reservations != 3 || st.ReservedBytes != 150 {
		t.Fatalf("after batch: %+v", st)
	}
	l := ok[queue.ListResult](t)(queue.List(e.ctx, e.io, "q", "", 10))
	var got []string
	for i, en := range l.Entries {
		got = append(got, string(en.Data))
		if want := [][]string{ms[0], ms[1], ms[2]}; en.Marker != append(append(append([]string{}, want[0]...), want[1]...), want[2]...)[i] {
			t.Fatalf("entry %d marker %s, markers %v", i, en.Marker, ms)
		}
	}
	if fmt.Sprint(got) != "[b0 a0 a1 c0]" {
		t.Fatalf("entries %v", got)
	}
	// The consumed ids are gone, the new ones work, before and after a
	// reopen (cache and disk agree).
	for _, id := range []uint64{a, b, c} {
		_, err := queue.Commit(e.ctx, e.io, "q", id, []byte("z"))
		is(t, err, objstore.ErrNotFound)
	}
	ok[[]string](t)(queue.Commit(e.ctx, e.io, "q", ids[0], make([]byte, 50)))
	_, err = queue.Commit(e.ctx, e.io, "q", ids[1], make([]byte, 51))
	is(t, err, objstore.ErrInvalid)
	e.reopen()
	ok[[]string](t)(queue.Commit(e.ctx, e.io, "q", ids[1], []byte("r1")))
	is(t, queue.Abort(e.ctx, e.io, "q", ids[2]), nil)
	st = ok[queue.Stats](t)(queue.GetStats(e.ctx, e.io, "q"))
	if st.Entries != 6 || st.Reservations != 0 || st.ReservedBytes != 0 {
		t.Fatalf("at the end: %+v", st)
	}
}

// testQueueReservationBlocks: refills made together share an omap key (a
// block); ids of a block commit one at a time and several in one call,
// from the cache and after a restart (found by the block's key range), each
// exactly once, and the block's key goes with its last id.
func testQueueReservationBlocks(t *testing.T, e *env) {
	is(t, queue.Init(e.ctx, e.io, "q", 1<<20), nil)
	run := func(ids []uint64, refills int) ([]uint64, error) {
		op := objstore.NewWriteOp()
		cs := make([]queue.BatchCommit, len(ids))
		for i, id := range ids {
			cs[i] = queue.BatchCommit{ID: id, Entries: [][]byte{[]byte("ev")}}
		}
		s := queue.AddCommitBatch(op, cs, refills, 100, 1)
		if err := e.io.Operate(e.ctx, "q", op); err != nil {
			return nil, err
		}
		return s.ReserveIDs()
	}
	resKeys := func() (n int) {
		for _, kv := range e.omap("q") {
			if kv.Key[0] != 'e' {
				n++
			}
		}
		return n
	}
	ids, err := run(nil, 70) // blocks of 64 and 6
	is(t, err, nil)
	if n := resKeys(); n != 2 {
		t.Fatalf("70 refills: %d reservation keys, want 2", n)
	}
	_, err = run(ids[3:5], 0) // cached
	is(t, err, nil)
	e.reopen()
	_, err = queue.Commit(e.ctx, e.io, "q", ids[40], []byte("x")) // from the omap
	is(t, err, nil)
	for _, id := range []uint64{ids[3], ids[40]} {
		_, err = queue.Commit(e.ctx, e.io, "q", id, []byte("x"))
		is(t, err, objstore.ErrNotFound)
	}
	_, err = run([]uint64{ids[65], ids[65]}, 0)
	is(t, err, objstore.ErrNotFound)
	is(t, queue.Abort(e.ctx, e.io, "q", ids[66]), nil)
	is(t, queue.Abort(e.ctx, e.io, "q", ids[66]), nil)
	_, err = run(append([]uint64{ids[64], ids[65]}, ids[67:]...), 0) // the rest of the second block
	is(t, err, nil)
	if n := resKeys(); n != 1 {
		t.Fatalf("second block used up: %d reservation keys, want 1", n)
	}
	st := ok[queue.Stats](t)(queue.GetStats(e.ctx, e.io, "q"))
	if st.Reservations != 61 || st.ReservedBytes != 6100 || st.Entries != 8 {
		t.Fatalf("stats %+v", st)
	}
}
