package bucketindex

import (
	"bytes"
	"container/heap"
	"context"
	"errors"

	"github.com/cairn-s3/cairn/internal/objstore"
	json "github.com/goccy/go-json"
)

// The bucket's ordered view (docs/design/listing.md): on a backend with
// views (objstore.Viewer, the embedded store), every shard of a layout
// with View is a member of the view named by the bucket id, bounded below
// the special records, so the view holds exactly the union of the shards'
// entries and one ordered read replaces the merge over every shard.

// viewer is the backend's view reader when this layout lists from the
// view, else nil.
func (x Index) viewer() objstore.Viewer {
	if !x.Layout.View {
		return nil
	}
	v, _ := x.IO.(objstore.Viewer)
	return v
}

// JoinView makes every shard a member of the bucket's view: a reshard's
// targets, at the switch, when they hold exactly the entries the view
// holds (the sources' union) and nobody writes them. Writers wait through
// it, so the shards join in parallel, as the switch closes the sources.
func (x Index) JoinView(ctx context.Context) error {
	return x.eachShard(ctx, func(ctx context.Context, oid string) error {
		return x.IO.Operate(ctx, oid, objstore.NewWriteOp().AssertExists().SetView(x.BucketID, specialPrefix, ListingProjection))
	})
}

// RemoveView drops the bucket's view (a deleted bucket's; it is empty
// then, since an empty bucket has no entries).
func (x Index) RemoveView(ctx context.Context) error {
	if v, ok := x.IO.(objstore.Viewer); ok {
		return v.RemoveView(ctx, x.BucketID)
	}
	return nil
}

// CheckView compares the view with the union of the shards' entries and
// returns the keys where they differ (missing from the view, extra in it,
// or with another listing: values compare through the projection, so a
// view written before projections, which holds whole entries, matches),
// at most max (0 = all). Call it on a quiet index: writes during the walk
// show as differences.
func (x Index) CheckView(ctx context.Context, max int) ([]string, error) {
	v := x.viewer()
	if v == nil {
		return nil, objstore.Errorf(objstore.ErrNotSupported, "bucket index has no view")
	}
	merge := x
	merge.Layout.View = false
	curs, err := merge.openCursors(ctx, "", "", 1000)
	if err != nil {
		return nil, err
	}
	h := &cursorHeap{}
	for _, c := range curs {
		if len(c.buf) > 0 {
			*h = append(*h, c)
		}
	}
	heap.Init(h)
	next := func() (objstore.KV, bool, error) {
		if h.Len() == 0 {
			return objstore.KV{}, false, nil
		}
		kv, err := h.next(ctx)
		return kv, err == nil, err
	}
	var diff []string
	var page []objstore.KV
	vmore, after := true, ""
	sk, sok, err := next()
	for err == nil && (max == 0 || len(diff) < max) {
		if len(page) == 0 && vmore {
			if page, vmore, err = v.ReadView(ctx, x.BucketID, after, "", 1000); err != nil {
				break
			}
			if len(page) > 0 {
				after = page[len(page)-1].Key
			}
		}
		switch {
		case !sok && len(page) == 0:
			return diff, nil
		case len(page) == 0 || sok && sk.Key < page[0].Key:
			diff = append(diff, sk.Key)
			sk, sok, err = next()
		case !sok || page[0].Key < sk.Key:
			diff = append(diff, page[0].Key)
			page = page[1:]
		default:
			if !bytes.Equal(projectListing(sk.Key, sk.Value), projectListing(sk.Key, page[0].Value)) {
				diff = append(diff, sk.Key)
			}
			page = page[1:]
			sk, sok, err = next()
		}
	}
	return diff, err
}

type viewFixIn struct {
	Keys []string `json:"k"`
}

// clsViewFix restates keys on their shard, a member of the view: a
// present entry is set again with its own value (which sets it in the
// view), an absent one is removed (which removes a stale view key). The
// shard's own content does not change, so a logging shard needs no log
// record; a closed one refuses (ErrStale): its content is frozen, and
// after a switch no longer the bucket's.
func clsViewFix(ctx objstore.MethodContext, in []byte) ([]byte, error) {
	if _, err := writable(ctx); err != nil {
		return nil, err
	}
	var fi viewFixIn
	if err := json.Unmarshal(in, &fi); err != nil {
		return nil, objstore.Errorf(objstore.ErrInvalid, "view_fix: %v", err)
	}
	for _, k := range fi.Keys {
		if err := objstore.ValidateOmapKey(k); err != nil || k[0] == specialPrefix[0] {
			return nil, objstore.Errorf(objstore.ErrInvalid, "view_fix: key %q is not an entry", k)
		}
	}
	kvs, err := ctx.GetOmapValsByKeys(fi.Keys...)
	if err != nil {
		return nil, err
	}
	present := make(map[string]bool, len(kvs))
	for _, kv := range kvs {
		present[kv.Key] = true
	}
	if len(kvs) > 0 {
		if err := ctx.SetOmap(kvs...); err != nil {
			return nil, err
		}
	}
	var gone []string
	for _, k := range fi.Keys {
		if !present[k] {
			gone = append(gone, k)
		}
	}
	if len(gone) > 0 {
		return nil, ctx.RmOmapKeys(gone...)
	}
	return nil, nil
}

// FixView restates keys in the view from the shards that hold them
// (view_fix on each key's shard): after it, each key is in the view
// exactly as in its shard. Writes may go on meanwhile (each shard's
// restatement is atomic with them).
func (x Index) FixView(ctx context.Context, keys []string) error {
	if x.viewer() == nil {
		return objstore.Errorf(objstore.ErrNotSupported, "bucket index has no view")
	}
	byShard := map[int][]string{}
	for _, k := range keys {
		i := ShardOf(k, x.Layout.NumShards)
		byShard[i] = append(byShard[i], k)
	}
	var errs []error
	for i, ks := range byShard {
		for len(ks) > 0 {
			n := min(len(ks), viewFixBatch)
			in, _ := json.Marshal(viewFixIn{Keys: ks[:n]})
			op := objstore.NewWriteOp()
			op.Exec(ClassName, "view_fix", in)
			if err := x.IO.Operate(ctx, x.shardOID(i), op); err != nil {
				errs = append(errs, readErr(err, x.shardOID(i)))
				break
			}
			ks = ks[n:]
		}
	}
	return errors.Join(errs...)
}

// viewFixBatch bounds the keys of one view_fix call.
const viewFixBatch = 1000

// BuildView fills the view of a layout that had none (a bucket created
// before views, or with bucket-index-view off) while writes go on: the
// view is emptied (an unused one may hold stale keys from an earlier
// attempt), every shard joins, then each shard's entries are restated a
// page at a time, so every entry reaches the view either through a write
// after the join or through its restatement. The caller switches its layout to View only
// after BuildView returns, and only if no reshard changed the layout
// meanwhile (a reshard's targets would not have joined).
func (x Index) BuildView(ctx context.Context) error {
	if _, ok := x.IO.(objstore.Viewer); !ok {
		return objstore.Errorf(objstore.ErrNotSupported, "the backend keeps no ordered views")
	}
	if err := x.RemoveView(ctx); err != nil {
		return err
	}
	if err := x.JoinView(ctx); err != nil {
		return err
	}
	for i := 0; i < x.Layout.NumShards; i++ {
		after := ""
		for {
			op := objstore.NewReadOp()
			notClosed(op)
			vs := op.GetOmapValues(after, "", viewFixBatch)
			if err := x.IO.OperateRead(ctx, x.shardOID(i), op); err != nil {
				return readErr(err, x.shardOID(i))
			}
			var keys []string
			for _, kv := range vs.Pairs {
				if kv.Key >= specialPrefix {
					break
				}
				keys = append(keys, kv.Key)
			}
			if len(keys) > 0 {
				in, _ := json.Marshal(viewFixIn{Keys: keys})
				op := objstore.NewWriteOp()
				op.Exec(ClassName, "view_fix", in)
				if err := x.IO.Operate(ctx, x.shardOID(i), op); err != nil {
					return readErr(err, x.shardOID(i))
				}
			}
			if len(keys) < len(vs.Pairs) || !vs.More {
				break
			}
			after = keys[len(keys)-1]
		}
	}
	return nil
}
