package bucketindex

import (
	"bytes"
	"context"
	"strconv"
	"strings"

	"github.com/cairn-s3/cairn/internal/objstore"
	json "github.com/goccy/go-json"
)

// This file is the index's side of online resharding (internal/reshard
// drives it): conditional, fenced shard state changes, paging through a
// shard's entries and log, and writing copied and replayed records into a
// target generation.

// ShardOID returns shard i's object name in this layout.
func (x Index) ShardOID(i int) string { return x.shardOID(i) }

// InitFenced creates every shard object of the layout with a reshard epoch
// (see SetShardState). Existing shards fail with ErrExists.
func (x Index) InitFenced(ctx context.Context, epoch uint64) error {
	in, _ := json.Marshal(initIn{Epoch: epoch})
	return x.eachShard(ctx, func(ctx context.Context, oid string) error {
		op := objstore.NewWriteOp()
		op.Exec(ClassName, "init", in)
		return x.IO.Operate(ctx, oid, op)
	})
}

// StateChange is a conditional, fenced shard state change.
type StateChange struct {
	To string
	// From lists the states the shard may be in (nil: any); otherwise the
	// change fails with ErrCanceled.
	From []string
	// Epoch fences the change: a shard that saw a higher epoch refuses it
	// with ErrCanceled; otherwise its epoch is raised to Epoch. 0: unfenced.
	Epoch uint64
	// ClearLog drops the shard's reshard log in the same atomic step.
	ClearLog bool
}

// SetShardState applies c to shard i. ErrNotFound if the shard is missing.
func (x Index) SetShardState(ctx context.Context, i int, c StateChange) error {
	in, _ := json.Marshal(stateIn{State: c.To, From: c.From, Epoch: c.Epoch, ClearLog: c.ClearLog})
	op := objstore.NewWriteOp()
	op.Exec(ClassName, "set_state", in)
	return x.IO.Operate(ctx, x.shardOID(i), op)
}

// ShardInfo is a shard's state, stats and last log sequence.
type ShardInfo struct {
	State  string
	Stats  Stats
	LogSeq uint64
	Epoch  uint64
}

// ShardInfo reads shard i's state and header. ErrNotFound if missing.
func (x Index) ShardInfo(ctx context.Context, i int) (ShardInfo, error) {
	op := objstore.NewReadOp()
	hs := op.GetOmapHeader()
	xs := op.GetXattrs()
	if err := x.IO.OperateRead(ctx, x.shardOID(i), op); err != nil {
		return ShardInfo{}, err
	}
	h, err := decodeHeader(hs.Header)
	if err != nil {
		return ShardInfo{}, err
	}
	si := ShardInfo{Stats: h.Stats, LogSeq: h.LogSeq}
	for _, kv := range xs.Attrs {
		switch kv.Key {
		case shardStateXattr:
			si.State = string(kv.Value)
		case shardEpochXattr:
			si.Epoch, _ = strconv.ParseUint(string(kv.Value), 10, 64)
		}
	}
	return si, nil
}

// RawEntries returns up to max entries of shard i with keys > after, as
// stored (key → entry JSON), and whether more exist. The page is not a
// snapshot of the shard across calls; a reshard's log covers the changes.
//
// The entries come first, then the null pointers and version records
// (which belong on the shard of the object name: see PlaceOf); GC records
// and the log are skipped.
func (x Index) RawEntries(ctx context.Context, i int, after string, max int) ([]objstore.KV, bool, error) {
	jump := nullPrefix[:len(nullPrefix)-1] // sorts after the log, before the null pointers
	if after >= verEnd {
		return nil, false, nil
	}
	if after >= specialPrefix && after < jump {
		after = jump
	}
read:
	for {
		op := objstore.NewReadOp()
		vs := op.GetOmapValues(after, "", max)
		if err := x.IO.OperateRead(ctx, x.shardOID(i), op); err != nil {
			return nil, false, err
		}
		for j, kv := range vs.Pairs {
			if kv.Key >= verEnd {
				return vs.Pairs[:j], false, nil
			}
			if kv.Key >= specialPrefix && kv.Key < nullPrefix {
				if j > 0 {
					return vs.Pairs[:j], true, nil
				}
				after = jump // skip the GC records and the log
				continue read
			}
		}
		return vs.Pairs, vs.More, nil
	}
}

// RawLogRecord is a reshard log record: Op 'k' (as stored: Key changed),
// or, as Resolve gives it for a target, 'l' (link: Entry is the raw value
// to store) or 'u' (unlink: remove Key).
type RawLogRecord struct {
	Seq   uint64
	Op    byte
	Key   string
	Entry []byte
}

// ReadLogRaw returns up to max log records of shard i with sequence >
// after, in order, and whether more exist. Every record reads as Op 'k':
// those of the format before, which held the entry, too (replay takes
// the key's current value from the source, not a logged one).
func (x Index) ReadLogRaw(ctx context.Context, i int, after uint64, max int) ([]RawLogRecord, bool, error) {
	op := objstore.NewReadOp()
	start := logPrefix
	if after > 0 {
		start = logKey(after)
	}
	vs := op.GetOmapValues(start, logPrefix, max)
	if err := x.IO.OperateRead(ctx, x.shardOID(i), op); err != nil {
		return nil, false, err
	}
	out := make([]RawLogRecord, len(vs.Pairs))
	for j, kv := range vs.Pairs {
		seq, err := strconv.ParseUint(kv.Key[len(logPrefix):], 10, 64)
		if err != nil {
			return nil, false, objstore.Errorf(objstore.ErrInvalid, "log key %q", kv.Key)
		}
		if len(kv.Value) > 0 && kv.Value[0] == logMark {
			out[j] = RawLogRecord{Seq: seq, Op: 'k', Key: string(kv.Value[1:])}
			continue
		}
		if _, _, key, ok := parseRawLog(kv.Value); ok {
			out[j] = RawLogRecord{Seq: seq, Op: 'k', Key: key}
			continue
		}
		var rec struct {
			Op string          `json:"op"`
			E  json.RawMessage `json:"e"`
		}
		var key struct {
			K string `json:"k"`
			Q uint64 `json:"q"`
		}
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			return nil, false, objstore.Errorf(objstore.ErrInvalid, "log record %d: %v", seq, err)
		}
		if err := json.Unmarshal(rec.E, &key); err != nil {
			return nil, false, objstore.Errorf(objstore.ErrInvalid, "log record %d: %v", seq, err)
		}
		out[j] = RawLogRecord{Seq: seq, Op: 'k', Key: key.K}
		switch rec.Op {
		case "link", "unlink":
		case "vset", "vrm":
			out[j].Key = verKey(key.K, key.Q)
		case "nset", "nrm":
			out[j].Key = nullKey(key.K)
		default:
			return nil, false, objstore.Errorf(objstore.ErrInvalid, "log record %d: op %q", seq, rec.Op)
		}
	}
	return out, vs.More, nil
}

// Resolve turns log records of source shard i into what replaying them
// writes to a target: for each key, in the order of its last record, a
// link of its current value in shard i, or an unlink when it has none.
// The current value includes every logged change of the key, so one
// record per key is enough, and replaying it again later is harmless;
// the shard's state is not checked (a closed source is read at the end).
func (x Index) Resolve(ctx context.Context, i int, recs []RawLogRecord) ([]RawLogRecord, error) {
	last := make(map[string]int, len(recs))
	for j, r := range recs {
		last[r.Key] = j
	}
	keys := make([]string, 0, len(last))
	for j, r := range recs {
		if last[r.Key] == j {
			keys = append(keys, r.Key)
		}
	}
	cur := make(map[string][]byte, len(keys))
	for b := 0; b < len(keys); b += resolveBatch {
		op := objstore.NewReadOp()
		st := op.GetOmapValuesByKeys(keys[b:min(len(keys), b+resolveBatch)]...)
		if err := x.IO.OperateRead(ctx, x.shardOID(i), op); err != nil {
			return nil, err
		}
		for _, kv := range st.Pairs {
			cur[kv.Key] = kv.Value
		}
	}
	out := make([]RawLogRecord, len(keys))
	for j, k := range keys {
		out[j] = RawLogRecord{Seq: recs[last[k]].Seq, Op: 'u', Key: k}
		if v, ok := cur[k]; ok {
			out[j].Op, out[j].Entry = 'l', v
		}
	}
	return out, nil
}

// resolveBatch bounds the keys of one read of Resolve.
const resolveBatch = 1000

// parseRawLog reads a log record of the format before logMark, as mutate
// wrote it (encoding/json of LogRecord: `{"op":"link","e":{"k":"<key>",...}}`),
// without decoding it; ok=false (escapes in the key, any other shape)
// means: decode it fully.
// encoding/json was most of the replay's reading cost.
func parseRawLog(v []byte) (op byte, entry []byte, key string, ok bool) {
	const link, unlink, keyField = `{"op":"link","e":`, `{"op":"unlink","e":`, `{"k":"`
	switch {
	case bytes.HasPrefix(v, []byte(link)):
		op, entry = 'l', v[len(link):]
	case bytes.HasPrefix(v, []byte(unlink)):
		op, entry = 'u', v[len(unlink):]
	default:
		return 0, nil, "", false
	}
	if len(entry) < len(keyField)+2 || entry[len(entry)-1] != '}' || entry[len(entry)-2] != '}' ||
		!bytes.HasPrefix(entry, []byte(keyField)) {
		return 0, nil, "", false
	}
	entry = entry[:len(entry)-1]
	rest := entry[len(keyField):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return 0, nil, "", false
	}
	return op, entry, string(rest[:end]), true
}

// Replay applies raw log records (in order) to target shard i: links set
// entries, unlinks remove them, stats follow. Idempotent when a suffix of a
// shard's log is replayed again in order. Fenced by epoch (0: not).
func (x Index) Replay(ctx context.Context, i int, epoch uint64, recs []RawLogRecord) error {
	op := objstore.NewWriteOp()
	op.DeferSync = true // see CopyIn
	op.Exec(ClassName, "replay", encodeReplayIn(epoch, recs))
	return x.IO.Operate(ctx, x.shardOID(i), op)
}

// Apply writes replayed records into target shard i: links set entries,
// unlinks of absent keys are skipped, stats follow. Idempotent when a suffix
// of a shard's log is replayed again in order. Fenced by epoch (0: not).
func (x Index) Apply(ctx context.Context, i int, epoch uint64, recs []LogRecord) error {
	in, err := json.Marshal(applyIn{Records: recs, Epoch: epoch})
	if err != nil {
		return err
	}
	op := objstore.NewWriteOp()
	op.DeferSync = true // see CopyIn
	op.Exec(ClassName, "apply", in)
	return x.IO.Operate(ctx, x.shardOID(i), op)
}

// CopyIn adds raw entries (as returned by RawEntries) to target shard i,
// which must not hold any of their keys yet. Fenced by epoch (0: not).
//
// Copy, Replay and Apply write target shards with DeferSync: a target is
// read only after the switch, whose synced ops (the reshard record's
// progress, the bucket instance) make every earlier target write durable;
// a crash before that redoes the work from the sources. This saves a WAL
// sync per copy op, which competes with foreground PUTs.
func (x Index) CopyIn(ctx context.Context, i int, epoch uint64, pairs []objstore.KV) error {
	op := objstore.NewWriteOp()
	op.DeferSync = true
	op.Exec(ClassName, "copy", encodeCopyIn(epoch, pairs))
	return x.IO.Operate(ctx, x.shardOID(i), op)
}

// GCRecords returns every GC record of shard i as raw omap pairs.
func (x Index) GCRecords(ctx context.Context, i int) ([]objstore.KV, error) {
	op := objstore.NewReadOp()
	vs := op.GetOmapValues(gcPrefix, gcPrefix, 0)
	if err := x.IO.OperateRead(ctx, x.shardOID(i), op); err != nil {
		return nil, err
	}
	return vs.Pairs, nil
}

// PutGCRecords stores raw GC records and link intents (from GCRecords and
// IntentRecords of another generation) in shard i, so that data they name
// is still collected, and intents still resolved, after the shard they came
// from is removed.
func (x Index) PutGCRecords(ctx context.Context, i int, pairs []objstore.KV) error {
	for _, p := range pairs {
		if !strings.HasPrefix(p.Key, gcPrefix) && !strings.HasPrefix(p.Key, intentPrefix) {
			return objstore.Errorf(objstore.ErrInvalid, "not a gc record: %q", p.Key)
		}
	}
	return x.IO.Operate(ctx, x.shardOID(i), objstore.NewWriteOp().AssertExists().SetOmap(pairs...))
}

// EntrySize returns the Size of a stored entry without decoding all of it:
// Go encodes Entry fields in order, so the first `,"s":` follows the key
// string (whose quotes are escaped and cannot produce it). Anything
// unexpected falls back to a full decode.
func EntrySize(raw []byte) (int64, error) {
	if i := bytes.Index(raw, []byte(`,"s":`)); i > 0 && bytes.HasPrefix(raw, []byte(`{"k":"`)) {
		j := i + 5
		var n int64
		k := j
		for ; k < len(raw) && raw[k] >= '0' && raw[k] <= '9' && k-j < 18; k++ {
			n = n*10 + int64(raw[k]-'0')
		}
		if k > j && k < len(raw) && (raw[k] == ',' || raw[k] == '}') {
			return n, nil
		}
	}
	e, err := decodeEntry(raw)
	return e.Size, err
}
