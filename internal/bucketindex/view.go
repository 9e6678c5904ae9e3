package bucketindex

import (
	"bytes"
	"container/heap"
	"context"

	"github.com/cairn-s3/cairn/internal/objstore"
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
		return x.IO.Operate(ctx, oid, objstore.NewWriteOp().AssertExists().SetView(x.BucketID, specialPrefix))
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
// or with another value), at most max (0 = all). Call it on a quiet
// index: writes during the walk show as differences.
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
			if !bytes.Equal(sk.Value, page[0].Value) {
				diff = append(diff, sk.Key)
			}
			page = page[1:]
			sk, sok, err = next()
		}
	}
	return diff, err
}
