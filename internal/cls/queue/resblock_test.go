package queue

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/internal/clsfake"
	"github.com/cairn-s3/cairn/internal/objstore"
)

func commitBatch(t *testing.T, io objstore.IOContext, ids []uint64, refills int) ([][]Marker, []uint64, error) {
	t.Helper()
	op := objstore.NewWriteOp()
	cs := make([]BatchCommit, len(ids))
	for i, id := range ids {
		cs[i] = BatchCommit{ID: id, Entries: [][]byte{[]byte("ev")}}
	}
	s := AddCommitBatch(op, cs, refills, 100, 1)
	if err := io.Operate(context.Background(), "q", op); err != nil {
		return nil, nil, err
	}
	ms, err := s.Markers()
	if err != nil {
		t.Fatal(err)
	}
	rids, err := s.ReserveIDs()
	if err != nil {
		t.Fatal(err)
	}
	return ms, rids, nil
}

func resKeys(s *clsfake.Store) (blocks, legacy int) {
	for k := range s.Objs["q"].Omap {
		switch {
		case strings.HasPrefix(k, blockPrefix):
			blocks++
		case strings.HasPrefix(k, resPrefix):
			legacy++
		}
	}
	return
}

// The gateway's steady state: each commit op commits what it took from
// the pool and refills as many. Reservations no longer cost a key each:
// the omap holds a key per refill op, and a block goes when its last id
// does. (Before blocks: one "r" key per pooled reservation, set and then
// deleted per event.)
func TestPoolRefillsShareKeys(t *testing.T) {
	s, io := setup(t, 1<<20)
	_, pool, err := commitBatch(t, io, nil, 64)
	if err != nil {
		t.Fatal(err)
	}
	if b, l := resKeys(s); b != 1 || l != 0 {
		t.Fatalf("64 refills: %d block keys, %d reservation keys; want 1, 0", b, l)
	}
	for round := range 8 {
		take := pool[:16]
		pool = pool[16:]
		_, more, err := commitBatch(t, io, take, len(take))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		pool = append(pool, more...)
		if round%2 == 1 {
			s.DropCache() // as after a restart: blocks read from the omap
		}
	}
	// 64 ids open, in the 4 refill blocks of the last 4 rounds: the
	// first block and the first 4 refills are used up and gone.
	if b, l := resKeys(s); b != 4 || l != 0 {
		t.Fatalf("after 8 rounds: %d block keys, %d reservation keys; want 4, 0", b, l)
	}
	st := must[Stats](t)(GetStats(context.Background(), io, "q"))
	if st.Reservations != 64 || st.ReservedBytes != 6400 || st.Entries != 128 {
		t.Fatalf("stats %+v", st)
	}
	// A committed id is gone: once more in a batch, or alone, is ErrNotFound
	// (the gateway's "gone while young: it committed" rule rests on this).
	_, _, err = commitBatch(t, io, []uint64{pool[0], pool[0]}, 0)
	wantErr(t, err, objstore.ErrNotFound)
	must[[]Marker](t)(Commit(context.Background(), io, "q", pool[0], []byte("x")))
	_, err = Commit(context.Background(), io, "q", pool[0], []byte("x"))
	wantErr(t, err, objstore.ErrNotFound)
	s.DropCache()
	_, err = Commit(context.Background(), io, "q", pool[0], []byte("x"))
	wantErr(t, err, objstore.ErrNotFound)
	_, err = Commit(context.Background(), io, "q", 1, []byte("x")) // in a deleted block
	wantErr(t, err, objstore.ErrNotFound)
}

// Queues written by earlier binaries hold one "r" key per reservation (a
// gateway's pool, or a crashed write's reservation named by its link
// intent). They commit, abort, expire and count as before, alone and in a
// commit_batch beside block ids.
func TestLegacyReservations(t *testing.T) {
	ctx := context.Background()
	s, io := setup(t, 0)
	t0 := time.Unix(5000, 0)
	// The v1 forms, spelled out byte by byte (docs/format/cls.md).
	legacy := func(bytes, entries uint64, created time.Time) []byte {
		b := []byte{1}
		b = binary.AppendUvarint(b, bytes)
		b = binary.AppendUvarint(b, entries)
		return binary.AppendVarint(b, created.UnixNano())
	}
	hdr := []byte{1}
	for _, v := range []uint64{1000, 0, 0, 4, 400, 5, 1} { // capacity entries bytes reservations reserved next_res next_seq
		hdr = binary.AppendUvarint(hdr, v)
	}
	s.Mutate("q", func(o *clsfake.Object) {
		o.Header = hdr
		for id := 1; id <= 3; id++ {
			o.Omap["r000000000000000"+string(rune('0'+id))] = legacy(100, 1, t0)
		}
		o.Omap["r0000000000000004"] = legacy(100, 1, t0.Add(-200*time.Second))
	})
	st := must[Stats](t)(GetStats(ctx, io, "q"))
	if st.Reservations != 4 || st.ReservedBytes != 400 {
		t.Fatalf("stats %+v", st)
	}
	// A batch commits legacy id 1 and refills two (a block: ids 5, 6).
	_, rids, err := commitBatch(t, io, []uint64{1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rids) != 2 || rids[0] != 5 {
		t.Fatalf("refill ids %v", rids)
	}
	// Legacy id 2 beside block id 5; id 1 again is gone.
	_, _, err = commitBatch(t, io, []uint64{2, 1}, 0)
	wantErr(t, err, objstore.ErrNotFound)
	ms, _, err := commitBatch(t, io, []uint64{2, 5}, 0)
	if err != nil || len(ms) != 2 {
		t.Fatalf("mixed batch: %v %v", ms, err)
	}
	must[struct{}](t)(struct{}{}, Abort(ctx, io, "q", 3))
	must[struct{}](t)(struct{}{}, Abort(ctx, io, "q", 3))
	_, err = Commit(ctx, io, "q", 3, []byte("x"))
	wantErr(t, err, objstore.ErrNotFound)
	// Id 4 is 200 s old: expired, with block id 6 kept.
	if n := must[int](t)(ExpireReservations(ctx, io, "q", 120*time.Second)); n != 1 {
		t.Fatalf("expired %d", n)
	}
	if b, l := resKeys(s); b != 1 || l != 0 {
		t.Fatalf("%d block keys, %d reservation keys left; want 1, 0", b, l)
	}
	st = must[Stats](t)(GetStats(ctx, io, "q"))
	if st.Reservations != 1 || st.ReservedBytes != 100 || st.Entries != 3 || st.Bytes != 6 {
		t.Fatalf("stats %+v", st)
	}
}

// Expiry drops whole blocks by age, counting only their open ids.
func TestExpireBlocks(t *testing.T) {
	ctx := context.Background()
	s, io := setup(t, 1<<20)
	_, old, err := commitBatch(t, io, nil, 70) // blocks of 64 and 6
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = commitBatch(t, io, old[:10], 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Advance(100 * time.Second)
	_, fresh, err := commitBatch(t, io, nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	s.Advance(30 * time.Second)
	if n := must[int](t)(ExpireReservations(ctx, io, "q", 120*time.Second)); n != 60 {
		t.Fatalf("expired %d, want 60", n)
	}
	_, err = Commit(ctx, io, "q", old[20], []byte("x"))
	wantErr(t, err, objstore.ErrNotFound)
	must[[]Marker](t)(Commit(ctx, io, "q", fresh[1], []byte("x")))
	st := must[Stats](t)(GetStats(ctx, io, "q"))
	if st.Reservations != 2 || st.ReservedBytes != 200 || st.Entries != 11 {
		t.Fatalf("stats %+v", st)
	}
}

func TestBlockEncoding(t *testing.T) {
	b := newBlock(0x41, 3, reservation{bytes: 4096, entries: 1, created: time.Unix(7, 8).UTC()})
	b.open = 0b101
	got, err := decodeBlock(b.key(), b.encode())
	if err != nil || got != b {
		t.Fatalf("%+v %v, want %+v", got, err, b)
	}
	if b.key() != "b0000000000000043" {
		t.Fatalf("key %q", b.key())
	}
	for _, bad := range []resBlock{{first: 1, n: 2, open: 0b100}, {first: 1, n: 65}} {
		bad.n = max(bad.n, 1)
		if _, err := decodeBlock(blockKey(bad.first+uint64(bad.n)-1), bad.encode()); err == nil {
			t.Errorf("block %+v accepted", bad)
		}
	}
	if _, err := decodeBlock(blockKey(1), (&resBlock{n: 3, open: 1}).encode()); err == nil {
		t.Error("block reaching below id 0 accepted")
	}
}

// FuzzDecodeBlock: any value decodes or errors without panicking, and a
// decoded block encodes back to a value that decodes to the same block.
func FuzzDecodeBlock(f *testing.F) {
	b := newBlock(7, 3, reservation{bytes: 4096, entries: 1, created: time.Unix(7, 8).UTC()})
	f.Add(uint64(9), b.encode())
	f.Add(uint64(0), []byte{1, 0})
	f.Add(uint64(1<<64-1), []byte{1, 64, 1, 1, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, last uint64, v []byte) {
		got, err := decodeBlock(blockKey(last), v)
		if err != nil {
			return
		}
		if got.last() != last || got.n < 1 || got.n > blockMax || got.open&^fullMask(got.n) != 0 {
			t.Fatalf("decoded %+v for last %d", got, last)
		}
		again, err := decodeBlock(got.key(), got.encode())
		if err != nil || again != got {
			t.Fatalf("round trip %+v: %+v %v", got, again, err)
		}
	})
}
