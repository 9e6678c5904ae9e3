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
func RemoveIntents(ctx context.Context, io objstore.IOContext, shardOID string, tags ...string) error {
	keys := make([]string, len(tags))
	for i, t := range tags {
		keys[i] = intentPrefix + t
	}
	op := objstore.NewWriteOp().AssertExists().RmOmapKeys(keys...)
	op.DeferSync = true
	return io.Operate(ctx, shardOID, op)
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
