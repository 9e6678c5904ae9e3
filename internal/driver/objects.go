package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
	json "github.com/goccy/go-json"
)

// Notifier is the notification service as the write path sees it. Reserve
// runs before any data is written; it returns nil when no configuration
// matches. A full queue returns an error wrapping ErrSlowDown.
type Notifier interface {
	Reserve(ctx context.Context, ev PendingEvent) (Reservation, error)
}

// Reservation is room reserved for the events of one write: Commit after the
// write succeeded (durably, before the client hears of success), Abort when
// it failed. Abort is idempotent. No event may become visible (to delivery
// or an endpoint) before the write is durable, including writes whose sync
// ctx defers (objstore.WithDeferredSync).
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

// DeferringReservation is an IntentReservation that can commit after the
// reply: once the link that stored its intent is durable, the event is
// (the intent is resolved at the next start if the process dies first).
// Deferrable, asked after Intent, says whether this one may;
// CommitDeferred then replaces Commit and calls done, from another
// goroutine, when the commit ended (nil: the intent may be removed).
type DeferringReservation interface {
	IntentReservation
	Deferrable() bool
	CommitDeferred(ctx context.Context, obj ObjectInfo, done func(error))
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
	return entryInfoMeta(bucket, e, nil)
}

// entryInfoMeta is entryInfo with e.Meta already decoded (nil: decode it).
func entryInfoMeta(bucket string, e bucketindex.Entry, meta *ObjectMeta) ObjectInfo {
	oi := ObjectInfo{Bucket: bucket, Key: e.Key, Size: e.Size, ETag: e.ETag, ModTime: e.ModTime, Parts: e.Parts, Owner: e.Owner, StorageClass: e.Class}
	if e.Parts > 0 && len(e.Manifest.Runs) == e.Parts { // complete writes one run per part
		oi.PartSizes = make([]int64, e.Parts)
		for i, r := range e.Manifest.Runs {
			oi.PartSizes[i] = r.DataSize()
		}
	}
	if meta != nil {
		oi.Meta = *meta
	} else if len(e.Meta) > 0 {
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
	pl, err := d.placementFor(in.Meta.StorageClass)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := d.lockForWrite(inst, &in.Meta); err != nil {
		return ObjectInfo{}, err
	}
	// The key comes first: an unreachable KMS fails the PUT before any
	// byte is written or any event reserved.
	rec, oek, err := d.newSSE(ctx, inst, in.Key)
	if err != nil {
		return ObjectInfo{}, err
	}
	defer clear(oek)
	in.Meta.SSE = rec
	qt, err := d.quotaAdmit(ctx, inst, 1, in.Size)
	if err != nil {
		return ObjectInfo{}, err
	}
	res, err := d.reserve(ctx, inst, in.Key, in.EventName, in.Meta, in.Size)
	if err != nil {
		qt.cancel()
		return ObjectInfo{}, err
	}
	tag := d.newTag()
	// A small body on a store that commits several objects atomically
	// (embedded) is written with its index link, in one commit; RADOS
	// keeps the order data first, then the link.
	hold := objstore.Atomic(pl.io, d.index) != nil
	// Small bodies of the default class go inline in their entry; other
	// classes keep their bytes in their own pool (placement is the point).
	inline := d.opts.InlineMax
	if classField(pl.class) != "" {
		inline = 0
	}
	run, sum, held, err := d.writeData(ctx, pl, tag, inst.ID+"/"+in.Key, in.Body, MaxPutSize, oek, hold, inline)
	defer held.release()
	if err == nil {
		if in.Size >= 0 && run.DataSize() != in.Size {
			err = ErrIncompleteBody
		} else {
			err = qt.grow(run.DataSize()) // a body of unknown length
		}
		if err != nil && held == nil {
			d.removeRun(context.WithoutCancel(ctx), run)
		}
	}
	if err != nil {
		qt.cancel()
		abort(ctx, res)
		return ObjectInfo{}, err
	}
	d.failpoint("put-after-data")
	e := bucketindex.Entry{
		Key: in.Key, Size: run.DataSize(), ETag: sseETag(rec, oek, sum), ModTime: d.opts.Now().UTC(),
		Owner: inst.Owner, Tag: tag, Manifest: bucketindex.Manifest{Runs: []bucketindex.Run{run}},
		Class: classField(pl.class),
	}
	e.Meta = metaJSON(in.Meta)
	pw := &putWrite{held: held}
	if m, ok := roundTripped(in.Meta); ok {
		pw.meta = &m
	}
	return d.link(ctx, in.Bucket, e, putCond(in.IfNoneMatch, in.IfMatch), res, true, qt, pw)
}

// putWrite is what PutObject hands link beside the entry.
type putWrite struct {
	// held is the entry's data not yet written: it commits atomically
	// with the link (nothing to remove if the link fails).
	held *heldStripe
	// meta is e.Meta decoded (nil: decode it), for the reply and events.
	meta *ObjectMeta
}

// metaJSON is m as an index entry stores it: nothing for no metadata
// (readers and the class's meta guards take absent as empty).
func metaJSON(m ObjectMeta) []byte {
	b, _ := json.Marshal(m)
	if string(b) == "{}" {
		return nil
	}
	return b
}

// roundTripped returns m as decoding json.Marshal(m) gives it, for the
// common metadata whose round trip is plain copying (input-only fields
// cleared, empty maps and lists dropped); false for the rest (ACL, SSE,
// retention dates), which the caller decodes.
func roundTripped(m ObjectMeta) (ObjectMeta, bool) {
	if m.ACL != nil || m.SSE != nil || !m.RetainUntil().IsZero() {
		return ObjectMeta{}, false
	}
	m.StorageClass = ""
	m.UserMeta, m.Tags, m.Checksums = cloneNonEmpty(m.UserMeta), cloneNonEmpty(m.Tags), cloneNonEmpty(m.Checksums)
	if len(m.PartChecksums) == 0 {
		m.PartChecksums = nil
	} else {
		m.PartChecksums = slices.Clone(m.PartChecksums)
	}
	return m, true
}

func cloneNonEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// putCond turns If-None-Match / If-Match of a write into index conditions.
func putCond(ifNoneMatch, ifMatch string) bucketindex.VersionCond {
	c := bucketindex.VersionCond{}
	if m := strings.TrimSpace(ifNoneMatch); m == "*" {
		c.IfAbsent = true
	} else if m != "" {
		c.IfNoneETag = strings.Trim(m, `"`) // RGW: refuse only that content
	}
	if m := strings.TrimSpace(ifMatch); m == "*" {
		c.IfExists = true
	} else if m != "" {
		c.IfETag = strings.Trim(m, `"`)
	}
	return c
}

func abort(ctx context.Context, res Reservation) {
	if res != nil {
		res.Abort(context.WithoutCancel(ctx))
	}
}

// versionMode is the index's versioning mode for a bucket state.
func versionMode(state string) string {
	switch state {
	case VersioningEnabled:
		return bucketindex.ModeEnabled
	case VersioningSuspended:
		return bucketindex.ModeSuspended
	}
	return bucketindex.ModeUnversioned
}

// link publishes e as a new version (or the null version) in one class call,
// hands data it replaced to the collector and commits the notification. On
// failure the reservation is aborted and, when ownsData, the new data
// removed (a multipart upload's parts stay with the upload). A retried link
// (same tag) returns the version already linked.
//
// qt, the write's quota admission, is completed or cancelled here.
//
// pw, from PutObject (nil otherwise), may hold the data for the link's
// commit and the decoded metadata.
func (d *Driver) link(ctx context.Context, bucket string, e bucketindex.Entry, cond bucketindex.VersionCond, res Reservation, ownsData bool, qt *quotaTicket, pw *putWrite) (ObjectInfo, error) {
	var held *heldStripe
	var meta *ObjectMeta
	if pw != nil {
		held, meta = pw.held, pw.meta
	}
	var vr bucketindex.VersionResult
	var shard string
	var state string
	sr, _ := res.(SyncingReservation)
	cond.DeferSync = sr != nil && sr.Persistent()
	if ir, ok := res.(IntentReservation); ok {
		if n := ir.Intent(ctx, entryInfoMeta(bucket, e, meta)); n != nil {
			cond.Intent = encodeLinkIntent(e.Key, e.ModTime.UnixNano(), n)
		}
	}
	// A deferred commit: the link is the synced op, the intent in it
	// makes the event durable, and the queue commit follows the reply.
	dr, _ := res.(DeferringReservation)
	deferred := cond.Intent != nil && dr != nil && dr.Deferrable()
	if deferred {
		cond.DeferSync = false
	}
	t0 := time.Now()
	err := d.withIndex(ctx, bucket, func(inst Instance, ix bucketindex.Index) error {
		var err error
		shard, state = ix.ShardFor(e.Key), inst.Versioning
		if held != nil {
			vr, err = ix.LinkVersionWith(ctx, versionMode(inst.Versioning), e, cond, held.req())
		} else {
			vr, err = ix.LinkVersion(ctx, versionMode(inst.Versioning), e, cond)
		}
		return err
	})
	d.countIndexWrite(t0, err)
	if err == nil && vr.Retry && ownsData {
		err = fmt.Errorf("tag %s linked twice", e.Tag) // fresh tags never repeat
	}
	if err != nil {
		if cond.Intent != nil && !definite(err) {
			// The link may have applied, with its intent: keep the data
			// and the reservation for the recovery pass (a reservation
			// given back could be consumed by another write, which would
			// make this one look committed). The quota keeps counting it
			// until the stats are read again.
			qt.done(nil)
			return ObjectInfo{}, err
		}
		qt.cancel()
		if ownsData && held == nil {
			d.removeManifest(context.WithoutCancel(ctx), e.Manifest)
		}
		abort(ctx, res)
		switch {
		case errors.Is(err, objstore.ErrCanceled):
			return ObjectInfo{}, ErrPreconditionFailed
		case errors.Is(err, objstore.ErrNotFound):
			return ObjectInfo{}, ErrNoSuchKey
		}
		return ObjectInfo{}, err
	}
	d.failpoint("after-link")
	qt.done(vr.Freed)
	now := d.opts.Now() // not before the records' own time: due no earlier
	for _, f := range vr.Freed {
		d.gc.enqueue(shard, f.Tag, f.Manifest, now)
	}
	if meta != nil && !bytes.Equal(vr.Entry.Meta, e.Meta) {
		meta = nil // not the entry we sent (a retried link's)
	}
	oi := versionInfoMeta(bucket, state, vr.Entry, meta)
	if deferred {
		tag := e.Tag
		dr.CommitDeferred(context.WithoutCancel(ctx), oi, func(err error) {
			if err != nil {
				// The intent stays: the next start commits the event.
				d.log.Warn("deferred notification commit failed; the event waits for the next start's intent recovery",
					"bucket", bucket, "key", e.Key, "err", err)
				return
			}
			d.intents.add(shard, tag)
		})
		return oi, nil
	}
	if res != nil {
		err := res.Commit(ctx, oi)
		if cond.DeferSync && (err != nil || !sr.Synced()) {
			// No queue commit synced the store (failed, or its topic went
			// away): make the deferred link durable before answering.
			err = errors.Join(err, objstore.Sync(context.WithoutCancel(ctx), d.index))
		}
		if err != nil {
			// The object is written; its event could not be made durable.
			// Say so: the client retries the idempotent PUT. The intent
			// stays for the recovery pass.
			return ObjectInfo{}, fmt.Errorf("commit notification: %w", err)
		}
		if cond.Intent != nil {
			d.intents.add(shard, e.Tag)
		}
	}
	return oi, nil
}

// versionInfo is entryInfo with the version id S3 reports: none on a
// never-versioned bucket, "null" for a legacy entry on a versioned one.
func versionInfo(bucket, state string, e bucketindex.Entry) ObjectInfo {
	return versionInfoMeta(bucket, state, e, nil)
}

// versionInfoMeta is versionInfo with e.Meta already decoded (nil: decode).
func versionInfoMeta(bucket, state string, e bucketindex.Entry, meta *ObjectMeta) ObjectInfo {
	oi := entryInfoMeta(bucket, e, meta)
	oi.VersionID, oi.DeleteMarker = e.VersionID, e.Marker
	if oi.VersionID == "" && state != "" {
		oi.VersionID = bucketindex.NullVersion
	}
	if state == "" && oi.VersionID == bucketindex.NullVersion {
		oi.VersionID = ""
	}
	return oi
}

// HeadObject returns the current object's info.
func (d *Driver) HeadObject(ctx context.Context, bucket, key string) (ObjectInfo, error) {
	return d.HeadObjectVersion(ctx, bucket, key, "")
}

// HeadObjectVersion returns the info of version vid of key ("" = current).
// A delete marker gives a *DeleteMarkerError.
func (d *Driver) HeadObjectVersion(ctx context.Context, bucket, key, vid string) (ObjectInfo, error) {
	e, state, err := d.lookupVersion(ctx, bucket, key, vid)
	if err != nil {
		return ObjectInfo{}, err
	}
	return versionInfo(bucket, state, e), nil
}

func (d *Driver) lookup(ctx context.Context, bucket, key string) (bucketindex.Entry, error) {
	e, _, err := d.lookupVersion(ctx, bucket, key, "")
	return e, err
}

// lookupVersion reads version vid of key ("" = the current object) and
// the bucket's versioning state. Unknown versions are ErrNoSuchVersion, ids
// no version can have ErrInvalidVersionID; a delete marker is a
// *DeleteMarkerError. A miss on a versioned bucket reads the key's newest
// record to tell a delete marker from nothing.
func (d *Driver) lookupVersion(ctx context.Context, bucket, key, vid string) (bucketindex.Entry, string, error) {
	if vid != "" && vid != bucketindex.NullVersion {
		if _, ok := bucketindex.ParseVersionID(vid); !ok {
			return bucketindex.Entry{}, "", ErrInvalidVersionID
		}
	}
	if !ValidKey(key) {
		if vid != "" {
			return bucketindex.Entry{}, "", ErrNoSuchVersion
		}
		return bucketindex.Entry{}, "", ErrNoSuchKey
	}
	var e bucketindex.Entry
	var state string
	err := d.withIndex(ctx, bucket, func(inst Instance, ix bucketindex.Index) error {
		var err error
		state = inst.Versioning
		if vid != "" {
			e, err = ix.GetVersion(ctx, key, vid)
			return err
		}
		e, err = ix.Get(ctx, key)
		if errors.Is(err, objstore.ErrNotFound) && inst.Versioning != "" {
			if m, err2 := ix.Newest(ctx, key); err2 == nil && m.Marker {
				e = m
				return nil
			}
		}
		return err
	})
	switch {
	case errors.Is(err, objstore.ErrNotFound) && vid != "":
		return e, state, ErrNoSuchVersion
	case errors.Is(err, objstore.ErrNotFound):
		return e, state, ErrNoSuchKey
	case err != nil:
		return e, state, err
	case e.Marker && vid == "":
		return e, state, &DeleteMarkerError{Err: ErrNoSuchKey, VersionID: e.VersionID, ModTime: e.ModTime}
	case e.Marker:
		return e, state, &DeleteMarkerError{Err: ErrMethodNotAllowed, VersionID: e.VersionID, ModTime: e.ModTime}
	}
	return e, state, nil
}

// GetObject returns the current object's info and a streaming reader over
// rng (nil = all).
func (d *Driver) GetObject(ctx context.Context, bucket, key string, rng *Range) (ObjectInfo, io.ReadCloser, error) {
	return d.GetObjectVersion(ctx, bucket, key, "", rng)
}

// GetObjectVersion is GetObject of version vid ("" = current).
// An encrypted object opens with its key first: a missing or wrong SSE-C
// key (WithSSE) fails here, before any data.
func (d *Driver) GetObjectVersion(ctx context.Context, bucket, key, vid string, rng *Range) (ObjectInfo, io.ReadCloser, error) {
	return d.getObjectVersion(ctx, bucket, key, vid, rng, sseFrom(ctx).CustomerKey)
}

func (d *Driver) getObjectVersion(ctx context.Context, bucket, key, vid string, rng *Range, ckey []byte) (ObjectInfo, io.ReadCloser, error) {
	e, state, err := d.lookupVersion(ctx, bucket, key, vid)
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
	info := versionInfo(bucket, state, e)
	oek, err := d.openSSE(ctx, info.Meta.SSE, key, ckey)
	if err != nil {
		return ObjectInfo{}, nil, err
	}
	return info, d.newDataReader(ctx, e.Manifest, oek, off, n), nil
}

// DeleteObject deletes the current object; a missing key is success.
func (d *Driver) DeleteObject(ctx context.Context, bucket, key string) error {
	_, err := d.DeleteObjectVersion(ctx, DeleteObjectInput{Bucket: bucket, Key: key})
	return err
}

// DeleteObjectVersion deletes with S3's versioning semantics: without a
// version id, a never-versioned bucket removes the object, a versioned one
// writes a delete marker (Suspended: the null marker, replacing the null
// version); with one, that version (or marker) is removed and the next
// newest becomes current. Deleting nothing (an unknown version, a missing
// key on a never-versioned bucket) succeeds.
func (d *Driver) DeleteObjectVersion(ctx context.Context, in DeleteObjectInput) (DeleteResult, error) {
	if in.VersionID != "" && in.VersionID != bucketindex.NullVersion {
		if _, ok := bucketindex.ParseVersionID(in.VersionID); !ok {
			return DeleteResult{}, ErrInvalidVersionID
		}
	}
	ifETag := strings.Trim(strings.TrimSpace(in.IfMatch), `"`)
	if !ValidKey(in.Key) {
		if ifETag != "" {
			return DeleteResult{}, ErrNoSuchKey
		}
		return DeleteResult{}, nil
	}
	inst, err := d.Instance(ctx, in.Bucket)
	if err != nil {
		return DeleteResult{}, err
	}
	if in.VersionID == "" && inst.Versioning != "" {
		return d.deleteMarker(ctx, inst, in)
	}
	return d.deleteVersion(ctx, inst, in, 0)
}

// deleteVersion removes one version (DeleteObjectVersion with an id, or
// the object of a never-versioned bucket); attempt counts restarts after
// the version's lock state changed under it.
func (d *Driver) deleteVersion(ctx context.Context, inst Instance, in DeleteObjectInput, attempt int) (DeleteResult, error) {
	ifETag := strings.Trim(strings.TrimSpace(in.IfMatch), `"`)
	exists := ifETag == "*" // If-Match: * asks only that it exists
	if exists {
		ifETag = ""
	}
	vid := in.VersionID
	if vid == "" {
		vid = bucketindex.NullVersion
	}
	// Reserve only when the version exists: S3 sends no event for deleting
	// nothing. A racing delete makes this conservative (abort on not found).
	cur, state, err := d.lookupVersion(ctx, in.Bucket, in.Key, vid)
	var dm *DeleteMarkerError
	switch {
	case errors.As(err, &dm):
	case errors.Is(err, ErrNoSuchKey) || errors.Is(err, ErrNoSuchVersion):
		switch {
		case (ifETag != "" || exists) && in.VersionID == "":
			return DeleteResult{}, ErrNoSuchKey // AWS: If-Match on a missing key
		case ifETag != "" || exists:
			return DeleteResult{}, ErrPreconditionFailed
		}
		return DeleteResult{VersionID: in.VersionID}, nil
	case err != nil:
		return DeleteResult{}, err
	}
	// Object lock: refuse while the version is protected, and remove it
	// only if its lock state is still the one checked here.
	cond := bucketindex.UnlinkCond{IfETag: ifETag}
	if in.IfMatchModTime != nil || in.IfMatchSize != nil {
		if !matchModTimeSize(cur, in) {
			return DeleteResult{}, ErrPreconditionFailed
		}
		cond.IfTag = cur.Tag // still the version checked
	}
	if !cur.Marker {
		if err := d.checkLock(entryInfo(in.Bucket, cur).Meta, in.BypassGovernance); err != nil {
			return DeleteResult{}, err
		}
		cond.CheckMeta, cond.IfMeta = true, cur.Meta
	}
	event := "ObjectRemoved:Delete"
	if in.EventName != "" {
		event = in.EventName
	}
	// The removed object's metadata and tags feed the filters.
	res, err := d.reserve(ctx, inst, in.Key, event, entryInfo(in.Bucket, cur).Meta, cur.Size)
	if err != nil {
		return DeleteResult{}, err
	}
	if in.EventFirst && res != nil {
		if ifETag != "" && cur.ETag != ifETag {
			abort(ctx, res)
			return DeleteResult{}, ErrPreconditionFailed
		}
		if err := res.Commit(ctx, versionInfo(in.Bucket, state, cur)); err != nil {
			return DeleteResult{}, fmt.Errorf("commit notification: %w", err)
		}
		res = nil
	}
	var vr bucketindex.VersionResult
	var shard string
	t0 := time.Now()
	err = d.withIndex(ctx, in.Bucket, func(_ Instance, ix bucketindex.Index) error {
		var err error
		shard = ix.ShardFor(in.Key)
		vr, err = ix.UnlinkVersionIf(ctx, in.Key, vid, cond)
		return err
	})
	d.countIndexWrite(t0, err)
	if errors.Is(err, objstore.ErrCanceled) && cond.CheckMeta && attempt < 10 {
		// An ETag mismatch, or the lock changed since checked: look again.
		abort(ctx, res)
		if now, _, err2 := d.lookupVersion(ctx, in.Bucket, in.Key, vid); err2 == nil && string(now.Meta) != string(cur.Meta) {
			return d.deleteVersion(ctx, inst, in, attempt+1)
		}
	}
	if errors.Is(err, objstore.ErrNotFound) {
		abort(ctx, res)
		switch {
		case (ifETag != "" || exists) && in.VersionID == "":
			return DeleteResult{}, ErrNoSuchKey
		case ifETag != "" || exists:
			return DeleteResult{}, ErrPreconditionFailed
		}
		return DeleteResult{VersionID: in.VersionID}, nil
	}
	if err != nil {
		abort(ctx, res)
		if errors.Is(err, objstore.ErrCanceled) {
			return DeleteResult{}, ErrPreconditionFailed
		}
		return DeleteResult{}, err
	}
	d.failpoint("after-unlink")
	d.quotaFreed(inst, vr.Freed)
	now := d.opts.Now() // not before the records' own time: due no earlier
	for _, f := range vr.Freed {
		d.gc.enqueue(shard, f.Tag, f.Manifest, now)
	}
	oi := versionInfo(in.Bucket, state, vr.Entry)
	if res != nil {
		if err := res.Commit(ctx, oi); err != nil {
			return DeleteResult{}, fmt.Errorf("commit notification: %w", err)
		}
	}
	return DeleteResult{VersionID: in.VersionID, DeleteMarker: vr.Entry.Marker}, nil
}

// deleteMarker writes a delete marker as the key's newest version; the
// If-Match conditions of in apply to the object it hides.
func (d *Driver) deleteMarker(ctx context.Context, inst Instance, in DeleteObjectInput) (DeleteResult, error) {
	key, event := in.Key, in.EventName
	ifETag := strings.Trim(strings.TrimSpace(in.IfMatch), `"`)
	// Filters see the current object's metadata, when there is one.
	var meta ObjectMeta
	cur, curErr := d.lookup(ctx, inst.Name, key)
	if curErr == nil {
		meta = entryInfo(inst.Name, cur).Meta
	}
	cond := bucketindex.VersionCond{IfETag: ifETag}
	if ifETag == "*" {
		cond = bucketindex.VersionCond{IfExists: true}
	}
	if in.IfMatchModTime != nil || in.IfMatchSize != nil {
		switch {
		case curErr == nil && !matchModTimeSize(cur, in):
			return DeleteResult{}, ErrPreconditionFailed
		case curErr == nil:
			cond.IfTag = cur.Tag // still the object checked
		case ifETag == "":
			cond.IfAbsent = true // still none: the conditions hold vacuously
		}
	}
	if event == "" {
		event = "ObjectRemoved:DeleteMarkerCreated"
	}
	res, err := d.reserve(ctx, inst, key, event, meta, 0)
	if err != nil {
		return DeleteResult{}, err
	}
	if in.EventFirst && res != nil {
		// The event names the version the marker hides.
		if curErr != nil || (ifETag != "" && ifETag != "*" && cur.ETag != ifETag) {
			abort(ctx, res)
			return DeleteResult{}, ErrPreconditionFailed
		}
		if err := res.Commit(ctx, versionInfo(inst.Name, inst.Versioning, cur)); err != nil {
			return DeleteResult{}, fmt.Errorf("commit notification: %w", err)
		}
		res = nil
	}
	e := bucketindex.Entry{Key: key, ModTime: d.opts.Now().UTC(), Owner: inst.Owner, Tag: d.newTag(), Marker: true}
	oi, err := d.link(ctx, inst.Name, e, cond, res, false, nil, nil)
	d.quotaFreed(inst, nil) // a marker is a version too: count it at the next check
	if err != nil {
		return DeleteResult{}, err // ErrNoSuchKey: If-Match and no current object (AWS: 404)
	}
	return DeleteResult{VersionID: oi.VersionID, DeleteMarker: true}, nil
}

// matchModTimeSize evaluates x-amz-if-match-last-modified-time and
// x-amz-if-match-size on e (times compared to the second, as sent).
func matchModTimeSize(e bucketindex.Entry, in DeleteObjectInput) bool {
	if e.Marker {
		return true // not an object: as if absent
	}
	if t := in.IfMatchModTime; t != nil && !e.ModTime.Truncate(time.Second).Equal(t.Truncate(time.Second)) {
		return false
	}
	return in.IfMatchSize == nil || *in.IfMatchSize == e.Size
}

// CopyObject copies data (no sharing: each object owns its data objects, so
// collection never needs reference counts).
func (d *Driver) CopyObject(ctx context.Context, in CopyObjectInput) (ObjectInfo, error) {
	src, rd, err := d.getObjectVersion(ctx, in.SrcBucket, in.SrcKey, in.SrcVersionID, nil, sseFrom(ctx).CopySourceKey)
	var dm *DeleteMarkerError
	if errors.As(err, &dm) && in.SrcVersionID != "" {
		// S3: a delete marker is not a copy source (400 InvalidRequest).
		return ObjectInfo{}, fmt.Errorf("%w: the source version is a delete marker", ErrInvalidArgument)
	}
	if err != nil {
		return ObjectInfo{}, err
	}
	defer rd.Close()
	if in.SrcCheck != nil {
		if err := in.SrcCheck(src); err != nil {
			return ObjectInfo{}, err
		}
	}
	if err := CheckConditions(src, in.SrcCond); err != nil {
		// x-amz-copy-source-if-none-match / -if-modified-since: a copy
		// has no 304, every failed source condition is 412 (S3).
		return ObjectInfo{}, ErrPreconditionFailed
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
	meta.Tags = src.Meta.Tags
	if in.ReplaceTags {
		meta.Tags = in.Meta.Tags
	}
	// A copy is a new version: its lock comes from the request or the
	// destination bucket's default, never from the source.
	meta.LockMode, meta.LockUntil, meta.LegalHold = in.Meta.LockMode, in.Meta.LockUntil, in.Meta.LegalHold
	meta.StorageClass = in.StorageClass
	oi, err := d.PutObject(ctx, PutObjectInput{
		Bucket: in.DstBucket, Key: in.DstKey, Body: body, Size: src.Size, Meta: meta,
		EventName: "ObjectCreated:Copy",
	})
	oi.SourceVersionID = src.VersionID
	return oi, err
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
	err := d.withIndex(ctx, in.Bucket, func(_ Instance, ix bucketindex.Index) (err error) {
		res = ListObjectsResult{}
		after := after
		want := in.MaxKeys
		if in.Delimiter != "" {
			want = max(want, 100) // common prefixes may swallow many keys
		}
		it, err := ix.NewIter(ctx, after, in.Prefix, want)
		if err != nil {
			return err
		}
		// Over the view, Close says whether what the page read is durable.
		defer func() { err = errors.Join(err, it.Close()) }()
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
			if count == in.MaxKeys {
				// Peek: the entry after a full page only says the listing
				// goes on, and is neither decoded nor read past.
				_, more, err := it.Peek(ctx)
				res.IsTruncated = more
				return err
			}
			if in.Delimiter != "" {
				// The key alone decides whether the entry is in a common
				// prefix (then it is not decoded).
				key, ok, err := it.Peek(ctx)
				if err != nil || !ok {
					return err
				}
				rest := key[len(in.Prefix):]
				if i := strings.Index(rest, in.Delimiter); i >= 0 {
					cp := key[:len(in.Prefix)+i+len(in.Delimiter)]
					if cp != after {
						res.CommonPrefixes = append(res.CommonPrefixes, cp)
						res.NextMarker = cp
						count++
					}
					// Skip every key under this prefix (one seek on the
					// view): no valid key continues with 0xff.
					after = cp + "\xff"
					it.SkipPast(after)
					continue
				}
			}
			e, ok, err := it.Next(ctx)
			if err != nil || !ok {
				return err
			}
			if res.Objects == nil { // grown once
				res.Objects = make([]ListedObject, 0, in.MaxKeys-count)
			}
			// Filled in place, not copied.
			res.Objects = res.Objects[:len(res.Objects)+1]
			setListedInfo(&res.Objects[len(res.Objects)-1], e)
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

func (d *Driver) countIndexWrite(t0 time.Time, err error) {
	if err == nil {
		d.idxWriteNanos.Add(uint64(time.Since(t0)))
		d.idxWrites.Add(1)
	}
}

// IndexWriteStats returns how many object links and unlinks completed
// since New and their summed latency: monotonic counters from which a
// caller derives the recent write rate and mean latency (the reshard
// copy's pacing signal).
func (d *Driver) IndexWriteStats() (n uint64, total time.Duration) {
	return d.idxWrites.Load(), time.Duration(d.idxWriteNanos.Load())
}
