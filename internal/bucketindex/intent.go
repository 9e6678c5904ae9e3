package bucketindex

import (
	"bytes"
	"context"
	"strings"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Link intents.
//
// A link may carry an intent (VersionCond.Intent): opaque bytes stored
// under 0xff "i/" <tag> on the shard, in the same atomic op as the link.
// The driver uses it for a notification that must follow the version: it
// removes the intent once the event is committed, and a recovery pass
// finds what a crash left in between. Intents sort with the special
// records, so listings, stats and reshard copies never see them; a
// reshard's cleanup moves them to the target like GC records.

// IntentRecord is one intent found on a shard.
type IntentRecord struct {
	Shard string // shard object
	Tag   string // the linked entry's tag
	Data  []byte
}

// Intents lists every intent on shard i of x.
func (x Index) Intents(ctx context.Context, i int) ([]IntentRecord, error) {
	oid := x.shardOID(i)
	var out []IntentRecord
	after := intentPrefix
	for {
		op := objstore.NewReadOp()
		vs := op.GetOmapValues(after, intentPrefix, 1000)
		if err := x.IO.OperateRead(ctx, oid, op); err != nil {
			return nil, err
		}
		for _, kv := range vs.Pairs {
			out = append(out, IntentRecord{Shard: oid, Tag: strings.TrimPrefix(kv.Key, intentPrefix), Data: kv.Value})
			after = kv.Key
		}
		if !vs.More || len(vs.Pairs) == 0 {
			return out, nil
		}
	}
}

// IntentRecords returns every intent of shard i as raw omap pairs (a
// reshard moves them with PutGCRecords).
func (x Index) IntentRecords(ctx context.Context, i int) ([]objstore.KV, error) {
	op := objstore.NewReadOp()
	vs := op.GetOmapValues(intentPrefix, intentPrefix, 0)
	if err := x.IO.OperateRead(ctx, x.shardOID(i), op); err != nil {
		return nil, err
	}
	return vs.Pairs, nil
}

// RemoveIntents removes the intents of tags from a shard object, without
// waiting for a sync: an intent that outlives a crash is found again and
// resolved once more, which its owner must tolerate. ErrNotFound when the
// shard is gone (a finished reshard, a deleted bucket).
//
// A class step (rm_intents), not a plain RmOmapKeys: a plain write drops
// the shard's class cache, so the next link read the shard's state again
// (on RADOS a state read per flush and shard), and a class step also joins
// the links waiting for the shard in one write (group commit).
func RemoveIntents(ctx context.Context, io objstore.IOContext, shardOID string, tags ...string) error {
	n := 0
	for _, t := range tags {
		n += len(t) + 1
	}
	in := make([]byte, 0, n)
	for _, t := range tags {
		in = append(append(in, t...), 0)
	}
	op := objstore.NewWriteOp()
	op.Exec(ClassName, "rm_intents", in)
	op.DeferSync = true
	return io.Operate(ctx, shardOID, op)
}

// clsRmIntents removes intents: rm_intents <tag> NUL [<tag> NUL ...]
// removes 0xff "i/" <tag> of each (missing ones are fine); ErrNotFound on
// a missing shard. Nothing else: no stats, log or state check.
func clsRmIntents(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	if !ctx.Exists() {
		return nil, objstore.Errorf(objstore.ErrNotFound, "rm_intents: no shard")
	}
	if len(in) > 0 && in[len(in)-1] != 0 {
		return nil, objstore.Errorf(objstore.ErrInvalid, "rm_intents: want <tag> NUL ...")
	}
	var keys []string
	for len(in) > 0 {
		i := bytes.IndexByte(in, 0)
		if i == 0 {
			return nil, objstore.Errorf(objstore.ErrInvalid, "rm_intents: empty tag")
		}
		keys = append(keys, intentPrefix+string(in[:i]))
		in = in[i+1:]
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return nil, ctx.RmOmapKeys(keys...)
}

// encodePutIntentIn is put_intent's input: the tag, a NUL (omap keys, so
// tags, never hold one), then the intent's bytes.
func encodePutIntentIn(tag string, data []byte) []byte {
	in := make([]byte, 0, len(tag)+1+len(data))
	in = append(in, tag...)
	in = append(in, 0)
	return append(in, data...)
}

// clsPutIntent stores an intent: put_intent <tag> NUL <data> sets
// 0xff "i/" <tag> to <data>. It runs as a step after link_version in the
// link's op; being a class step, it keeps the shard's class cache (the
// header), which a plain SetOmap would drop.
func clsPutIntent(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	i := bytes.IndexByte(in, 0)
	if i <= 0 || i == len(in)-1 {
		return nil, objstore.Errorf(objstore.ErrInvalid, "put_intent: want <tag> NUL <intent>")
	}
	return nil, ctx.SetOmap(objstore.KV{Key: intentPrefix + string(in[:i]), Value: in[i+1:]})
}
