package s3api

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
)

// fakeBackend is an in-memory Backend for handler tests. It implements
// the documented Backend contract simply; the handlers are under test, not
// it.
type fakeBackend struct {
	mu      sync.Mutex
	now     func() time.Time
	seq     int
	minPart int64

	users   map[string]driver.User
	keys    map[string]string // access key → uid
	buckets map[string]*fakeBucket
	uploads map[string]*fakeUpload

	// calls counts backend calls by method, for tests that assert a
	// rejected request changed nothing.
	calls map[string]int
	// lastEvent is the EventName of the last PutObject.
	lastEvent string
}

type fakeBucket struct {
	info    driver.BucketInfo
	shards  int
	objects map[string]*fakeObject
	cors    []driver.CORSRule
	access  driver.BucketAccess // fake_access_test.go
}

type fakeObject struct {
	info driver.ObjectInfo
	data []byte
}

type fakeUpload struct {
	info  driver.UploadInfo
	parts map[int]*fakePart
}

type fakePart struct {
	info driver.PartInfo
	data []byte
}

var _ Backend = (*fakeBackend)(nil)

func newFakeBackend() *fakeBackend {
	return &fakeBackend{
		now:     func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) },
		minPart: driver.MinPartSize,
		users:   map[string]driver.User{},
		keys:    map[string]string{},
		buckets: map[string]*fakeBucket{},
		uploads: map[string]*fakeUpload{},
		calls:   map[string]int{},
	}
}

func (f *fakeBackend) call(name string) {
	f.calls[name]++
}

func (f *fakeBackend) LookupAccessKey(ctx context.Context, ak string) (driver.User, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("LookupAccessKey")
	uid, ok := f.keys[ak]
	if !ok {
		return driver.User{}, "", driver.ErrInvalidAccessKey
	}
	u := f.users[uid]
	for _, k := range u.Keys {
		if k.AccessKey == ak {
			return u, k.SecretKey, nil
		}
	}
	return driver.User{}, "", driver.ErrInvalidAccessKey
}

func (f *fakeBackend) CreateUser(ctx context.Context, u driver.User) (driver.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("CreateUser")
	if _, ok := f.users[u.ID]; ok {
		return driver.User{}, driver.ErrUserExists
	}
	if len(u.Keys) == 0 {
		f.seq++
		u.Keys = []driver.Key{{User: u.ID, AccessKey: fmt.Sprintf("AK%06d", f.seq), SecretKey: fmt.Sprintf("SK%06d", f.seq)}}
	}
	for _, k := range u.Keys {
		if _, ok := f.keys[k.AccessKey]; ok {
			return driver.User{}, driver.ErrKeyExists
		}
	}
	for _, k := range u.Keys {
		f.keys[k.AccessKey] = u.ID
	}
	u.Created = f.now()
	f.users[u.ID] = u
	return u, nil
}

func (f *fakeBackend) GetUser(ctx context.Context, uid string) (driver.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.users[uid]
	if !ok {
		return driver.User{}, driver.ErrNoSuchUser
	}
	return u, nil
}

func (f *fakeBackend) ListUsers(ctx context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id := range f.users {
		ids = append(ids, id)
	}
	return ids, nil
}

func (f *fakeBackend) RemoveUser(ctx context.Context, uid string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.users[uid]
	if !ok {
		return driver.ErrNoSuchUser
	}
	for _, b := range f.buckets {
		if b.info.Owner == uid {
			return driver.ErrNotEmptyUserBuckets
		}
	}
	for _, k := range u.Keys {
		delete(f.keys, k.AccessKey)
	}
	delete(f.users, uid)
	return nil
}

func (f *fakeBackend) CreateBucket(ctx context.Context, owner, name, location string, numShards int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("CreateBucket")
	if b, ok := f.buckets[name]; ok {
		if b.info.Owner == owner {
			return driver.ErrBucketOwnedByYou
		}
		return driver.ErrBucketExists
	}
	if numShards == 0 {
		numShards = 11
	}
	f.seq++
	f.buckets[name] = &fakeBucket{
		info:    driver.BucketInfo{Name: name, ID: fmt.Sprintf("id%d", f.seq), Owner: owner, Created: f.now(), Location: location},
		shards:  numShards,
		objects: map[string]*fakeObject{},
	}
	return nil
}

func (f *fakeBackend) bucket(name string) (*fakeBucket, error) {
	b, ok := f.buckets[name]
	if !ok {
		return nil, driver.ErrNoSuchBucket
	}
	return b, nil
}

func (f *fakeBackend) GetBucket(ctx context.Context, name string) (driver.BucketInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.bucket(name)
	if err != nil {
		return driver.BucketInfo{}, err
	}
	return b.info, nil
}

func (f *fakeBackend) DeleteBucket(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("DeleteBucket")
	b, err := f.bucket(name)
	if err != nil {
		return err
	}
	if len(b.objects) > 0 {
		return driver.ErrBucketNotEmpty
	}
	delete(f.buckets, name)
	return nil
}

func (f *fakeBackend) GetBucketCORS(ctx context.Context, name string) ([]driver.CORSRule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.bucket(name)
	if err != nil {
		return nil, err
	}
	if len(b.cors) == 0 {
		return nil, driver.ErrNoSuchCORSConfiguration
	}
	return b.cors, nil
}

func (f *fakeBackend) PutBucketCORS(ctx context.Context, name string, rules []driver.CORSRule) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("PutBucketCORS")
	b, err := f.bucket(name)
	if err != nil {
		return err
	}
	b.cors = rules
	return nil
}

func (f *fakeBackend) ListBuckets(ctx context.Context, owner string) ([]driver.BucketInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []driver.BucketInfo
	for _, b := range f.buckets {
		if owner == "" || b.info.Owner == owner {
			out = append(out, b.info)
		}
	}
	return out, nil
}

func (f *fakeBackend) CheckIndexView(ctx context.Context, name string, max int) (bool, []string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err := f.bucket(name)
	return false, nil, err
}

func (f *fakeBackend) FixIndexView(ctx context.Context, name string) (driver.IndexViewFix, error) {
	return driver.IndexViewFix{}, driver.ErrInvalidArgument
}

func (f *fakeBackend) BucketStats(ctx context.Context, name string) (driver.BucketStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.bucket(name)
	if err != nil {
		return driver.BucketStats{}, err
	}
	st := driver.BucketStats{BucketInfo: b.info, NumShards: b.shards, ReshardState: "none"}
	for _, o := range b.objects {
		st.NumObjects++
		st.Size += uint64(o.info.Size)
	}
	// The fake keeps no versions: each object is its only one.
	st.NumVersions, st.VersionsSize = st.NumObjects, st.Size
	return st, nil
}

func md5hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

func copyMeta(m driver.ObjectMeta) driver.ObjectMeta {
	cp := func(in map[string]string) map[string]string {
		if len(in) == 0 {
			return nil
		}
		out := make(map[string]string, len(in))
		for k, v := range in {
			out[k] = v
		}
		return out
	}
	m.UserMeta, m.Tags, m.Checksums = cp(m.UserMeta), cp(m.Tags), cp(m.Checksums)
	return m
}

func (f *fakeBackend) PutObject(ctx context.Context, in driver.PutObjectInput) (driver.ObjectInfo, error) {
	// Read outside the lock, like a real backend streaming data first.
	data, err := io.ReadAll(in.Body)
	if err != nil {
		return driver.ObjectInfo{}, err
	}
	if in.Size >= 0 && int64(len(data)) != in.Size {
		return driver.ObjectInfo{}, driver.ErrIncompleteBody
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("PutObject")
	f.lastEvent = in.EventName
	b, err := f.bucket(in.Bucket)
	if err != nil {
		return driver.ObjectInfo{}, err
	}
	old, exists := b.objects[in.Key]
	if in.IfNoneMatch != "" && exists && etagMatches(in.IfNoneMatch, old.info.ETag) {
		return driver.ObjectInfo{}, driver.ErrPreconditionFailed
	}
	if in.IfMatch != "" && (!exists || !etagMatches(in.IfMatch, old.info.ETag)) {
		return driver.ObjectInfo{}, driver.ErrPreconditionFailed
	}
	info := driver.ObjectInfo{
		Bucket: in.Bucket, Key: in.Key, Size: int64(len(data)), ETag: md5hex(data),
		ModTime: f.now(), Meta: copyMeta(in.Meta), Owner: b.info.Owner,
	}
	if in.Meta.ACL != nil {
		info.Owner = in.Meta.ACL.Owner.ID
	}
	b.objects[in.Key] = &fakeObject{info: info, data: data}
	return info, nil
}

func (f *fakeBackend) object(bucket, key string) (*fakeObject, error) {
	b, err := f.bucket(bucket)
	if err != nil {
		return nil, err
	}
	o, ok := b.objects[key]
	if !ok {
		return nil, driver.ErrNoSuchKey
	}
	return o, nil
}

func (f *fakeBackend) GetObject(ctx context.Context, bucket, key string, rng *driver.Range) (driver.ObjectInfo, io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("GetObject")
	o, err := f.object(bucket, key)
	if err != nil {
		return driver.ObjectInfo{}, nil, err
	}
	data := o.data
	if rng != nil {
		if rng.Start < 0 || rng.Length < 0 || rng.Start+rng.Length > int64(len(data)) {
			return driver.ObjectInfo{}, nil, fmt.Errorf("fake: bad range %+v for size %d", *rng, len(data))
		}
		data = data[rng.Start : rng.Start+rng.Length]
	}
	return o.info, io.NopCloser(bytes.NewReader(data)), nil
}

func (f *fakeBackend) HeadObject(ctx context.Context, bucket, key string) (driver.ObjectInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("HeadObject")
	o, err := f.object(bucket, key)
	if err != nil {
		return driver.ObjectInfo{}, err
	}
	return o.info, nil
}

func (f *fakeBackend) DeleteObject(ctx context.Context, bucket, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("DeleteObject")
	b, err := f.bucket(bucket)
	if err != nil {
		return err
	}
	delete(b.objects, key)
	return nil
}

func (f *fakeBackend) CopyObject(ctx context.Context, in driver.CopyObjectInput) (driver.ObjectInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("CopyObject")
	src, err := f.object(in.SrcBucket, in.SrcKey)
	if err != nil {
		return driver.ObjectInfo{}, err
	}
	if in.SrcCheck != nil {
		if err := in.SrcCheck(src.info); err != nil {
			return driver.ObjectInfo{}, err
		}
	}
	if err := checkCopyConditions(in.SrcCond, src.info); err != nil {
		return driver.ObjectInfo{}, driver.ErrPreconditionFailed
	}
	dst, err := f.bucket(in.DstBucket)
	if err != nil {
		return driver.ObjectInfo{}, err
	}
	meta := src.info.Meta
	if in.ReplaceMeta {
		meta = in.Meta
		meta.Checksums = src.info.Meta.Checksums
	}
	info := src.info
	info.Bucket, info.Key, info.ModTime, info.Meta, info.Owner = in.DstBucket, in.DstKey, f.now(), copyMeta(meta), dst.info.Owner
	dst.objects[in.DstKey] = &fakeObject{info: info, data: src.data}
	return info, nil
}

func (f *fakeBackend) ListObjects(ctx context.Context, in driver.ListObjectsInput) (driver.ListObjectsResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("ListObjects")
	b, err := f.bucket(in.Bucket)
	if err != nil {
		return driver.ListObjectsResult{}, err
	}
	keys := make([]string, 0, len(b.objects))
	for k := range b.objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var res driver.ListObjectsResult
	n := 0
	last := ""
	for _, k := range keys {
		if k <= in.StartAfter || !strings.HasPrefix(k, in.Prefix) {
			continue
		}
		entry, isPrefix := k, false
		if in.Delimiter != "" {
			if i := strings.Index(k[len(in.Prefix):], in.Delimiter); i >= 0 {
				entry, isPrefix = k[:len(in.Prefix)+i+len(in.Delimiter)], true
				if entry == last || (strings.HasPrefix(in.StartAfter, entry)) {
					continue
				}
			}
		}
		if n == in.MaxKeys {
			res.IsTruncated = true
			res.NextMarker = last
			break
		}
		n++
		last = entry
		if isPrefix {
			res.CommonPrefixes = append(res.CommonPrefixes, entry)
		} else {
			oi := b.objects[k].info
			res.Objects = append(res.Objects, oi.Listed())
		}
	}
	return res, nil
}

func (f *fakeBackend) CreateMultipartUpload(ctx context.Context, bucket, key string, meta driver.ObjectMeta) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("CreateMultipartUpload")
	b, err := f.bucket(bucket)
	if err != nil {
		return "", err
	}
	f.seq++
	id := fmt.Sprintf("upload-%d", f.seq)
	f.uploads[id] = &fakeUpload{
		info:  driver.UploadInfo{Bucket: bucket, Key: key, UploadID: id, Initiated: f.now(), Owner: b.info.Owner, Meta: copyMeta(meta)},
		parts: map[int]*fakePart{},
	}
	return id, nil
}

func (f *fakeBackend) upload(bucket, key, id string) (*fakeUpload, error) {
	if _, err := f.bucket(bucket); err != nil {
		return nil, err
	}
	u, ok := f.uploads[id]
	if !ok || u.info.Bucket != bucket || u.info.Key != key {
		return nil, driver.ErrNoSuchUpload
	}
	return u, nil
}

func (f *fakeBackend) UploadPart(ctx context.Context, bucket, key, id string, part int, body io.Reader, size int64, checksums map[string]string) (driver.PartInfo, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return driver.PartInfo{}, err
	}
	if size >= 0 && int64(len(data)) != size {
		return driver.PartInfo{}, driver.ErrIncompleteBody
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("UploadPart")
	u, err := f.upload(bucket, key, id)
	if err != nil {
		return driver.PartInfo{}, err
	}
	pi := driver.PartInfo{PartNumber: part, ETag: md5hex(data), Size: int64(len(data)), ModTime: f.now(), Checksums: copyMeta(driver.ObjectMeta{Checksums: checksums}).Checksums}
	u.parts[part] = &fakePart{info: pi, data: data}
	return pi, nil
}

func (f *fakeBackend) ListParts(ctx context.Context, bucket, key, id string, marker, max int) (driver.ListPartsResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, err := f.upload(bucket, key, id)
	if err != nil {
		return driver.ListPartsResult{}, err
	}
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
		res.Parts = append(res.Parts, u.parts[n].info)
		res.NextPartNumberMarker = n
	}
	return res, nil
}

func (f *fakeBackend) ListMultipartUploads(ctx context.Context, in driver.ListUploadsInput) (driver.ListUploadsResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.bucket(in.Bucket); err != nil {
		return driver.ListUploadsResult{}, err
	}
	var ups []driver.UploadInfo
	for _, u := range f.uploads {
		if u.info.Bucket == in.Bucket && strings.HasPrefix(u.info.Key, in.Prefix) &&
			(u.info.Key > in.KeyMarker || (u.info.Key == in.KeyMarker && u.info.UploadID > in.UploadIDMarker)) {
			ups = append(ups, u.info)
		}
	}
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

func (f *fakeBackend) CompleteMultipartUpload(ctx context.Context, bucket, key, id string, parts []driver.CompletePart, sum driver.ObjectChecksum) (driver.ObjectInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("CompleteMultipartUpload")
	u, err := f.upload(bucket, key, id)
	if err != nil {
		return driver.ObjectInfo{}, err
	}
	var data, sums []byte
	for i, cp := range parts {
		p, ok := u.parts[cp.PartNumber]
		if !ok || p.info.ETag != cp.ETag {
			return driver.ObjectInfo{}, driver.ErrInvalidPart
		}
		if i < len(parts)-1 && p.info.Size < f.minPart {
			return driver.ObjectInfo{}, driver.ErrEntityTooSmall
		}
		data = append(data, p.data...)
		raw, _ := hex.DecodeString(p.info.ETag)
		sums = append(sums, raw...)
	}
	info := driver.ObjectInfo{
		Bucket: bucket, Key: key, Size: int64(len(data)),
		ETag:    fmt.Sprintf("%s-%d", md5hex(sums), len(parts)),
		ModTime: f.now(), Meta: copyMeta(u.info.Meta), Parts: len(parts), Owner: u.info.Owner,
	}
	info.Meta.Checksums = nil
	f.buckets[bucket].objects[key] = &fakeObject{info: info, data: data}
	delete(f.uploads, id)
	return info, nil
}

func (f *fakeBackend) AbortMultipartUpload(ctx context.Context, bucket, key, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.upload(bucket, key, id); err != nil {
		return err
	}
	delete(f.uploads, id)
	return nil
}
