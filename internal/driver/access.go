package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// BucketAccess is a bucket's access-control state as stored in its
// instance record (docs/format/bucket-instance.md). Zero fields mean S3's
// defaults: a private ACL owned by the bucket owner, no policy, no public
// access block, ObjectWriter ownership.
type BucketAccess struct {
	ACL               *authz.ACL               `json:"acl,omitempty"`
	Policy            string                   `json:"policy,omitempty"` // as the client sent it
	PublicAccessBlock *authz.PublicAccessBlock `json:"pab,omitempty"`
	Ownership         authz.Ownership          `json:"ownership,omitempty"`
}

// BucketAuth is a bucket's access state ready for authz.Evaluate, parsed
// once per cached instance version. Callers must not modify it.
type BucketAuth struct {
	Info              BucketInfo
	ACL               authz.ACL
	Policy            *authz.Policy // nil: none
	PolicyText        string
	PublicAccessBlock authz.PublicAccessBlock
	HasPAB            bool
	Ownership         authz.Ownership
	HasOwnership      bool
	// DefaultObjectACL is the ACL of an object without one of its own:
	// private, owned by the bucket owner.
	DefaultObjectACL authz.ACL
}

// NewBucketAuth parses an instance's access state (for backends other
// than the driver's own cache, e.g. nullgw).
func NewBucketAuth(inst Instance) *BucketAuth {
	a := &BucketAuth{Info: inst.info(), PolicyText: inst.Access.Policy, Ownership: inst.Access.Ownership}
	a.DefaultObjectACL, _ = authz.CannedACL("private", authz.Owner{ID: inst.Owner}, authz.Owner{ID: inst.Owner})
	if inst.Access.ACL != nil {
		a.ACL = *inst.Access.ACL
	} else {
		a.ACL, _ = authz.CannedACL("private", authz.Owner{ID: inst.Owner}, authz.Owner{ID: inst.Owner})
	}
	if inst.Access.Policy != "" {
		// Validated when stored; a document that no longer parses (e.g.
		// after a downgrade) denies nothing and allows nothing.
		a.Policy, _ = authz.ParseBucketPolicy([]byte(inst.Access.Policy), inst.Name)
	}
	if inst.Access.PublicAccessBlock != nil {
		a.PublicAccessBlock, a.HasPAB = *inst.Access.PublicAccessBlock, true
	}
	if a.Ownership != "" {
		a.HasOwnership = true
	} else {
		a.Ownership = authz.OwnershipObjectWriter
	}
	return a
}

// BucketAuth returns the bucket's access state, cached with its instance
// (so a change made on another gateway applies here within
// bucketCacheTTL).
func (d *Driver) BucketAuth(ctx context.Context, name string) (*BucketAuth, error) {
	if !ValidBucketName(name) {
		return nil, ErrNoSuchBucket
	}
	inst, err := d.Instance(ctx, name)
	if err != nil {
		return nil, err
	}
	d.bmu.Lock()
	defer d.bmu.Unlock()
	ce := d.buckets[name]
	if ce == nil || ce.inst.ID != inst.ID {
		return NewBucketAuth(inst), nil
	}
	if ce.auth == nil {
		ce.auth = NewBucketAuth(ce.inst)
	}
	return ce.auth, nil
}

// UpdateBucketAccess applies fn to the bucket's stored access state and
// writes it back, retrying when the instance changed meanwhile (a reshard
// or another update): a read-modify-write guarded by the object version.
func (d *Driver) UpdateBucketAccess(ctx context.Context, name string, fn func(inst Instance, a *BucketAccess) error) error {
	for attempt := 0; attempt < 20; attempt++ {
		ep, err := d.readEntryPoint(ctx, name)
		if err != nil {
			return err
		}
		inst, ver, err := d.ReadInstance(ctx, ep.ID)
		if err != nil {
			return err
		}
		if err := fn(inst, &inst.Access); err != nil {
			return err
		}
		err = d.WriteInstance(ctx, inst, ver)
		if !errors.Is(err, objstore.ErrCanceled) {
			return err
		}
	}
	return fmt.Errorf("bucket %s: instance kept changing", name)
}

// SetObjectACL replaces an object's ACL (its owner stays). The entry is
// rewritten pointing at the same data, only if it still names the same
// write; a concurrent overwrite wins (ErrPreconditionFailed is not
// returned: the new object simply keeps its own ACL, as in S3 where the
// later request wins).
func (d *Driver) SetObjectACL(ctx context.Context, bucket, key string, acl authz.ACL) error {
	for attempt := 0; attempt < 10; attempt++ {
		e, err := d.lookup(ctx, bucket, key)
		if err != nil {
			return err
		}
		var meta ObjectMeta
		if len(e.Meta) > 0 {
			if err := json.Unmarshal(e.Meta, &meta); err != nil {
				return fmt.Errorf("object %s/%s meta: %w", bucket, key, err)
			}
		}
		if meta.ACL != nil {
			acl.Owner = meta.ACL.Owner
		} else {
			acl.Owner = authz.Owner{ID: e.Owner}
		}
		meta.ACL = &acl
		e.Meta, _ = json.Marshal(meta)
		err = d.withIndex(ctx, bucket, func(_ Instance, ix bucketindex.Index) error {
			_, err := ix.Link(ctx, e, bucketindex.LinkCond{IfTag: e.Tag})
			return err
		})
		if !errors.Is(err, objstore.ErrCanceled) {
			return err
		}
	}
	return ErrSlowDown
}
