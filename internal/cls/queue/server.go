package queue

import (
	"errors"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/internal/wire"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Register adds the class's methods to reg.
func Register(reg *objstore.Registry) {
	rw := objstore.MethodRead | objstore.MethodWrite
	reg.Register(ClassName, MethodInit, rw, initMethod)
	reg.Register(ClassName, MethodReserve, rw, reserveMethod)
	reg.Register(ClassName, MethodCommit, rw, commitMethod)
	reg.Register(ClassName, MethodCommitBatch, rw, commitBatchMethod)
	reg.Register(ClassName, MethodAbort, rw, abortMethod)
	reg.Register(ClassName, MethodList, objstore.MethodRead, listMethod)
	reg.Register(ClassName, MethodRemove, rw, removeMethod)
	reg.Register(ClassName, MethodRemoveMarkers, rw, removeMarkersMethod)
	reg.Register(ClassName, MethodUpdate, rw, updateMethod)
	reg.Register(ClassName, MethodExpire, rw, expireMethod)
	reg.Register(ClassName, MethodStats, objstore.MethodRead, statsMethod)
}

// cacheSlot holds the decoded header (a head value), so reserve and commit,
// which run on every S3 PUT with notifications, skip reading it.
const cacheSlot = "2pc_queue.head"

var errNotInit = objstore.Errorf(objstore.ErrNotFound, "2pc_queue: not initialised")

func loadHead(ctx objstore.MethodContext) (head, error) {
	if v, ok := ctx.Cached(cacheSlot); ok {
		return v.(head), nil
	}
	if !ctx.Exists() {
		return head{}, errNotInit
	}
	b, err := ctx.GetOmapHeader()
	if err != nil {
		if errors.Is(err, objstore.ErrNotFound) {
			return head{}, errNotInit
		}
		return head{}, err
	}
	if len(b) == 0 {
		return head{}, errNotInit
	}
	return decodeHead(b)
}

func storeHead(ctx objstore.MethodContext, h head) error {
	if err := ctx.SetOmapHeader(h.encode()); err != nil {
		return err
	}
	ctx.SetCached(cacheSlot, h)
	return nil
}

// initMethod creates the queue with a capacity in bytes. ErrExists if the
// object already carries a queue.
func initMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	var capacity uint64
	if err := decodeU64s(in, "queue init", &capacity); err != nil {
		return nil, err
	}
	if capacity == 0 {
		return nil, objstore.Errorf(objstore.ErrInvalid, "2pc_queue init: zero capacity")
	}
	if _, err := loadHead(ctx); err == nil {
		return nil, objstore.Errorf(objstore.ErrExists, "2pc_queue: already initialised")
	} else if err != errNotInit {
		return nil, err
	}
	if err := ctx.Create(false); err != nil {
		return nil, err
	}
	return nil, storeHead(ctx, head{capacity: capacity, nextRes: 1, nextSeq: 1})
}

// reserveMethod: ErrNoSpace when used + reserved + bytes > capacity.
// Output: the reservation id (uvarint).
func reserveMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	var bytes, entries uint64
	if err := decodeU64s(in, "queue reserve", &bytes, &entries); err != nil {
		return nil, err
	}
	if entries == 0 {
		return nil, objstore.Errorf(objstore.ErrInvalid, "2pc_queue reserve: zero entries")
	}
	h, err := loadHead(ctx)
	if err != nil {
		return nil, err
	}
	if h.bytes+h.reservedBytes+bytes > h.capacity || bytes > h.capacity {
		return nil, objstore.Errorf(objstore.ErrNoSpace, "2pc_queue: %d bytes requested, %d used, %d reserved, capacity %d",
			bytes, h.bytes, h.reservedBytes, h.capacity)
	}
	id := h.nextRes
	h.nextRes++
	h.reservations++
	h.reservedBytes += bytes
	rs := newResSet(ctx)
	rs.add(id, 1, reservation{bytes: bytes, entries: entries, created: ctx.Now()})
	if err := rs.flush(); err != nil {
		return nil, err
	}
	if err := storeHead(ctx, h); err != nil {
		return nil, err
	}
	return encodeU64s(id), nil
}

// commitFits looks up reservation id in rs and checks that entries fit in
// it. ErrNotFound when it is not open (unknown, committed, aborted or
// expired).
func commitFits(rs *resSet, id uint64, entries [][]byte) (reservation, uint64, error) {
	r, ok, err := rs.get(id)
	if err != nil {
		return reservation{}, 0, err
	}
	if !ok {
		return reservation{}, 0, objstore.Errorf(objstore.ErrNotFound, "2pc_queue: no reservation %d", id)
	}
	var size uint64
	for _, e := range entries {
		size += uint64(len(e))
	}
	if size > r.bytes || uint64(len(entries)) > r.entries {
		return reservation{}, 0, objstore.Errorf(objstore.ErrInvalid, "2pc_queue: commit of %d entries/%d bytes exceeds reservation %d of %d/%d",
			len(entries), size, id, r.entries, r.bytes)
	}
	return r, size, nil
}

// commitMethod turns reservation id into entries. ErrNotFound for an unknown
// or expired id; ErrInvalid when the entries exceed the reservation (count
// or bytes): the reservation stays, the caller aborts it and reserves again.
// Output: the first entry's sequence and the count (uvarints); the entries
// have consecutive sequences.
func commitMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	id, entries, err := decodeCommit(in)
	if err != nil {
		return nil, err
	}
	h, err := loadHead(ctx)
	if err != nil {
		return nil, err
	}
	rs := newResSet(ctx)
	r, size, err := commitFits(rs, id, entries)
	if err != nil {
		return nil, err
	}
	rs.consume(id)
	now := ctx.Now()
	first := h.nextSeq
	kvs := make([]objstore.KV, len(entries))
	for i, e := range entries {
		kvs[i] = objstore.KV{Key: entryKey(first + uint64(i)), Value: encodeEntryValue(now, 0, time.Time{}, e)}
	}
	if err := ctx.SetOmap(kvs...); err != nil {
		return nil, err
	}
	if err := rs.flush(); err != nil {
		return nil, err
	}
	h.nextSeq += uint64(len(entries))
	h.entries += uint64(len(entries))
	h.bytes += size
	h.reservations--
	h.reservedBytes -= r.bytes
	if err := storeHead(ctx, h); err != nil {
		return nil, err
	}
	return encodeU64s(first, uint64(len(entries))), nil
}

// commitBatchMethod is commit for each of k reservations in order, then
// reserve m times, in one call: the gateway's deferred and group commit ops
// (docs/bench/notify-issue25.md, round 4). The header is written once, each
// reservation block touched once, and the m refills share blocks. Any
// failure fails the call (and so the op) as the first failing step would;
// the errors are commit's and reserve's.
func commitBatchMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	b, err := decodeCommitBatch(in)
	if err != nil {
		return nil, err
	}
	if len(b.ids) == 0 && b.refills == 0 {
		return nil, objstore.Errorf(objstore.ErrInvalid, "2pc_queue commit_batch: nothing to do")
	}
	if b.refills > 0 && b.refillEntries == 0 {
		return nil, objstore.Errorf(objstore.ErrInvalid, "2pc_queue commit_batch: zero entries")
	}
	if b.refills > MaxBatchRefills {
		return nil, objstore.Errorf(objstore.ErrInvalid, "2pc_queue commit_batch: %d refills, at most %d", b.refills, MaxBatchRefills)
	}
	h, err := loadHead(ctx)
	if err != nil {
		return nil, err
	}
	rs := newResSet(ctx)
	now := ctx.Now()
	first := h.nextSeq
	kvs := make([]objstore.KV, 0, len(b.entries))
	e := 0
	for i, id := range b.ids {
		ents := b.entries[e : e+b.counts[i]]
		e += b.counts[i]
		// An id given twice is gone the second time: consume marks it.
		r, size, err := commitFits(rs, id, ents)
		if err != nil {
			return nil, err
		}
		rs.consume(id)
		for _, d := range ents {
			kvs = append(kvs, objstore.KV{Key: entryKey(h.nextSeq), Value: encodeEntryValue(now, 0, time.Time{}, d)})
			h.nextSeq++
		}
		h.entries += uint64(len(ents))
		h.bytes += size
		h.reservations--
		h.reservedBytes -= r.bytes
	}
	firstRes := h.nextRes
	rv := reservation{bytes: b.refillBytes, entries: b.refillEntries, created: now}
	if b.refills > 0 {
		if rv.bytes > h.capacity || h.bytes+h.reservedBytes+b.refills*rv.bytes > h.capacity {
			return nil, objstore.Errorf(objstore.ErrNoSpace, "2pc_queue: %d×%d bytes requested, %d used, %d reserved, capacity %d",
				b.refills, rv.bytes, h.bytes, h.reservedBytes, h.capacity)
		}
		rs.add(firstRes, b.refills, rv)
		h.nextRes += b.refills
		h.reservations += b.refills
		h.reservedBytes += b.refills * rv.bytes
	}
	if len(kvs) > 0 {
		if err := ctx.SetOmap(kvs...); err != nil {
			return nil, err
		}
	}
	if err := rs.flush(); err != nil {
		return nil, err
	}
	if err := storeHead(ctx, h); err != nil {
		return nil, err
	}
	return encodeU64s(first, h.nextSeq-first, firstRes, b.refills), nil
}

// abortMethod releases a reservation; an unknown id is success, so a retried
// or late abort is harmless.
func abortMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	var id uint64
	if err := decodeU64s(in, "queue abort", &id); err != nil {
		return nil, err
	}
	h, err := loadHead(ctx)
	if err != nil {
		return nil, err
	}
	rs := newResSet(ctx)
	r, ok, err := rs.get(id)
	if err != nil || !ok {
		return nil, err
	}
	rs.consume(id)
	if err := rs.flush(); err != nil {
		return nil, err
	}
	h.reservations--
	h.reservedBytes -= r.bytes
	return nil, storeHead(ctx, h)
}

func startKey(m Marker) (string, error) {
	if m == "" {
		return entryPrefix, nil
	}
	if _, err := ParseMarker(m); err != nil {
		return "", err
	}
	return entryPrefix + m, nil
}

// listMethod returns up to max entries after marker, in commit order.
func listMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	d, _ := wire.NewDec(in, 1, "queue list")
	marker, max := d.String(), d.Uvarint()
	if err := d.Err(); err != nil {
		return nil, err
	}
	if max == 0 {
		max = DefaultListMax
	}
	if max > MaxListMax {
		max = MaxListMax
	}
	if _, err := loadHead(ctx); err != nil {
		return nil, err
	}
	after, err := startKey(marker)
	if err != nil {
		return nil, err
	}
	kvs, more, err := ctx.GetOmapVals(after, entryPrefix, int(max))
	if err != nil {
		return nil, err
	}
	entries := make([]Entry, len(kvs))
	seqs := make([]uint64, len(kvs))
	for i, kv := range kvs {
		if seqs[i], err = ParseMarker(kv.Key[len(entryPrefix):]); err != nil {
			return nil, err
		}
		if entries[i], err = decodeEntryValue(kv.Value); err != nil {
			return nil, err
		}
	}
	return encodeListOut(entries, seqs, more), nil
}

// removeMethod removes every entry up to and including marker. It reads the
// removed entries to keep the byte count exact. Output: the count removed.
func removeMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	d, _ := wire.NewDec(in, 1, "queue remove")
	marker := d.String()
	if err := d.Err(); err != nil {
		return nil, err
	}
	last, err := ParseMarker(marker)
	if err != nil {
		return nil, err
	}
	h, err := loadHead(ctx)
	if err != nil {
		return nil, err
	}
	end := entryKey(last)
	var n, size uint64
	after := entryPrefix
	for {
		kvs, more, err := ctx.GetOmapVals(after, entryPrefix, 512)
		if err != nil {
			return nil, err
		}
		done := !more
		for _, kv := range kvs {
			if kv.Key > end {
				done = true
				break
			}
			e, err := decodeEntryValue(kv.Value)
			if err != nil {
				return nil, err
			}
			n++
			size += uint64(len(e.Data))
			after = kv.Key
		}
		if done || len(kvs) == 0 {
			break
		}
	}
	if n == 0 {
		return encodeU64s(0), nil
	}
	endKey := "f" // just past every "e" key
	if last < 1<<64-1 {
		endKey = entryKey(last + 1)
	}
	if err := ctx.OmapRmRange(entryPrefix, endKey); err != nil {
		return nil, err
	}
	h.entries -= n
	h.bytes -= size
	if err := storeHead(ctx, h); err != nil {
		return nil, err
	}
	return encodeU64s(n), nil
}

// removeMarkersMethod removes the named entries; missing ones are skipped
// (an ack may be repeated). Output: the count removed.
func removeMarkersMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	seqs, err := decodeSeqs(in)
	if err != nil {
		return nil, err
	}
	h, err := loadHead(ctx)
	if err != nil {
		return nil, err
	}
	var n, size uint64
	keys := make([]string, 0, len(seqs))
	seen := make(map[uint64]bool, len(seqs))
	// Sizes for the header: one read for every marker (on RADOS one round
	// trip, not one per entry).
	want := make([]string, len(seqs))
	for i, s := range seqs {
		want[i] = entryKey(s)
	}
	kvs, err := ctx.GetOmapValsByKeys(want...)
	if err != nil {
		return nil, err
	}
	vals := make(map[string][]byte, len(kvs))
	for _, kv := range kvs {
		vals[kv.Key] = kv.Value
	}
	for i, s := range seqs {
		if seen[s] {
			continue
		}
		seen[s] = true
		b, ok := vals[want[i]]
		if !ok {
			continue
		}
		e, err := decodeEntryValue(b)
		if err != nil {
			return nil, err
		}
		n++
		size += uint64(len(e.Data))
		keys = append(keys, want[i])
	}
	if n == 0 {
		return encodeU64s(0), nil
	}
	if err := ctx.RmOmapKeys(keys...); err != nil {
		return nil, err
	}
	h.entries -= n
	h.bytes -= size
	if err := storeHead(ctx, h); err != nil {
		return nil, err
	}
	return encodeU64s(n), nil
}

// updateMethod stores an entry's delivery state. ErrNotFound if the entry is
// gone.
func updateMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	seq, retries, next, err := decodeUpdate(in)
	if err != nil {
		return nil, err
	}
	h, err := loadHead(ctx)
	if err != nil {
		return nil, err
	}
	ctx.SetCached(cacheSlot, h) // unchanged; keeps the header cached
	b, err := ctx.GetOmapVal(entryKey(seq))
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, objstore.Errorf(objstore.ErrNotFound, "2pc_queue: no entry %s", seqMarker(seq))
	}
	if err != nil {
		return nil, err
	}
	e, err := decodeEntryValue(b)
	if err != nil {
		return nil, err
	}
	return nil, ctx.SetOmap(objstore.KV{Key: entryKey(seq), Value: encodeEntryValue(e.Committed, retries, next, e.Data)})
}

// expireMethod drops reservations created more than olderThan (ns) before
// the op's time: blocks and, from earlier binaries, "r" keys. Output: the
// count of ids dropped.
func expireMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	var olderThan uint64
	if err := decodeU64s(in, "queue expire", &olderThan); err != nil {
		return nil, err
	}
	h, err := loadHead(ctx)
	if err != nil {
		return nil, err
	}
	cutoff := ctx.Now().Add(-time.Duration(olderThan))
	var keys []string
	var n, size uint64
	for _, prefix := range []string{blockPrefix, resPrefix} {
		after := prefix
		for {
			kvs, more, err := ctx.GetOmapVals(after, prefix, 1024)
			if err != nil {
				return nil, err
			}
			for _, kv := range kvs {
				var r reservation
				count := uint64(1)
				if prefix == blockPrefix {
					b, err := decodeBlock(kv.Key, kv.Value)
					if err != nil {
						return nil, err
					}
					r, count = b.res(), b.openCount()
				} else if r, err = decodeReservation(kv.Value); err != nil {
					return nil, err
				}
				if r.created.Before(cutoff) {
					keys = append(keys, kv.Key)
					n += count
					size += count * r.bytes
				}
				after = kv.Key
			}
			if !more || len(kvs) == 0 {
				break
			}
		}
	}
	if len(keys) == 0 {
		return encodeU64s(0), nil
	}
	if err := ctx.RmOmapKeys(keys...); err != nil {
		return nil, err
	}
	ctx.SetCached(resCacheSlot, (*blockCache)(nil)) // drop it all: rare
	h.reservations -= n
	h.reservedBytes -= size
	if err := storeHead(ctx, h); err != nil {
		return nil, err
	}
	return encodeU64s(n), nil
}

// statsMethod reads the header and the first entry: O(1).
func statsMethod(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	// Input (optional): a marker up to which the caller knows every entry
	// is gone, so the oldest is looked for past it rather than by stepping
	// over the removed entries' tombstones from the queue's start.
	from := entryPrefix
	if len(in) > 0 {
		d, _ := wire.NewDec(in, 1, "queue stats")
		marker := d.String()
		if err := d.Err(); err != nil {
			return nil, err
		}
		var err error
		if from, err = startKey(marker); err != nil {
			return nil, err
		}
	}
	h, err := loadHead(ctx)
	if err != nil {
		return nil, err
	}
	s := Stats{Capacity: h.capacity, Entries: h.entries, Bytes: h.bytes,
		Reservations: h.reservations, ReservedBytes: h.reservedBytes}
	if h.entries > 0 {
		kvs, _, err := ctx.GetOmapVals(from, entryPrefix, 1)
		if err != nil {
			return nil, err
		}
		if len(kvs) == 1 {
			e, err := decodeEntryValue(kvs[0].Value)
			if err != nil {
				return nil, err
			}
			s.Oldest = e.Committed
		}
	}
	return encodeStats(s), nil
}
