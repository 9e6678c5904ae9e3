package driver

import (
	"github.com/cairn-s3/cairn/internal/ratelimit"
	json "github.com/goccy/go-json"

	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objectlock"
	"github.com/cairn-s3/cairn/internal/objstore"
)

const nsUserBuckets = "users.buckets"

// Instance is a bucket instance record (default.rgw.meta, namespace
// "instances", object <bucket_id>): identity plus the index layout.
type Instance struct {
	Name     string             `json:"name"`
	ID       string             `json:"id"`
	Owner    string             `json:"owner"`
	Created  time.Time          `json:"created"`
	Location string             `json:"location,omitempty"`
	Layout   bucketindex.Layout `json:"layout"`
	// Versioning is "", VersioningEnabled or VersioningSuspended; once set
	// it never returns to "".
	Versioning string `json:"versioning,omitempty"`
	// Data management (datamgmt.go): bucket tags, object lock (enabled at
	// creation, never off; its default retention) and the lifecycle
	// configuration as validated XML.
	Tags        map[string]string            `json:"tags,omitempty"`
	ObjectLock  bool                         `json:"object_lock,omitempty"`
	LockDefault *objectlock.DefaultRetention `json:"lock_default,omitempty"`
	Lifecycle   string                       `json:"lifecycle,omitempty"`
	// Reshard is the in-progress reshard, owned by the reshard package.
	Reshard json.RawMessage `json:"reshard,omitempty"`
	// CORS is the bucket's CORS configuration (PutBucketCors), nil if none.
	CORS []CORSRule `json:"cors,omitempty"`
	// Access is the bucket's access-control state (access.go).
	Access BucketAccess `json:"access,omitzero"`
	// Encryption is the default encryption of new objects (sse.go).
	Encryption *BucketEncryption `json:"encryption,omitempty"`
	// Quota and RateLimit are the bucket's own (quota.go); nil: none.
	Quota     *Quota           `json:"quota,omitempty"`
	RateLimit *ratelimit.Limit `json:"ratelimit,omitempty"`
	// Logging is the bucket's logging configuration (PutBucketLogging,
	// logging.go); nil: logging disabled.
	Logging *BucketLogging `json:"logging,omitempty"`
}

// entryPoint is the bucket name's record (namespace "root", object <name>).
type entryPoint struct {
	ID      string    `json:"id"`
	Owner   string    `json:"owner"`
	Created time.Time `json:"created"`
}

type bucketCacheEntry struct {
	inst    Instance
	version uint64
	loaded  time.Time
	// auth is inst's parsed access state, built once per cached version.
	auth *BucketAuth
}

// bucketCacheTTL bounds how long a gateway trusts a cached instance without
// being told (by ErrStale) that it changed.
const bucketCacheTTL = 5 * time.Second

// ValidBucketName applies S3's bucket naming rules to an internal
// bucket name: a bare name, or "<tenant>/<name>" (tenant.go).
func ValidBucketName(name string) bool {
	if t, b, ok := strings.Cut(name, "/"); ok {
		return ValidTenant(t) && validS3BucketName(b)
	}
	return validS3BucketName(name)
}

func validS3BucketName(name string) bool {
	if len(name) < 3 || len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	first, last := name[0], name[len(name)-1]
	if first == '.' || first == '-' || last == '.' || last == '-' {
		return false
	}
	if strings.Contains(name, "..") || strings.Contains(name, ".-") || strings.Contains(name, "-.") {
		return false
	}
	return net.ParseIP(name) == nil
}

func (d *Driver) userBuckets() objstore.IOContext { return d.meta.WithNamespace(nsUserBuckets) }

// CreateBucket creates a bucket with numShards index shards (0 = default).
// The bucket's name record is claimed last, with an exclusive create: that is
// the commit point, so a crash before it leaves only an unreachable instance.
func (d *Driver) CreateBucket(ctx context.Context, owner, name, location string, numShards int) error {
	return d.CreateBucketWith(ctx, owner, name, location, numShards, false)
}

// CreateBucketWith is CreateBucket; objectLock creates the bucket with
// object lock enabled (x-amz-bucket-object-lock-enabled), which turns
// versioning on for good.
func (d *Driver) CreateBucketWith(ctx context.Context, owner, name, location string, numShards int, objectLock bool) error {
	if !ValidBucketName(name) {
		return ErrInvalidBucketName
	}
	if numShards == 0 {
		numShards = d.opts.DefaultShards
	}
	if numShards < 1 || numShards > MaxShards {
		return fmt.Errorf("%w: shard count %d outside 1..%d", ErrInvalidArgument, numShards, MaxShards)
	}
	if ep, err := d.readEntryPoint(ctx, name); err == nil {
		if ep.Owner == owner {
			return ErrBucketOwnedByYou
		}
		return ErrBucketExists
	}
	if err := d.checkBucketLimit(ctx, owner); err != nil {
		return err
	}
	inst := Instance{
		Name: name, ID: randomID(12), Owner: owner, Created: d.opts.Now().UTC(), Location: location,
		Layout: bucketindex.Layout{Gen: 0, NumShards: numShards},
	}
	if _, ok := d.index.(objstore.Viewer); ok && !d.opts.NoIndexView {
		inst.Layout.View = true // docs/design/listing.md
	}
	if objectLock {
		inst.ObjectLock, inst.Versioning = true, VersioningEnabled
	}
	if q := d.opts.DefaultBucketQuota; q.Enabled {
		q.Normalize()
		inst.Quota = &q
	}
	ix := d.indexFor(inst)
	if err := ix.Init(ctx); err != nil {
		_ = ix.Remove(ctx)
		return err
	}
	body, _ := json.Marshal(inst)
	if err := d.meta.WithNamespace(nsInstances).Operate(ctx, inst.ID, objstore.NewWriteOp().Create(true).WriteFull(body)); err != nil {
		_ = ix.Remove(ctx)
		return err
	}
	// Listed under the owner before the name is claimed; readers drop
	// entries whose name record disagrees, so a crash here is harmless.
	_ = d.userBuckets().Operate(ctx, owner, objstore.NewWriteOp().SetOmap(objstore.KV{Key: name, Value: []byte(inst.ID)}))
	ep, _ := json.Marshal(entryPoint{ID: inst.ID, Owner: owner, Created: inst.Created})
	err := d.meta.WithNamespace(nsRoot).Operate(ctx, name, objstore.NewWriteOp().Create(true).WriteFull(ep))
	if err != nil {
		_ = d.meta.WithNamespace(nsInstances).Operate(ctx, inst.ID, objstore.NewWriteOp().Remove())
		_ = ix.Remove(ctx)
		if errors.Is(err, objstore.ErrExists) {
			if cur, e2 := d.readEntryPoint(ctx, name); e2 == nil && cur.Owner == owner {
				return ErrBucketOwnedByYou
			}
			return ErrBucketExists
		}
		return err
	}
	return nil
}

// checkBucketLimit refuses a new bucket when owner already owns its
// max_buckets. Concurrent creates may overshoot by their number, as in RGW.
func (d *Driver) checkBucketLimit(ctx context.Context, owner string) error {
	limit := d.opts.MaxBuckets
	u, err := d.GetUser(ctx, owner)
	switch {
	case err == nil && u.MaxBuckets != nil:
		limit = *u.MaxBuckets
	case err != nil && !errors.Is(err, ErrNoSuchUser):
		return err
	}
	if limit == 0 {
		return nil
	}
	if limit < 0 {
		return fmt.Errorf("%w: user %s may not create buckets", ErrTooManyBuckets, owner)
	}
	// The owner's omap may hold stale names (crashed creates); count
	// exactly only when the cheap count says the limit is reached.
	op := objstore.NewReadOp()
	vs := op.GetOmapValues("", "", limit)
	if err := d.userBuckets().OperateRead(ctx, owner, op); err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return err
	}
	if len(vs.Pairs) < limit {
		return nil
	}
	owned, err := d.ListBuckets(ctx, owner)
	if err != nil {
		return err
	}
	if len(owned) >= limit {
		return fmt.Errorf("%w: user %s owns %d buckets, the limit is %d", ErrTooManyBuckets, owner, len(owned), limit)
	}
	return nil
}

// MaxShards caps index shard counts (RGW's rgw_max_dynamic_shards default is 1999;
// manual resharding may go higher).
const MaxShards = 65521

func (d *Driver) readEntryPoint(ctx context.Context, name string) (entryPoint, error) {
	b, err := readAll(ctx, d.meta.WithNamespace(nsRoot), name)
	if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrInvalid) {
		return entryPoint{}, ErrNoSuchBucket
	}
	if err != nil {
		return entryPoint{}, err
	}
	var ep entryPoint
	if err := json.Unmarshal(b, &ep); err != nil {
		return entryPoint{}, fmt.Errorf("bucket %s entry point: %w", name, err)
	}
	return ep, nil
}

// ReadInstance reads a bucket instance and its object version.
func (d *Driver) ReadInstance(ctx context.Context, id string) (Instance, uint64, error) {
	op := objstore.NewReadOp()
	st := op.Stat()
	r := op.Read(0, 0)
	err := d.meta.WithNamespace(nsInstances).OperateRead(ctx, id, op)
	if errors.Is(err, objstore.ErrNotFound) {
		return Instance{}, 0, ErrNoSuchBucket
	}
	if err != nil {
		return Instance{}, 0, err
	}
	var inst Instance
	if err := json.Unmarshal(r.Data, &inst); err != nil {
		return Instance{}, 0, fmt.Errorf("bucket instance %s: %w", id, err)
	}
	return inst, st.Stat.Version, nil
}

// WriteInstance replaces a bucket instance if its version is still ver
// (ErrCanceled otherwise), and drops cached copies.
func (d *Driver) WriteInstance(ctx context.Context, inst Instance, ver uint64) error {
	body, _ := json.Marshal(inst)
	err := d.meta.WithNamespace(nsInstances).Operate(ctx, inst.ID, objstore.NewWriteOp().AssertVersion(ver).WriteFull(body))
	d.Invalidate(inst.Name)
	return err
}

// Instance returns the bucket's instance, from cache when fresh.
func (d *Driver) Instance(ctx context.Context, name string) (Instance, error) {
	d.bmu.Lock()
	ce := d.buckets[name]
	d.bmu.Unlock()
	if ce != nil && d.opts.Now().Sub(ce.loaded) < bucketCacheTTL {
		return ce.inst, nil
	}
	ep, err := d.readEntryPoint(ctx, name)
	if err != nil {
		return Instance{}, err
	}
	inst, ver, err := d.ReadInstance(ctx, ep.ID)
	if err != nil {
		return Instance{}, err
	}
	d.bmu.Lock()
	ne := &bucketCacheEntry{inst: inst, version: ver, loaded: d.opts.Now()}
	if ce := d.buckets[name]; ce != nil && ce.version == ver && ce.inst.ID == inst.ID {
		ne.auth = ce.auth // same instance version: keep its parsed access state
	}
	d.buckets[name] = ne
	d.bmu.Unlock()
	return inst, nil
}

// Invalidate drops the cached instance of a bucket.
func (d *Driver) Invalidate(name string) {
	d.bmu.Lock()
	delete(d.buckets, name)
	d.bmu.Unlock()
}

func (d *Driver) indexFor(inst Instance) bucketindex.Index {
	return bucketindex.Index{IO: d.index, BucketID: inst.ID, Layout: inst.Layout, Now: d.opts.Now}
}

// withIndex runs fn on the bucket's current index, refreshing the layout and
// retrying when fn hits a retired generation (ErrStale). A reshard's switch
// refuses writes while it replays the sources' last records: wait it out
// (up to ReshardWait) rather than fail the request, as RGW's writers wait
// for a resharding bucket; past that, ErrReshardInProgress (503).
func (d *Driver) withIndex(ctx context.Context, bucket string, fn func(Instance, bucketindex.Index) error) error {
	var deadline time.Time
	for attempt := 0; ; attempt++ {
		inst, err := d.Instance(ctx, bucket)
		if err != nil {
			return err
		}
		err = fn(inst, d.indexFor(inst))
		if !errors.Is(err, objstore.ErrStale) {
			return err
		}
		d.Invalidate(bucket)
		if attempt == 0 {
			// A reader's layout is merely old: retry at once.
			deadline = time.Now().Add(d.opts.ReshardWait)
			continue
		}
		d.staleWaits.Add(1)
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: bucket %s: index writes refused for %v: %v", ErrReshardInProgress, bucket, d.opts.ReshardWait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Duration(attempt)*2*time.Millisecond, 50*time.Millisecond)):
		}
	}
}

// StaleWaits counts the retries of index operations that found their
// bucket's index switching (a reshard's final step) and waited.
func (d *Driver) StaleWaits() uint64 { return d.staleWaits.Load() }

// GetBucket returns a bucket's info.
func (d *Driver) GetBucket(ctx context.Context, name string) (BucketInfo, error) {
	if !ValidBucketName(name) {
		return BucketInfo{}, ErrNoSuchBucket
	}
	inst, err := d.Instance(ctx, name)
	if err != nil {
		return BucketInfo{}, err
	}
	return inst.info(), nil
}

func (inst Instance) info() BucketInfo {
	return BucketInfo{Name: inst.Name, ID: inst.ID, Owner: inst.Owner, Created: inst.Created, Location: inst.Location}
}

// ListBuckets lists owner's buckets ("" = every bucket) in name order.
func (d *Driver) ListBuckets(ctx context.Context, owner string) ([]BucketInfo, error) {
	var names []string
	if owner == "" {
		var err error
		if names, err = listAll(ctx, d.meta.WithNamespace(nsRoot)); err != nil {
			return nil, err
		}
	} else {
		op := objstore.NewReadOp()
		vs := op.GetOmapValues("", "", 0)
		err := d.userBuckets().OperateRead(ctx, owner, op)
		if err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return nil, err
		}
		for _, kv := range vs.Pairs {
			names = append(names, kv.Key)
		}
	}
	out := make([]BucketInfo, 0, len(names))
	for _, n := range names {
		ep, err := d.readEntryPoint(ctx, n)
		if errors.Is(err, ErrNoSuchBucket) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if owner != "" && ep.Owner != owner {
			continue
		}
		out = append(out, BucketInfo{Name: n, ID: ep.ID, Owner: ep.Owner, Created: ep.Created})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteBucket removes an empty bucket. Its shards are closed first, so a
// concurrent PUT either lands before (and the delete fails BucketNotEmpty)
// or fails with NoSuchBucket; then the name is released.
func (d *Driver) DeleteBucket(ctx context.Context, name string) error {
	d.Invalidate(name)
	inst, err := d.Instance(ctx, name)
	if err != nil {
		return err
	}
	if inst.Reshard != nil {
		return ErrReshardInProgress
	}
	ix := d.indexFor(inst)
	// Incomplete uploads do not keep an empty bucket: they are aborted with
	// it, as RGW does (its remove_bucket aborts multiparts); aborting reads
	// the index, so before it closes.
	if st, err := ix.Stats(ctx); err == nil && max(st.NumObjects, st.NumVersions) == 0 {
		if err := d.abortAllUploads(ctx, name); err != nil {
			return err
		}
	}
	if err := ix.SetState(ctx, bucketindex.StateClosed); err != nil {
		return err
	}
	st, err := ix.Stats(ctx)
	// Noncurrent versions and delete markers keep a bucket alive, as in S3.
	st.NumObjects = max(st.NumObjects, st.NumVersions)
	if err == nil && st.NumObjects == 0 {
		var ups ListUploadsResult
		ups, err = d.ListMultipartUploads(ctx, ListUploadsInput{Bucket: name, MaxUploads: 1})
		if err == nil && len(ups.Uploads) > 0 {
			st.NumObjects = 1 // an upload started since they were aborted
		}
	}
	if err != nil || st.NumObjects > 0 {
		_ = ix.SetState(ctx, bucketindex.StateOpen)
		if err != nil {
			return err
		}
		return ErrBucketNotEmpty
	}
	if err := d.meta.WithNamespace(nsRoot).Operate(ctx, name, objstore.NewWriteOp().Remove()); err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return err
	}
	d.Invalidate(name)
	if r := d.lifecycle(); r != nil && inst.Lifecycle != "" {
		_ = r.Unregister(ctx, name) // a stale entry would only be skipped
	}
	_ = d.userBuckets().Operate(ctx, inst.Owner, objstore.NewWriteOp().RmOmapKeys(name))
	// Collect the GC records the closed shards still hold before they go.
	d.gc.drainIndex(ctx, ix)
	_ = ix.Remove(ctx)
	_ = ix.RemoveView(ctx)
	_ = d.index.Operate(ctx, uploadsOID(inst.ID), objstore.NewWriteOp().Remove())
	_ = d.meta.WithNamespace(nsInstances).Operate(ctx, inst.ID, objstore.NewWriteOp().Remove())
	d.quota.mu.Lock()
	delete(d.quota.views, "b/"+inst.ID)
	d.quota.mu.Unlock()
	return nil
}

// abortAllUploads aborts every incomplete upload of a bucket being removed.
func (d *Driver) abortAllUploads(ctx context.Context, bucket string) error {
	in := ListUploadsInput{Bucket: bucket, MaxUploads: 1000}
	for {
		ups, err := d.ListMultipartUploads(ctx, in)
		if err != nil {
			return err
		}
		for _, u := range ups.Uploads {
			if err := d.AbortMultipartUpload(ctx, bucket, u.Key, u.UploadID); err != nil && !errors.Is(err, ErrNoSuchUpload) {
				return err
			}
		}
		if !ups.IsTruncated {
			return nil
		}
		in.KeyMarker, in.UploadIDMarker = ups.NextKeyMarker, ups.NextUploadIDMarker
	}
}

// BucketStats sums the index shards.
func (d *Driver) BucketStats(ctx context.Context, name string) (BucketStats, error) {
	var out BucketStats
	// The instance comes from the cache (5 s TTL): a reshard another
	// gateway finished or started shows here up to that much later. Not
	// refreshed on purpose: the dynamic reshard check calls this for every
	// bucket, and dropping the cache would cost the PUT path a meta read.
	err := d.withIndex(ctx, name, func(inst Instance, ix bucketindex.Index) error {
		st, err := ix.Usage(ctx)
		if err != nil {
			return err
		}
		out = BucketStats{
			BucketInfo: inst.info(), NumShards: inst.Layout.NumShards, Generation: inst.Layout.Gen, IndexView: inst.Layout.View,
			NumObjects: st.NumObjects, Size: st.Size, NumVersions: st.NumVersions, VersionsSize: st.VersionSize,
			Versioning: inst.Versioning, ReshardState: "none",
			StorageClasses: make(map[string]ClassUsage, len(st.Classes)),
			Usage:          map[string]CategoryUsage{},
		}
		for c, s := range st.Classes {
			out.StorageClasses[c] = ClassUsage{NumObjects: s.NumObjects, Size: s.Size, NumVersions: s.NumVersions, VersionsSize: s.VersionSize}
		}
		if st.NumVersions > 0 {
			out.Usage["rgw.main"] = CategoryUsage{Size: st.VersionSize, SizeKB: (st.VersionSize + 1023) / 1024, NumObjects: st.NumVersions}
		}
		if inst.Reshard != nil {
			out.ReshardState = "in-progress"
		}
		return nil
	})
	return out, err
}

// CheckIndexView compares the bucket's ordered index view with its
// shards' entries and returns up to max (0 = all) keys where they differ;
// view is false (and nothing is compared) when the bucket has none
// (docs/design/listing.md).
func (d *Driver) CheckIndexView(ctx context.Context, bucket string, max int) (view bool, diff []string, err error) {
	err = d.withIndex(ctx, bucket, func(inst Instance, ix bucketindex.Index) error {
		if view = inst.Layout.View; !view {
			return nil
		}
		var err error
		diff, err = ix.CheckView(ctx, max)
		return err
	})
	return view, diff, err
}

// IndexViewFix is what FixIndexView did.
type IndexViewFix struct {
	Built bool `json:"view_built"` // the bucket had no view; it has one now
	Fixed int  `json:"keys_fixed"` // view keys restated from the shards
}

// FixIndexView repairs the bucket's ordered index view (`bucket check
// --fix`): a bucket without one (created before views, or with
// bucket-index-view off) gets one built while writes go on, and its
// listings read it from then on; a bucket with one has every key where
// view and shards differ restated from the shards.
func (d *Driver) FixIndexView(ctx context.Context, bucket string) (IndexViewFix, error) {
	var out IndexViewFix
	inst, err := d.Instance(ctx, bucket)
	if err != nil {
		return out, err
	}
	if _, ok := d.index.(objstore.Viewer); !ok {
		return out, fmt.Errorf("%w: this backend keeps no ordered index views", ErrInvalidArgument)
	}
	if inst.Layout.View {
		err := d.withIndex(ctx, bucket, func(_ Instance, ix bucketindex.Index) error {
			diff, err := ix.CheckView(ctx, 0)
			if err != nil {
				return err
			}
			out.Fixed = len(diff)
			return ix.FixView(ctx, diff)
		})
		return out, err
	}
	if inst.Reshard != nil {
		return out, ErrReshardInProgress
	}
	layout := inst.Layout
	if err := d.indexFor(inst).BuildView(ctx); err != nil {
		return out, err
	}
	for attempt := 0; ; attempt++ {
		cur, ver, err := d.ReadInstance(ctx, inst.ID)
		if err != nil {
			return out, err
		}
		if cur.Layout != layout || cur.Reshard != nil {
			// A reshard's targets did not join: build again afterwards.
			return out, ErrReshardInProgress
		}
		cur.Layout.View = true
		err = d.WriteInstance(ctx, cur, ver)
		if errors.Is(err, objstore.ErrCanceled) && attempt < 100 {
			continue
		}
		if err != nil {
			return out, err
		}
		d.Invalidate(bucket)
		out.Built = true
		return out, nil
	}
}
