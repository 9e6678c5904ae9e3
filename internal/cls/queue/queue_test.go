package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/internal/clsfake"
	"github.com/cairn-s3/cairn/internal/objstore"
)

func setup(t *testing.T, capacity uint64) (*clsfake.Store, objstore.IOContext) {
	reg := objstore.NewRegistry()
	Register(reg)
	s := clsfake.New(reg, time.Unix(5000, 0))
	io := s.IO()
	if capacity > 0 {
		if err := Init(context.Background(), io, "q", capacity); err != nil {
			t.Fatal(err)
		}
	}
	return s, io
}

func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

func TestReserveCommitAbort(t *testing.T) {
	ctx := context.Background()
	s, io := setup(t, 100)
	wantErr(t, Init(ctx, io, "q", 100), objstore.ErrExists)
	_, err := Reserve(ctx, io, "nope", 1, 1)
	wantErr(t, err, objstore.ErrNotFound)

	id1 := must[uint64](t)(Reserve(ctx, io, "q", 60, 2))
	_, err = Reserve(ctx, io, "q", 41, 1)
	wantErr(t, err, objstore.ErrNoSpace)
	id2 := must[uint64](t)(Reserve(ctx, io, "q", 40, 1))
	st := must[Stats](t)(GetStats(ctx, io, "q"))
	if st.Reservations != 2 || st.ReservedBytes != 100 || st.Entries != 0 {
		t.Fatalf("stats %+v", st)
	}
	// More entries or bytes than reserved: ErrInvalid, reservation kept.
	_, err = Commit(ctx, io, "q", id2, []byte("a"), []byte("b"))
	wantErr(t, err, objstore.ErrInvalid)
	_, err = Commit(ctx, io, "q", id2, make([]byte, 41))
	wantErr(t, err, objstore.ErrInvalid)
	ms := must[[]Marker](t)(Commit(ctx, io, "q", id1, []byte("hello"), []byte("world!")))
	if len(ms) != 2 || ms[0] != "0000000000000001" || ms[1] != "0000000000000002" {
		t.Fatalf("markers %q", ms)
	}
	_, err = Commit(ctx, io, "q", id1, []byte("x"))
	wantErr(t, err, objstore.ErrNotFound)
	// Committed bytes (11) free the unused part of the reservation.
	id3 := must[uint64](t)(Reserve(ctx, io, "q", 49, 1))
	must[struct{}](t)(struct{}{}, Abort(ctx, io, "q", id3))
	must[struct{}](t)(struct{}{}, Abort(ctx, io, "q", id3)) // idempotent
	must[struct{}](t)(struct{}{}, Abort(ctx, io, "q", 999))
	st = must[Stats](t)(GetStats(ctx, io, "q"))
	want := Stats{Capacity: 100, Entries: 2, Bytes: 11, Reservations: 1, ReservedBytes: 40, Oldest: time.Unix(5000, 0).UTC()}
	if st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	_ = s
}

func TestListRemoveUpdate(t *testing.T) {
	ctx := context.Background()
	s, io := setup(t, 1<<20)
	var all []Marker
	for i := 0; i < 25; i++ {
		id := must[uint64](t)(Reserve(ctx, io, "q", 100, 1))
		all = append(all, must[[]Marker](t)(Commit(ctx, io, "q", id, []byte(fmt.Sprintf("e%02d", i))))...)
		s.Advance(time.Second)
	}
	var got []string
	m := ""
	for pages := 0; ; pages++ {
		r := must[ListResult](t)(List(ctx, io, "q", m, 10))
		for _, e := range r.Entries {
			got = append(got, string(e.Data))
		}
		m = r.Next
		if !r.Truncated {
			if pages != 2 {
				t.Fatalf("pages %d", pages)
			}
			break
		}
	}
	if len(got) != 25 || got[0] != "e00" || got[24] != "e24" {
		t.Fatalf("listed %q", got)
	}
	// Update persists with the entry.
	next := time.Unix(9999, 0).UTC()
	must[struct{}](t)(struct{}{}, Update(ctx, io, "q", all[3], 4, next))
	r := must[ListResult](t)(List(ctx, io, "q", all[2], 1))
	if e := r.Entries[0]; e.Marker != all[3] || e.Retries != 4 || !e.NextAttempt.Equal(next) || string(e.Data) != "e03" || !r.Truncated {
		t.Fatalf("updated entry %+v", r)
	}
	wantErr(t, Update(ctx, io, "q", "00000000000000ff", 1, next), objstore.ErrNotFound)
	wantErr(t, Update(ctx, io, "q", "zz", 1, next), objstore.ErrInvalid)

	// Out-of-order acks, then a prefix removal that spans a gap.
	if n := must[int](t)(RemoveMarkers(ctx, io, "q", all[5], all[7], all[7], "00000000000000ff")); n != 1+1 {
		t.Fatalf("removed %d", n)
	}
	if n := must[int](t)(RemoveUpTo(ctx, io, "q", all[9])); n != 8 {
		t.Fatalf("removed up to: %d", n)
	}
	if n := must[int](t)(RemoveUpTo(ctx, io, "q", all[9])); n != 0 {
		t.Fatalf("second removal: %d", n)
	}
	st := must[Stats](t)(GetStats(ctx, io, "q"))
	if st.Entries != 15 || st.Bytes != 45 || !st.Oldest.Equal(time.Unix(5010, 0)) {
		t.Fatalf("stats %+v", st)
	}
	r = must[ListResult](t)(List(ctx, io, "q", "", 0))
	if len(r.Entries) != 15 || r.Entries[0].Marker != all[10] || r.Truncated || r.Next != all[24] {
		t.Fatalf("after removal: %d entries first %s next %s", len(r.Entries), r.Entries[0].Marker, r.Next)
	}
	must[int](t)(RemoveUpTo(ctx, io, "q", all[24]))
	st = must[Stats](t)(GetStats(ctx, io, "q"))
	if st.Entries != 0 || st.Bytes != 0 || !st.Oldest.IsZero() {
		t.Fatalf("empty stats %+v", st)
	}
}

func TestExpire(t *testing.T) {
	ctx := context.Background()
	s, io := setup(t, 1000)
	old := must[uint64](t)(Reserve(ctx, io, "q", 300, 1))
	s.Advance(100 * time.Second)
	fresh := must[uint64](t)(Reserve(ctx, io, "q", 300, 1))
	s.Advance(30 * time.Second)
	if n := must[int](t)(ExpireReservations(ctx, io, "q", 120*time.Second)); n != 1 {
		t.Fatalf("expired %d", n)
	}
	_, err := Commit(ctx, io, "q", old, []byte("x"))
	wantErr(t, err, objstore.ErrNotFound)
	must[[]Marker](t)(Commit(ctx, io, "q", fresh, []byte("x")))
	st := must[Stats](t)(GetStats(ctx, io, "q"))
	if st.Reservations != 0 || st.ReservedBytes != 0 || st.Entries != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestCacheFollowsPlainWrites(t *testing.T) {
	ctx := context.Background()
	s, io := setup(t, 100)
	id := must[uint64](t)(Reserve(ctx, io, "q", 10, 1))
	// A plain write (outside the class) resets the header; the cached copy
	// must not survive it.
	s.Mutate("q", func(o *clsfake.Object) {
		o.Header = head{capacity: 5, nextRes: 100, nextSeq: 1}.encode()
	})
	_, err := Reserve(ctx, io, "q", 10, 1)
	wantErr(t, err, objstore.ErrNoSpace)
	s.DropCache()
	_ = id
	st := must[Stats](t)(GetStats(ctx, io, "q"))
	if st.Capacity != 5 {
		t.Fatalf("stats %+v", st)
	}
}

func TestEncodings(t *testing.T) {
	e := encodeEntryValue(time.Unix(1, 2), 3, time.Unix(4, 5), []byte("data"))
	got, err := decodeEntryValue(e)
	if err != nil || got.Retries != 3 || !bytes.Equal(got.Data, []byte("data")) || !got.Committed.Equal(time.Unix(1, 2)) {
		t.Fatalf("%+v %v", got, err)
	}
	for _, m := range []string{"", "1", "000000000000000G", "000000000000000A"} {
		if _, err := ParseMarker(m); err == nil {
			t.Errorf("marker %q accepted", m)
		}
	}
	// A typical reserve input stays tiny: it is on every notified PUT.
	if n := len(encodeU64s(4096, 1)); n > 4 {
		t.Fatalf("reserve input %d bytes", n)
	}
}

// stats with a hint looks for the oldest entry past it (a shard's owner
// knows everything up to it is gone, and stepping over removed entries'
// deletions from the start is what the hint saves); no hint, or an old
// class that ignores it, answers from the start.
func TestStatsAfter(t *testing.T) {
	ctx := context.Background()
	s, io := setup(t, 1<<20)
	var all []Marker
	for i := 0; i < 6; i++ {
		id := must[uint64](t)(Reserve(ctx, io, "q", 10, 1))
		all = append(all, must[[]Marker](t)(Commit(ctx, io, "q", id, []byte("x")))...)
		s.Advance(time.Second)
	}
	must[int](t)(RemoveUpTo(ctx, io, "q", all[1]))
	first := must[Stats](t)(GetStats(ctx, io, "q"))
	if first.Entries != 4 || !first.Oldest.Equal(time.Unix(5002, 0)) {
		t.Fatalf("stats %+v", first)
	}
	// The owner's bound (everything up to all[1] gone): the same answer.
	if st := must[Stats](t)(GetStatsAfter(ctx, io, "q", all[1])); st != first {
		t.Fatalf("after %s: %+v, want %+v", all[1], st, first)
	}
	// The search starts past the hint: the first entry after all[3].
	if st := must[Stats](t)(GetStatsAfter(ctx, io, "q", all[3])); !st.Oldest.Equal(time.Unix(5004, 0)) || st.Entries != 4 {
		t.Fatalf("after %s: %+v", all[3], st)
	}
	if st := must[Stats](t)(GetStatsAfter(ctx, io, "q", "")); st != first {
		t.Fatalf("no hint: %+v", st)
	}
	_, err := GetStatsAfter(ctx, io, "q", "zz")
	wantErr(t, err, objstore.ErrInvalid)
	// MarkerBefore: the bound for "before this entry".
	if m, err := MarkerBefore(all[2]); err != nil || m != all[1] {
		t.Fatalf("MarkerBefore(%s) = %q, %v", all[2], m, err)
	}
	if m, err := MarkerBefore(seqMarker(0)); err != nil || m != "" {
		t.Fatalf("MarkerBefore(0) = %q, %v", m, err)
	}
}
