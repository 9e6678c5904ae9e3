package s3api

import (
	"context"
	"io"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
)

// Backend is everything the S3 handlers need from the gateway services. It
// has no HTTP types. Errors are driver's domain errors (driver.ErrNoSuchKey,
// ...), mapped to S3 errors in one table in this package. Authorisation
// (bucket ownership) is the handlers' job; the backend does not check it.
type Backend interface {
	// Users and keys.
	LookupAccessKey(ctx context.Context, accessKey string) (driver.User, string, error) // user, secret
	CreateUser(ctx context.Context, u driver.User) (driver.User, error)                 // generates keys if none
	GetUser(ctx context.Context, uid string) (driver.User, error)
	ListUsers(ctx context.Context) ([]string, error)
	RemoveUser(ctx context.Context, uid string) error
	UserByEmail(ctx context.Context, email string) (driver.User, error) // ErrNoSuchUser

	// Access control (authorize.go, acl.go, policy.go). BucketAuth is cached
	// with the bucket instance; the caller must not modify it.
	BucketAuth(ctx context.Context, name string) (*driver.BucketAuth, error)
	UpdateBucketAccess(ctx context.Context, name string, fn func(driver.Instance, *driver.BucketAccess) error) error
	// SetObjectACL sets the ACL of version vid of key ("" = current),
	// keeping its owner.
	SetObjectACL(ctx context.Context, bucket, key, vid string, acl authz.ACL) error

	// Buckets. numShards 0 means the configured default.
	CreateBucket(ctx context.Context, owner, name, location string, numShards int) error
	GetBucket(ctx context.Context, name string) (driver.BucketInfo, error)
	DeleteBucket(ctx context.Context, name string) error
	ListBuckets(ctx context.Context, owner string) ([]driver.BucketInfo, error) // owner "" = all
	BucketStats(ctx context.Context, name string) (driver.BucketStats, error)
	CheckIndexView(ctx context.Context, bucket string, max int) (bool, []string, error)
	FixIndexView(ctx context.Context, bucket string) (driver.IndexViewFix, error)
	// Bucket CORS rules. Get returns driver.ErrNoSuchCORSConfiguration when
	// the bucket has none; Put with no rules removes them.
	GetBucketCORS(ctx context.Context, bucket string) ([]driver.CORSRule, error)
	PutBucketCORS(ctx context.Context, bucket string, rules []driver.CORSRule) error

	// Objects.
	PutObject(ctx context.Context, in driver.PutObjectInput) (driver.ObjectInfo, error)
	// GetObject returns the object's info and a reader over rng (nil = whole
	// object). The caller closes the reader. Conditions are checked by the
	// caller on the returned info before streaming.
	GetObject(ctx context.Context, bucket, key string, rng *driver.Range) (driver.ObjectInfo, io.ReadCloser, error)
	HeadObject(ctx context.Context, bucket, key string) (driver.ObjectInfo, error)
	// DeleteObject deletes key; deleting a missing key succeeds (S3 semantics).
	DeleteObject(ctx context.Context, bucket, key string) error
	CopyObject(ctx context.Context, in driver.CopyObjectInput) (driver.ObjectInfo, error)
	ListObjects(ctx context.Context, in driver.ListObjectsInput) (driver.ListObjectsResult, error)

	// Multipart.
	CreateMultipartUpload(ctx context.Context, bucket, key string, meta driver.ObjectMeta) (uploadID string, err error)
	// UploadPart: checksums (algorithm → base64) are the client's verified
	// values, complete when body reaches EOF; a key with "" announces one
	// that arrives by then (the backend need not compute it itself).
	UploadPart(ctx context.Context, bucket, key, uploadID string, part int, body io.Reader, size int64, checksums map[string]string) (driver.PartInfo, error)
	ListParts(ctx context.Context, bucket, key, uploadID string, marker, max int) (driver.ListPartsResult, error)
	ListMultipartUploads(ctx context.Context, in driver.ListUploadsInput) (driver.ListUploadsResult, error)
	// CompleteMultipartUpload checks sum, the object checksum the client
	// declared (x-amz-checksum-*, never verified against the XML body),
	// against the one derived from the parts.
	CompleteMultipartUpload(ctx context.Context, bucket, key, uploadID string, parts []driver.CompletePart, sum driver.ObjectChecksum) (driver.ObjectInfo, error)
	AbortMultipartUpload(ctx context.Context, bucket, key, uploadID string) error
}
