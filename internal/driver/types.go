package driver

import (
	"github.com/cairn-s3/cairn/internal/ratelimit"

	"context"
	"github.com/cairn-s3/cairn/internal/kms/secret"

	"errors"
	"github.com/cairn-s3/cairn/internal/authz"
	"io"
	"time"
)

// Domain errors. s3api maps each to one S3 error code in a single table.
var (
	ErrNoSuchBucket        = errors.New("no such bucket")
	ErrBucketExists        = errors.New("bucket already exists")       // owned by someone else
	ErrBucketOwnedByYou    = errors.New("bucket already owned by you") // same owner
	ErrBucketNotEmpty      = errors.New("bucket not empty")
	ErrInvalidBucketName   = errors.New("invalid bucket name")
	ErrNoSuchKey           = errors.New("no such key")
	ErrInvalidKey          = errors.New("invalid object key") // empty, > 1024 bytes, NUL
	ErrNoSuchUpload        = errors.New("no such upload")
	ErrInvalidPart         = errors.New("invalid part")
	ErrInvalidPartOrder    = errors.New("invalid part order")
	ErrEntityTooSmall      = errors.New("entity too small")
	ErrEntityTooLarge      = errors.New("entity too large")
	ErrPreconditionFailed  = errors.New("precondition failed")
	ErrNoSuchUser          = errors.New("no such user")
	ErrUserExists          = errors.New("user exists")
	ErrKeyExists           = errors.New("access key in use")
	ErrInvalidAccessKey    = errors.New("invalid access key")
	ErrSlowDown            = errors.New("slow down")       // e.g. notification queue full
	ErrIncompleteBody      = errors.New("incomplete body") // fewer bytes than declared
	ErrInvalidArgument     = errors.New("invalid argument")
	ErrReshardInProgress   = errors.New("reshard in progress")
	ErrNoSuchReshard       = errors.New("no reshard for bucket")
	ErrNotEmptyUserBuckets = errors.New("user still owns buckets")
	ErrTooManyParts        = errors.New("too many parts")
	// ErrInvalidRequest and ErrBadDigest wrap a reason worth sending (a
	// checksum mode that does not match the upload's; a declared object
	// checksum that does not match the parts').
	ErrInvalidRequest   = errors.New("invalid request")
	ErrBadDigest        = errors.New("bad digest")
	ErrTooManyBuckets   = errors.New("too many buckets") // the owner's max_buckets is reached
	ErrNoSuchVersion    = errors.New("no such version")
	ErrInvalidVersionID = errors.New("invalid version id")
	ErrMalformedXML     = errors.New("malformed XML")
	// ErrMethodNotAllowed: GET/HEAD of a delete marker by version id.
	ErrMethodNotAllowed = errors.New("method not allowed")
	// Data management (tagging, object lock, lifecycle).
	ErrInvalidBucketState = errors.New("invalid bucket state")
	ErrNoSuchTagSet       = errors.New("no such tag set")
	// ErrNoLockConfig: object lock asked of a bucket created without it.
	ErrNoLockConfig = errors.New("bucket is missing object lock configuration")
	// ErrNoSuchLockConfig: GetObjectLockConfiguration of such a bucket.
	ErrNoSuchLockConfig = errors.New("object lock configuration does not exist")
	// ErrNoSuchObjectLock: a version without retention / legal hold.
	ErrNoSuchObjectLock = errors.New("object has no object lock configuration")
	ErrNoSuchLifecycle  = errors.New("no lifecycle configuration")
)

// DeleteMarkerError is returned by GET/HEAD when the version asked for (or
// the current one) is a delete marker: it wraps ErrNoSuchKey (no version id
// asked) or ErrMethodNotAllowed (the marker's id asked), and carries what
// S3 reports in x-amz-delete-marker / x-amz-version-id / Last-Modified.
type DeleteMarkerError struct {
	Err       error
	VersionID string
	ModTime   time.Time
}

func (e *DeleteMarkerError) Error() string { return e.Err.Error() + " (delete marker)" }
func (e *DeleteMarkerError) Unwrap() error { return e.Err }

// Bucket versioning states (S3's Status values; "" = never versioned).
const (
	VersioningEnabled   = "Enabled"
	VersioningSuspended = "Suspended"
)

// Limits.
const (
	MaxKeyLen       = 1024
	MaxObjectSize   = 5 << 40 // 5 TiB, S3's limit for multipart objects
	MaxPutSize      = 5 << 30 // single PUT
	MinPartSize     = 5 << 20 // all parts but the last
	MaxPartNumber   = 10000
	MaxUserMetaSize = 2 << 10 // S3: 2 KB of user metadata
)

// User is a gateway user and its S3 keys.
type User struct {
	ID          string    `json:"user_id"`
	DisplayName string    `json:"display_name"`
	Email       string    `json:"email,omitempty"`
	Keys        []Key     `json:"keys"`
	Admin       bool      `json:"admin,omitempty"`
	Created     time.Time `json:"created"`
	// MaxBuckets overrides the gateway's max-buckets for this user: 0 is
	// unlimited, negative forbids creating buckets (RGW's max_buckets).
	// Nil uses the gateway default.
	MaxBuckets *int `json:"max_buckets,omitempty"`

	// Account is the IAM account the user belongs to ("" outside accounts,
	// as every user before accounts). DisplayName is then its IAM user
	// name, unique case-insensitively within the account (as RGW).
	Account string `json:"account_id,omitempty"`
	// AccountRoot marks the account's root user (radosgw-admin
	// --account-root).
	AccountRoot bool `json:"account_root,omitempty"`
	// Path is the IAM user path ("/" when empty).
	Path string `json:"path,omitempty"`
	// Policies are the inline identity policies by name (JSON documents,
	// RGW's user-policy attribute); ManagedPolicies the ARNs of attached
	// managed policies.
	Policies        map[string]string `json:"user_policies,omitempty"`
	ManagedPolicies []string          `json:"managed_policies,omitempty"`
	// Groups are the account groups the user belongs to (their lower-case
	// names).
	Groups []string `json:"groups,omitempty"`
	// Identity is Policies and ManagedPolicies compiled, set by
	// LookupAccessKey (cached with the key); never stored.
	Identity *authz.IdentityPolicies `json:"-"`
	// Session is set for temporary credentials (internal/sts); never
	// stored.
	Session *authz.Session `json:"-"`
	// SessionTenant is a role session's tenant (its account's; a role id
	// carries none); never stored.
	SessionTenant string `json:"-"`

	// UserQuota bounds the user's total over its buckets; BucketQuota is
	// the quota of each of its buckets that has none of its own (RGW's
	// user_quota and bucket_quota). RateLimit is the user's request rate
	// limit. Nil: none.
	UserQuota   *Quota           `json:"user_quota,omitempty"`
	BucketQuota *Quota           `json:"bucket_quota,omitempty"`
	RateLimit   *ratelimit.Limit `json:"ratelimit,omitempty"`
}

// Key is one S3 access key pair.
type Key struct {
	User      string `json:"user"`
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
	// SealedSecret is SecretKey sealed at rest (Options.Secrets set):
	// stored records then keep secret_key empty. The driver opens it on
	// read; callers never see it set.
	SealedSecret *secret.Box `json:"secret_sealed,omitempty"`
	// Inactive keys do not authenticate (IAM UpdateAccessKey); the zero
	// value keeps keys stored before statuses existed active.
	Inactive bool      `json:"inactive,omitempty"`
	Created  time.Time `json:"create_date,omitzero"`
}

// BucketInfo is what HEAD/ListBuckets need.
type BucketInfo struct {
	Name     string    `json:"name"`
	ID       string    `json:"id"`
	Owner    string    `json:"owner"`
	Created  time.Time `json:"creation_time"`
	Location string    `json:"location,omitempty"`
}

// BucketStats is `cairn admin bucket stats`.
type BucketStats struct {
	BucketInfo
	NumShards  int    `json:"num_shards"`
	Generation uint64 `json:"index_generation"`
	// IndexView: listings read the bucket's ordered index view.
	IndexView    bool   `json:"index_view"`
	NumObjects   uint64 `json:"num_objects"` // current objects (what ListObjects shows)
	Size         uint64 `json:"size"`
	NumVersions  uint64 `json:"num_versions"`  // every stored version, delete markers included
	VersionsSize uint64 `json:"versions_size"` // bytes of every stored version
	Versioning   string `json:"versioning,omitempty"`
	ReshardState string `json:"reshard_status"`
	// StorageClasses is each class's share of the four counters above,
	// for every class that holds a version (STANDARD included).
	StorageClasses map[string]ClassUsage `json:"storage_classes"`
	// Usage is RGW's per-category map: "rgw.main" is every stored
	// version (delete markers included, size 0); absent when empty.
	Usage map[string]CategoryUsage `json:"usage"`
}

// ClassUsage is one storage class's share of a bucket's stats.
type ClassUsage struct {
	NumObjects   uint64 `json:"num_objects"`
	Size         uint64 `json:"size"`
	NumVersions  uint64 `json:"num_versions"`
	VersionsSize uint64 `json:"versions_size"`
}

// CategoryUsage is one entry of RGW's bucket stats "usage" map (the
// logical size: no allocation rounding or compression to report).
type CategoryUsage struct {
	Size       uint64 `json:"size"`
	SizeKB     uint64 `json:"size_kb"`
	NumObjects uint64 `json:"num_objects"`
}

// ObjectMeta is the metadata a client sets on an object.
type ObjectMeta struct {
	ContentType        string            `json:"ct,omitempty"`
	ContentEncoding    string            `json:"ce,omitempty"`
	ContentDisposition string            `json:"cd,omitempty"`
	ContentLanguage    string            `json:"cl,omitempty"`
	CacheControl       string            `json:"cc,omitempty"`
	Expires            string            `json:"ex,omitempty"`
	UserMeta           map[string]string `json:"um,omitempty"` // lower-case names without x-amz-meta-
	Tags               map[string]string `json:"tg,omitempty"`
	// Checksums maps an algorithm (CRC32, CRC32C, CRC64NVME, SHA1, SHA256) to
	// its base64 value as sent/returned in x-amz-checksum-*.
	Checksums    map[string]string `json:"ck,omitempty"`
	ChecksumType string            `json:"ckt,omitempty"` // FULL_OBJECT or COMPOSITE
	// PartChecksums are a completed multipart object's part checksums (its
	// Checksums algorithm, base64) in part order (GetObjectAttributes).
	PartChecksums []string `json:"pck,omitempty"`
	// ACL is the object's ACL; its Owner is the object's owner. Nil means
	// private, owned by the bucket owner (index entry Owner).
	ACL *authz.ACL `json:"acl,omitempty"`
	// Object lock of this version: retention mode (GOVERNANCE, COMPLIANCE
	// or "") and date, legal hold ("ON", "OFF", or "" never set).
	LockMode string `json:"lm,omitempty"`
	// LockUntil is nil without a retention date (a pointer: goccy/go-json,
	// which stores this record, ignores omitzero and would write the zero
	// time into every index entry).
	LockUntil *time.Time `json:"lu,omitempty"`
	LegalHold string     `json:"lh,omitempty"`
	// SSE is the object's server-side encryption (sse.go); nil = clear.
	SSE *SSERecord `json:"sse,omitempty"`
	// StorageClass is the class a write asks for (x-amz-storage-class;
	// "" = STANDARD). Input only: the index entry keeps the class, and
	// ObjectInfo.StorageClass reports it.
	StorageClass string `json:"-"`
}

// RetainUntil is the version's retention date; zero if none.
func (m ObjectMeta) RetainUntil() time.Time {
	if m.LockUntil == nil {
		return time.Time{}
	}
	return *m.LockUntil
}

// LockDate is ObjectMeta.LockUntil for a retention date t (nil when zero).
func LockDate(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Bucket  string
	Key     string
	Size    int64
	ETag    string // quoted-free hex, "-N" suffix for multipart
	ModTime time.Time
	Meta    ObjectMeta
	Parts   int // number of multipart parts, 0 for a plain PUT
	// PartSizes are the sizes of a multipart object's parts in order (GET
	// and HEAD with partNumber); nil for a plain PUT.
	PartSizes []int64
	Owner     string
	Version   uint64 // head object version, for sequencers
	// VersionID is the S3 version id: "" for an object of a never-versioned
	// bucket (S3 sends no header), "null", or an opaque id.
	VersionID    string
	DeleteMarker bool
	IsLatest     bool // in version listings
	// SourceVersionID is, for CopyObject, the source version copied.
	SourceVersionID string
	// StorageClass is the version's class ("" = STANDARD).
	StorageClass string
}

// Range is a resolved byte range [Start, Start+Length).
type Range struct {
	Start, Length int64
}

// Conditions are the If-* preconditions of a request, evaluated by the
// driver atomically with the operation where that matters (conditional PUT,
// copy source).
type Conditions struct {
	IfMatch           string
	IfNoneMatch       string
	IfModifiedSince   *time.Time
	IfUnmodifiedSince *time.Time
}

// PutObjectInput is one PUT.
type PutObjectInput struct {
	Bucket, Key string
	// Body is read to EOF. A read error (e.g. a checksum or signature
	// mismatch detected by a verifying reader at EOF) aborts the PUT: nothing
	// becomes visible and no notification is produced.
	Body io.Reader
	Size int64 // -1 when unknown
	Meta ObjectMeta
	// IfNoneMatch "*" makes the PUT fail with ErrPreconditionFailed when
	// the key exists.
	IfNoneMatch string
	// IfMatch "*" makes it fail with ErrNoSuchKey when the key does not
	// exist; an ETag with ErrPreconditionFailed when it differs.
	IfMatch string
	// EventName overrides the notification event ("ObjectCreated:Put" by
	// default; "ObjectCreated:Post" for POST uploads).
	EventName string
}

// CopyObjectInput is CopyObject.
type CopyObjectInput struct {
	SrcBucket, SrcKey string
	SrcVersionID      string // "" = current version
	DstBucket, DstKey string
	// ReplaceMeta is x-amz-metadata-directive: REPLACE (Meta is used);
	// otherwise the source's metadata is copied.
	ReplaceMeta bool
	Meta        ObjectMeta
	SrcCond     Conditions
	// ACL is the new object's ACL (nil: private, bucket owner's).
	ACL *authz.ACL
	// ReplaceTags is x-amz-tagging-directive: REPLACE (Meta.Tags is used);
	// otherwise the source's tags are copied. Object lock never comes from
	// the source: Meta's lock fields (headers) or the bucket default apply.
	ReplaceTags bool
	// StorageClass is the copy's class (x-amz-storage-class; "" =
	// STANDARD: never the source's, as S3).
	StorageClass string
	// SrcCheck, if set, is called with the source version as read, before
	// anything is written; its error fails the copy (the caller authorizes
	// the version actually copied, not one it read earlier).
	SrcCheck func(ObjectInfo) error
}

// DeleteObjectInput is one DELETE (or one DeleteObjects entry).
type DeleteObjectInput struct {
	Bucket, Key string
	VersionID   string // "" = the current object (a delete marker when versioned)
	IfMatch     string // only if the object (or version) has this ETag ("*": exists)
	// IfMatchModTime and IfMatchSize (x-amz-if-match-last-modified-time,
	// x-amz-if-match-size): only if the object has this modification time
	// (to the second) and size; unlike IfMatch, a missing object satisfies
	// them (AWS).
	IfMatchModTime *time.Time
	IfMatchSize    *int64
	// BypassGovernance is x-amz-bypass-governance-retention from a caller
	// allowed to use it (the handler decides who may).
	BypassGovernance bool
	// EventName overrides the notification event (lifecycle expiry).
	EventName string
	// EventFirst makes the event durable before the change (lifecycle):
	// a crash between the two then re-expires the same version on the
	// next pass, emitting its event again (same request id), instead of
	// losing the event of a version already gone.
	EventFirst bool
}

// DeleteResult says what a delete did, for x-amz-delete-marker and
// x-amz-version-id.
type DeleteResult struct {
	VersionID    string // the marker created, or the version removed
	DeleteMarker bool   // a marker was created, or the version removed was one
}

// ListVersionsInput is one page of ListObjectVersions.
type ListVersionsInput struct {
	Bucket, Prefix, Delimiter  string
	KeyMarker, VersionIDMarker string
	MaxKeys                    int
}

// ListVersionsResult is one page of ListObjectVersions: versions and delete
// markers (DeleteMarker set) in key order, newest first within a key.
type ListVersionsResult struct {
	Versions            []ObjectInfo
	CommonPrefixes      []string
	IsTruncated         bool
	NextKeyMarker       string
	NextVersionIDMarker string
}

// ListObjectsInput is one page of an ordered listing.
type ListObjectsInput struct {
	Bucket     string
	Prefix     string
	Delimiter  string
	StartAfter string // exclusive
	MaxKeys    int
}

// ListObjectsResult: Objects and CommonPrefixes are each in key order; their
// union is at most MaxKeys entries. NextMarker is the last key or prefix
// returned when IsTruncated.
type ListObjectsResult struct {
	Objects        []ListedObject
	CommonPrefixes []string
	IsTruncated    bool
	NextMarker     string
}

// ListedObject is an object as a listing shows it: ObjectInfo's fields of
// the same names, without the rest (a page holds 1,000: a quarter of
// ObjectInfo's size made a page's result cheaper to allocate and fill).
type ListedObject struct {
	Key     string
	Size    int64
	ETag    string
	ModTime time.Time
	Parts   int
	// Owner is the object's owner: its ACL's owner, else the entry's.
	Owner        string
	StorageClass string
}

// Listed is oi as a listing shows it.
func (oi *ObjectInfo) Listed() ListedObject {
	return ListedObject{Key: oi.Key, Size: oi.Size, ETag: oi.ETag, ModTime: oi.ModTime, Parts: oi.Parts, Owner: oi.Owner, StorageClass: oi.StorageClass}
}

// PartInfo describes one uploaded part.
type PartInfo struct {
	PartNumber int
	ETag       string
	Size       int64
	ModTime    time.Time
	Checksums  map[string]string
	// SSE is the upload's encryption (UploadPart's answer; not stored
	// with the part).
	SSE *SSERecord `json:"-"`
}

// CompletePart is one part named in CompleteMultipartUpload.
type CompletePart struct {
	PartNumber int
	ETag       string
	Checksums  map[string]string
}

// ObjectChecksum is the checksum a client declares for a whole multipart
// object on CompleteMultipartUpload (x-amz-checksum-<alg>,
// x-amz-checksum-type). Every field may be empty.
type ObjectChecksum struct {
	Algorithm string // CRC32, CRC32C, CRC64NVME, SHA1, SHA256
	Value     string // base64; COMPOSITE values may carry their "-N" suffix
	Type      string // FULL_OBJECT or COMPOSITE
}

// UploadInfo describes an in-progress multipart upload.
type UploadInfo struct {
	Bucket, Key, UploadID string
	Initiated             time.Time
	Owner                 string // the completed object's owner
	Meta                  ObjectMeta
	// Initiator is who created the upload ("" for uploads older than the
	// field: the owner).
	Initiator string `json:",omitempty"`
	// StorageClass is the class the parts are written in and the
	// completed object gets ("" = STANDARD).
	StorageClass string `json:",omitempty"`
}

// ListPartsResult is one page of ListParts.
type ListPartsResult struct {
	Upload               UploadInfo
	Parts                []PartInfo
	IsTruncated          bool
	NextPartNumberMarker int
}

// ListUploadsInput is ListMultipartUploads.
type ListUploadsInput struct {
	Bucket, Prefix, Delimiter string
	KeyMarker, UploadIDMarker string
	MaxUploads                int
}

// ListUploadsResult is one page of ListMultipartUploads.
type ListUploadsResult struct {
	Uploads            []UploadInfo
	CommonPrefixes     []string
	IsTruncated        bool
	NextKeyMarker      string
	NextUploadIDMarker string
}

// RequestMeta describes the S3 request on whose behalf the driver acts;
// notification records carry it. s3api attaches it with WithRequest.
type RequestMeta struct {
	RequestID string
	HostID    string
	SourceIP  string
	Principal string // user id
	Secure    bool   // the request came over TLS
}

type requestKey struct{}

// WithRequest returns ctx carrying m.
func WithRequest(ctx context.Context, m RequestMeta) context.Context {
	return context.WithValue(ctx, requestKey{}, m)
}

// RequestFrom returns the RequestMeta in ctx, if any.
func RequestFrom(ctx context.Context) RequestMeta {
	m, _ := ctx.Value(requestKey{}).(RequestMeta)
	return m
}
