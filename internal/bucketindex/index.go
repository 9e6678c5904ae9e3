package bucketindex

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
	json "github.com/goccy/go-json"
)

// Index is one bucket's index at one layout. It is a value: callers get a
// fresh one when the layout changes (ErrStale from a write).
type Index struct {
	IO       objstore.IOContext // default.rgw.buckets.index
	BucketID string
	Layout   Layout
	// Now is the caller's clock, stamped on the GC records a write
	// leaves (nil: time.Now).
	Now func() time.Time
}

// gcTime is the time written into the GC records of a call now.
func (x Index) gcTime() int64 {
	if x.Now != nil {
		return x.Now().UnixNano()
	}
	return time.Now().UnixNano()
}

func (x Index) shardOID(shard int) string { return ShardOID(x.BucketID, x.Layout.Gen, shard) }

// ShardFor returns the shard object holding key.
func (x Index) ShardFor(key string) string {
	return x.shardOID(ShardOf(key, x.Layout.NumShards))
}

// Init creates every shard object of the layout (members of the view,
// when the layout has one).
func (x Index) Init(ctx context.Context) error {
	if x.Layout.View && x.viewer() == nil {
		return objstore.Errorf(objstore.ErrNotSupported, "bucket index view: the backend keeps no ordered views")
	}
	return x.eachShard(ctx, func(ctx context.Context, oid string) error {
		op := objstore.NewWriteOp()
		op.Exec(ClassName, "init", nil)
		if x.Layout.View {
			op.SetView(x.BucketID, specialPrefix, ListingProjection)
		}
		return x.IO.Operate(ctx, oid, op)
	})
}

// Remove deletes every shard object (missing ones are fine).
func (x Index) Remove(ctx context.Context) error {
	return x.eachShard(ctx, func(ctx context.Context, oid string) error {
		err := x.IO.Operate(ctx, oid, objstore.NewWriteOp().Remove())
		if errors.Is(err, objstore.ErrNotFound) {
			return nil
		}
		return err
	})
}

// SetState sets every shard's state.
func (x Index) SetState(ctx context.Context, state string) error {
	in, _ := json.Marshal(stateIn{State: state})
	return x.eachShard(ctx, func(ctx context.Context, oid string) error {
		op := objstore.NewWriteOp()
		op.Exec(ClassName, "set_state", in)
		return x.IO.Operate(ctx, oid, op)
	})
}

// maxFanout bounds concurrent shard requests from one call.
const maxFanout = 32

func (x Index) eachShard(ctx context.Context, fn func(ctx context.Context, oid string) error) error {
	n := x.Layout.NumShards
	errs := make([]error, n)
	sem := make(chan struct{}, maxFanout)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fn(ctx, x.shardOID(i))
		}(i)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Link sets e in its shard, atomically with the shard's stats, and returns
// the entry it replaced (nil if none). The replaced entry's data is recorded
// for collection in the same operation. ErrStale means the layout changed.
func (x Index) Link(ctx context.Context, e Entry, c LinkCond) (*Entry, error) {
	in, err := json.Marshal(linkIn{Entry: e, IfAbsent: c.IfAbsent, IfETag: c.IfETag, IfTag: c.IfTag, GCTime: x.gcTime()})
	if err != nil {
		return nil, err
	}
	return x.mutate(ctx, e.Key, "link", in, c.DeferSync)
}

// LinkCond makes Link conditional (ErrCanceled when it does not hold).
type LinkCond struct {
	IfAbsent bool   // If-None-Match: *
	IfETag   string // If-Match: etag
	IfTag    string // the current entry still names this write (same data)
	// DeferSync applies the link without waiting for its sync
	// (objstore.WriteOp.DeferSync): for callers whose commit point is a
	// later synced op, or who call objstore.Sync before acknowledging.
	DeferSync bool
}

// Unlink removes key (only if its tag is still tag, when tag != "") and
// returns the removed entry. ErrNotFound if absent.
func (x Index) Unlink(ctx context.Context, key, tag string) (*Entry, error) {
	in, _ := json.Marshal(unlinkIn{Key: key, Tag: tag, GCTime: x.gcTime()})
	return x.mutate(ctx, key, "unlink", in, false)
}

func (x Index) mutate(ctx context.Context, key, method string, in []byte, deferSync bool) (*Entry, error) {
	op := objstore.NewWriteOp()
	op.DeferSync = deferSync
	ex := op.Exec(ClassName, method, in)
	if err := x.IO.Operate(ctx, x.ShardFor(key), op); err != nil {
		return nil, err
	}
	if len(ex.Out) == 0 {
		return nil, nil
	}
	old, err := decodeEntry(ex.Out)
	return &old, err
}

// Get returns key's entry or ErrNotFound.
func (x Index) Get(ctx context.Context, key string) (Entry, error) {
	op := objstore.NewReadOp()
	notClosed(op)
	st := op.GetOmapValuesByKeys(key)
	if err := x.IO.OperateRead(ctx, x.ShardFor(key), op); err != nil {
		return Entry{}, readErr(err, x.ShardFor(key))
	}
	if len(st.Pairs) == 0 {
		return Entry{}, objstore.Errorf(objstore.ErrNotFound, "key %q", key)
	}
	return decodeEntry(st.Pairs[0].Value)
}

// Stats sums the shards' headers.
func (x Index) Stats(ctx context.Context) (Stats, error) {
	u, err := x.Usage(ctx)
	return u.Stats, err
}

// StandardClass names the default storage class, which entries leave
// unnamed (Entry.Class "").
const StandardClass = "STANDARD"

// Usage is a bucket's stats and the share of each storage class.
type Usage struct {
	Stats
	// Classes has an entry for each storage class that holds objects or
	// versions, STANDARD included (the totals minus the other classes).
	// Legacy is 0 in each.
	Classes map[string]Stats
}

// Usage sums the shards' headers, by storage class.
func (x Index) Usage(ctx context.Context) (Usage, error) {
	var mu sync.Mutex
	var total Stats
	other := map[string]Stats{}
	err := x.eachShard(ctx, func(ctx context.Context, oid string) error {
		op := objstore.NewReadOp()
		hs := op.GetOmapHeader()
		if err := x.IO.OperateRead(ctx, oid, op); err != nil {
			return err
		}
		h, err := decodeHeader(hs.Header)
		if err != nil {
			return err
		}
		mu.Lock()
		total.add(h.Stats)
		for _, c := range h.Classes {
			s := other[c.Class]
			s.add(c.Stats)
			other[c.Class] = s
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Stats: total, Classes: other}
	std := total
	std.Legacy = 0
	for _, s := range other {
		std.NumObjects -= min(std.NumObjects, s.NumObjects)
		std.Size -= min(std.Size, s.Size)
		std.NumVersions -= min(std.NumVersions, s.NumVersions)
		std.VersionSize -= min(std.VersionSize, s.VersionSize)
	}
	if std != (Stats{}) {
		other[StandardClass] = std
	}
	return u, nil
}

// GCRecord is replaced or removed data awaiting collection.
type GCRecord struct {
	Shard    string
	Tag      string
	Manifest Manifest
	// Written is when the record was written, by the writer's clock; zero
	// for a record written before records carried it.
	Written time.Time
}

// gcValue is a GC record's value: the manifest's fields and the time
// written ("w", unix ns), which readers of a plain manifest ignore.
type gcValue struct {
	Manifest
	Written int64 `json:"w,omitempty"`
}

// encodeGCValue encodes a GC record's value; written <= 0 (unknown) is
// left out.
func encodeGCValue(m Manifest, written int64) ([]byte, error) {
	return json.Marshal(gcValue{Manifest: m, Written: max(written, 0)})
}

// DecodeGCRecord decodes the omap pair of a GC record of shard object
// oid (key with its prefix, as GCRecords returns it).
func DecodeGCRecord(oid string, kv objstore.KV) (GCRecord, error) {
	var v gcValue
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		return GCRecord{}, objstore.Errorf(objstore.ErrInvalid, "gc record %q: %v", kv.Key, err)
	}
	r := GCRecord{Shard: oid, Tag: strings.TrimPrefix(kv.Key, gcPrefix), Manifest: v.Manifest}
	if v.Written != 0 {
		r.Written = time.Unix(0, v.Written)
	}
	return r, nil
}

// PendingGC lists up to max GC records of one shard (0: all).
func (x Index) PendingGC(ctx context.Context, shard int, max int) ([]GCRecord, error) {
	return x.PendingGCAfter(ctx, shard, "", max)
}

// PendingGCAfter lists up to max GC records of one shard whose tags sort
// after afterTag ("": from the first), in tag order: a page of a walk.
func (x Index) PendingGCAfter(ctx context.Context, shard int, afterTag string, max int) ([]GCRecord, error) {
	op := objstore.NewReadOp()
	after := gcPrefix
	if afterTag != "" {
		after = gcPrefix + afterTag
	}
	vs := op.GetOmapValues(after, gcPrefix, max)
	oid := x.shardOID(shard)
	if err := x.IO.OperateRead(ctx, oid, op); err != nil {
		return nil, err
	}
	out := make([]GCRecord, 0, len(vs.Pairs))
	for _, kv := range vs.Pairs {
		r, err := DecodeGCRecord(oid, kv)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// GCDone removes collected GC records from a shard object.
func GCDone(ctx context.Context, io objstore.IOContext, shardOID string, tags ...string) error {
	in, _ := json.Marshal(gcDoneIn{Tags: tags})
	op := objstore.NewWriteOp()
	op.Exec(ClassName, "gc_done", in)
	return io.Operate(ctx, shardOID, op)
}

// notClosed guards a read: a closed shard is retired (a reshard switched
// away from it) and may be stale, so reading it must send the caller to the
// current layout, exactly as writing it does.
func notClosed(op *objstore.ReadOp) {
	op.CmpXattr(shardStateXattr, objstore.CmpNE, []byte(StateClosed))
}

// readErr maps a guarded shard read's failure: a missing or closed shard
// is a retired generation (ErrStale: refresh the layout and retry).
func readErr(err error, oid string) error {
	if errors.Is(err, objstore.ErrNotFound) {
		return objstore.Errorf(objstore.ErrStale, "index shard %s missing", oid)
	}
	if errors.Is(err, objstore.ErrCanceled) {
		return objstore.Errorf(objstore.ErrStale, "index shard %s closed", oid)
	}
	return err
}
