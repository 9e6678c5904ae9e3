package bucketindex

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairn-s3/cairn/internal/objstore"
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

// Register adds the class to reg.
func Register(reg *objstore.Registry) {
	reg.Register(ClassName, "init", objstore.MethodWrite, clsInit)
	reg.Register(ClassName, "link", objstore.MethodWrite, clsLink)
	reg.Register(ClassName, "unlink", objstore.MethodWrite, clsUnlink)
	reg.Register(ClassName, "gc_done", objstore.MethodWrite, clsGCDone)
	reg.Register(ClassName, "set_state", objstore.MethodWrite, clsSetState)
	reg.Register(ClassName, "apply", objstore.MethodWrite, clsApply)
}

type linkIn struct {
	Entry Entry `json:"e"`
	// Conditional PUT: IfAbsent fails with ErrCanceled when the key exists;
	// IfETag fails with ErrCanceled unless the current entry has that ETag.
	IfAbsent bool   `json:"a,omitempty"`
	IfETag   string `json:"m,omitempty"`
}

type unlinkIn struct {
	Key string `json:"k"`
	Tag string `json:"g,omitempty"` // only if the entry still has this tag
}

type gcDoneIn struct {
	Tags []string `json:"t"`
}

type stateIn struct {
	State string `json:"s"`
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

func readHeader(ctx objstore.MethodContext) (shardHeader, error) {
	b, err := ctx.GetOmapHeader()
	if err != nil {
		return shardHeader{}, err
	}
	return decodeHeader(b)
}

func clsInit(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	if err := ctx.Create(true); err != nil {
		return nil, err
	}
	return nil, ctx.SetOmapHeader(shardHeader{}.encode())
}

func decodeEntry(b []byte) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return e, objstore.Errorf(objstore.ErrInvalid, "index entry: %v", err)
	}
	return e, nil
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
func change(ctx objstore.MethodContext, h *shardHeader, rec LogRecord, state string, gc bool) ([]byte, error) {
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
		if old == nil {
			h.NumObjects++
		} else {
			h.Size -= uint64(old.Size)
		}
		h.Size += uint64(rec.Entry.Size)
	case "unlink":
		if old == nil {
			return nil, objstore.Errorf(objstore.ErrNotFound, "index entry %q", rec.Entry.Key)
		}
		if rec.Entry.Tag != "" && old.Tag != rec.Entry.Tag {
			return nil, objstore.Errorf(objstore.ErrCanceled, "index entry %q has another tag", rec.Entry.Key)
		}
		if err := ctx.RmOmapKeys(rec.Entry.Key); err != nil {
			return nil, err
		}
		h.NumObjects--
		h.Size -= uint64(old.Size)
	default:
		return nil, objstore.Errorf(objstore.ErrInvalid, "index op %q", rec.Op)
	}
	if gc && old != nil && old.Tag != rec.Entry.Tag && len(old.Manifest.Runs) > 0 {
		mb, _ := json.Marshal(old.Manifest)
		if err := ctx.SetOmap(objstore.KV{Key: gcPrefix + old.Tag, Value: mb}); err != nil {
			return nil, err
		}
	}
	if state == StateLogging {
		h.LogSeq++
		lb, _ := json.Marshal(rec)
		if err := ctx.SetOmap(objstore.KV{Key: logKey(h.LogSeq), Value: lb}); err != nil {
			return nil, err
		}
	}
	return oldRaw, nil
}

func logKey(seq uint64) string { return fmt.Sprintf("%s%020d", logPrefix, seq) }

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
	if li.IfAbsent || li.IfETag != "" {
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
	}
	return mutate(ctx, LogRecord{Op: "link", Entry: li.Entry})
}

func clsUnlink(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	var ui unlinkIn
	if err := json.Unmarshal(in, &ui); err != nil {
		return nil, objstore.Errorf(objstore.ErrInvalid, "unlink input: %v", err)
	}
	return mutate(ctx, LogRecord{Op: "unlink", Entry: Entry{Key: ui.Key, Tag: ui.Tag}})
}

func mutate(ctx objstore.MethodContext, rec LogRecord) ([]byte, error) {
	state, err := writable(ctx)
	if err != nil {
		return nil, err
	}
	h, err := readHeader(ctx)
	if err != nil {
		return nil, err
	}
	out, err := change(ctx, &h, rec, state, true)
	if err != nil {
		return nil, err
	}
	return out, ctx.SetOmapHeader(h.encode())
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
	h, err := readHeader(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range a.Records {
		_, err := change(ctx, &h, r, StateOpen, false)
		if r.Op == "unlink" && errors.Is(err, objstore.ErrNotFound) {
			continue // replay is idempotent
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, ctx.SetOmapHeader(h.encode())
}
