package driver

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Notifier is the notification service as the write path sees it. Reserve
// runs before any data is written; it returns nil when no configuration
// matches. A full queue returns an error wrapping ErrSlowDown.
type Notifier interface {
	Reserve(ctx context.Context, ev PendingEvent) (Reservation, error)
}

// Reservation is room reserved for the events of one write: Commit after the
// write succeeded (durably, before the client hears of success), Abort when
// it failed. Abort is idempotent.
type Reservation interface {
	Commit(ctx context.Context, obj ObjectInfo) error
	Abort(ctx context.Context)
}

// SyncingReservation is a Reservation whose Commit writes to the same store
// with a sync (persistent notifications). The driver then links the object
// with DeferSync and lets the commit's sync make the link durable too: one
// sync per notified PUT instead of two. Synced reports, after Commit,
// whether that synced write happened; if not, the driver syncs itself.
type SyncingReservation interface {
	Reservation
	Persistent() bool
	Synced() bool
}

// PendingEvent describes the write about to happen.
type PendingEvent struct {
	Bucket    BucketInfo
	Key       string
	EventName string // e.g. "ObjectCreated:Put", "ObjectRemoved:Delete"
	Meta      ObjectMeta
	Size      int64
}

// ValidKey applies S3's key rules: 1..1024 bytes of valid UTF-8 without NUL.
func ValidKey(key string) bool {
	return key != "" && len(key) <= MaxKeyLen && utf8.ValidString(key) && !strings.ContainsRune(key, 0)
}

func (d *Driver) reserve(ctx context.Context, inst Instance, key, event string, meta ObjectMeta, size int64) (Reservation, error) {
	if d.opts.Notifier == nil {
		return nil, nil
	}
	return d.opts.Notifier.Reserve(ctx, PendingEvent{Bucket: inst.info(), Key: key, EventName: event, Meta: meta, Size: size})
}

func entryInfo(bucket string, e bucketindex.Entry) ObjectInfo {
	oi := ObjectInfo{Bucket: bucket, Key: e.Key, Size: e.Size, ETag: e.ETag, ModTime: e.ModTime, Parts: e.Parts, Owner: e.Owner}
	if e.Parts > 0 && len(e.Manifest.Runs) == e.Parts { // complete writes one run per part
		oi.PartSizes = make([]int64, e.Parts)
		for i, r := range e.Manifest.Runs {
			oi.PartSizes[i] = r.Size
		}
	}
	if len(e.Meta) > 0 {
		_ = json.Unmarshal(e.Meta, &oi.Meta)
	}
	if oi.Meta.ACL != nil {
		oi.Owner = oi.Meta.ACL.Owner.ID
	}
	return oi
}

// PutObject writes the data under a new tag, then links it in the index in
// one atomic step; the replaced version's data goes to the collector.
func (d *Driver) PutObject(ctx context.Context, in PutObjectInput) (ObjectInfo, error) {
	if !ValidKey(in.Key) {
		return ObjectInfo{}, ErrInvalidKey
	}
	if in.Size > MaxPutSize {
		return ObjectInfo{}, ErrEntityTooLarge
	}
	inst, err := d.Instance(ctx, in.Bucket)
	if err != nil {
		return ObjectInfo{}, err
	}
	if in.EventName == "" {
		in.EventName = "ObjectCreated:Put"
	}
	res, err := d.reserve(ctx, inst, in.Key, in.EventName, in.Meta, in.Size)
	if err != nil {
		return ObjectInfo{}, err
	}
	tag := d.newTag()
	run, sum, err := d.writeRun(ctx, tag, inst.ID+"/"+in.Key, in.Body, MaxPutSize)
	if err == nil && in.Size >= 0 && run.Size != in.Size {
		d.removeObjects(context.WithoutCancel(ctx), bucketindex.Manifest{Runs: []bucketindex.Run{run}}.Objects())
		err = ErrIncompleteBody
	}
	if err != nil {
		abort(ctx, res)
		return ObjectInfo{}, err
	}
	e := bucketindex.Entry{
		Key: in.Key, Size: run.Size, ETag: hex.EncodeToString(sum), ModTime: d.opts.Now().UTC(),
		Owner: inst.Owner, Tag: tag, Manifest: bucketindex.Manifest{Runs: []bucketindex.Run{run}},
	}
	e.Meta, _ = json.Marshal(in.Meta)
	cond := bucketindex.LinkCond{IfAbsent: in.IfNoneMatch == "*", IfETag: strings.Trim(in.IfMatch, `"`)}
	return d.link(ctx, in.Bucket, e, cond, res, true)
}

func abort(ctx context.Context, res Reservation) {
	if res != nil {
		res.Abort(context.WithoutCancel(ctx))
	}
}

// link publishes e, hands replaced data to the collector and commits the
// notification. On failure the reservation is aborted and, when ownsData,
// the new data removed (a multipart upload's parts stay with the upload).
func (d *Driver) link(ctx context.Context, bucket string, e bucketindex.Entry, cond bucketindex.LinkCond, res Reservation, ownsData bool) (ObjectInfo, error) {
	var old *bucketindex.Entry
	var shard string
	sr, _ := res.(SyncingReservation)
	cond.DeferSync = sr != nil && sr.Persistent()
	err := d.withIndex(ctx, bucket, func(inst Instance, ix bucketindex.Index) error {
		var err error
		shard = ix.ShardFor(e.Key)
		old, err = ix.Link(ctx, e, cond)
		return err
	})
	if err != nil {
		if ownsData {
			d.removeObjects(context.WithoutCancel(ctx), e.Manifest.Objects())
		}
		abort(ctx, res)
		if errors.Is(err, objstore.ErrCanceled) {
			return ObjectInfo{}, ErrPreconditionFailed
		}
		return ObjectInfo{}, err
	}
	if old != nil && old.Tag != e.Tag {
		d.gc.enqueue(shard, old.Tag, old.Manifest)
	}
	oi := entryInfo(bucket, e)
	if res != nil {
		err := res.Commit(ctx, oi)
		if cond.DeferSync && (err != nil || !sr.Synced()) {
			// No queue commit synced the store (failed, or its topic went
			// away): make the deferred link durable before answering.
			err = errors.Join(err, objstore.Sync(context.WithoutCancel(ctx), d.index))
		}
		if err != nil {
			// The object is written; its event could not be made durable.
			// Say so: the client retries the idempotent PUT.
			return ObjectInfo{}, fmt.Errorf("commit notification: %w", err)
		}
	}
	return oi, nil
}

// HeadObject returns an object's info.
func (d *Driver) HeadObject(ctx context.Context, bucket, key string) (ObjectInfo, error) {
	e, err := d.lookup(ctx, bucket, key)
	if err != nil {
		return ObjectInfo{}, err
	}
	return entryInfo(bucket, e), nil
}

func (d *Driver) lookup(ctx context.Context, bucket, key string) (bucketindex.Entry, error) {
	if !ValidKey(key) {
		return bucketindex.Entry{}, ErrNoSuchKey
	}
	var e bucketindex.Entry
	err := d.withIndex(ctx, bucket, func(_ Instance, ix bucketindex.Index) error {
		var err error
		e, err = ix.Get(ctx, key)
		return err
	})
	if errors.Is(err, objstore.ErrNotFound) {
		return e, ErrNoSuchKey
	}
	return e, err
}

// GetObject returns info and a streaming reader over rng (nil = all).
func (d *Driver) GetObject(ctx context.Context, bucket, key string, rng *Range) (ObjectInfo, io.ReadCloser, error) {
	e, err := d.lookup(ctx, bucket, key)
	if err != nil {
		return ObjectInfo{}, nil, err
	}
	off, n := int64(0), e.Size
	if rng != nil {
		if rng.Start < 0 || rng.Length < 0 || rng.Start+rng.Length > e.Size {
			return ObjectInfo{}, nil, fmt.Errorf("%w: range outside object", ErrInvalidArgument)
		}
		off, n = rng.Start, rng.Length
	}
	return entryInfo(bucket, e), newManifestReader(ctx, d.data, e.Manifest, off, n), nil
}

// DeleteObject unlinks key; a missing key is success.
func (d *Driver) DeleteObject(ctx context.Context, bucket, key string) error {
	if !ValidKey(key) {
		return nil
	}
	inst, err := d.Instance(ctx, bucket)
	if err != nil {
		return err
	}
	// Reserve only when the key exists: S3 sends no event for deleting
	// nothing. A racing delete makes this conservative (abort on not found).
	cur, err := d.lookup(ctx, bucket, key)
	if errors.Is(err, ErrNoSuchKey) {
		return nil
	}
	if err != nil {
		return err
	}
	// The removed object's metadata and tags feed the filters.
	res, err := d.reserve(ctx, inst, key, "ObjectRemoved:Delete", entryInfo(bucket, cur).Meta, cur.Size)
	if err != nil {
		return err
	}
	var old *bucketindex.Entry
	var shard string
	err = d.withIndex(ctx, bucket, func(_ Instance, ix bucketindex.Index) error {
		var err error
		shard = ix.ShardFor(key)
		old, err = ix.Unlink(ctx, key, "")
		return err
	})
	if errors.Is(err, objstore.ErrNotFound) {
		abort(ctx, res)
		return nil
	}
	if err != nil {
		abort(ctx, res)
		return err
	}
	d.gc.enqueue(shard, old.Tag, old.Manifest)
	if res != nil {
		oi := entryInfo(bucket, *old)
		if err := res.Commit(ctx, oi); err != nil {
			return fmt.Errorf("commit notification: %w", err)
		}
	}
	return nil
}

// CopyObject copies data (no sharing: each object owns its data objects, so
// collection never needs reference counts).
func (d *Driver) CopyObject(ctx context.Context, in CopyObjectInput) (ObjectInfo, error) {
	src, rd, err := d.GetObject(ctx, in.SrcBucket, in.SrcKey, nil)
	if err != nil {
		return ObjectInfo{}, err
	}
	defer rd.Close()
	if err := CheckConditions(src, in.SrcCond); err != nil {
		return ObjectInfo{}, err
	}
	meta := src.Meta
	if in.ReplaceMeta {
		meta = in.Meta
		meta.Checksums = src.Meta.Checksums
		meta.ChecksumType = src.Meta.ChecksumType
	}
	meta.ACL = in.ACL // a copy gets the request's ACL, never the source's
	var body io.Reader = rd
	if src.Parts > 0 {
		// The copy is one part: its checksum is the whole data's.
		meta.PartChecksums = nil
		meta.Checksums, meta.ChecksumType, body = wholeChecksum(src.Meta, rd)
	}
	return d.PutObject(ctx, PutObjectInput{
		Bucket: in.DstBucket, Key: in.DstKey, Body: body, Size: src.Size, Meta: meta,
		EventName: "ObjectCreated:Copy",
	})
}

// CheckConditions evaluates If-* preconditions on info with S3's precedence:
// If-Match beats If-Unmodified-Since, If-None-Match beats If-Modified-Since.
// It returns ErrPreconditionFailed or ErrNotModified.
func CheckConditions(info ObjectInfo, c Conditions) error {
	etag := info.ETag
	matches := func(list string) bool {
		for _, t := range strings.Split(list, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.Trim(t, `"`) == etag {
				return true
			}
		}
		return false
	}
	if c.IfMatch != "" {
		if !matches(c.IfMatch) {
			return ErrPreconditionFailed
		}
	} else if c.IfUnmodifiedSince != nil && info.ModTime.Truncate(1e9).After(*c.IfUnmodifiedSince) {
		return ErrPreconditionFailed
	}
	if c.IfNoneMatch != "" {
		if matches(c.IfNoneMatch) {
			return ErrNotModified
		}
	} else if c.IfModifiedSince != nil && !info.ModTime.Truncate(1e9).After(*c.IfModifiedSince) {
		return ErrNotModified
	}
	return nil
}

// ErrNotModified is a failed If-None-Match / If-Modified-Since on GET/HEAD.
var ErrNotModified = errors.New("not modified")

// MaxListKeys caps ListObjectsInput.MaxKeys (S3's max-keys limit).
const MaxListKeys = 1000

// DefaultListShardReadBudget bounds the index shard reads of one
// ListObjects call (Options.ListShardReadBudget): past it, once something
// was listed, the page ends early. The first read of every shard always
// happens (bucketindex.Iter; each read returns a bounded page); skipping
// a common prefix costs a read only on shards whose buffered page ends
// inside it, so the budget matters only for delimiter listings over many
// large prefixes on many shards.
const DefaultListShardReadBudget = 16384

// ListObjects returns one page of an ordered listing with S3's
// prefix/delimiter semantics. The page may hold fewer than MaxKeys entries
// and still be truncated (see ListShardReadBudget); NextMarker then says
// where to continue.
func (d *Driver) ListObjects(ctx context.Context, in ListObjectsInput) (ListObjectsResult, error) {
	var res ListObjectsResult
	if in.MaxKeys <= 0 {
		if _, err := d.Instance(ctx, in.Bucket); err != nil {
			return res, err
		}
		return res, nil
	}
	in.MaxKeys = min(in.MaxKeys, MaxListKeys)
	after := in.StartAfter
	err := d.withIndex(ctx, in.Bucket, func(_ Instance, ix bucketindex.Index) error {
		res = ListObjectsResult{}
		after := after
		want := in.MaxKeys
		if in.Delimiter != "" {
			want = max(want, 100) // common prefixes may swallow many keys
		}
		// Per-shard pages as in Index.List: about twice a shard's share.
		it, err := ix.NewIter(ctx, after, in.Prefix, min(2*want/ix.Layout.NumShards+8, want))
		if err != nil {
			return err
		}
		count := 0
		for {
			// Past the read budget the page ends early, truncated, as S3
			// allows (RGW bounds its listing attempts the same way). Only
			// the marker's own common prefix can be skipped without
			// emitting anything, so a page always makes progress.
			if count > 0 && it.Reads() > d.opts.ListShardReadBudget {
				res.IsTruncated, res.NextMarker = true, after
				return nil
			}
			e, ok, err := it.Next(ctx)
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
			if count == in.MaxKeys {
				res.IsTruncated = true
				return nil
			}
			if in.Delimiter != "" {
				rest := e.Key[len(in.Prefix):]
				if i := strings.Index(rest, in.Delimiter); i >= 0 {
					cp := in.Prefix + rest[:i+len(in.Delimiter)]
					if cp != after {
						res.CommonPrefixes = append(res.CommonPrefixes, cp)
						res.NextMarker = cp
						count++
					}
					// Skip every key under this prefix: no valid key
					// continues with 0xff.
					after = cp + "\xff"
					it.SkipPast(after)
					continue
				}
			}
			res.Objects = append(res.Objects, entryInfo(in.Bucket, e))
			res.NextMarker = e.Key
			after = e.Key
			count++
		}
	})
	// A marker inside a common prefix is "after" it: the 0xff suffix is
	// internal and must not reach clients.
	res.NextMarker = strings.TrimSuffix(res.NextMarker, "\xff")
	return res, err
}
