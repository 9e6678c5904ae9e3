package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objectlock"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Data management: bucket and object tags, object lock, the lifecycle
// configuration. Bucket-level settings live in the bucket instance; a
// version's tags, retention and legal hold live in its index entry's
// metadata, changed in place by set_version_meta (guarded by the metadata
// read, so concurrent changes are never lost).

// LifecycleRegistry is the lifecycle worker as the driver sees it: buckets
// with a configuration are registered for processing.
type LifecycleRegistry interface {
	Register(ctx context.Context, bucket string) error
	Unregister(ctx context.Context, bucket string) error
}

type lcHolder struct{ r LifecycleRegistry }

// lcReg is set once by the server after the worker is built (it needs the
// driver first); nil until then.
type lcReg = atomic.Pointer[lcHolder]

// SetLifecycleRegistry connects the lifecycle worker.
func (d *Driver) SetLifecycleRegistry(r LifecycleRegistry) { d.lc.Store(&lcHolder{r: r}) }

func (d *Driver) lifecycle() LifecycleRegistry {
	if h := d.lc.Load(); h != nil {
		return h.r
	}
	return nil
}

// UpdateInstance applies fn to the bucket's instance and writes it back,
// guarded by the instance's version (retried when another change won).
func (d *Driver) UpdateInstance(ctx context.Context, bucket string, fn func(*Instance) error) error {
	for attempt := 0; attempt < 20; attempt++ {
		d.Invalidate(bucket)
		ep, err := d.readEntryPoint(ctx, bucket)
		if err != nil {
			return err
		}
		inst, ver, err := d.ReadInstance(ctx, ep.ID)
		if err != nil {
			return err
		}
		if err := fn(&inst); err != nil {
			return err
		}
		err = d.WriteInstance(ctx, inst, ver)
		if !errors.Is(err, objstore.ErrCanceled) {
			return err
		}
	}
	return fmt.Errorf("bucket %s: instance changed under 20 attempts", bucket)
}

// PutBucketTagging replaces the bucket's tag set (validated by the caller).
func (d *Driver) PutBucketTagging(ctx context.Context, bucket string, tags map[string]string) error {
	return d.UpdateInstance(ctx, bucket, func(inst *Instance) error {
		inst.Tags = maps.Clone(tags)
		return nil
	})
}

// GetBucketTagging returns the bucket's tags; ErrNoSuchTagSet when none.
func (d *Driver) GetBucketTagging(ctx context.Context, bucket string) (map[string]string, error) {
	inst, err := d.Instance(ctx, bucket)
	if err != nil {
		return nil, err
	}
	if len(inst.Tags) == 0 {
		return nil, ErrNoSuchTagSet
	}
	return maps.Clone(inst.Tags), nil
}

// DeleteBucketTagging removes the bucket's tags (none is fine).
func (d *Driver) DeleteBucketTagging(ctx context.Context, bucket string) error {
	return d.UpdateInstance(ctx, bucket, func(inst *Instance) error {
		inst.Tags = nil
		return nil
	})
}

// GetObjectTagging returns version vid ("" = current) of key; its tags are
// in Meta.Tags.
func (d *Driver) GetObjectTagging(ctx context.Context, bucket, key, vid string) (ObjectInfo, error) {
	return d.HeadObjectVersion(ctx, bucket, key, vid)
}

// PutObjectTagging replaces the tags of a version (event ObjectTagging:Put).
func (d *Driver) PutObjectTagging(ctx context.Context, bucket, key, vid string, tags map[string]string) (ObjectInfo, error) {
	return d.updateVersionMeta(ctx, bucket, key, vid, "ObjectTagging:Put", func(_ Instance, m *ObjectMeta) error {
		m.Tags = maps.Clone(tags)
		return nil
	})
}

// DeleteObjectTagging removes the tags of a version (ObjectTagging:Delete).
func (d *Driver) DeleteObjectTagging(ctx context.Context, bucket, key, vid string) (ObjectInfo, error) {
	return d.updateVersionMeta(ctx, bucket, key, vid, "ObjectTagging:Delete", func(_ Instance, m *ObjectMeta) error {
		m.Tags = nil
		return nil
	})
}

// updateVersionMeta changes the metadata of version vid ("" = current) of
// key in place with fn, notifying event ("" = none) once the change is
// stored. A concurrent change to the same version makes it start over.
func (d *Driver) updateVersionMeta(ctx context.Context, bucket, key, vid, event string, fn func(Instance, *ObjectMeta) error) (ObjectInfo, error) {
	return d.updateVersion(ctx, bucket, key, vid, event, func(inst Instance, _ ObjectInfo, m *ObjectMeta) error { return fn(inst, m) })
}

// updateVersion is updateVersionMeta whose fn also sees the version as
// read (its owner, for an ACL).
func (d *Driver) updateVersion(ctx context.Context, bucket, key, vid, event string, fn func(Instance, ObjectInfo, *ObjectMeta) error) (ObjectInfo, error) {
	for attempt := 0; ; attempt++ {
		inst, err := d.Instance(ctx, bucket)
		if err != nil {
			return ObjectInfo{}, err
		}
		e, state, err := d.lookupVersion(ctx, bucket, key, vid)
		if err != nil {
			return ObjectInfo{}, err
		}
		oi := versionInfo(bucket, state, e)
		meta := oi.Meta
		if err := fn(inst, oi, &meta); err != nil {
			return ObjectInfo{}, err
		}
		raw, err := json.Marshal(meta)
		if err != nil {
			return ObjectInfo{}, err
		}
		id := e.VersionID
		if id == "" {
			id = bucketindex.NullVersion
		}
		var res Reservation
		if event != "" {
			if res, err = d.reserve(ctx, inst, key, event, meta, e.Size); err != nil {
				return ObjectInfo{}, err
			}
		}
		err = d.withIndex(ctx, bucket, func(_ Instance, ix bucketindex.Index) error {
			return ix.SetVersionMeta(ctx, key, id, e.Tag, e.Meta, raw)
		})
		if err != nil {
			abort(ctx, res)
			if (errors.Is(err, objstore.ErrCanceled) || errors.Is(err, objstore.ErrNotFound)) && attempt < 10 {
				continue // changed or replaced since read: decide again
			}
			return ObjectInfo{}, err
		}
		oi.Meta = meta
		if res != nil {
			if err := res.Commit(ctx, oi); err != nil {
				return ObjectInfo{}, fmt.Errorf("commit notification: %w", err)
			}
		}
		return oi, nil
	}
}

// PutObjectLockConfiguration sets the bucket's default retention (nil:
// none), enabling object lock on a bucket created without it when its
// versioning is Enabled (AWS since 2023); otherwise ErrInvalidBucketState.
func (d *Driver) PutObjectLockConfiguration(ctx context.Context, bucket string, def *objectlock.DefaultRetention) error {
	return d.UpdateInstance(ctx, bucket, func(inst *Instance) error {
		if !inst.ObjectLock {
			// AWS enables object lock on an existing bucket whose
			// versioning is Enabled (and it can never be suspended again).
			if inst.Versioning != VersioningEnabled {
				return fmt.Errorf("%w: Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration", ErrInvalidBucketState)
			}
			inst.ObjectLock = true
		}
		inst.LockDefault = def
		return nil
	})
}

// GetObjectLockConfiguration returns the bucket's default retention (nil
// when none); ErrNoSuchLockConfig for a bucket without object lock.
func (d *Driver) GetObjectLockConfiguration(ctx context.Context, bucket string) (*objectlock.DefaultRetention, error) {
	inst, err := d.Instance(ctx, bucket)
	if err != nil {
		return nil, err
	}
	if !inst.ObjectLock {
		return nil, ErrNoSuchLockConfig
	}
	return inst.LockDefault, nil
}

// Retention returns a version's retention from its metadata.
func Retention(m ObjectMeta) objectlock.Retention {
	return objectlock.Retention{Mode: m.LockMode, Until: m.RetainUntil()}
}

// PutObjectRetention sets a version's retention under objectlock's rules
// (COMPLIANCE only extends; GOVERNANCE shortens only with bypass).
func (d *Driver) PutObjectRetention(ctx context.Context, bucket, key, vid string, r objectlock.Retention, bypass bool) (ObjectInfo, error) {
	return d.updateVersionMeta(ctx, bucket, key, vid, "", func(inst Instance, m *ObjectMeta) error {
		if !inst.ObjectLock {
			return ErrNoLockConfig
		}
		if err := objectlock.CheckRetentionChange(Retention(*m), r, bypass, d.opts.Now()); err != nil {
			return err
		}
		m.LockMode, m.LockUntil = r.Mode, LockDate(r.Until)
		return nil
	})
}

// GetObjectRetention returns a version's retention; ErrNoSuchObjectLock
// when it has none.
func (d *Driver) GetObjectRetention(ctx context.Context, bucket, key, vid string) (objectlock.Retention, error) {
	oi, err := d.lockedVersion(ctx, bucket, key, vid)
	if err != nil {
		return objectlock.Retention{}, err
	}
	if oi.Meta.LockMode == "" {
		return objectlock.Retention{}, ErrNoSuchObjectLock
	}
	return Retention(oi.Meta), nil
}

// PutObjectLegalHold turns a version's legal hold on or off.
func (d *Driver) PutObjectLegalHold(ctx context.Context, bucket, key, vid string, on bool) (ObjectInfo, error) {
	return d.updateVersionMeta(ctx, bucket, key, vid, "", func(inst Instance, m *ObjectMeta) error {
		if !inst.ObjectLock {
			return ErrNoLockConfig
		}
		m.LegalHold = "OFF"
		if on {
			m.LegalHold = "ON"
		}
		return nil
	})
}

// GetObjectLegalHold returns whether a version's legal hold is on;
// ErrNoSuchObjectLock when it was never set.
func (d *Driver) GetObjectLegalHold(ctx context.Context, bucket, key, vid string) (bool, error) {
	oi, err := d.lockedVersion(ctx, bucket, key, vid)
	if err != nil {
		return false, err
	}
	if oi.Meta.LegalHold == "" {
		return false, ErrNoSuchObjectLock
	}
	return oi.Meta.LegalHold == "ON", nil
}

func (d *Driver) lockedVersion(ctx context.Context, bucket, key, vid string) (ObjectInfo, error) {
	inst, err := d.Instance(ctx, bucket)
	if err != nil {
		return ObjectInfo{}, err
	}
	if !inst.ObjectLock {
		return ObjectInfo{}, ErrNoLockConfig
	}
	return d.HeadObjectVersion(ctx, bucket, key, vid)
}

// checkLock is the one place every removal of a version asks: a legal hold
// or an active retention refuses it (AccessDenied, an *objectlock.Error),
// GOVERNANCE yielding to bypass.
func (d *Driver) checkLock(m ObjectMeta, bypass bool) error {
	if m.LockMode == "" && m.LegalHold != "ON" {
		return nil
	}
	return objectlock.Check(Retention(m), m.LegalHold == "ON", bypass, d.opts.Now())
}

// Locked reports whether a version's removal would be refused without
// bypass (the lifecycle worker skips such versions).
func (d *Driver) Locked(m ObjectMeta) bool { return d.checkLock(m, false) != nil }

// lockForWrite applies object lock to the metadata of a new version: lock
// headers need an object lock bucket; without them the bucket's default
// retention applies.
func (d *Driver) lockForWrite(inst Instance, m *ObjectMeta) error {
	if !inst.ObjectLock {
		if m.LockMode != "" || m.LegalHold != "" {
			return ErrNoLockConfig
		}
		return nil
	}
	if m.LockMode == "" && inst.LockDefault != nil {
		cfg := objectlock.Configuration{}
		cfg.Rule = &struct {
			DefaultRetention *objectlock.DefaultRetention `xml:"DefaultRetention"`
		}{DefaultRetention: inst.LockDefault}
		r := cfg.Default(d.opts.Now())
		m.LockMode, m.LockUntil = r.Mode, LockDate(r.Until)
	}
	return nil
}

// PutBucketLifecycle stores a validated lifecycle configuration document
// and registers the bucket with the lifecycle worker.
func (d *Driver) PutBucketLifecycle(ctx context.Context, bucket string, doc []byte) error {
	if err := d.UpdateInstance(ctx, bucket, func(inst *Instance) error {
		inst.Lifecycle = string(doc)
		return nil
	}); err != nil {
		return err
	}
	if r := d.lifecycle(); r != nil {
		return r.Register(ctx, bucket)
	}
	return nil
}

// GetBucketLifecycle returns the stored document; ErrNoSuchLifecycle.
func (d *Driver) GetBucketLifecycle(ctx context.Context, bucket string) ([]byte, error) {
	inst, err := d.Instance(ctx, bucket)
	if err != nil {
		return nil, err
	}
	if inst.Lifecycle == "" {
		return nil, ErrNoSuchLifecycle
	}
	return []byte(inst.Lifecycle), nil
}

// DeleteBucketLifecycle removes the configuration and the registration.
func (d *Driver) DeleteBucketLifecycle(ctx context.Context, bucket string) error {
	if err := d.UpdateInstance(ctx, bucket, func(inst *Instance) error {
		inst.Lifecycle = ""
		return nil
	}); err != nil {
		return err
	}
	if r := d.lifecycle(); r != nil {
		return r.Unregister(ctx, bucket)
	}
	return nil
}
