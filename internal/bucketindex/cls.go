package bucketindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/cairn-s3/cairn/internal/objstore"
	json "github.com/goccy/go-json"
)

// ClassName is the object class that updates index shards atomically: an
// entry together with its shard's stats, a GC record for replaced data, and
// (while a reshard copies the shard) a log record for replay.
const ClassName = "cairn_index"

// Shard states, kept in the shardStateXattr xattr.
const (
	StateOpen    = ""        // normal
	StateLogging = "logging" // a reshard is copying: log every change for replay
	StateClosed  = "closed"  // retired (reshard switched away, or bucket deleting): writes get ErrStale
)

const shardStateXattr = "cairn.index.state"

// shardEpochXattr holds the highest reshard epoch that has addressed the
// shard (decimal). A reshard owner passes its epoch; a lower one (a former
// owner whose lease lapsed) fails with ErrCanceled, so it cannot touch a
// reshard that someone else took over.
const shardEpochXattr = "cairn.index.epoch"

// Register adds the class to reg.
func Register(reg *objstore.Registry) { register(reg, projectListing) }

// register adds the class with listing projection proj (a test gives an
// earlier build's).
func register(reg *objstore.Registry, proj objstore.Projection) {
	reg.RegisterProjection(ClassName, "listing", proj)
	reg.Register(ClassName, "init", objstore.MethodWrite, clsInit)
	reg.Register(ClassName, "link", objstore.MethodWrite, clsLink)
	reg.Register(ClassName, "unlink", objstore.MethodWrite, clsUnlink)
	reg.Register(ClassName, "link_version", objstore.MethodWrite, clsLinkVersion)
	reg.Register(ClassName, "unlink_version", objstore.MethodWrite, clsUnlinkVersion)
	reg.Register(ClassName, "set_version_meta", objstore.MethodWrite, clsSetVersionMeta)
	reg.Register(ClassName, "set_version_data", objstore.MethodWrite, clsSetVersionData)
	reg.Register(ClassName, "gc_done", objstore.MethodWrite, clsGCDone)
	reg.Register(ClassName, "set_state", objstore.MethodWrite, clsSetState)
	reg.Register(ClassName, "apply", objstore.MethodWrite, clsApply)
	reg.Register(ClassName, "copy", objstore.MethodWrite, clsCopy)
	reg.Register(ClassName, "copy_stats", objstore.MethodWrite, clsCopyStats)
	reg.Register(ClassName, "replay", objstore.MethodWrite, clsReplay)
	reg.Register(ClassName, "view_fix", objstore.MethodWrite, clsViewFix)
	reg.Register(ClassName, "put_intent", objstore.MethodWrite, clsPutIntent)
	reg.Register(ClassName, "rm_intents", objstore.MethodWrite, clsRmIntents)
}

type linkIn struct {
	Entry Entry `json:"e"`
	// Conditional PUT: IfAbsent fails with ErrCanceled when the key exists;
	// IfETag fails with ErrCanceled unless the current entry has that ETag.
	IfAbsent bool   `json:"a,omitempty"`
	IfETag   string `json:"m,omitempty"`
	// IfTag fails with ErrCanceled unless the current entry has that tag
	// (a metadata-only rewrite of the same data, e.g. PutObjectAcl).
	IfTag string `json:"tg,omitempty"`
	// GCTime is the caller's clock (unix ns), written into the GC record
	// of the replaced data (0: none, an older caller).
	GCTime int64 `json:"gt,omitempty"`
}

type unlinkIn struct {
	Key    string `json:"k"`
	Tag    string `json:"g,omitempty"`  // only if the entry still has this tag
	IfETag string `json:"m,omitempty"`  // only if the entry has this ETag
	GCTime int64  `json:"gt,omitempty"` // see linkIn
}

type gcDoneIn struct {
	Tags []string `json:"t"`
}

type stateIn struct {
	State string `json:"s"`
	// From, when set, makes the change conditional: the current state must
	// be one of these (ErrCanceled otherwise).
	From []string `json:"f,omitempty"`
	// Epoch, when non-zero, fences the change (see shardEpochXattr) and
	// raises the shard's epoch to it.
	Epoch uint64 `json:"p,omitempty"`
	// ClearLog drops every reshard log record in the same step.
	ClearLog bool `json:"c,omitempty"`
}

// initIn is init's optional input: the creating reshard's epoch.
type initIn struct {
	Epoch uint64 `json:"p,omitempty"`
}

// LogRecord is one change logged while a shard is being copied by a reshard.
type LogRecord struct {
	Op    string `json:"op"` // "link" or "unlink"
	Entry Entry  `json:"e"`  // for unlink only Key is set
}

// applyIn carries reshard copy/replay records to a target shard: entries are
// set or removed without GC records (the data is still referenced by the
// source generation's entry, which is the same object).
type applyIn struct {
	Records []LogRecord `json:"r"`
	Epoch   uint64      `json:"p,omitempty"` // fence, see shardEpochXattr
}

func shardState(ctx objstore.MethodContext) (string, error) {
	if v, ok := ctx.Cached("state"); ok {
		return v.(string), nil
	}
	b, err := ctx.GetXattr(shardStateXattr)
	if errors.Is(err, objstore.ErrNotFound) {
		b, err = nil, nil
	}
	if err != nil {
		return "", err
	}
	ctx.SetCached("state", string(b))
	return string(b), nil
}

func writable(ctx objstore.MethodContext) (string, error) {
	if !ctx.Exists() {
		return "", objstore.Errorf(objstore.ErrStale, "index shard does not exist")
	}
	st, err := shardState(ctx)
	if err != nil {
		return "", err
	}
	if st == StateClosed {
		return "", objstore.Errorf(objstore.ErrStale, "index shard is closed")
	}
	return st, nil
}

// hdrSlot caches the shard header's encoding (MethodContext.Cached), so a
// link reads only its key's entry: the header is a point read per call
// otherwise. Every method that writes the header does it through
// writeHeader, which stages the new encoding with it.
const hdrSlot = "hdr"

func readHeader(ctx objstore.MethodContext) (shardHeader, error) {
	if v, ok := ctx.Cached(hdrSlot); ok {
		return decodeHeader(v.([]byte))
	}
	b, err := ctx.GetOmapHeader()
	if err != nil {
		return shardHeader{}, err
	}
	h, err := decodeHeader(b)
	if err == nil {
		ctx.SetCached(hdrSlot, b)
	}
	return h, err
}

// writeHeader stores h as the shard's header and caches it.
func writeHeader(ctx objstore.MethodContext, h shardHeader) error {
	b := h.encode()
	if err := ctx.SetOmapHeader(b); err != nil {
		return err
	}
	ctx.SetCached(hdrSlot, b)
	return nil
}

func clsInit(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	var ii initIn
	if len(in) > 0 {
		if err := json.Unmarshal(in, &ii); err != nil {
			return nil, objstore.Errorf(objstore.ErrInvalid, "init input: %v", err)
		}
	}
	if err := ctx.Create(true); err != nil {
		return nil, err
	}
	if ii.Epoch > 0 {
		if err := ctx.SetXattr(shardEpochXattr, []byte(strconv.FormatUint(ii.Epoch, 10))); err != nil {
			return nil, err
		}
	}
	return nil, writeHeader(ctx, shardHeader{})
}

// fence fails with ErrCanceled when the shard has seen a newer reshard
// epoch than epoch, and raises the stored epoch when raise is set.
func fence(ctx objstore.MethodContext, epoch uint64, raise bool) error {
	if epoch == 0 {
		return nil
	}
	var stored uint64
	b, err := ctx.GetXattr(shardEpochXattr)
	switch {
	case errors.Is(err, objstore.ErrNotFound):
	case err != nil:
		return err
	default:
		if stored, err = strconv.ParseUint(string(b), 10, 64); err != nil {
			return objstore.Errorf(objstore.ErrInvalid, "shard epoch %q", b)
		}
	}
	if stored > epoch {
		return objstore.Errorf(objstore.ErrCanceled, "reshard epoch %d fenced by %d", epoch, stored)
	}
	if raise && stored < epoch {
		return ctx.SetXattr(shardEpochXattr, []byte(strconv.FormatUint(epoch, 10)))
	}
	return nil
}

func decodeEntry(b []byte) (Entry, error) {
	if e, ok := fastDecodeEntry(b); ok {
		return e, nil
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return e, objstore.Errorf(objstore.ErrInvalid, "index entry: %v", err)
	}
	return e, nil
}

// decodeListing decodes an entry (or a listing record) under omap key key
// for a listing (fastDecodeListing: no Tag or Manifest; Meta may alias b).
func decodeListing(key string, b []byte) (Entry, error) {
	var e Entry
	err := decodeListingInto(&e, b, key)
	return e, err
}

// decodeListingInto is decodeListing into *e, which is zero; key, when
// not "", is the entry's omap key, taken as its Key when they are equal
// (not copied again). A listing record (ListingProjection) holds no key:
// key must be its omap key.
func decodeListingInto(e *Entry, b []byte, key string) error {
	if isListingRecord(b) {
		return decodeListingRecord(e, b, key)
	}
	if fastDecodeInto(e, b, true, key) {
		return nil
	}
	var err error
	*e, err = decodeEntry(b)
	e.Tag, e.Manifest = "", Manifest{}
	return err
}

func getOld(ctx objstore.MethodContext, key string) (*Entry, []byte, error) {
	b, err := ctx.GetOmapVal(key)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	e, err := decodeEntry(b)
	return &e, b, err
}

// change applies one link or unlink to the shard, with stats, GC and log.
// With gc, replaced data is recorded for collection, stamped with gcTime
// (the caller's clock, unix ns; 0: unknown).
func change(ctx objstore.MethodContext, h *shardHeader, rec LogRecord, state string, gc bool, gcTime int64) ([]byte, error) {
	old, oldRaw, err := getOld(ctx, rec.Entry.Key)
	if err != nil {
		return nil, err
	}
	switch rec.Op {
	case "link":
		if err := validKey(rec.Entry.Key); err != nil {
			return nil, err
		}
		nb, err := json.Marshal(rec.Entry)
		if err != nil {
			return nil, err
		}
		if err := ctx.SetOmap(objstore.KV{Key: rec.Entry.Key, Value: nb}); err != nil {
			return nil, err
		}
		if err := account(h, rec.Entry.Key, oldRaw, -1); err != nil {
			return nil, err
		}
		if err := account(h, rec.Entry.Key, nb, 1); err != nil {
			return nil, err
		}
	case "unlink":
		if old == nil {
			return nil, objstore.Errorf(objstore.ErrNotFound, "index entry %q", rec.Entry.Key)
		}
		if rec.Entry.Tag != "" && old.Tag != rec.Entry.Tag {
			return nil, objstore.Errorf(objstore.ErrCanceled, "index entry %q has another tag", rec.Entry.Key)
		}
		if rec.Entry.ETag != "" && old.ETag != rec.Entry.ETag {
			return nil, objstore.Errorf(objstore.ErrCanceled, "index entry %q: etag does not match", rec.Entry.Key)
		}
		if err := ctx.RmOmapKeys(rec.Entry.Key); err != nil {
			return nil, err
		}
		if err := account(h, rec.Entry.Key, oldRaw, -1); err != nil {
			return nil, err
		}
	default:
		return nil, objstore.Errorf(objstore.ErrInvalid, "index op %q", rec.Op)
	}
	if gc && old != nil && old.Tag != rec.Entry.Tag && old.Manifest.Stored() {
		mb, err := encodeGCValue(old.Manifest.StoredOnly(), gcTime)
		if err != nil {
			return nil, err
		}
		if err := ctx.SetOmap(objstore.KV{Key: gcPrefix + old.Tag, Value: mb}); err != nil {
			return nil, err
		}
	}
	if state == StateLogging {
		h.LogSeq++
		if err := ctx.SetOmap(objstore.KV{Key: logKey(h.LogSeq), Value: logValue(rec.Entry.Key)}); err != nil {
			return nil, err
		}
	}
	return oldRaw, nil
}

func logKey(seq uint64) string { return fmt.Sprintf("%s%020d", logPrefix, seq) }

// logMark starts a reshard log record that names the omap key a change
// set or removed; replay copies that key's current value from the source
// shard (Index.Resolve). Records of the format before (`{"op":…,"e":…}`,
// the whole entry) are read as naming their key as well. A record as
// large as its entry doubled what a write inside a reshard put through
// the WAL and every compaction (docs/bench/scale.md, stops 47 and 48).
const logMark = '\x01'

func logValue(k string) []byte {
	v := make([]byte, 0, 1+len(k))
	return append(append(v, logMark), k...)
}

func validKey(k string) error {
	if k == "" || len(k) >= 1 && k[0] == specialPrefix[0] {
		return objstore.Errorf(objstore.ErrInvalid, "bad index key %q", k)
	}
	return nil
}

func clsLink(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	var li linkIn
	if err := json.Unmarshal(in, &li); err != nil {
		return nil, objstore.Errorf(objstore.ErrInvalid, "link input: %v", err)
	}
	if li.IfAbsent || li.IfETag != "" || li.IfTag != "" {
		old, _, err := getOld(ctx, li.Entry.Key)
		if err != nil {
			return nil, err
		}
		if li.IfAbsent && old != nil {
			return nil, objstore.Errorf(objstore.ErrCanceled, "key %q exists", li.Entry.Key)
		}
		if li.IfETag != "" && (old == nil || old.ETag != li.IfETag) {
			return nil, objstore.Errorf(objstore.ErrCanceled, "key %q: etag does not match", li.Entry.Key)
		}
		if li.IfTag != "" && (old == nil || old.Tag != li.IfTag) {
			return nil, objstore.Errorf(objstore.ErrCanceled, "key %q: tag does not match", li.Entry.Key)
		}
	}
	return mutate(ctx, LogRecord{Op: "link", Entry: li.Entry}, li.GCTime)
}

func clsUnlink(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	var ui unlinkIn
	if err := json.Unmarshal(in, &ui); err != nil {
		return nil, objstore.Errorf(objstore.ErrInvalid, "unlink input: %v", err)
	}
	return mutate(ctx, LogRecord{Op: "unlink", Entry: Entry{Key: ui.Key, Tag: ui.Tag, ETag: ui.IfETag}}, ui.GCTime)
}

func mutate(ctx objstore.MethodContext, rec LogRecord, gcTime int64) ([]byte, error) {
	state, err := writable(ctx)
	if err != nil {
		return nil, err
	}
	h, err := readHeader(ctx)
	if err != nil {
		return nil, err
	}
	out, err := change(ctx, &h, rec, state, true, gcTime)
	if err != nil {
		return nil, err
	}
	return out, writeHeader(ctx, h)
}

func clsGCDone(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	var g gcDoneIn
	if err := json.Unmarshal(in, &g); err != nil {
		return nil, objstore.Errorf(objstore.ErrInvalid, "gc_done input: %v", err)
	}
	keys := make([]string, len(g.Tags))
	for i, t := range g.Tags {
		keys[i] = gcPrefix + t
	}
	return nil, ctx.RmOmapKeys(keys...)
}

func clsSetState(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	var s stateIn
	if err := json.Unmarshal(in, &s); err != nil {
		return nil, objstore.Errorf(objstore.ErrInvalid, "set_state input: %v", err)
	}
	switch s.State {
	case StateOpen, StateLogging, StateClosed:
	default:
		return nil, objstore.Errorf(objstore.ErrInvalid, "shard state %q", s.State)
	}
	if !ctx.Exists() {
		return nil, objstore.Errorf(objstore.ErrNotFound, "index shard")
	}
	if err := fence(ctx, s.Epoch, true); err != nil {
		return nil, err
	}
	if s.From != nil {
		cur, err := shardState(ctx)
		if err != nil {
			return nil, err
		}
		ok := false
		for _, f := range s.From {
			ok = ok || f == cur
		}
		if !ok {
			return nil, objstore.Errorf(objstore.ErrCanceled, "shard state is %q", cur)
		}
	}
	if s.ClearLog {
		if err := ctx.OmapRmRange(logPrefix, logEnd); err != nil {
			return nil, err
		}
	}
	if err := ctx.SetXattr(shardStateXattr, []byte(s.State)); err != nil {
		return nil, err
	}
	ctx.SetCached("state", s.State)
	return nil, nil
}

// clsApply writes copied or replayed records into a target shard; it runs
// while the target is not yet visible to writers, so it ignores state.
func clsApply(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	var a applyIn
	if err := json.Unmarshal(in, &a); err != nil {
		return nil, objstore.Errorf(objstore.ErrInvalid, "apply input: %v", err)
	}
	if !ctx.Exists() {
		return nil, objstore.Errorf(objstore.ErrNotFound, "index shard")
	}
	if err := fence(ctx, a.Epoch, false); err != nil {
		return nil, err
	}
	h, err := readHeader(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range a.Records {
		_, err := change(ctx, &h, r, StateOpen, false, 0)
		if r.Op == "unlink" && errors.Is(err, objstore.ErrNotFound) {
			continue // replay is idempotent
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, writeHeader(ctx, h)
}

// copyIn (binary, for speed: a reshard copies every entry once) is
// uvarint epoch, uvarint count, then count × (uvarint len, key, uvarint len,
// raw entry JSON).
func encodeCopyIn(epoch uint64, pairs []objstore.KV) []byte {
	n := 20
	for _, p := range pairs {
		n += len(p.Key) + len(p.Value) + 10
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, epoch)
	b = binary.AppendUvarint(b, uint64(len(pairs)))
	for _, p := range pairs {
		b = binary.AppendUvarint(b, uint64(len(p.Key)))
		b = append(b, p.Key...)
		b = binary.AppendUvarint(b, uint64(len(p.Value)))
		b = append(b, p.Value...)
	}
	return b
}

func decodeCopyIn(b []byte) (uint64, []objstore.KV, error) {
	bad := objstore.Errorf(objstore.ErrInvalid, "copy input truncated")
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	bytesOf := func() ([]byte, bool) {
		l, ok := next()
		if !ok || l > uint64(len(b)) {
			return nil, false
		}
		v := b[:l]
		b = b[l:]
		return v, true
	}
	epoch, ok1 := next()
	cnt, ok2 := next()
	if !ok1 || !ok2 || cnt > uint64(len(b)) {
		return 0, nil, bad
	}
	pairs := make([]objstore.KV, cnt)
	for i := range pairs {
		k, ok1 := bytesOf()
		v, ok2 := bytesOf()
		if !ok1 || !ok2 {
			return 0, nil, bad
		}
		pairs[i] = objstore.KV{Key: string(k), Value: v}
	}
	return epoch, pairs, nil
}

// fencedHeader reads the header of a reshard target that epoch still owns.
func fencedHeader(ctx objstore.MethodContext, epoch uint64) (shardHeader, error) {
	if !ctx.Exists() {
		return shardHeader{}, objstore.Errorf(objstore.ErrNotFound, "index shard")
	}
	if err := fence(ctx, epoch, false); err != nil {
		return shardHeader{}, err
	}
	return readHeader(ctx)
}

// clsCopy adds entries copied verbatim from a source shard to a reshard
// target, with their stats. The caller guarantees the target holds none of
// these keys yet (a copy pass visits each key once, into a freshly created
// target), so no per-key read is needed: that keeps the copy fast.
func clsCopy(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	epoch, pairs, err := decodeCopyIn(in)
	if err != nil {
		return nil, err
	}
	h, err := fencedHeader(ctx, epoch)
	if err != nil {
		return nil, err
	}
	for _, p := range pairs {
		if err := validRecordKey(p.Key); err != nil {
			return nil, err
		}
		if err := account(&h, p.Key, p.Value, 1); err != nil {
			return nil, err
		}
	}
	if err := ctx.SetOmap(pairs...); err != nil {
		return nil, err
	}
	return nil, writeHeader(ctx, h)
}

// replayIn (binary) is uvarint epoch, uvarint count, then count × (op byte
// 'l' or 'u', uvarint len, key, and for 'l' uvarint len, raw entry JSON).
func encodeReplayIn(epoch uint64, recs []RawLogRecord) []byte {
	n := 20
	for _, r := range recs {
		n += len(r.Key) + len(r.Entry) + 12
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, epoch)
	b = binary.AppendUvarint(b, uint64(len(recs)))
	for _, r := range recs {
		b = append(b, r.Op)
		b = binary.AppendUvarint(b, uint64(len(r.Key)))
		b = append(b, r.Key...)
		if r.Op == 'l' {
			b = binary.AppendUvarint(b, uint64(len(r.Entry)))
			b = append(b, r.Entry...)
		}
	}
	return b
}

func decodeReplayIn(b []byte) (uint64, []RawLogRecord, error) {
	bad := objstore.Errorf(objstore.ErrInvalid, "replay input truncated")
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	bytesOf := func() ([]byte, bool) {
		l, ok := next()
		if !ok || l > uint64(len(b)) {
			return nil, false
		}
		v := b[:l]
		b = b[l:]
		return v, true
	}
	epoch, ok1 := next()
	cnt, ok2 := next()
	if !ok1 || !ok2 || cnt > uint64(len(b)) {
		return 0, nil, bad
	}
	recs := make([]RawLogRecord, cnt)
	for i := range recs {
		if len(b) == 0 {
			return 0, nil, bad
		}
		recs[i].Op, b = b[0], b[1:]
		k, ok := bytesOf()
		if !ok {
			return 0, nil, bad
		}
		recs[i].Key = string(k)
		switch recs[i].Op {
		case 'l':
			if recs[i].Entry, ok = bytesOf(); !ok {
				return 0, nil, bad
			}
		case 'u':
		default:
			return 0, nil, objstore.Errorf(objstore.ErrInvalid, "replay op %q", recs[i].Op)
		}
	}
	return epoch, recs, nil
}

// clsReplay applies reshard log records, raw, to a target shard: a link
// sets the entry, an unlink removes it (absent: nothing to do; the source
// already checked any tag condition when it logged the record), and the
// stats follow from the sizes of the entries replaced. No entry is decoded.
func clsReplay(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	epoch, recs, err := decodeReplayIn(in)
	if err != nil {
		return nil, err
	}
	if !ctx.Exists() {
		return nil, objstore.Errorf(objstore.ErrNotFound, "index shard")
	}
	if err := fence(ctx, epoch, false); err != nil {
		return nil, err
	}
	h, err := readHeader(ctx)
	if err != nil {
		return nil, err
	}
	// The current entries of every key in the batch, in one read (a Get
	// per key cost most of the replay's CPU; on RADOS a round trip each);
	// cur then follows the batch's own changes, in order.
	keys := make([]string, 0, len(recs))
	for _, r := range recs {
		if err := validRecordKey(r.Key); err != nil {
			return nil, err
		}
		keys = append(keys, r.Key)
	}
	kvs, err := ctx.GetOmapValsByKeys(keys...)
	if err != nil {
		return nil, err
	}
	cur := make(map[string][]byte, len(keys))
	for _, kv := range kvs {
		cur[kv.Key] = kv.Value
	}
	for _, r := range recs {
		old := cur[r.Key]
		if err := account(&h, r.Key, old, -1); err != nil {
			return nil, err
		}
		if r.Op == 'u' {
			if old != nil {
				if err := ctx.RmOmapKeys(r.Key); err != nil {
					return nil, err
				}
				delete(cur, r.Key)
			}
			continue
		}
		if err := account(&h, r.Key, r.Entry, 1); err != nil {
			return nil, err
		}
		if err := ctx.SetOmap(objstore.KV{Key: r.Key, Value: r.Entry}); err != nil {
			return nil, err
		}
		cur[r.Key] = r.Entry
	}
	return nil, writeHeader(ctx, h)
}
