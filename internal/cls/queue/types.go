package queue

import (
	"strconv"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/internal/wire"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// ClassName is the name the class is registered under (as in Ceph).
const ClassName = "2pc_queue"

// Method names.
const (
	MethodInit          = "init"
	MethodReserve       = "reserve"
	MethodCommit        = "commit"
	MethodCommitBatch   = "commit_batch"
	MethodAbort         = "abort"
	MethodList          = "list"
	MethodRemove        = "remove"
	MethodRemoveMarkers = "remove_markers"
	MethodUpdate        = "update"
	MethodExpire        = "expire_reservations"
	MethodStats         = "stats"
)

// Omap key prefixes: entries sort by sequence under "e"; reservations of
// earlier binaries by id under "r" (read only; new ones are blocks, "b",
// resblock.go). All are followed by 16 lowercase hex digits.
const (
	entryPrefix = "e"
	resPrefix   = "r"
)

// MaxBatchRefills bounds the reservations one commit_batch makes.
const MaxBatchRefills = 1024

// DefaultListMax and MaxListMax bound a list page.
const (
	DefaultListMax = 1000
	MaxListMax     = 10000
)

// Marker names an entry: its sequence number as 16 lowercase hex digits, so
// markers sort like the entries they name. "" is before the first entry.
type Marker = string

func seqMarker(seq uint64) Marker { return string(appendHex16(make([]byte, 0, 16), seq)) }

// appendHex16 appends v as 16 lowercase hex digits (fmt's %016x without
// fmt: markers and omap keys are built for every event).
func appendHex16(b []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	for sh := 60; sh >= 0; sh -= 4 {
		b = append(b, digits[v>>uint(sh)&0xf])
	}
	return b
}

// ParseMarker returns the sequence a marker names; ErrInvalid if malformed.
func ParseMarker(m Marker) (uint64, error) {
	if len(m) != 16 {
		return 0, objstore.Errorf(objstore.ErrInvalid, "queue marker %q: want 16 hex digits", m)
	}
	v, err := strconv.ParseUint(m, 16, 64)
	if err != nil || seqMarker(v) != m {
		return 0, objstore.Errorf(objstore.ErrInvalid, "queue marker %q: want 16 lowercase hex digits", m)
	}
	return v, nil
}

// MarkerBefore returns the marker of the entry before m's ("" for the
// first sequence): "every entry up to MarkerBefore(m)" is every entry
// before m. ErrInvalid if m is malformed.
func MarkerBefore(m Marker) (Marker, error) {
	seq, err := ParseMarker(m)
	if err != nil || seq == 0 {
		return "", err
	}
	return seqMarker(seq - 1), nil
}

func entryKey(seq uint64) string { return prefixed(entryPrefix[0], seq) }
func resKey(id uint64) string    { return prefixed(resPrefix[0], id) }

func prefixed(p byte, v uint64) string {
	return string(appendHex16(append(make([]byte, 0, 17), p), v))
}

// Entry is one committed queue entry.
type Entry struct {
	Marker    Marker
	Data      []byte
	Committed time.Time
	// Retries and NextAttempt are the delivery state, persisted with the
	// entry by Update.
	Retries     uint32
	NextAttempt time.Time
}

// Stats is a queue's accounting, read in O(1).
type Stats struct {
	Capacity      uint64
	Entries       uint64
	Bytes         uint64 // sum of committed entries' data sizes
	Reservations  uint64
	ReservedBytes uint64
	// Oldest is the commit time of the first entry; zero when empty.
	Oldest time.Time
}

// head is the omap header. v1: capacity, entries, bytes, reservations,
// reserved bytes, next reservation id, next entry sequence (all uvarints).
type head struct {
	capacity, entries, bytes, reservations, reservedBytes uint64
	nextRes, nextSeq                                      uint64
}

func (h head) encode() []byte {
	return wire.NewEnc(1, 40).Uvarint(h.capacity).Uvarint(h.entries).Uvarint(h.bytes).
		Uvarint(h.reservations).Uvarint(h.reservedBytes).Uvarint(h.nextRes).Uvarint(h.nextSeq).B
}

func decodeHead(b []byte) (head, error) {
	d, _ := wire.NewDec(b, 1, "queue header")
	h := head{capacity: d.Uvarint(), entries: d.Uvarint(), bytes: d.Uvarint(),
		reservations: d.Uvarint(), reservedBytes: d.Uvarint(), nextRes: d.Uvarint(), nextSeq: d.Uvarint()}
	return h, d.Err()
}

// reservation value v1: bytes, entries (uvarints), created (unix ns varint).
type reservation struct {
	bytes, entries uint64
	created        time.Time
}

func (r reservation) encode() []byte {
	return wire.NewEnc(1, 24).Uvarint(r.bytes).Uvarint(r.entries).Time(r.created).B
}

func decodeReservation(b []byte) (reservation, error) {
	d, _ := wire.NewDec(b, 1, "queue reservation")
	r := reservation{bytes: d.Uvarint(), entries: d.Uvarint(), created: d.Time()}
	return r, d.Err()
}

// entry value v1: committed (unix ns varint), retries (uvarint), next
// attempt (unix ns varint), data (length-prefixed).
func encodeEntryValue(committed time.Time, retries uint32, next time.Time, data []byte) []byte {
	return wire.NewEnc(1, 24+len(data)).Time(committed).Uvarint(uint64(retries)).Time(next).Bytes(data).B
}

func decodeEntryValue(b []byte) (Entry, error) {
	d, _ := wire.NewDec(b, 1, "queue entry")
	e := Entry{Committed: d.Time(), Retries: uint32(d.Uvarint()), NextAttempt: d.Time(), Data: d.Bytes()}
	return e, d.Err()
}

// Method inputs and outputs, each v1 and documented in docs/format/cls.md.

func encodeU64s(vs ...uint64) []byte {
	e := wire.NewEnc(1, 10*len(vs))
	for _, v := range vs {
		e.Uvarint(v)
	}
	return e.B
}

func decodeU64s(b []byte, what string, vs ...*uint64) error {
	d, _ := wire.NewDec(b, 1, what)
	for _, v := range vs {
		*v = d.Uvarint()
	}
	return d.Err()
}

// commit input: id, count, then count length-prefixed entries.
func encodeCommit(id uint64, entries [][]byte) []byte {
	n := 16
	for _, e := range entries {
		n += 4 + len(e)
	}
	e := wire.NewEnc(1, n).Uvarint(id).Uvarint(uint64(len(entries)))
	for _, d := range entries {
		e.Bytes(d)
	}
	return e.B
}

// commit_batch input: k commits, each id, count, then count length-prefixed
// entries; then m refills of refill_bytes and refill_entries each.
// Output: the first entry's sequence and the entry count, the first
// refill's id and m (all uvarints; both runs are consecutive).
func encodeCommitBatch(commits []BatchCommit, m int, refillBytes uint64, refillEntries uint32) []byte {
	n := 24
	for _, c := range commits {
		n += 12
		for _, d := range c.Entries {
			n += 4 + len(d)
		}
	}
	e := wire.NewEnc(1, n).Uvarint(uint64(len(commits)))
	for _, c := range commits {
		e.Uvarint(c.ID).Uvarint(uint64(len(c.Entries)))
		for _, d := range c.Entries {
			e.Bytes(d)
		}
	}
	return e.Uvarint(uint64(m)).Uvarint(refillBytes).Uvarint(uint64(refillEntries)).B
}

type batchIn struct {
	ids                        []uint64
	counts                     []int
	entries                    [][]byte // all commits' entries, in order
	refills                    uint64
	refillBytes, refillEntries uint64
}

func decodeCommitBatch(b []byte) (batchIn, error) {
	d, _ := wire.NewDec(b, 1, "queue commit_batch")
	k := d.Count(2)
	in := batchIn{ids: make([]uint64, 0, k), counts: make([]int, 0, k), entries: make([][]byte, 0, k)}
	for i := 0; i < k; i++ {
		in.ids = append(in.ids, d.Uvarint())
		n := d.Count(1)
		in.counts = append(in.counts, n)
		for j := 0; j < n; j++ {
			in.entries = append(in.entries, d.Bytes())
		}
	}
	in.refills, in.refillBytes, in.refillEntries = d.Uvarint(), d.Uvarint(), d.Uvarint()
	return in, d.Err()
}

func decodeCommit(b []byte) (uint64, [][]byte, error) {
	d, _ := wire.NewDec(b, 1, "queue commit")
	id := d.Uvarint()
	n := d.Count(1)
	out := make([][]byte, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, d.Bytes())
	}
	return id, out, d.Err()
}

// list input: marker (string), max (uvarint).
// list output: truncated (u8), count, then per entry: seq (uvarint),
// committed, retries, next attempt, data.
func encodeListOut(entries []Entry, seqs []uint64, truncated bool) []byte {
	n := 8
	for _, e := range entries {
		n += 32 + len(e.Data)
	}
	enc := wire.NewEnc(1, n).Bool(truncated).Uvarint(uint64(len(entries)))
	for i, e := range entries {
		enc.Uvarint(seqs[i]).Time(e.Committed).Uvarint(uint64(e.Retries)).Time(e.NextAttempt).Bytes(e.Data)
	}
	return enc.B
}

// ListResult is one page of entries.
type ListResult struct {
	Entries []Entry
	// Next is the marker to pass to the next List: the last entry's.
	Next      Marker
	Truncated bool
}

func decodeListOut(b []byte, marker Marker) (ListResult, error) {
	d, _ := wire.NewDec(b, 1, "queue list")
	r := ListResult{Truncated: d.Bool(), Next: marker}
	n := d.Count(5)
	r.Entries = make([]Entry, 0, n)
	for i := 0; i < n; i++ {
		e := Entry{Marker: seqMarker(d.Uvarint()), Committed: d.Time(), Retries: uint32(d.Uvarint()), NextAttempt: d.Time(), Data: d.Bytes()}
		r.Entries = append(r.Entries, e)
		r.Next = e.Marker
	}
	return r, d.Err()
}

// remove_markers input: count, then sequences (uvarints).
func encodeSeqs(seqs []uint64) []byte {
	e := wire.NewEnc(1, 4+9*len(seqs)).Uvarint(uint64(len(seqs)))
	for _, s := range seqs {
		e.Uvarint(s)
	}
	return e.B
}

func decodeSeqs(b []byte) ([]uint64, error) {
	d, _ := wire.NewDec(b, 1, "queue markers")
	n := d.Count(1)
	out := make([]uint64, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, d.Uvarint())
	}
	return out, d.Err()
}

// update input: seq, retries (uvarints), next attempt (unix ns varint).
func encodeUpdate(seq uint64, retries uint32, next time.Time) []byte {
	return wire.NewEnc(1, 24).Uvarint(seq).Uvarint(uint64(retries)).Time(next).B
}

func decodeUpdate(b []byte) (uint64, uint32, time.Time, error) {
	d, _ := wire.NewDec(b, 1, "queue update")
	seq, r, t := d.Uvarint(), d.Uvarint(), d.Time()
	if d.Err() == nil && r > 1<<32-1 {
		return 0, 0, time.Time{}, objstore.Errorf(objstore.ErrInvalid, "queue update: retries %d", r)
	}
	return seq, uint32(r), t, d.Err()
}

// stats output: capacity, entries, bytes, reservations, reserved bytes
// (uvarints), oldest commit time (unix ns varint).
func encodeStats(s Stats) []byte {
	return wire.NewEnc(1, 56).Uvarint(s.Capacity).Uvarint(s.Entries).Uvarint(s.Bytes).
		Uvarint(s.Reservations).Uvarint(s.ReservedBytes).Time(s.Oldest).B
}

func decodeStats(b []byte) (Stats, error) {
	d, _ := wire.NewDec(b, 1, "queue stats")
	s := Stats{Capacity: d.Uvarint(), Entries: d.Uvarint(), Bytes: d.Uvarint(),
		Reservations: d.Uvarint(), ReservedBytes: d.Uvarint(), Oldest: d.Time()}
	return s, d.Err()
}
