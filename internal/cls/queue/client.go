package queue

import (
	"context"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/internal/wire"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Execer is a WriteOp or ReadOp: anything that can carry an ExecStep.
type Execer interface {
	Exec(class, method string, in []byte) *objstore.ExecStep
}

// Op builders add one class call to a compound op, so callers can combine
// queue steps with guards (lock.AssertLocked) and other writes. The returned
// step's accessors are valid after the op succeeded.

// AddInit creates the queue with capacity bytes (cls_2pc_queue_init).
func AddInit(op *objstore.WriteOp, capacity uint64) {
	op.Exec(ClassName, MethodInit, encodeU64s(capacity))
}

// ReserveStep is a reserve call in an op.
type ReserveStep struct{ s *objstore.ExecStep }

// ID is the reservation id.
func (r ReserveStep) ID() (uint64, error) {
	var id uint64
	return id, decodeU64s(r.s.Out, "queue reserve output", &id)
}

// AddReserve reserves room for entries entries totalling bytes bytes
// (cls_2pc_queue_reserve).
func AddReserve(op *objstore.WriteOp, bytes uint64, entries uint32) ReserveStep {
	return ReserveStep{op.Exec(ClassName, MethodReserve, encodeU64s(bytes, uint64(entries)))}
}

// CommitStep is a commit call in an op.
type CommitStep struct{ s *objstore.ExecStep }

// Markers are the committed entries' markers, in order.
func (c CommitStep) Markers() ([]Marker, error) {
	var first, n uint64
	if err := decodeU64s(c.s.Out, "queue commit output", &first, &n); err != nil {
		return nil, err
	}
	out := make([]Marker, n)
	for i := range out {
		out[i] = seqMarker(first + uint64(i))
	}
	return out, nil
}

// AddCommit commits entries under reservation id (cls_2pc_queue_commit).
func AddCommit(op *objstore.WriteOp, id uint64, entries ...[]byte) CommitStep {
	return CommitStep{op.Exec(ClassName, MethodCommit, encodeCommit(id, entries))}
}

// BatchCommit is one reservation's commit in a commit_batch.
type BatchCommit struct {
	ID      uint64
	Entries [][]byte
}

// BatchStep is a commit_batch call in an op.
type BatchStep struct {
	s      *objstore.ExecStep
	counts []int
}

// AddCommitBatch commits each of commits in order, then makes refills
// reservations of refillBytes and refillEntries each, in one class call
// (see commitBatchMethod); the op fails if any of them would.
func AddCommitBatch(op *objstore.WriteOp, commits []BatchCommit, refills int, refillBytes uint64, refillEntries uint32) BatchStep {
	counts := make([]int, len(commits))
	for i, c := range commits {
		counts[i] = len(c.Entries)
	}
	return BatchStep{op.Exec(ClassName, MethodCommitBatch, encodeCommitBatch(commits, refills, refillBytes, refillEntries)), counts}
}

// Markers are the committed entries' markers, per commit, in order.
func (b BatchStep) Markers() ([][]Marker, error) {
	var first, n, firstRes, m uint64
	if err := decodeU64s(b.s.Out, "queue commit_batch output", &first, &n, &firstRes, &m); err != nil {
		return nil, err
	}
	total := 0
	for _, c := range b.counts {
		total += c
	}
	if uint64(total) != n {
		return nil, objstore.Errorf(objstore.ErrInvalid, "queue commit_batch output: %d entries, want %d", n, total)
	}
	all := make([]Marker, total)
	for i := range all {
		all[i] = seqMarker(first + uint64(i))
	}
	out := make([][]Marker, len(b.counts))
	for i, c := range b.counts {
		out[i], all = all[:c:c], all[c:]
	}
	return out, nil
}

// ReserveIDs are the refill reservations' ids, in order.
func (b BatchStep) ReserveIDs() ([]uint64, error) {
	var first, n, firstRes, m uint64
	if err := decodeU64s(b.s.Out, "queue commit_batch output", &first, &n, &firstRes, &m); err != nil {
		return nil, err
	}
	if m > MaxBatchRefills {
		return nil, objstore.Errorf(objstore.ErrInvalid, "queue commit_batch output: %d refills", m)
	}
	ids := make([]uint64, m)
	for i := range ids {
		ids[i] = firstRes + uint64(i)
	}
	return ids, nil
}

// AddAbort releases reservation id (cls_2pc_queue_abort).
func AddAbort(op *objstore.WriteOp, id uint64) {
	op.Exec(ClassName, MethodAbort, encodeU64s(id))
}

// ListStep is a list call in an op.
type ListStep struct {
	s      *objstore.ExecStep
	marker Marker
}

// Result decodes the page.
func (l ListStep) Result() (ListResult, error) { return decodeListOut(l.s.Out, l.marker) }

// AddList lists up to max entries after marker ("" = from the start; max 0
// = DefaultListMax) (cls_2pc_queue_list_entries).
func AddList(op Execer, marker Marker, max int) ListStep {
	if max < 0 {
		max = 0
	}
	in := wire.NewEnc(1, 24).String(marker).Uvarint(uint64(max)).B
	return ListStep{s: op.Exec(ClassName, MethodList, in), marker: marker}
}

// CountStep is a call whose output is a count.
type CountStep struct{ s *objstore.ExecStep }

// Count decodes the count.
func (c CountStep) Count() (int, error) {
	var n uint64
	err := decodeU64s(c.s.Out, "queue count output", &n)
	return int(n), err
}

// AddRemoveUpTo removes every entry up to and including marker
// (cls_2pc_queue_remove_entries).
func AddRemoveUpTo(op *objstore.WriteOp, marker Marker) CountStep {
	return CountStep{op.Exec(ClassName, MethodRemove, wire.NewEnc(1, 20).String(marker).B)}
}

// AddRemoveMarkers removes the named entries (acks out of order); missing
// ones are skipped. ErrInvalid for a malformed marker.
func AddRemoveMarkers(op *objstore.WriteOp, markers ...Marker) (CountStep, error) {
	seqs := make([]uint64, len(markers))
	for i, m := range markers {
		s, err := ParseMarker(m)
		if err != nil {
			return CountStep{}, err
		}
		seqs[i] = s
	}
	return CountStep{op.Exec(ClassName, MethodRemoveMarkers, encodeSeqs(seqs))}, nil
}

// AddUpdate stores an entry's retry count and next attempt time.
func AddUpdate(op *objstore.WriteOp, marker Marker, retries uint32, next time.Time) error {
	seq, err := ParseMarker(marker)
	if err != nil {
		return err
	}
	op.Exec(ClassName, MethodUpdate, encodeUpdate(seq, retries, next))
	return nil
}

// AddExpireReservations drops reservations older than olderThan
// (cls_2pc_queue_expire_reservations).
func AddExpireReservations(op *objstore.WriteOp, olderThan time.Duration) CountStep {
	if olderThan < 0 {
		olderThan = 0
	}
	return CountStep{op.Exec(ClassName, MethodExpire, encodeU64s(uint64(olderThan)))}
}

// StatsStep is a stats call in an op.
type StatsStep struct{ s *objstore.ExecStep }

// Stats decodes the result.
func (s StatsStep) Stats() (Stats, error) { return decodeStats(s.s.Out) }

// AddStats reads the queue's accounting (cls_2pc_queue_get_capacity and
// more).
func AddStats(op Execer) StatsStep { return StatsStep{op.Exec(ClassName, MethodStats, nil)} }

// AddStatsAfter is AddStats for a caller that knows every entry up to and
// including after is gone (a shard's delivery owner: below its oldest
// listed entry not yet removed): the oldest entry is looked for past after,
// not by stepping over the removed entries from the queue's start (their
// deletions stay in the store until compaction). If an entry at or below
// after still exists, Oldest is that of the first one past it. "" is
// AddStats. An earlier class ignores the input: the same answer, slower.
func AddStatsAfter(op Execer, after Marker) StatsStep {
	if after == "" {
		return AddStats(op)
	}
	return StatsStep{op.Exec(ClassName, MethodStats, wire.NewEnc(1, 20).String(after).B)}
}

// One-call forms.

// Init creates a queue of capacity bytes on oid. ErrExists if oid already
// holds one.
func Init(ctx context.Context, io objstore.IOContext, oid string, capacity uint64) error {
	op := objstore.NewWriteOp()
	AddInit(op, capacity)
	return io.Operate(ctx, oid, op)
}

// Reserve reserves room and returns the reservation id. ErrNoSpace when
// the queue cannot fit it; ErrNotFound when oid is not a queue.
func Reserve(ctx context.Context, io objstore.IOContext, oid string, bytes uint64, entries uint32) (uint64, error) {
	op := objstore.NewWriteOp()
	s := AddReserve(op, bytes, entries)
	if err := io.Operate(ctx, oid, op); err != nil {
		return 0, err
	}
	return s.ID()
}

// Commit commits entries under reservation id and returns their markers.
// ErrNotFound for an unknown or expired id; ErrInvalid when they exceed the
// reservation (abort and reserve again).
func Commit(ctx context.Context, io objstore.IOContext, oid string, id uint64, entries ...[]byte) ([]Marker, error) {
	op := objstore.NewWriteOp()
	s := AddCommit(op, id, entries...)
	if err := io.Operate(ctx, oid, op); err != nil {
		return nil, err
	}
	return s.Markers()
}

// Abort releases reservation id; unknown ids are fine.
func Abort(ctx context.Context, io objstore.IOContext, oid string, id uint64) error {
	op := objstore.NewWriteOp()
	AddAbort(op, id)
	return io.Operate(ctx, oid, op)
}

// List returns up to max entries after marker.
func List(ctx context.Context, io objstore.IOContext, oid string, marker Marker, max int) (ListResult, error) {
	op := objstore.NewReadOp()
	s := AddList(op, marker, max)
	if err := io.OperateRead(ctx, oid, op); err != nil {
		return ListResult{}, err
	}
	return s.Result()
}

// RemoveUpTo removes every entry up to and including marker and returns
// how many were removed.
func RemoveUpTo(ctx context.Context, io objstore.IOContext, oid string, marker Marker) (int, error) {
	op := objstore.NewWriteOp()
	s := AddRemoveUpTo(op, marker)
	if err := io.Operate(ctx, oid, op); err != nil {
		return 0, err
	}
	return s.Count()
}

// RemoveMarkers removes the named entries and returns how many existed.
func RemoveMarkers(ctx context.Context, io objstore.IOContext, oid string, markers ...Marker) (int, error) {
	op := objstore.NewWriteOp()
	s, err := AddRemoveMarkers(op, markers...)
	if err != nil {
		return 0, err
	}
	if err := io.Operate(ctx, oid, op); err != nil {
		return 0, err
	}
	return s.Count()
}

// Update stores an entry's delivery state. ErrNotFound if it is gone.
func Update(ctx context.Context, io objstore.IOContext, oid string, marker Marker, retries uint32, next time.Time) error {
	op := objstore.NewWriteOp()
	if err := AddUpdate(op, marker, retries, next); err != nil {
		return err
	}
	return io.Operate(ctx, oid, op)
}

// ExpireReservations drops reservations older than olderThan and returns
// how many.
func ExpireReservations(ctx context.Context, io objstore.IOContext, oid string, olderThan time.Duration) (int, error) {
	op := objstore.NewWriteOp()
	s := AddExpireReservations(op, olderThan)
	if err := io.Operate(ctx, oid, op); err != nil {
		return 0, err
	}
	return s.Count()
}

// GetStats returns the queue's accounting.
func GetStats(ctx context.Context, io objstore.IOContext, oid string) (Stats, error) {
	return GetStatsAfter(ctx, io, oid, "")
}

// GetStatsAfter is GetStats with AddStatsAfter's hint.
func GetStatsAfter(ctx context.Context, io objstore.IOContext, oid string, after Marker) (Stats, error) {
	op := objstore.NewReadOp()
	s := AddStatsAfter(op, after)
	if err := io.OperateRead(ctx, oid, op); err != nil {
		return Stats{}, err
	}
	return s.Stats()
}
