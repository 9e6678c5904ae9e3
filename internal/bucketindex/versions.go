package bucketindex

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/cairn-s3/cairn/internal/objstore"
	json "github.com/goccy/go-json"
)

// Versioning in the index (docs/format/cls.md has the byte layout).
//
// A shard's bare keys hold only current, visible objects: exactly what
// ListObjects reads, however many versions or delete markers exist. Every
// version of a versioned key (delete markers included) is a record under
// verPrefix, keyed by the escaped object name and the inverted per-key
// sequence, so a key's records sort newest first and all keys' records sort
// in key order. The null version's sequence is found through nullPrefix.
// All three live on the shard of the object name, so one class call
// (link_version, unlink_version) changes a key's records, its bare head, the
// stats, the GC records and the reshard log together.
//
// A bare entry with Seq 0 is a legacy entry: written by an unversioned
// write to a key without records, it is that key's only (null) version.
// The first versioned change of the key turns it into a record.

// Versioning modes of link_version and unlink_version.
const (
	ModeUnversioned = ""          // the bucket was never versioned
	ModeEnabled     = "enabled"   // every write makes a new version
	ModeSuspended   = "suspended" // writes replace the null version
)

// NullVersion is the version id of the null version.
const NullVersion = "null"

func escapeName(k string) string { return strings.ReplaceAll(k, "\x01", "\x01\x02") }

func unescapeName(k string) string { return strings.ReplaceAll(k, "\x01\x02", "\x01") }

// verKeyPrefix is the common prefix of key's version records: 0x01 0x01
// never occurs in an escaped name, so it ends the name and sorts before
// any longer name.
func verKeyPrefix(key string) string { return verPrefix + escapeName(key) + "\x01\x01" }

// verKey is the record of version seq of key; seq 0 is the position after
// every version of key.
func verKey(key string, seq uint64) string {
	return verKeyPrefix(key) + fmt.Sprintf("%016x", ^seq)
}

func nullKey(key string) string { return nullPrefix + escapeName(key) }

// decodeVerKey splits a version record's omap key.
func decodeVerKey(k string) (key string, seq uint64, ok bool) {
	if !strings.HasPrefix(k, verPrefix) || len(k) < len(verPrefix)+18 {
		return "", 0, false
	}
	body := k[len(verPrefix):]
	name, inv := body[:len(body)-18], body[len(body)-18:]
	if inv[:2] != "\x01\x01" {
		return "", 0, false
	}
	v, err := strconv.ParseUint(inv[2:], 16, 64)
	if err != nil {
		return "", 0, false
	}
	return unescapeName(name), ^v, true
}

// PlaceOf maps an omap key of a shard (an entry, a version record or a
// null pointer) to its shard among n: that of the object name it belongs
// to, so a key's versions, pointer and head stay together across reshards.
func PlaceOf(omapKey string, n int) int {
	switch {
	case strings.HasPrefix(omapKey, verPrefix):
		if key, _, ok := decodeVerKey(omapKey); ok {
			return ShardOf(key, n)
		}
	case strings.HasPrefix(omapKey, nullPrefix):
		return ShardOf(unescapeName(omapKey[len(nullPrefix):]), n)
	}
	return ShardOf(omapKey, n)
}

// VersionID returns the id of version seq written under tag: 16 hex digits
// of the inverted sequence (so a key's ids sort newest first, and name the
// record) and 16 of a hash of the tag (so ids stay unique when a key's
// sequence restarts after all its versions were deleted).
func VersionID(seq uint64, tag string) string {
	h := fnv.New64a()
	h.Write([]byte(tag))
	return fmt.Sprintf("%016x%016x", ^seq, h.Sum64())
}

// ParseVersionID returns the sequence a version id names; ok=false for
// anything VersionID cannot have produced (and for "null").
func ParseVersionID(id string) (seq uint64, ok bool) {
	if len(id) != 32 {
		return 0, false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(id[:16], 16, 64)
	if err != nil || v == ^uint64(0) {
		return 0, false
	}
	return ^v, true
}

// validRecordKey accepts the keys a reshard copies or replays: entries,
// version records and null pointers.
func validRecordKey(k string) error {
	if strings.HasPrefix(k, verPrefix) {
		if _, _, ok := decodeVerKey(k); ok {
			return nil
		}
	} else if strings.HasPrefix(k, nullPrefix) && len(k) > len(nullPrefix) {
		return nil
	}
	return validKey(k)
}

// entrySizeSeq reads Size and Seq of a stored entry without decoding it
// when it can (see EntrySize); anything unexpected is decoded fully.
func entrySizeSeq(raw []byte) (int64, uint64, error) {
	sz, rest, ok := scanField(raw, `,"s":`)
	if ok {
		if len(rest) > 0 && rest[0] == '}' {
			return sz, 0, nil
		}
		if len(rest) > 5 && string(rest[:5]) == `,"q":` {
			q, rest2, ok2 := scanNum(rest[5:])
			if ok2 && len(rest2) > 0 && (rest2[0] == ',' || rest2[0] == '}') {
				return sz, uint64(q), nil
			}
		} else if len(rest) > 0 && rest[0] == ',' {
			return sz, 0, nil
		}
	}
	e, err := decodeEntry(raw)
	return e.Size, e.Seq, err
}

// scanField finds the first field (the one after the key string) and its
// decimal value; ok=false when the entry does not have the expected shape.
func scanField(raw []byte, field string) (int64, []byte, bool) {
	if len(raw) < 8 || string(raw[:6]) != `{"k":"` {
		return 0, nil, false
	}
	i := bytes.Index(raw, []byte(field))
	if i < 0 {
		return 0, nil, false
	}
	return scanNum(raw[i+len(field):])
}

func scanNum(b []byte) (int64, []byte, bool) {
	var n int64
	k := 0
	for ; k < len(b) && b[k] >= '0' && b[k] <= '9' && k < 19; k++ {
		n = n*10 + int64(b[k]-'0')
	}
	if k == 0 || k >= len(b) {
		return 0, nil, false
	}
	return n, b[k:], true
}

// account adds (sign 1) or removes (sign -1) a stored value's share of the
// shard's stats: a bare entry is a current object (and, when legacy, a
// version too); a version record is a version (a marker with size 0).
// Entries of a class other than STANDARD also count in their class's
// stats.
func account(h *shardHeader, key string, raw []byte, sign int64) error {
	if raw == nil {
		return nil
	}
	d := uint64(sign)
	var objs, size, vers, vsize uint64
	switch {
	case strings.HasPrefix(key, verPrefix):
		sz, _, err := entrySizeSeq(raw)
		if err != nil {
			return err
		}
		vers, vsize = 1, uint64(sz)
	case strings.HasPrefix(key, specialPrefix):
		return nil
	default:
		sz, seq, err := entrySizeSeq(raw)
		if err != nil {
			return err
		}
		objs, size = 1, uint64(sz)
		if seq == 0 {
			vers, vsize = 1, uint64(sz)
			h.Legacy += d
		}
	}
	h.NumObjects += objs * d
	h.Size += size * d
	h.NumVersions += vers * d
	h.VersionSize += vsize * d
	class, err := entryClass(raw)
	if err != nil {
		return err
	}
	if len(class) > 0 && string(class) != StandardClass {
		h.addClass(class, objs, size, vers, vsize, sign)
	}
	return nil
}

// entryClass reads a stored entry's storage class ("" = STANDARD) without
// decoding it when it can: Class is Entry's last field and the two before
// it are objects, so json.Marshal ends an entry with `}}` when it has no
// class and with `,"sc":"<class>"}` when it has one. Anything else is
// decoded fully. The returned bytes alias raw.
func entryClass(raw []byte) ([]byte, error) {
	n := len(raw)
	if n >= 2 && raw[n-1] == '}' {
		if raw[n-2] == '}' {
			return nil, nil
		}
		if raw[n-2] == '"' {
			if i := bytes.LastIndex(raw, []byte(`,"sc":"`)); i >= 0 {
				v := raw[i+7 : n-2]
				if len(v) > 0 && len(v) <= maxClassName && bytes.IndexAny(v, `"\`) < 0 {
					return v, nil
				}
			}
		}
	}
	e, err := decodeEntry(raw)
	if len(e.Class) > maxClassName {
		return nil, objstore.Errorf(objstore.ErrInvalid, "storage class of %d bytes", len(e.Class))
	}
	return []byte(e.Class), err
}

// shardTx applies raw omap changes to a shard inside one class call,
// keeping the stats and, while a reshard copies the shard, the log.
type shardTx struct {
	ctx   objstore.MethodContext
	h     shardHeader
	state string
	gc    []Entry // removed data, recorded for collection
	// gcTime stamps the GC records (the caller's clock, unix ns; 0:
	// unknown, from a caller that sends none).
	gcTime int64
}

// log records, while a reshard copies the shard, that omap key k changed.
func (t *shardTx) log(k string) error {
	if t.state != StateLogging {
		return nil
	}
	t.h.LogSeq++
	return t.ctx.SetOmap(objstore.KV{Key: logKey(t.h.LogSeq), Value: logValue(k)})
}

// set stores val under the omap key k (whose current value is old).
func (t *shardTx) set(k string, old, val []byte) error {
	if err := t.ctx.SetOmap(objstore.KV{Key: k, Value: val}); err != nil {
		return err
	}
	if err := account(&t.h, k, old, -1); err != nil {
		return err
	}
	if err := account(&t.h, k, val, 1); err != nil {
		return err
	}
	return t.log(k)
}

func (t *shardTx) rm(k string, old []byte) error {
	if err := t.ctx.RmOmapKeys(k); err != nil {
		return err
	}
	if err := account(&t.h, k, old, -1); err != nil {
		return err
	}
	return t.log(k)
}

// collect records e's data for the collector and lists e as freed (the
// quota counts it). Inline data goes with the entry: no record.
func (t *shardTx) collect(e Entry) error {
	if len(e.Manifest.Runs) == 0 {
		return nil
	}
	if e.Manifest.Stored() {
		e.Manifest = e.Manifest.StoredOnly()
		mb, err := encodeGCValue(e.Manifest, t.gcTime)
		if err != nil {
			return err
		}
		if err := t.ctx.SetOmap(objstore.KV{Key: gcPrefix + e.Tag, Value: mb}); err != nil {
			return err
		}
	} else {
		e.Manifest = Manifest{}
	}
	t.gc = append(t.gc, e)
	return nil
}

func (t *shardTx) setBare(key string, old []byte, e Entry) error {
	b, err := encodeEntry(&e)
	if err != nil {
		return err
	}
	return t.set(key, old, b)
}

func (t *shardTx) rmBare(key string, old []byte) error { return t.rm(key, old) }

func (t *shardTx) setRecord(e Entry, old []byte) error {
	b, err := encodeEntry(&e)
	if err != nil {
		return err
	}
	return t.set(verKey(e.Key, e.Seq), old, b)
}

func (t *shardTx) rmRecord(key string, seq uint64, old []byte) error {
	return t.rm(verKey(key, seq), old)
}

type nullPtr struct {
	K string `json:"k"`
	S int    `json:"s"` // always 0: keeps the entry shape for entrySizeSeq
	Q uint64 `json:"q"`
}

func (t *shardTx) setNull(key string, seq uint64, old []byte) error {
	b, _ := json.Marshal(nullPtr{K: key, Q: seq})
	return t.set(nullKey(key), old, b)
}

func (t *shardTx) rmNull(key string, old []byte) error { return t.rm(nullKey(key), old) }

func (t *shardTx) get(k string) ([]byte, error) {
	b, err := t.ctx.GetOmapVal(k)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, nil
	}
	return b, err
}

// newest returns key's newest version record (nil if none) and its raw value.
// hasRecords reports whether the shard may hold version records: its
// stats count every record plus each legacy entry, so equal counts mean
// none. A shard of a never-versioned bucket then skips the scan for the
// key's records, a read round trip per PUT on RADOS.
func (t *shardTx) hasRecords() bool { return t.h.NumVersions > t.h.Legacy }

func (t *shardTx) newest(key string) (*Entry, []byte, error) {
	p := verKeyPrefix(key)
	kvs, _, err := t.ctx.GetOmapVals(p, p, 1)
	if err != nil || len(kvs) == 0 {
		return nil, nil, err
	}
	e, err := decodeEntry(kvs[0].Value)
	return &e, kvs[0].Value, err
}

// nullSeq returns the sequence of key's null version record (0: none).
func (t *shardTx) nullSeq(key string) (uint64, []byte, error) {
	raw, err := t.get(nullKey(key))
	if raw == nil || err != nil {
		return 0, nil, err
	}
	var p nullPtr
	if err := json.Unmarshal(raw, &p); err != nil {
		return 0, nil, objstore.Errorf(objstore.ErrInvalid, "null pointer of %q: %v", key, err)
	}
	return p.Q, raw, nil
}

func (t *shardTx) commit() error { return writeHeader(t.ctx, t.h) }

func beginTx(ctx objstore.MethodContext) (*shardTx, error) {
	state, err := writable(ctx)
	if err != nil {
		return nil, err
	}
	h, err := readHeader(ctx)
	if err != nil {
		return nil, err
	}
	return &shardTx{ctx: ctx, h: h, state: state}, nil
}

// linkVersionIn is link_version's input.
type linkVersionIn struct {
	Entry Entry  `json:"e"` // Seq and VersionID are assigned here
	Mode  string `json:"v,omitempty"`
	// Conditions on the current visible object (a current delete marker
	// means none): IfAbsent fails with ErrCanceled when one exists;
	// IfExists and IfETag fail with ErrNotFound when none exists, IfETag
	// with ErrCanceled when its ETag differs.
	IfAbsent bool   `json:"a,omitempty"`
	IfExists bool   `json:"x,omitempty"`
	IfETag   string `json:"m,omitempty"`
	// IfNoneETag fails with ErrCanceled when the current object has this
	// ETag (RGW's If-None-Match: <etag> on writes); IfTag fails with
	// ErrCanceled unless the current object is still the write with this
	// tag (conditions the caller checked on it), ErrNotFound when none is.
	IfNoneETag string `json:"nm,omitempty"`
	IfTag      string `json:"t,omitempty"`
	// GCTime is the caller's clock (unix ns), written into the GC
	// records of data the call frees (0: none, an older caller).
	GCTime int64 `json:"gt,omitempty"`
}

// VersionResult is what link_version and unlink_version report.
type VersionResult struct {
	// Entry is the version linked (with its Seq and VersionID) or removed.
	Entry Entry `json:"e"`
	// Retry is set when link_version found the write already linked (the
	// same Tag): nothing changed, Entry is the stored version.
	Retry bool `json:"r,omitempty"`
	// Freed lists versions whose data the call handed to the collector
	// (GC records written in the same step).
	Freed []Entry `json:"f,omitempty"`
	// Current is the key's current visible object after the call (nil: none).
	Current *Entry `json:"c,omitempty"`
	// MarkerCurrent is set when the key's newest version is a delete marker.
	MarkerCurrent bool `json:"mc,omitempty"`
	// CurrentIsEntry stands for Current = Entry on the wire (a PUT's
	// usual result: the entry once, not twice); the caller's decode sets
	// Current from it.
	CurrentIsEntry bool `json:"ce,omitempty"`
}

// clsLinkVersion links a new version (or delete marker) of a key: version
// record, bare head, null pointer, stats, GC records of replaced data and
// reshard log, all in one step. The per-key sequence is the newest + 1.
func clsLinkVersion(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	var li linkVersionIn
	if err := json.Unmarshal(in, &li); err != nil {
		return nil, objstore.Errorf(objstore.ErrInvalid, "link_version input: %v", err)
	}
	e := li.Entry
	if err := validKey(e.Key); err != nil {
		return nil, err
	}
	if e.Tag == "" {
		return nil, objstore.Errorf(objstore.ErrInvalid, "link_version without a tag")
	}
	switch li.Mode {
	case ModeUnversioned, ModeEnabled, ModeSuspended:
	default:
		return nil, objstore.Errorf(objstore.ErrInvalid, "versioning mode %q", li.Mode)
	}
	t, err := beginTx(ctx)
	if err != nil {
		return nil, err
	}
	t.gcTime = li.GCTime
	bareRaw, err := t.get(e.Key)
	if err != nil {
		return nil, err
	}
	var bare *Entry
	if bareRaw != nil {
		b, err := decodeEntry(bareRaw)
		if err != nil {
			return nil, err
		}
		bare = &b
	}
	var newest *Entry
	if (bare == nil || bare.Seq > 0) && t.hasRecords() {
		if newest, _, err = t.newest(e.Key); err != nil {
			return nil, err
		}
	}
	// A retry of a write that already linked: report it, change nothing.
	if newest != nil && newest.Tag == e.Tag {
		return encodeVersionResult(&VersionResult{Entry: *newest, Retry: true, Current: bare, MarkerCurrent: newest.Marker})
	}
	if newest == nil && bare != nil && bare.Tag == e.Tag {
		return encodeVersionResult(&VersionResult{Entry: *bare, Retry: true, Current: bare})
	}
	switch {
	case li.IfAbsent && bare != nil:
		return nil, objstore.Errorf(objstore.ErrCanceled, "key %q exists", e.Key)
	case (li.IfExists || li.IfETag != "") && bare == nil:
		return nil, objstore.Errorf(objstore.ErrNotFound, "key %q", e.Key)
	case li.IfETag != "" && bare.ETag != li.IfETag:
		return nil, objstore.Errorf(objstore.ErrCanceled, "key %q: etag does not match", e.Key)
	case li.IfNoneETag != "" && bare != nil && bare.ETag == li.IfNoneETag:
		return nil, objstore.Errorf(objstore.ErrCanceled, "key %q: etag matches", e.Key)
	case li.IfTag != "" && bare == nil:
		return nil, objstore.Errorf(objstore.ErrNotFound, "key %q", e.Key)
	case li.IfTag != "" && bare.Tag != li.IfTag:
		return nil, objstore.Errorf(objstore.ErrCanceled, "key %q: replaced", e.Key)
	}
	res := VersionResult{}
	if li.Mode == ModeUnversioned && newest == nil && !e.Marker {
		// Never versioned: the bare entry is the only version.
		e.Seq, e.VersionID = 0, ""
		if err := t.setBare(e.Key, bareRaw, e); err != nil {
			return nil, err
		}
		if bare != nil && bare.Tag != e.Tag {
			if err := t.collect(*bare); err != nil {
				return nil, err
			}
		}
		res.Entry, res.Freed, res.CurrentIsEntry = e, t.gc, true
		return finish(t, res)
	}
	if newest == nil && bare != nil && bare.Seq == 0 {
		// The legacy entry becomes the null version record, sequence 1.
		conv := *bare
		conv.Seq, conv.VersionID = 1, NullVersion
		if err := t.setRecord(conv, nil); err != nil {
			return nil, err
		}
		if err := t.setNull(conv.Key, 1, nil); err != nil {
			return nil, err
		}
		cb, _ := json.Marshal(conv)
		if err := t.set(conv.Key, bareRaw, cb); err != nil {
			return nil, err
		}
		bareRaw, newest = cb, &conv
	}
	e.Seq = 1
	switch {
	case newest != nil:
		e.Seq = newest.Seq + 1
	case bare != nil:
		e.Seq = bare.Seq + 1 // a head without its record: never reuse its sequence
	}
	if li.Mode == ModeEnabled {
		e.VersionID = VersionID(e.Seq, e.Tag)
	} else {
		// Suspended (or a stale unversioned view of a versioned key): the
		// write replaces the null version, wherever it is in the stack.
		e.VersionID = NullVersion
		ns, nraw, err := t.nullSeq(e.Key)
		if err != nil {
			return nil, err
		}
		if ns > 0 {
			old, err := t.get(verKey(e.Key, ns))
			if err != nil {
				return nil, err
			}
			if old != nil {
				oe, err := decodeEntry(old)
				if err != nil {
					return nil, err
				}
				if err := t.rmRecord(e.Key, ns, old); err != nil {
					return nil, err
				}
				if err := t.collect(oe); err != nil {
					return nil, err
				}
			}
		}
		if err := t.setNull(e.Key, e.Seq, nraw); err != nil {
			return nil, err
		}
	}
	if e.Marker {
		e.Size, e.ETag, e.Manifest, e.Parts = 0, "", Manifest{}, 0
	}
	if err := t.setRecord(e, nil); err != nil {
		return nil, err
	}
	if e.Marker {
		if bareRaw != nil {
			if err := t.rmBare(e.Key, bareRaw); err != nil {
				return nil, err
			}
		}
		res.MarkerCurrent = true
	} else {
		if err := t.setBare(e.Key, bareRaw, e); err != nil {
			return nil, err
		}
		res.CurrentIsEntry = true
	}
	res.Entry, res.Freed = e, t.gc
	return finish(t, res)
}

func finish(t *shardTx, res VersionResult) ([]byte, error) {
	if err := t.commit(); err != nil {
		return nil, err
	}
	return encodeVersionResult(&res)
}

// unlinkVersionIn is unlink_version's input.
type unlinkVersionIn struct {
	Key       string `json:"k"`
	VersionID string `json:"i"`           // "null" for the null (or legacy) version
	IfETag    string `json:"m,omitempty"` // only if the version has this ETag
	IfTag     string `json:"t,omitempty"` // only if the version is this write
	// CheckMeta: only if the version's metadata is still IfMeta (object
	// lock: the state the caller checked), else ErrCanceled.
	CheckMeta bool            `json:"cm,omitempty"`
	IfMeta    json.RawMessage `json:"o,omitempty"`
	GCTime    int64           `json:"gt,omitempty"` // see linkVersionIn
}

// clsUnlinkVersion removes one version (or delete marker) of a key; when it
// was the newest, the next newest becomes current (one bounded omap read),
// or the key has no current object if that one is a marker or none is left.
// ErrNotFound when the version does not exist.
func clsUnlinkVersion(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	var ui unlinkVersionIn
	if err := json.Unmarshal(in, &ui); err != nil {
		return nil, objstore.Errorf(objstore.ErrInvalid, "unlink_version input: %v", err)
	}
	if err := validKey(ui.Key); err != nil {
		return nil, err
	}
	t, err := beginTx(ctx)
	if err != nil {
		return nil, err
	}
	t.gcTime = ui.GCTime
	key := ui.Key
	bareRaw, err := t.get(key)
	if err != nil {
		return nil, err
	}
	var seq uint64
	if ui.VersionID == NullVersion {
		ns, nraw, err := t.nullSeq(key)
		if err != nil {
			return nil, err
		}
		if ns == 0 {
			if bareRaw == nil {
				return nil, objstore.Errorf(objstore.ErrNotFound, "version null of %q", key)
			}
			bare, err := decodeEntry(bareRaw)
			if err != nil {
				return nil, err
			}
			if bare.Seq > 0 {
				return nil, objstore.Errorf(objstore.ErrNotFound, "version null of %q", key)
			}
			// A legacy entry: the key's only version.
			if (ui.IfETag != "" && bare.ETag != ui.IfETag) || (ui.IfTag != "" && bare.Tag != ui.IfTag) {
				return nil, objstore.Errorf(objstore.ErrCanceled, "key %q: etag does not match", key)
			}
			if ui.CheckMeta && !sameMeta(bare.Meta, ui.IfMeta) {
				return nil, objstore.Errorf(objstore.ErrCanceled, "key %q: metadata changed", key)
			}
			if err := t.rmBare(key, bareRaw); err != nil {
				return nil, err
			}
			if err := t.collect(bare); err != nil {
				return nil, err
			}
			bare.VersionID = NullVersion
			return finish(t, VersionResult{Entry: bare, Freed: t.gc})
		}
		seq = ns
		if err := t.rmNull(key, nraw); err != nil {
			return nil, err
		}
	} else {
		var ok bool
		if seq, ok = ParseVersionID(ui.VersionID); !ok {
			return nil, objstore.Errorf(objstore.ErrNotFound, "version %q of %q", ui.VersionID, key)
		}
	}
	rk := verKey(key, seq)
	raw, err := t.get(rk)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, objstore.Errorf(objstore.ErrNotFound, "version %q of %q", ui.VersionID, key)
	}
	rec, err := decodeEntry(raw)
	if err != nil {
		return nil, err
	}
	if rec.VersionID != ui.VersionID {
		return nil, objstore.Errorf(objstore.ErrNotFound, "version %q of %q", ui.VersionID, key)
	}
	if (ui.IfETag != "" && rec.ETag != ui.IfETag) || (ui.IfTag != "" && rec.Tag != ui.IfTag) {
		return nil, objstore.Errorf(objstore.ErrCanceled, "version %q of %q: etag does not match", ui.VersionID, key)
	}
	if ui.CheckMeta && !sameMeta(rec.Meta, ui.IfMeta) {
		return nil, objstore.Errorf(objstore.ErrCanceled, "version %q of %q: metadata changed", ui.VersionID, key)
	}
	newest, _, err := t.newest(key)
	if err != nil {
		return nil, err
	}
	if err := t.rmRecord(key, seq, raw); err != nil {
		return nil, err
	}
	if err := t.collect(rec); err != nil {
		return nil, err
	}
	res := VersionResult{Entry: rec}
	if newest != nil && newest.Seq == seq {
		// Promote the next newest: the first record after the removed one.
		p := verKeyPrefix(key)
		kvs, _, err := ctx.GetOmapVals(rk, p, 1)
		if err != nil {
			return nil, err
		}
		var next *Entry
		if len(kvs) > 0 {
			n, err := decodeEntry(kvs[0].Value)
			if err != nil {
				return nil, err
			}
			next = &n
		}
		switch {
		case next != nil && !next.Marker:
			if err := t.setBare(key, bareRaw, *next); err != nil {
				return nil, err
			}
			res.Current = next
		case bareRaw != nil:
			if err := t.rmBare(key, bareRaw); err != nil {
				return nil, err
			}
		}
		res.MarkerCurrent = next != nil && next.Marker
	} else if bareRaw != nil {
		cur, err := decodeEntry(bareRaw)
		if err != nil {
			return nil, err
		}
		res.Current = &cur
	} else {
		res.MarkerCurrent = newest != nil && newest.Marker
	}
	res.Freed = t.gc
	return finish(t, res)
}
