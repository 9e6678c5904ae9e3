package driver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/cairn-s3/cairn/internal/kms"
	"github.com/cairn-s3/cairn/internal/kms/secret"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Pool names, RGW's defaults so Ceph users recognise them.
const (
	PoolMeta  = "default.rgw.meta"
	PoolIndex = "default.rgw.buckets.index"
	PoolData  = "default.rgw.buckets.data"
	PoolLog   = "default.rgw.log"
)

// Namespaces inside default.rgw.meta.
const (
	nsUsers     = "users.uid"
	nsKeys      = "users.keys"
	nsEmails    = "users.email" // object <lower-case email>, data <uid>
	nsRoot      = "root"
	nsInstances = "instances"
)

// StripeSize is the size of a data stripe; an object's first stripe is its
// head object.
const StripeSize = 4 << 20

// MaxInline bounds Options.InlineMax: the first read of a body.
const MaxInline = 64 << 10

// DefaultInline is cairn serve's --inline-max default.
const DefaultInline = 1024

// Options configure a Driver.
type Options struct {
	Store objstore.Store
	// DefaultShards is the index shard count of new buckets (bucket-index-shards).
	DefaultShards int
	// NoIndexView creates buckets without an ordered index view even on a
	// backend that keeps views (objstore.Viewer), so ordered listings
	// merge every shard as on RADOS (bucket-index-view=false).
	NoIndexView bool
	// InlineMax: a PUT's clear body of at most this many bytes is kept in
	// its index entry instead of a data object (one key per small GET and
	// PUT, nothing to collect); 0 = never, at most MaxInline. Index
	// entries grow by the body: a reshard copies it with the entry.
	InlineMax int64
	// GCMinWait delays collection of replaced data so that in-flight GETs of
	// the old version can finish (RGW: rgw_gc_obj_min_wait).
	GCMinWait time.Duration
	// GCQueueMax bounds the replaced manifests the collector holds in
	// memory; more wait in their shards' GC records. Default 65536.
	GCQueueMax int
	// ReshardWait is how long an index operation retries while its
	// bucket's reshard switches layouts before it answers
	// ErrReshardInProgress. Default 60s.
	ReshardWait time.Duration
	Logger      *slog.Logger
	Notifier    Notifier // nil: no notifications
	Now         func() time.Time
	// MaxBuckets is how many buckets a user may own when its record sets
	// no max_buckets (RGW's rgw_user_max_buckets); 0 means unlimited.
	MaxBuckets int
	// ListShardReadBudget bounds one ListObjects call's index reads; 0
	// means DefaultListShardReadBudget.
	ListShardReadBudget int
	// Failpoint, when set, is called at named steps of the write path
	// (crash drills: see ExitFailpoint): "put-after-data" (data written,
	// not linked; a small PUT on a store with objstore.AtomicWriter holds
	// its data for the link's commit: nothing written yet), "after-link" (version linked, before GC hand-off,
	// notification commit and reply), "after-unlink" (version removed,
	// before its data is collected); and for the orphan drills
	// (orphans_test.go): "data-stripe" (after each stripe of a run),
	// "part-after-data", "part-after-swap" (a part recorded; the part
	// it replaced, if any, not yet removed), "create-upload",
	// "complete-before-drop", "drop-upload" (between the two removals of
	// an upload's records), "abort-part" (before each part an abort
	// removes), "gc-after-remove" (data collected, record not cleared).
	Failpoint func(point string)
	// KMS seals the data keys of SSE-S3 and SSE-KMS objects; nil: only
	// SSE-C is served.
	KMS kms.KMS
	// EncryptByDefault applies SSE-S3 to every new object that asks for no
	// encryption in a bucket without a default (AWS's behaviour since 2023).
	EncryptByDefault bool
	// Secrets seals user secret keys at rest; nil stores them in clear
	// (records sealed earlier then fail to load: secret.ErrNoKMS).
	Secrets *secret.Sealer
	// QuotaStatsTTL is how long a quota check trusts the index stats it
	// read (plus what this gateway admitted since) before reading them
	// again; 0 reads them at every check (RGW: rgw_bucket_quota_ttl).
	QuotaStatsTTL time.Duration
	// DefaultUserQuota and DefaultBucketQuota are given to new users and
	// new buckets when enabled (RGW's rgw_user_default_quota_* and
	// rgw_bucket_default_quota_*).
	DefaultUserQuota   Quota
	DefaultBucketQuota Quota
	// StorageClasses are the classes besides STANDARD, each placed in a
	// data pool of its own (RGW's placement storage classes).
	StorageClasses []StorageClass
}

// ExitFailpoint returns a Failpoint that ends the process with status 137
// (as kill -9 would) at the n-th hit of the point spec names ("point" or
// "point:n", n from 1); nil for an empty spec. With the suffix "/hang"
// the request blocks there forever instead, so a test can make other
// writes (and their syncs) happen before it kills the process.
func ExitFailpoint(spec string) func(string) {
	if spec == "" {
		return nil
	}
	hang := strings.HasSuffix(spec, "/hang")
	spec = strings.TrimSuffix(spec, "/hang")
	name, nth := spec, int64(1)
	if i := strings.LastIndexByte(spec, ':'); i > 0 {
		if n, err := strconv.ParseInt(spec[i+1:], 10, 64); err == nil && n > 0 {
			name, nth = spec[:i], n
		}
	}
	var hits atomic.Int64
	return func(p string) {
		if p == name && hits.Add(1) == nth {
			if hang {
				select {}
			}
			os.Exit(137)
		}
	}
}

func (d *Driver) failpoint(p string) {
	if d.opts.Failpoint != nil {
		d.opts.Failpoint(p)
	}
}

// DefaultReshardWait is Options.ReshardWait's default: a switch blocks
// writers for milliseconds; this covers a slow one on a loaded store.
const DefaultReshardWait = 60 * time.Second

func (o *Options) ensureDefaults() {
	if o.DefaultShards <= 0 {
		o.DefaultShards = 11
	}
	if o.GCMinWait == 0 {
		o.GCMinWait = 30 * time.Second
	}
	if o.GCQueueMax <= 0 {
		o.GCQueueMax = 1 << 16
	}
	o.InlineMax = min(max(o.InlineMax, 0), MaxInline)
	if o.ReshardWait <= 0 {
		o.ReshardWait = DefaultReshardWait
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ListShardReadBudget <= 0 {
		o.ListShardReadBudget = DefaultListShardReadBudget
	}
}

// Driver implements S3 semantics on an objstore.Store. Safe for concurrent use.
type Driver struct {
	opts  Options
	log   *slog.Logger
	meta  objstore.IOContext
	index objstore.IOContext
	data  objstore.IOContext
	logIO objstore.IOContext

	bootID string
	seq    atomic.Uint64
	// staleWaits: index operations retried behind a layout switch.
	staleWaits atomic.Uint64

	// Foreground index writes (links and unlinks): count and summed
	// latency, the signal that paces a reshard's copy.
	idxWrites, idxWriteNanos atomic.Uint64

	bmu     sync.Mutex
	buckets map[string]*bucketCacheEntry
	akeys   keyCache
	// groupPolicies, when set (internal/iam), returns the policies of the
	// groups an account user belongs to, for its compiled identity.
	groupPolicies atomic.Pointer[GroupPolicyLoader]

	gc      *collector
	intents *intentRemover
	lc      lcReg // lifecycle worker, set after construction

	pools pools // storage class placement (placement.go)

	bkeys bucketKeys // SSE bucket keys (bucketkey.go)
	quota quotaTracker
}

// New opens the driver, creating the RGW pools when missing, and starts the
// data collector. Close stops it.
func New(ctx context.Context, opts Options) (*Driver, error) {
	opts.ensureDefaults()
	if opts.Store == nil {
		return nil, errors.New("driver: no store")
	}
	for _, p := range []string{PoolMeta, PoolIndex, PoolData, PoolLog} {
		if err := opts.Store.CreatePool(ctx, p); err != nil && !errors.Is(err, objstore.ErrExists) {
			return nil, fmt.Errorf("driver: create pool %s: %w", p, err)
		}
	}
	d := &Driver{opts: opts, log: opts.Logger, buckets: map[string]*bucketCacheEntry{}}
	var err error
	if d.meta, err = opts.Store.IOContext(ctx, PoolMeta); err != nil {
		return nil, err
	}
	if d.index, err = opts.Store.IOContext(ctx, PoolIndex); err != nil {
		return nil, err
	}
	if d.data, err = opts.Store.IOContext(ctx, PoolData); err != nil {
		return nil, err
	}
	if d.logIO, err = opts.Store.IOContext(ctx, PoolLog); err != nil {
		return nil, err
	}
	if err := d.openPlacement(ctx); err != nil {
		return nil, err
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	// Time first, so names from later boots sort later (orphan sweeps by boot).
	d.bootID = strconv.FormatInt(opts.Now().Unix(), 36) + hex.EncodeToString(b[:])
	d.gc = newCollector(d)
	d.intents = newIntentRemover(d)
	return d, nil
}

// Close stops background work. In-flight requests must have finished.
func (d *Driver) Close() error {
	if f, ok := d.opts.Notifier.(interface{ FlushDeferred(context.Context) error }); ok {
		// Deferred commits end before the last intent removals go out.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = f.FlushDeferred(ctx)
		cancel()
	}
	d.intents.stop()
	d.gc.stop()
	return nil
}

// IndexIO and DataIO expose the pools to the services built beside the
// driver (resharding, admin inspection).
func (d *Driver) IndexIO() objstore.IOContext { return d.index }
func (d *Driver) DataIO() objstore.IOContext  { return d.data }
func (d *Driver) MetaIO() objstore.IOContext  { return d.meta }

// LogIO is the log pool (usage log, notification queues).
func (d *Driver) LogIO() objstore.IOContext { return d.logIO }

// BootID names this process's writes (unique per boot).
func (d *Driver) BootID() string { return d.bootID }

// newTag returns a name unique to this write: boot id + sequence.
func (d *Driver) newTag() string {
	return d.bootID + "_" + strconv.FormatUint(d.seq.Add(1), 36)
}

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
