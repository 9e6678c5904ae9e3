package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// PutBucketVersioning sets a bucket's versioning state: VersioningEnabled
// or VersioningSuspended (a bucket never returns to unversioned). The
// instance is rewritten guarded by its version; other gateways see the
// change within the instance cache's TTL, and until then a write they make
// to a key that already has versions still keeps them (the index class
// treats an unversioned write to a versioned key as a Suspended one).
func (d *Driver) PutBucketVersioning(ctx context.Context, bucket, status string) error {
	if status != VersioningEnabled && status != VersioningSuspended {
		return fmt.Errorf("%w: versioning status %q", ErrMalformedXML, status)
	}
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
		if inst.Versioning == status {
			return nil
		}
		if inst.ObjectLock && status == VersioningSuspended {
			return fmt.Errorf("%w: versioning cannot be suspended on a bucket with object lock", ErrInvalidBucketState)
		}
		inst.Versioning = status
		err = d.WriteInstance(ctx, inst, ver)
		if !errors.Is(err, objstore.ErrCanceled) {
			return err
		}
	}
	return fmt.Errorf("bucket %s: instance changed under 20 attempts", bucket)
}

// GetBucketVersioning returns "", VersioningEnabled or VersioningSuspended.
func (d *Driver) GetBucketVersioning(ctx context.Context, bucket string) (string, error) {
	inst, err := d.Instance(ctx, bucket)
	return inst.Versioning, err
}

// ListObjectVersions returns one page of versions and delete markers, with
// S3's prefix/delimiter/marker semantics; max-keys counts versions, markers
// and common prefixes together. Every bucket has versions: on a
// never-versioned one each object is its null version.
func (d *Driver) ListObjectVersions(ctx context.Context, in ListVersionsInput) (ListVersionsResult, error) {
	var res ListVersionsResult
	if in.VersionIDMarker != "" {
		if in.KeyMarker == "" {
			return res, fmt.Errorf("%w: a version-id marker needs a key marker", ErrInvalidArgument)
		}
		if _, ok := bucketindex.ParseVersionID(in.VersionIDMarker); !ok && in.VersionIDMarker != bucketindex.NullVersion {
			return res, fmt.Errorf("%w: invalid version id marker", ErrInvalidArgument)
		}
	}
	if in.MaxKeys <= 0 {
		_, err := d.Instance(ctx, in.Bucket)
		return res, err
	}
	err := d.withIndex(ctx, in.Bucket, func(inst Instance, ix bucketindex.Index) error {
		res = ListVersionsResult{}
		mark := bucketindex.VersionMark{Key: in.KeyMarker}
		if in.VersionIDMarker != "" {
			seq, ok := bucketindex.ParseVersionID(in.VersionIDMarker)
			if !ok { // "null": its sequence (0 for a legacy entry: after the key)
				e, err := ix.GetVersion(ctx, in.KeyMarker, bucketindex.NullVersion)
				if err != nil && !errors.Is(err, objstore.ErrNotFound) {
					return err
				}
				seq = e.Seq
			}
			mark.Seq = seq
		}
		want := in.MaxKeys + 1 // one more: is there anything after the page?
		if in.Delimiter != "" {
			want = max(want, 100) // common prefixes may swallow many versions
		}
		it, err := ix.NewVersionIter(ctx, mark, in.Prefix, want)
		if err != nil {
			return err
		}
		count := 0
		lastCP := ""
		for {
			key, ok := it.Peek()
			if !ok {
				return nil
			}
			if in.Delimiter != "" {
				rest := key[len(in.Prefix):]
				if j := strings.Index(rest, in.Delimiter); j >= 0 {
					cp := in.Prefix + rest[:j+len(in.Delimiter)]
					if cp != lastCP && cp != in.KeyMarker {
						if count == in.MaxKeys {
							res.IsTruncated = true
							return nil
						}
						res.CommonPrefixes = append(res.CommonPrefixes, cp)
						res.NextKeyMarker, res.NextVersionIDMarker = cp, ""
						lastCP = cp
						count++
					}
					// Skip every version under this prefix (only the shard
					// cursors whose page ends inside it read again): no key
					// continues with 0xff.
					if err := it.SkipPast(ctx, cp+"\xff"); err != nil {
						return err
					}
					continue
				}
			}
			if count == in.MaxKeys {
				res.IsTruncated = true
				return nil
			}
			v, _, err := it.Next(ctx)
			if err != nil {
				return err
			}
			oi := versionInfo(in.Bucket, inst.Versioning, v.Entry)
			oi.IsLatest = v.IsLatest
			res.Versions = append(res.Versions, oi)
			res.NextKeyMarker, res.NextVersionIDMarker = v.Key, oi.VersionID
			if oi.VersionID == "" {
				res.NextVersionIDMarker = bucketindex.NullVersion
			}
			count++
		}
	})
	return res, err
}
