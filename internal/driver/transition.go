package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// TransitionInput moves one version's data to another storage class.
type TransitionInput struct {
	Bucket, Key string
	VersionID   string // "" = the current version
	// StorageClass is the target class (configured, not STANDARD's pool
	// unless the version is elsewhere).
	StorageClass string
	// IfETag and IfModTime, when set, make the move conditional on the
	// version still being the one the caller decided on
	// (ErrPreconditionFailed otherwise).
	IfETag    string
	IfModTime time.Time
	// EventNames are the notifications emitted once the move is stored
	// (lifecycle: RGW's transition event types).
	EventNames []string
}

// TransitionResult says what TransitionObject did.
type TransitionResult struct {
	Moved bool  // false: already in the class
	Bytes int64 // bytes copied (stored bytes: ciphertext for SSE)
}

// TransitionObject copies a version's data into the target class's pool
// and then switches the version's manifest to the copy in one guarded
// index step (set_version_data): the key, version id, ETag and metadata
// stay. If the version was replaced or moved meanwhile the copy is
// removed and ErrPreconditionFailed returned. The old data goes to the
// collector, which waits GCMinWait, so a GET that read the old manifest
// still finishes. Encrypted runs are copied as stored (ciphertext): the
// copy records the name its key derives from.
func (d *Driver) TransitionObject(ctx context.Context, in TransitionInput) (TransitionResult, error) {
	pl, err := d.placementFor(in.StorageClass)
	if err != nil {
		return TransitionResult{}, err
	}
	inst, err := d.Instance(ctx, in.Bucket)
	if err != nil {
		return TransitionResult{}, err
	}
	e, state, err := d.lookupVersion(ctx, in.Bucket, in.Key, in.VersionID)
	if err != nil {
		return TransitionResult{}, err
	}
	if e.Marker {
		return TransitionResult{}, ErrPreconditionFailed
	}
	if (in.IfETag != "" && e.ETag != in.IfETag) || (!in.IfModTime.IsZero() && !e.ModTime.Equal(in.IfModTime)) {
		return TransitionResult{}, ErrPreconditionFailed
	}
	if e.Class == classField(pl.class) {
		return TransitionResult{}, nil
	}
	oi := versionInfo(in.Bucket, state, e)
	var reservations []Reservation
	abortAll := func() {
		for _, r := range reservations {
			abort(ctx, r)
		}
	}
	for _, ev := range in.EventNames {
		r, err := d.reserve(ctx, inst, in.Key, ev, oi.Meta, e.Size)
		if err != nil {
			abortAll()
			return TransitionResult{}, err
		}
		if r != nil {
			reservations = append(reservations, r)
		}
	}
	owner := inst.ID + "/" + in.Key
	var moved bucketindex.Manifest
	var bytes int64
	for _, run := range e.Manifest.Runs {
		nr, err := d.copyRun(ctx, run, pl, owner)
		if err != nil {
			d.removeManifest(context.WithoutCancel(ctx), moved)
			abortAll()
			return TransitionResult{}, err
		}
		moved.Runs = append(moved.Runs, nr)
		bytes += run.Size
	}
	d.failpoint("transition-after-copy")
	id := e.VersionID
	if id == "" {
		id = bucketindex.NullVersion
	}
	after := e
	after.Manifest, after.Class = moved, classField(pl.class)
	// The events are made durable before the switch, as lifecycle
	// expiries are (DeleteObjectInput.EventFirst): a crash between the two
	// makes the next pass move the version again and emit its events again
	// (with the same request id), instead of losing the events of a move
	// that happened.
	for _, r := range reservations {
		if err := r.Commit(ctx, versionInfo(in.Bucket, state, after)); err != nil {
			d.removeManifest(context.WithoutCancel(ctx), moved)
			abortAll()
			return TransitionResult{}, fmt.Errorf("commit notification: %w", err)
		}
	}
	gcTag := e.Tag + "~t" + d.newTag()
	var shard string
	err = d.withIndex(ctx, in.Bucket, func(_ Instance, ix bucketindex.Index) error {
		shard = ix.ShardFor(in.Key)
		return ix.SetVersionData(ctx, in.Key, id, e.Tag, e.Manifest, moved, after.Class, gcTag)
	})
	if err != nil {
		if definite(err) {
			// The switch did not happen: the copy is nobody's.
			d.removeManifest(context.WithoutCancel(ctx), moved)
		}
		if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrCanceled) {
			return TransitionResult{}, ErrPreconditionFailed // replaced or moved meanwhile
		}
		return TransitionResult{}, err
	}
	d.gc.enqueue(shard, gcTag, e.Manifest, d.opts.Now())
	return TransitionResult{Moved: true, Bytes: bytes}, nil
}

// copyRun copies a run's stripes as stored into pl under a fresh name.
// Stripes are written with DeferSync: the synced index switch that
// follows makes them durable, as a PUT's link does, except in a store of
// their own, synced here (a failure removes what was written).
//
// An inline run moves out of the entry: the class's pool holds its bytes
// as a stripe, as any other run's.
func (d *Driver) copyRun(ctx context.Context, run bucketindex.Run, pl placement, owner string) (bucketindex.Run, error) {
	nr := run
	nr.Prefix, nr.Pool, nr.KeyName = d.newTag(), pl.poolField(), ""
	if run.Enc {
		nr.KeyName = run.KeyPrefix()
	}
	// An inline run's bytes are its one stripe, read from the entry.
	var src objstore.IOContext
	if run.Inline {
		nr.Inline, nr.Data, nr.StripeSize = false, nil, StripeSize
	} else {
		var err error
		if src, err = d.dataIO(ctx, run.Pool); err != nil {
			return run, err
		}
	}
	var written []string
	fail := func(err error) (bucketindex.Run, error) {
		d.removeObjectsIn(context.WithoutCancel(ctx), pl.io, written)
		return run, err
	}
	for i := int64(0); i < nr.NumStripes(); i++ {
		data := run.Data
		if !run.Inline {
			n := min(run.StripeSize, run.Size-i*run.StripeSize)
			if run.Size == 0 {
				n = 0
			}
			rop := objstore.NewReadOp()
			rd := rop.Read(0, n)
			if err := src.OperateRead(ctx, run.StripeOID(i), rop); err != nil {
				return fail(err)
			}
			if int64(len(rd.Data)) != n {
				return fail(fmt.Errorf("transition: stripe %s: %d bytes, want %d", run.StripeOID(i), len(rd.Data), n))
			}
			data = rd.Data
		}
		oid := nr.StripeOID(i)
		op := objstore.NewWriteOp().WriteFull(data)
		op.DeferSync = true
		if i == 0 {
			op.SetXattr(ownerXattr, []byte(owner))
		}
		written = append(written, oid)
		if err := pl.io.Operate(ctx, oid, op); err != nil {
			return fail(err)
		}
	}
	if pl.ownSync {
		if err := objstore.Sync(ctx, pl.io); err != nil {
			return fail(err)
		}
	}
	return nr, nil
}
