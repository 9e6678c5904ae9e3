package bucketindex

import (
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
