package nullgw

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"maps"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
)

// Backend is the null backend. The zero value is not usable; call New.
type Backend struct {
	mu      sync.RWMutex // users, keys, buckets, uploads maps (not objects)
	users   map[string]driver.User
	keys    map[string]string // access key → uid
	buckets map[string]*bucket
	uploads map[string]*upload
	seq     atomic.Uint64
	now     func() time.Time
}

type bucket struct {
	info driver.BucketInfo
	// access and its parsed form (nil when stale), under Backend.mu.
	access driver.BucketAccess
	auth   *driver.BucketAuth

	// A lock per bucket keeps PUTs to different buckets independent; the
	// sorted key cache avoids sorting on every LIST page of a static bucket.
	mu      sync.RWMutex
	objects map[string]driver.ObjectInfo
	sorted  []string // nil when stale
	cors    []driver.CORSRule
}

type upload struct {
	info  driver.UploadInfo
	mu    sync.Mutex
	parts map[int]driver.PartInfo
}

// New returns an empty null backend.
func New() *Backend {
	return &Backend{
		users:   map[string]driver.User{},
		keys:    map[string]string{},
		buckets: map[string]*bucket{},
		uploads: map[string]*upload{},
		now:     func() time.Time { return time.Now().UTC() },
	}
}

// LookupAccessKey returns the user owning accessKey and its secret.
func (b *Backend) LookupAccessKey(ctx context.Context, accessKey string) (driver.User, string, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	u, ok := b.users[b.keys[accessKey]]
	if !ok {
		return driver.User{}, "", driver.ErrInvalidAccessKey
	}
	for _, k := range u.Keys {
		if k.AccessKey == accessKey {
			return u, k.SecretKey, nil
		}
	}
	return driver.User{}, "", driver.ErrInvalidAccessKey
}

// CreateUser adds a user, generating a key pair if it has none.
func (b *Backend) CreateUser(ctx context.Context, u driver.User) (driver.User, error) {
	if u.ID == "" {
		return driver.User{}, fmt.Errorf("%w: empty user id", driver.ErrInvalidArgument)
	}
	if len(u.Keys) == 0 {
		ak, sk := driver.NewKeyPair()
		u.Keys = []driver.Key{{AccessKey: ak, SecretKey: sk}}
	}
	if u.DisplayName == "" {
		u.DisplayName = u.ID
	}
	u.Keys = append([]driver.Key(nil), u.Keys...)
	for i := range u.Keys {
		u.Keys[i].User = u.ID
	}
	u.Created = b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.users[u.ID]; ok {
		return driver.User{}, driver.ErrUserExists
	}
	for _, k := range u.Keys {
		if _, ok := b.keys[k.AccessKey]; ok {
			return driver.User{}, driver.ErrKeyExists
		}
	}
	for _, k := range u.Keys {
		b.keys[k.AccessKey] = u.ID
	}
	b.users[u.ID] = u
	return u, nil
}

// GetUser returns a user.
func (b *Backend) GetUser(ctx context.Context, uid string) (driver.User, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	u, ok := b.users[uid]
	if !ok {
		return driver.User{}, driver.ErrNoSuchUser
	}
	return u, nil
}

// ListUsers returns user ids in order.
func (b *Backend) ListUsers(ctx context.Context) ([]string, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	ids := make([]string, 0, len(b.users))
	for id := range b.users {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// RemoveUser removes a user that owns no buckets.
func (b *Backend) RemoveUser(ctx context.Context, uid string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, ok := b.users[uid]
	if !ok {
		return driver.ErrNoSuchUser
	}
	for _, bk := range b.buckets {
		if bk.info.Owner == uid {
			return driver.ErrNotEmptyUserBuckets
		}
	}
	for _, k := range u.Keys {
		delete(b.keys, k.AccessKey)
	}
	delete(b.users, uid)
	return nil
}

// CreateBucket creates an empty bucket; numShards is accepted and ignored.
func (b *Backend) CreateBucket(ctx context.Context, owner, name, location string, numShards int) error {
	if !driver.ValidBucketName(name) {
		return driver.ErrInvalidBucketName
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if bk, ok := b.buckets[name]; ok {
		if bk.info.Owner == owner {
			return driver.ErrBucketOwnedByYou
		}
		return driver.ErrBucketExists
	}
	b.buckets[name] = &bucket{
		info:    driver.BucketInfo{Name: name, ID: fmt.Sprintf("null.%d", b.seq.Add(1)), Owner: owner, Created: b.now(), Location: location},
		objects: map[string]driver.ObjectInfo{},
	}
	return nil
}

func (b *Backend) bucket(name string) (*bucket, error) {
	b.mu.RLock()
	bk, ok := b.buckets[name]
	b.mu.RUnlock()
	if !ok {
		return nil, driver.ErrNoSuchBucket
	}
	return bk, nil
}

// GetBucket returns a bucket's info.
func (b *Backend) GetBucket(ctx context.Context, name string) (driver.BucketInfo, error) {
	bk, err := b.bucket(name)
	if err != nil {
		return driver.BucketInfo{}, err
	}
	return bk.info, nil
}

// GetBucketCORS returns the bucket's CORS rules.
func (b *Backend) GetBucketCORS(ctx context.Context, name string) ([]driver.CORSRule, error) {
	bk, err := b.bucket(name)
	if err != nil {
		return nil, err
	}
	bk.mu.RLock()
	defer bk.mu.RUnlock()
	if len(bk.cors) == 0 {
		return nil, driver.ErrNoSuchCORSConfiguration
	}
	return bk.cors, nil
}

// PutBucketCORS replaces (or, with no rules, removes) the bucket's CORS rules.
func (b *Backend) PutBucketCORS(ctx context.Context, name string, rules []driver.CORSRule) error {
	bk, err := b.bucket(name)
	if err != nil {
		return err
	}
	bk.mu.Lock()
	bk.cors = rules
	bk.mu.Unlock()
	return nil
}

// DeleteBucket removes an empty bucket.
func (b *Backend) DeleteBucket(ctx context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	bk, ok := b.buckets[name]
	if !ok {
		return driver.ErrNoSuchBucket
	}
	bk.mu.RLock()
	n := len(bk.objects)
	bk.mu.RUnlock()
	if n > 0 {
		return driver.ErrBucketNotEmpty
	}
	for _, u := range b.uploads {
		if u.info.Bucket == name {
			return driver.ErrBucketNotEmpty
		}
	}
	delete(b.buckets, name)
	return nil
}

// ListBuckets returns owner's buckets ("" = all) in name order.
func (b *Backend) ListBuckets(ctx context.Context, owner string) ([]driver.BucketInfo, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []driver.BucketInfo
	for _, bk := range b.buckets {
		if owner == "" || bk.info.Owner == owner {
			out = append(out, bk.info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CheckIndexView: the null gateway has no index view.
func (b *Backend) CheckIndexView(ctx context.Context, name string, max int) (bool, []string, error) {
	_, err := b.bucket(name)
	return false, nil, err
}

// FixIndexView: the null gateway has no index view to repair.
func (b *Backend) FixIndexView(ctx context.Context, name string) (driver.IndexViewFix, error) {
	if _, err := b.bucket(name); err != nil {
		return driver.IndexViewFix{}, err
	}
	return driver.IndexViewFix{}, fmt.Errorf("%w: the null gateway keeps no index", driver.ErrInvalidArgument)
}

// BucketStats counts a bucket's recorded objects.
func (b *Backend) BucketStats(ctx context.Context, name string) (driver.BucketStats, error) {
	bk, err := b.bucket(name)
	if err != nil {
		return driver.BucketStats{}, err
	}
	st := driver.BucketStats{BucketInfo: bk.info, NumShards: 1, ReshardState: "none"}
	bk.mu.RLock()
	defer bk.mu.RUnlock()
	for _, o := range bk.objects {
		st.NumObjects++
		st.Size += uint64(o.Size)
	}
	return st, nil
}

// bufPool holds copy buffers for draining bodies; 256 KiB keeps read
// syscalls few for 4 MiB bodies without pinning much memory per request.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// drain reads body to EOF into an MD5 and returns the byte count and the
// hex digest. Read errors (a failed signature or checksum at EOF) abort.
func drain(body io.Reader, limit int64) (int64, string, error) {
	h := md5.New()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	n, err := io.CopyBuffer(struct{ hash.Hash }{h}, io.LimitReader(body, limit+1), *bp)
	if err != nil {
		return n, "", err
	}
	if n > limit {
		return n, "", driver.ErrEntityTooLarge
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

func copyMeta(m driver.ObjectMeta) driver.ObjectMeta {
	m.UserMeta, m.Tags, m.Checksums = maps.Clone(m.UserMeta), maps.Clone(m.Tags), maps.Clone(m.Checksums)
	return m
}

func etagMatches(list, etag string) bool {
	for _, c := range strings.Split(list, ",") {
		c = strings.TrimPrefix(strings.TrimSpace(c), "W/")
		if c == "*" || strings.Trim(c, `"`) == etag {
			return true
		}
	}
	return false
}

// PutObject drains and hashes the body, then records the object.
func (b *Backend) PutObject(ctx context.Context, in driver.PutObjectInput) (driver.ObjectInfo, error) {
	if !driver.ValidKey(in.Key) {
		return driver.ObjectInfo{}, driver.ErrInvalidKey
	}
	if in.Size > driver.MaxPutSize {
		return driver.ObjectInfo{}, driver.ErrEntityTooLarge
	}
	bk, err := b.bucket(in.Bucket)
	if err != nil {
		return driver.ObjectInfo{}, err
	}
	n, etag, err := drain(in.Body, driver.MaxPutSize)
	if err != nil {
		return driver.ObjectInfo{}, err
	}
	if in.Size >= 0 && n != in.Size {
		return driver.ObjectInfo{}, driver.ErrIncompleteBody
	}
	// Checksums are filled in by the verifying reader at EOF: copy after.
	info := driver.ObjectInfo{
		Bucket: in.Bucket, Key: in.Key, Size: n, ETag: etag, ModTime: b.now(),
		Meta: copyMeta(in.Meta), Owner: bk.info.Owner, Version: b.seq.Add(1),
	}
	if in.Meta.ACL != nil {
		info.Owner = in.Meta.ACL.Owner.ID
	}
	bk.mu.Lock()
	defer bk.mu.Unlock()
	old, exists := bk.objects[in.Key]
	if (in.IfNoneMatch == "*" && exists) || (in.IfMatch != "" && (!exists || !etagMatches(in.IfMatch, old.ETag))) {
		return driver.ObjectInfo{}, driver.ErrPreconditionFailed
	}
	bk.put(info, exists)
	return info, nil
}

func (bk *bucket) put(info driver.ObjectInfo, exists bool) {
	bk.objects[info.Key] = info
	if !exists {
		bk.sorted = nil
	}
}

func (b *Backend) object(bucket, key string) (driver.ObjectInfo, error) {
	bk, err := b.bucket(bucket)
	if err != nil {
		return driver.ObjectInfo{}, err
	}
	bk.mu.RLock()
	o, ok := bk.objects[key]
	bk.mu.RUnlock()
	if !ok {
		return driver.ObjectInfo{}, driver.ErrNoSuchKey
	}
	return o, nil
}

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// GetObject returns zeros of the recorded size (or of rng).
func (b *Backend) GetObject(ctx context.Context, bucket, key string, rng *driver.Range) (driver.ObjectInfo, io.ReadCloser, error) {
	o, err := b.object(bucket, key)
	if err != nil {
		return driver.ObjectInfo{}, nil, err
	}
	n := o.Size
	if rng != nil {
		if rng.Start < 0 || rng.Length < 0 || rng.Start+rng.Length > o.Size {
			return driver.ObjectInfo{}, nil, fmt.Errorf("%w: range %+v of %d bytes", driver.ErrInvalidArgument, *rng, o.Size)
		}
		n = rng.Length
	}
	return o, io.NopCloser(io.LimitReader(zeros{}, n)), nil
}

// HeadObject returns the recorded info.
func (b *Backend) HeadObject(ctx context.Context, bucket, key string) (driver.ObjectInfo, error) {
	return b.object(bucket, key)
}

// DeleteObject forgets key; a missing key is not an error.
func (b *Backend) DeleteObject(ctx context.Context, bucket, key string) error {
	if !driver.ValidKey(key) {
		return driver.ErrInvalidKey
	}
	bk, err := b.bucket(bucket)
	if err != nil {
		return err
	}
	bk.mu.Lock()
	defer bk.mu.Unlock()
	if _, ok := bk.objects[key]; ok {
		delete(bk.objects, key)
		bk.sorted = nil
	}
	return nil
}

// CopyObject records a copy of the source's info under the destination.
func (b *Backend) CopyObject(ctx context.Context, in driver.CopyObjectInput) (driver.ObjectInfo, error) {
	if !driver.ValidKey(in.DstKey) {
		return driver.ObjectInfo{}, driver.ErrInvalidKey
	}
	src, err := b.object(in.SrcBucket, in.SrcKey)
	if err != nil {
		return driver.ObjectInfo{}, err
	}
	if in.SrcCheck != nil {
		if err := in.SrcCheck(src); err != nil {
			return driver.ObjectInfo{}, err
		}
	}
	c, mod := in.SrcCond, src.ModTime.Truncate(time.Second)
	if !((c.IfMatch == "" || etagMatches(c.IfMatch, src.ETag)) &&
		(c.IfNoneMatch == "" || !etagMatches(c.IfNoneMatch, src.ETag)) &&
		(c.IfUnmodifiedSince == nil || !mod.After(*c.IfUnmodifiedSince)) &&
		(c.IfModifiedSince == nil || mod.After(*c.IfModifiedSince))) {
		return driver.ObjectInfo{}, driver.ErrPreconditionFailed
	}
	dst, err := b.bucket(in.DstBucket)
	if err != nil {
		return driver.ObjectInfo{}, err
	}
	meta := src.Meta
	if in.ReplaceMeta {
		meta = in.Meta
		meta.Checksums, meta.ChecksumType = src.Meta.Checksums, src.Meta.ChecksumType
	}
	info := src
	info.Bucket, info.Key, info.ModTime, info.Meta, info.Owner, info.Version =
		in.DstBucket, in.DstKey, b.now(), copyMeta(meta), dst.info.Owner, b.seq.Add(1)
	dst.mu.Lock()
	_, exists := dst.objects[in.DstKey]
	dst.put(info, exists)
	dst.mu.Unlock()
	return info, nil
}

// sortedKeys returns the bucket's keys in order, sorting only after a
// change. Callers hold bk.mu for writing (the cache is written).
func (bk *bucket) sortedKeys() []string {
	if bk.sorted == nil {
		bk.sorted = make([]string, 0, len(bk.objects))
		for k := range bk.objects {
			bk.sorted = append(bk.sorted, k)
		}
		sort.Strings(bk.sorted)
	}
	return bk.sorted
}

// ListObjects lists recorded objects with prefix, delimiter and marker.
func (b *Backend) ListObjects(ctx context.Context, in driver.ListObjectsInput) (driver.ListObjectsResult, error) {
	bk, err := b.bucket(in.Bucket)
	if err != nil {
		return driver.ListObjectsResult{}, err
	}
	bk.mu.Lock()
	defer bk.mu.Unlock()
	keys := bk.sortedKeys()
	// Keys with the prefix are one contiguous run of the sorted keys.
	i := max(sort.SearchStrings(keys, in.StartAfter), sort.SearchStrings(keys, in.Prefix))
	var res driver.ListObjectsResult
	n, last := 0, ""
	for ; i < len(keys); i++ {
		k := keys[i]
		if k <= in.StartAfter {
			continue
		}
		if !strings.HasPrefix(k, in.Prefix) {
			break
		}
		entry, isPrefix := k, false
		if in.Delimiter != "" {
			if j := strings.Index(k[len(in.Prefix):], in.Delimiter); j >= 0 {
				entry, isPrefix = k[:len(in.Prefix)+j+len(in.Delimiter)], true
				if entry == last || strings.HasPrefix(in.StartAfter, entry) {
					continue
				}
			}
		}
		if n == in.MaxKeys {
			res.IsTruncated, res.NextMarker = true, last
			break
		}
		n++
		last = entry
		if isPrefix {
			res.CommonPrefixes = append(res.CommonPrefixes, entry)
		} else {
			oi := bk.objects[k]
			res.Objects = append(res.Objects, oi.Listed())
		}
	}
	return res, nil
}

// CreateMultipartUpload starts an upload.
func (b *Backend) CreateMultipartUpload(ctx context.Context, bucketName, key string, meta driver.ObjectMeta) (string, error) {
	if !driver.ValidKey(key) {
		return "", driver.ErrInvalidKey
	}
	bk, err := b.bucket(bucketName)
	if err != nil {
		return "", err
	}
	id := fmt.Sprintf("null-%d-%d", time.Now().UnixNano(), b.seq.Add(1))
	b.mu.Lock()
	b.uploads[id] = &upload{
		info:  driver.UploadInfo{Bucket: bucketName, Key: key, UploadID: id, Initiated: b.now(), Owner: bk.info.Owner, Meta: copyMeta(meta)},
		parts: map[int]driver.PartInfo{},
	}
	b.mu.Unlock()
	return id, nil
}

func (b *Backend) upload(bucketName, key, id string) (*upload, error) {
	if _, err := b.bucket(bucketName); err != nil {
		return nil, err
	}
	b.mu.RLock()
	u, ok := b.uploads[id]
	b.mu.RUnlock()
	if !ok || u.info.Bucket != bucketName || u.info.Key != key {
		return nil, driver.ErrNoSuchUpload
	}
	return u, nil
}

// UploadPart drains and hashes a part and records its size and ETag.
func (b *Backend) UploadPart(ctx context.Context, bucketName, key, id string, part int, body io.Reader, size int64, checksums map[string]string) (driver.PartInfo, error) {
	if part < 1 || part > driver.MaxPartNumber {
		return driver.PartInfo{}, fmt.Errorf("%w: part number %d", driver.ErrInvalidArgument, part)
	}
	u, err := b.upload(bucketName, key, id)
	if err != nil {
		return driver.PartInfo{}, err
	}
	n, etag, err := drain(body, driver.MaxPutSize)
	if err != nil {
		return driver.PartInfo{}, err
	}
	if size >= 0 && n != size {
		return driver.PartInfo{}, driver.ErrIncompleteBody
	}
	pi := driver.PartInfo{PartNumber: part, ETag: etag, Size: n, ModTime: b.now(), Checksums: maps.Clone(checksums)}
	u.mu.Lock()
	u.parts[part] = pi
	u.mu.Unlock()
	return pi, nil
}

// ListParts lists recorded parts after marker.
func (b *Backend) ListParts(ctx context.Context, bucketName, key, id string, marker, max int) (driver.ListPartsResult, error) {
	u, err := b.upload(bucketName, key, id)
	if err != nil {
		return driver.ListPartsResult{}, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	var nums []int
	for n := range u.parts {
		if n > marker {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	res := driver.ListPartsResult{Upload: u.info}
	for _, n := range nums {
		if len(res.Parts) == max {
			res.IsTruncated = true
			break
		}
		res.Parts = append(res.Parts, u.parts[n])
		res.NextPartNumberMarker = n
	}
	return res, nil
}

// ListMultipartUploads lists in-progress uploads by key and upload id.
func (b *Backend) ListMultipartUploads(ctx context.Context, in driver.ListUploadsInput) (driver.ListUploadsResult, error) {
	if _, err := b.bucket(in.Bucket); err != nil {
		return driver.ListUploadsResult{}, err
	}
	b.mu.RLock()
	var ups []driver.UploadInfo
	for _, u := range b.uploads {
		i := u.info
		if i.Bucket == in.Bucket && strings.HasPrefix(i.Key, in.Prefix) &&
			(i.Key > in.KeyMarker || (i.Key == in.KeyMarker && i.UploadID > in.UploadIDMarker)) {
			ups = append(ups, i)
		}
	}
	b.mu.RUnlock()
	sort.Slice(ups, func(i, j int) bool {
		if ups[i].Key != ups[j].Key {
			return ups[i].Key < ups[j].Key
		}
		return ups[i].UploadID < ups[j].UploadID
	})
	var res driver.ListUploadsResult
	for _, u := range ups {
		if len(res.Uploads) == in.MaxUploads {
			res.IsTruncated = true
			break
		}
		res.Uploads = append(res.Uploads, u)
		res.NextKeyMarker, res.NextUploadIDMarker = u.Key, u.UploadID
	}
	return res, nil
}

// CompleteMultipartUpload records the object with the md5-of-md5s ETag.
// It keeps no data, so it derives no object checksum and ignores the
// declared one.
func (b *Backend) CompleteMultipartUpload(ctx context.Context, bucketName, key, id string, parts []driver.CompletePart, _ driver.ObjectChecksum) (driver.ObjectInfo, error) {
	u, err := b.upload(bucketName, key, id)
	if err != nil {
		return driver.ObjectInfo{}, err
	}
	bk, err := b.bucket(bucketName)
	if err != nil {
		return driver.ObjectInfo{}, err
	}
	if len(parts) == 0 {
		return driver.ObjectInfo{}, fmt.Errorf("%w: no parts", driver.ErrInvalidPart)
	}
	for i := 1; i < len(parts); i++ {
		if parts[i].PartNumber <= parts[i-1].PartNumber {
			return driver.ObjectInfo{}, driver.ErrInvalidPartOrder
		}
	}
	u.mu.Lock()
	var size int64
	sums := md5.New()
	for i, cp := range parts {
		p, ok := u.parts[cp.PartNumber]
		if !ok || p.ETag != strings.Trim(cp.ETag, `"`) {
			u.mu.Unlock()
			return driver.ObjectInfo{}, driver.ErrInvalidPart
		}
		if i < len(parts)-1 && p.Size < driver.MinPartSize {
			u.mu.Unlock()
			return driver.ObjectInfo{}, driver.ErrEntityTooSmall
		}
		raw, _ := hex.DecodeString(p.ETag)
		sums.Write(raw)
		size += p.Size
	}
	u.mu.Unlock()
	info := driver.ObjectInfo{
		Bucket: bucketName, Key: key, Size: size,
		ETag:    fmt.Sprintf("%s-%d", hex.EncodeToString(sums.Sum(nil)), len(parts)),
		ModTime: b.now(), Meta: copyMeta(u.info.Meta), Parts: len(parts), Owner: u.info.Owner, Version: b.seq.Add(1),
	}
	info.Meta.Checksums = nil
	b.mu.Lock()
	if _, ok := b.uploads[id]; !ok {
		b.mu.Unlock()
		return driver.ObjectInfo{}, driver.ErrNoSuchUpload
	}
	delete(b.uploads, id)
	b.mu.Unlock()
	bk.mu.Lock()
	_, exists := bk.objects[key]
	bk.put(info, exists)
	bk.mu.Unlock()
	return info, nil
}

// AbortMultipartUpload forgets an upload.
func (b *Backend) AbortMultipartUpload(ctx context.Context, bucketName, key, id string) error {
	if _, err := b.upload(bucketName, key, id); err != nil {
		return err
	}
	b.mu.Lock()
	delete(b.uploads, id)
	b.mu.Unlock()
	return nil
}

// UserByEmail returns the user with that email.
func (b *Backend) UserByEmail(ctx context.Context, email string) (driver.User, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, u := range b.users {
		if email != "" && strings.EqualFold(u.Email, email) {
			return u, nil
		}
	}
	return driver.User{}, driver.ErrNoSuchUser
}

// BucketAuth returns the bucket's parsed access state.
func (b *Backend) BucketAuth(ctx context.Context, name string) (*driver.BucketAuth, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bk, ok := b.buckets[name]
	if !ok {
		return nil, driver.ErrNoSuchBucket
	}
	if bk.auth == nil {
		bk.auth = driver.NewBucketAuth(bk.instance())
	}
	return bk.auth, nil
}

func (bk *bucket) instance() driver.Instance {
	return driver.Instance{Name: bk.info.Name, ID: bk.info.ID, Owner: bk.info.Owner,
		Created: bk.info.Created, Location: bk.info.Location, Access: bk.access}
}

// UpdateBucketAccess applies fn to the bucket's access state.
func (b *Backend) UpdateBucketAccess(ctx context.Context, name string, fn func(driver.Instance, *driver.BucketAccess) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	bk, ok := b.buckets[name]
	if !ok {
		return driver.ErrNoSuchBucket
	}
	a := bk.access
	if err := fn(bk.instance(), &a); err != nil {
		return err
	}
	bk.access, bk.auth = a, nil
	return nil
}

// SetObjectACL replaces an object's ACL, keeping its owner. Buckets are
// unversioned: vid is "" or "null".
func (b *Backend) SetObjectACL(ctx context.Context, bucket, key, vid string, acl authz.ACL) error {
	if vid != "" && vid != "null" {
		return driver.ErrNoSuchVersion
	}
	bk, err := b.bucket(bucket)
	if err != nil {
		return err
	}
	bk.mu.Lock()
	defer bk.mu.Unlock()
	o, ok := bk.objects[key]
	if !ok {
		return driver.ErrNoSuchKey
	}
	acl.Owner = authz.Owner{ID: o.Owner}
	o.Meta = copyMeta(o.Meta)
	o.Meta.ACL = &acl
	bk.objects[key] = o
	return nil
}
