package driver

import (
	"context"
	"errors"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// ErrNoSuchCORSConfiguration: the bucket has no CORS rules.
var ErrNoSuchCORSConfiguration = errors.New("no CORS configuration")

// CORSRule is one rule of a bucket's CORS configuration, as PutBucketCors
// sent it (validated by s3api). It lives in the bucket instance (field
// "cors"), so preflights read it from the instance cache.
type CORSRule struct {
	ID             string   `json:"id,omitempty"`
	AllowedOrigins []string `json:"origins"`
	AllowedMethods []string `json:"methods"`
	AllowedHeaders []string `json:"headers,omitempty"`
	ExposeHeaders  []string `json:"expose,omitempty"`
	// MaxAgeSeconds is nil when the rule sets none.
	MaxAgeSeconds *int `json:"max_age,omitempty"`
}

// GetBucketCORS returns the bucket's CORS rules (from the instance cache, up
// to its TTL old on other gateways), or ErrNoSuchCORSConfiguration.
func (d *Driver) GetBucketCORS(ctx context.Context, bucket string) ([]CORSRule, error) {
	if !ValidBucketName(bucket) {
		return nil, ErrNoSuchBucket
	}
	inst, err := d.Instance(ctx, bucket)
	if err != nil {
		return nil, err
	}
	if len(inst.CORS) == 0 {
		return nil, ErrNoSuchCORSConfiguration
	}
	return inst.CORS, nil
}

// PutBucketCORS replaces the bucket's CORS rules; nil or empty removes them.
// It rewrites the instance with a version guard, retrying when another
// writer (a reshard step) got there first.
func (d *Driver) PutBucketCORS(ctx context.Context, bucket string, rules []CORSRule) error {
	return d.updateInstance(ctx, bucket, func(inst *Instance) { inst.CORS = rules })
}

// updateInstance applies fn to the stored instance of bucket and writes it
// back if its version did not change in between.
func (d *Driver) updateInstance(ctx context.Context, bucket string, fn func(*Instance)) error {
	if !ValidBucketName(bucket) {
		return ErrNoSuchBucket
	}
	for attempt := 0; ; attempt++ {
		ep, err := d.readEntryPoint(ctx, bucket)
		if err != nil {
			return err
		}
		inst, ver, err := d.ReadInstance(ctx, ep.ID)
		if err != nil {
			return err
		}
		fn(&inst)
		err = d.WriteInstance(ctx, inst, ver)
		if errors.Is(err, objstore.ErrCanceled) && attempt < 100 {
			continue
		}
		return err
	}
}
