package bucketindex

import (
	"context"
	"encoding/json"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// References reports whether a record of key on its shard names a run
// with prefix: the bare entry, a version record (delete markers have no
// runs) or any GC record of the shard. All are read in one snapshot of the
// shard, so data moving from an entry to a GC record (an overwrite or a
// delete) is seen in one place or the other. A retired shard is ErrStale
// (refresh the layout and ask again). The orphan scanner's last check
// before it removes data.
func (x Index) References(ctx context.Context, key, prefix string) (bool, error) {
	// Live data, the common case, is found by the small read of the key's
	// own records; only a miss reads the shard's GC records too (again
	// with the key's records: one snapshot).
	if ok, err := x.references(ctx, key, prefix, false); ok || err != nil {
		return ok, err
	}
	return x.references(ctx, key, prefix, true)
}

func (x Index) references(ctx context.Context, key, prefix string, withGC bool) (bool, error) {
	oid := x.ShardFor(key)
	op := objstore.NewReadOp()
	notClosed(op)
	bare := op.GetOmapValuesByKeys(key)
	vers := op.GetOmapValues("", verKeyPrefix(key), 0)
	var gc *objstore.OmapValsStep
	if withGC {
		gc = op.GetOmapValues("", gcPrefix, 0)
	}
	if err := x.IO.OperateRead(ctx, oid, op); err != nil {
		return false, readErr(err, oid)
	}
	names := func(m Manifest) bool {
		for _, r := range m.Runs {
			if r.Prefix == prefix {
				return true
			}
		}
		return false
	}
	for _, kvs := range [][]objstore.KV{bare.Pairs, vers.Pairs} {
		for _, kv := range kvs {
			e, err := decodeEntry(kv.Value)
			if err != nil {
				return false, err
			}
			if names(e.Manifest) {
				return true, nil
			}
		}
	}
	if gc == nil {
		return false, nil
	}
	for _, kv := range gc.Pairs {
		var m Manifest
		if err := json.Unmarshal(kv.Value, &m); err != nil {
			return false, objstore.Errorf(objstore.ErrInvalid, "gc record %q: %v", kv.Key, err)
		}
		if names(m) {
			return true, nil
		}
	}
	return false, nil
}
