package s3api

import (
	"net/http"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// Tenants (RGW's multitenancy, docs/design/tenants.md): a request's bucket
// is in the caller's tenant unless the path names one, "tenant:bucket"
// (or "tenant%3Abucket"): rc.bucket is then the driver's internal name
// ("tenant/bucket"), rc.bucketName the S3 name the client sees in
// responses. Virtual-host-style requests reach only the caller's own
// tenant, as in RGW (a host name cannot carry the separator).

// resolveBucket sets rc.bucket and rc.bucketName from the addressed
// bucket, a bare name meaning one in tenant.
func (s *Server) resolveBucket(rc *reqCtx, tenant string) error {
	rc.bucket, rc.bucketName = rc.rawBucket, rc.rawBucket
	if rc.rawBucket == "" {
		return nil
	}
	if rc.vhost {
		rc.bucket = driver.TenantBucket(tenant, rc.rawBucket)
		return nil
	}
	name, ok := driver.ParseBucketRef(rc.rawBucket, tenant)
	_, rc.bucketName = driver.SplitBucket(name)
	if !ok {
		return s3err.New(s3err.ErrInvalidBucketName, "The specified bucket is not valid: %q.", rc.rawBucket)
	}
	rc.bucket = name
	return nil
}

// tenant is the caller's tenant ("" for none, and for anonymous callers).
func (rc *reqCtx) tenant() string { return rc.ident.User.Tenant() }

// parsedCopySource is x-amz-copy-source with its bucket resolved in the
// caller's tenant ("tenant:bucket/key" names another).
func (rc *reqCtx) parsedCopySource(r *http.Request) (copySrc, error) {
	src, err := parseCopySource(r.Header.Get("X-Amz-Copy-Source"))
	if err != nil {
		return src, err
	}
	name, ok := driver.ParseBucketRef(src.bucket, rc.tenant())
	if !ok {
		return src, s3err.New(s3err.ErrInvalidBucketName, "The specified bucket is not valid: %q.", src.bucket)
	}
	src.bucket = name
	return src, nil
}
