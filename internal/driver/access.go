package driver

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairn-s3/cairn/internal/authz"
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

// SetObjectACL replaces the ACL of version vid of key ("" = the current
// version); the version's owner stays. Each version has its own ACL, in
// its metadata, changed in place by set_version_meta guarded by the
// metadata read: a concurrent change to the same version makes it decide
// again, an overwrite (a new version) keeps its own ACL. A delete marker
// named by id is ErrMethodNotAllowed.
func (d *Driver) SetObjectACL(ctx context.Context, bucket, key, vid string, acl authz.ACL) error {
	_, err := d.updateVersion(ctx, bucket, key, vid, "", func(_ Instance, oi ObjectInfo, m *ObjectMeta) error {
		a := acl
		a.Owner = authz.Owner{ID: oi.Owner} // the ACL's owner, else the entry's
		m.ACL = &a
		return nil
	})
	return err
}
