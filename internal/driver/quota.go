package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/ratelimit"
)

// ErrQuotaExceeded refuses a write that would take a bucket or its owner
// past an enabled quota (S3/RGW: 403 QuotaExceeded).
var ErrQuotaExceeded = errors.New("quota exceeded")

// Quota is RGW's quota spec: a user's own quota, the bucket-quota
// template a user's buckets follow, or one bucket's quota. Negative
// limits are unlimited (RGW's -1); 0 allows nothing.
type Quota struct {
	Enabled    bool  `json:"enabled"`
	MaxSize    int64 `json:"max_size"`    // bytes
	MaxSizeKB  int64 `json:"max_size_kb"` // max_size in KiB, as RGW reports it
	MaxObjects int64 `json:"max_objects"`
}

// NoQuota is the quota of a user or bucket that never set one.
var NoQuota = Quota{MaxSize: -1, MaxObjects: -1}

// Normalize fills MaxSizeKB from MaxSize.
func (q *Quota) Normalize() {
	if q.MaxSize < 0 {
		q.MaxSize, q.MaxSizeKB = -1, 0
	} else {
		q.MaxSizeKB = (q.MaxSize + 1023) / 1024
	}
	if q.MaxObjects < 0 {
		q.MaxObjects = -1
	}
}

func (q *Quota) orNone() Quota {
	if q == nil {
		return NoQuota
	}
	return *q
}

// limits reports whether q limits anything.
func (q Quota) limits() bool { return q.Enabled && (q.MaxSize >= 0 || q.MaxObjects >= 0) }

// allows reports whether usage objs/bytes stays within q.
func (q Quota) allows(objs, bytes int64) bool {
	if q.MaxObjects >= 0 && objs > q.MaxObjects {
		return false
	}
	return q.MaxSize < 0 || bytes <= q.MaxSize
}

// UserLimits are the quota and rate-limit settings of a user record.
type UserLimits struct {
	UserQuota   Quota           `json:"user_quota"`
	BucketQuota Quota           `json:"bucket_quota"`
	RateLimit   ratelimit.Limit `json:"ratelimit"`
}

// Limits returns a user's quotas and rate limit (defaults when unset).
func (u User) Limits() UserLimits {
	return UserLimits{UserQuota: u.UserQuota.orNone(), BucketQuota: u.BucketQuota.orNone(), RateLimit: u.RateLimit.OrNone()}
}

// quotaTracker is this gateway's view of bucket and user usage for quota
// checks: index stats read at most every QuotaStatsTTL, plus what this
// gateway admitted since (in flight and completed), less what it freed
// since. A write completing while the stats are read may be counted in
// both until the next refresh, a free completing then in neither: the
// view errs on the safe side. Delete markers (a version, not admitted)
// mark the view stale instead.
type quotaTracker struct {
	mu    sync.Mutex
	views map[string]*usageView // "b/<bucket id>", "u/<uid>"
	users map[string]userLimitsEntry
}

type userLimitsEntry struct {
	limits UserLimits
	found  bool
	loaded time.Time
}

type usageView struct {
	rmu    sync.Mutex // one refresh at a time
	base   [2]int64   // objects, bytes from the index stats
	atBase [2]int64   // done when the stats read began
	done   [2]int64   // completed admissions (cumulative)
	flight [2]int64   // admitted, not yet completed
	freed  [2]int64   // versions this gateway removed (cumulative)
	atFree [2]int64   // freed when the stats read ended
	// amb: writes were admitted or in flight while the stats were read:
	// the view may count them twice (in the stats and locally).
	amb    bool
	loaded time.Time
	valid  bool
}

func (v *usageView) usage() [2]int64 {
	return [2]int64{
		v.base[0] + v.done[0] - v.atBase[0] - (v.freed[0] - v.atFree[0]) + v.flight[0],
		v.base[1] + v.done[1] - v.atBase[1] - (v.freed[1] - v.atFree[1]) + v.flight[1],
	}
}

// userLimitsTTL bounds how long a gateway trusts a cached user's limits
// (changes through this gateway apply at once), as the key cache does.
const userLimitsTTL = 5 * time.Second

// userLimits returns uid's limits, cached.
func (d *Driver) userLimits(ctx context.Context, uid string) (UserLimits, bool, error) {
	now := d.opts.Now()
	t := &d.quota
	t.mu.Lock()
	e, ok := t.users[uid]
	t.mu.Unlock()
	if ok && now.Sub(e.loaded) < userLimitsTTL && !now.Before(e.loaded) {
		return e.limits, e.found, nil
	}
	u, err := d.GetUser(ctx, uid)
	found := err == nil
	if err != nil && !errors.Is(err, ErrNoSuchUser) {
		return UserLimits{}, false, err
	}
	l := u.Limits()
	t.mu.Lock()
	if t.users == nil || len(t.users) >= keyCacheMax {
		t.users = map[string]userLimitsEntry{}
	}
	t.users[uid] = userLimitsEntry{limits: l, found: found, loaded: now}
	t.mu.Unlock()
	return l, found, nil
}

// UserLimits returns uid's quotas and rate limit as this gateway enforces
// them (cached up to 5 s; changes made through this gateway at once).
func (d *Driver) UserLimits(ctx context.Context, uid string) (UserLimits, error) {
	l, _, err := d.userLimits(ctx, uid)
	return l, err
}

func (d *Driver) forgetUserLimits(uid string) {
	d.quota.mu.Lock()
	delete(d.quota.users, uid)
	delete(d.quota.views, "u/"+uid)
	d.quota.mu.Unlock()
}

// quotaTicket is one admitted write's share of the views.
type quotaTicket struct {
	d  *Driver
	vs [2]*usageView // bucket and/or user (fixed arrays: no allocation)
	qs [2]Quota
	nv int
	n  [2]int64
}

func (t *quotaTicket) views() []*usageView { return t.vs[:t.nv] }

// quotaAdmit admits a write adding objs objects and size bytes to inst
// (size < 0: not known yet, see grow), or returns ErrQuotaExceeded. A nil
// ticket means no quota applies. The caller ends the ticket with done or
// cancel.
func (d *Driver) quotaAdmit(ctx context.Context, inst Instance, objs, size int64) (*quotaTicket, error) {
	ul, _, err := d.userLimits(ctx, inst.Owner)
	if err != nil {
		return nil, err
	}
	bq := inst.Quota.orNone()
	if !bq.Enabled {
		bq = ul.BucketQuota // the owner's template for buckets without their own
	}
	if !bq.limits() && !ul.UserQuota.limits() {
		return nil, nil
	}
	if size < 0 {
		size = 0
	}
	for attempt := 0; ; attempt++ {
		t := &quotaTicket{d: d}
		if bq.limits() {
			v, err := d.usageView(ctx, "b/"+inst.ID, inst.Name, false)
			if err != nil {
				return nil, err
			}
			t.vs[t.nv], t.qs[t.nv] = v, bq
			t.nv++
		}
		if ul.UserQuota.limits() {
			v, err := d.usageView(ctx, "u/"+inst.Owner, inst.Owner, true)
			if err != nil {
				return nil, err
			}
			t.vs[t.nv], t.qs[t.nv] = v, ul.UserQuota
			t.nv++
		}
		err := t.add(objs, size)
		if err == nil {
			return t, nil
		}
		// Refused by a view that may count writes twice (admitted while
		// its stats were read): read again, now that they are settled,
		// before refusing. Bounded: under a steady stream of concurrent
		// writes at the limit a refusal may still be a false one.
		if attempt == 2 || !t.unsettle() {
			return nil, err
		}
	}
}

// unsettle marks the views whose last stats read overlapped admissions
// stale, and reports whether there were any.
func (t *quotaTicket) unsettle() bool {
	tr := &t.d.quota
	tr.mu.Lock()
	defer tr.mu.Unlock()
	any := false
	for _, v := range t.views() {
		if v.amb {
			v.valid, any = false, true
		}
	}
	return any
}

// add checks every view with n more and takes it, all or nothing.
func (t *quotaTicket) add(objs, size int64) error {
	tr := &t.d.quota
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for i, v := range t.views() {
		u := v.usage()
		if !t.qs[i].allows(u[0]+objs, u[1]+size) {
			return fmt.Errorf("%w: %d objects and %d bytes used, limit %d objects and %d bytes",
				ErrQuotaExceeded, u[0], u[1], t.qs[i].MaxObjects, t.qs[i].MaxSize)
		}
	}
	for _, v := range t.views() {
		v.flight[0] += objs
		v.flight[1] += size
	}
	t.n[0] += objs
	t.n[1] += size
	return nil
}

// grow re-checks once the real size is known (a body of unknown length).
func (t *quotaTicket) grow(size int64) error {
	if t == nil || size <= t.n[1] {
		return nil
	}
	return t.add(0, size-t.n[1])
}

// done moves the ticket to the completed counters, with the versions the
// write replaced (an overwrite) as freed.
func (t *quotaTicket) done(freed []bucketindex.Entry) {
	if t == nil {
		return
	}
	f := freedUsage(freed)
	tr := &t.d.quota
	tr.mu.Lock()
	for _, v := range t.views() {
		v.flight[0] -= t.n[0]
		v.flight[1] -= t.n[1]
		v.done[0] += t.n[0]
		v.done[1] += t.n[1]
		v.freed[0] += f[0]
		v.freed[1] += f[1]
	}
	tr.mu.Unlock()
}

func freedUsage(freed []bucketindex.Entry) [2]int64 {
	var f [2]int64
	for _, e := range freed {
		f[0]++
		f[1] += e.Size
	}
	return f
}

func (t *quotaTicket) cancel() {
	if t == nil {
		return
	}
	tr := &t.d.quota
	tr.mu.Lock()
	for _, v := range t.views() {
		v.flight[0] -= t.n[0]
		v.flight[1] -= t.n[1]
	}
	tr.mu.Unlock()
}

// quotaFreed counts versions a delete removed in the views of the bucket
// and its owner; with none (a delete marker was added) it marks them
// stale, so the next check reads the stats again.
func (d *Driver) quotaFreed(inst Instance, freed []bucketindex.Entry) {
	f := freedUsage(freed)
	tr := &d.quota
	tr.mu.Lock()
	for _, k := range []string{"b/" + inst.ID, "u/" + inst.Owner} {
		if v := tr.views[k]; v != nil {
			if len(freed) == 0 {
				v.valid = false
			}
			v.freed[0] += f[0]
			v.freed[1] += f[1]
		}
	}
	tr.mu.Unlock()
}

// usageView returns the view named key (of bucket or user name),
// refreshed when older than the stats TTL (or marked stale).
func (d *Driver) usageView(ctx context.Context, key, name string, user bool) (*usageView, error) {
	tr := &d.quota
	tr.mu.Lock()
	if tr.views == nil {
		tr.views = map[string]*usageView{}
	}
	v := tr.views[key]
	if v == nil {
		v = &usageView{}
		tr.views[key] = v
	}
	fresh := func() bool {
		now := d.opts.Now()
		return v.valid && d.opts.QuotaStatsTTL > 0 && now.Sub(v.loaded) < d.opts.QuotaStatsTTL && !now.Before(v.loaded)
	}
	ok := fresh()
	tr.mu.Unlock()
	if ok {
		return v, nil
	}
	arrived := d.opts.Now()
	v.rmu.Lock()
	defer v.rmu.Unlock()
	tr.mu.Lock()
	// A read that began after this request arrived is as fresh as one of
	// its own: concurrent checks share it (with a TTL of 0 too).
	ok = fresh() || (v.valid && !v.loaded.Before(arrived))
	at, atFlight := v.done, v.flight
	tr.mu.Unlock()
	if ok {
		return v, nil
	}
	started := d.opts.Now()
	var u [2]int64
	var err error
	if user {
		u, err = d.userUsage(ctx, name)
	} else {
		u, err = d.bucketUsage(ctx, name)
	}
	if err != nil {
		return nil, err
	}
	tr.mu.Lock()
	// Frees that completed during the read are not subtracted (the stats
	// may or may not show them): safe.
	v.base, v.atBase, v.atFree, v.loaded, v.valid = u, at, v.freed, started, true
	v.amb = atFlight != [2]int64{} || v.done != at || v.flight != [2]int64{}
	tr.mu.Unlock()
	return v, nil
}

// bucketUsage is what quotas count of a bucket: every stored version
// (noncurrent ones and delete markers included, as RGW counts them).
func (d *Driver) bucketUsage(ctx context.Context, name string) ([2]int64, error) {
	var st bucketindex.Stats
	err := d.withIndex(ctx, name, func(_ Instance, ix bucketindex.Index) error {
		var err error
		st, err = ix.Stats(ctx)
		return err
	})
	return [2]int64{int64(st.NumVersions), int64(st.VersionSize)}, err
}

// userUsage sums bucketUsage over the user's buckets.
func (d *Driver) userUsage(ctx context.Context, uid string) ([2]int64, error) {
	bs, err := d.ListBuckets(ctx, uid)
	if err != nil {
		return [2]int64{}, err
	}
	var sum [2]int64
	for _, b := range bs {
		u, err := d.bucketUsage(ctx, b.Name)
		if errors.Is(err, ErrNoSuchBucket) {
			continue // removed meanwhile
		}
		if err != nil {
			return [2]int64{}, err
		}
		sum[0] += u[0]
		sum[1] += u[1]
	}
	return sum, nil
}

// UserStats is a user's usage summed over its buckets (radosgw-admin user
// stats).
type UserStats struct {
	NumObjects int64 `json:"num_objects"`
	Size       int64 `json:"size"`
}

// UserUsageStats reads a user's usage from the index stats now.
func (d *Driver) UserUsageStats(ctx context.Context, uid string) (UserStats, error) {
	u, err := d.userUsage(ctx, uid)
	return UserStats{NumObjects: u[0], Size: u[1]}, err
}

// UpdateBucketInstance rewrites a bucket instance with fn, guarded by its
// version (retried on a concurrent change).
func (d *Driver) UpdateBucketInstance(ctx context.Context, name string, fn func(*Instance) error) (Instance, error) {
	for attempt := 0; attempt < 20; attempt++ {
		ep, err := d.readEntryPoint(ctx, name)
		if err != nil {
			return Instance{}, err
		}
		inst, ver, err := d.ReadInstance(ctx, ep.ID)
		if err != nil {
			return Instance{}, err
		}
		if err := fn(&inst); err != nil {
			return Instance{}, err
		}
		err = d.WriteInstance(ctx, inst, ver)
		if !errors.Is(err, objstore.ErrCanceled) {
			return inst, err
		}
	}
	return Instance{}, fmt.Errorf("bucket %s: instance kept changing", name)
}

// QuotaScope names what a quota applies to: a user's own total, or
// buckets (one bucket, or the user's template for its buckets).
const (
	QuotaScopeUser   = "user"
	QuotaScopeBucket = "bucket"
)

// SetQuota changes a quota with fn: scope "user" (uid's total), scope
// "bucket" without bucket (uid's template for its buckets), or bucket's
// own quota (uid, when given, must own it). It returns the new quota.
func (d *Driver) SetQuota(ctx context.Context, scope, uid, bucket string, fn func(*Quota)) (Quota, error) {
	var out Quota
	apply := func(p **Quota) {
		q := (*p).orNone()
		fn(&q)
		q.Normalize()
		*p, out = &q, q
	}
	switch {
	case scope == QuotaScopeBucket && bucket != "":
		_, err := d.UpdateBucketInstance(ctx, bucket, func(inst *Instance) error {
			if uid != "" && inst.Owner != uid {
				return fmt.Errorf("%w: bucket %s is not owned by %s", ErrInvalidArgument, bucket, uid)
			}
			apply(&inst.Quota)
			return nil
		})
		return out, err
	case scope == QuotaScopeBucket || scope == QuotaScopeUser:
		_, err := d.UpdateUser(ctx, uid, func(u *User) error {
			if scope == QuotaScopeUser {
				apply(&u.UserQuota)
			} else {
				apply(&u.BucketQuota)
			}
			return nil
		})
		return out, err
	}
	return Quota{}, fmt.Errorf("%w: quota scope %q (want user or bucket)", ErrInvalidArgument, scope)
}

// GetQuota returns the quota SetQuota names.
func (d *Driver) GetQuota(ctx context.Context, scope, uid, bucket string) (Quota, error) {
	switch {
	case scope == QuotaScopeBucket && bucket != "":
		inst, err := d.Instance(ctx, bucket)
		if err != nil {
			return Quota{}, err
		}
		return inst.Quota.orNone(), nil
	case scope == QuotaScopeBucket || scope == QuotaScopeUser:
		u, err := d.GetUser(ctx, uid)
		if err != nil {
			return Quota{}, err
		}
		if scope == QuotaScopeUser {
			return u.UserQuota.orNone(), nil
		}
		return u.BucketQuota.orNone(), nil
	}
	return Quota{}, fmt.Errorf("%w: quota scope %q (want user or bucket)", ErrInvalidArgument, scope)
}

// SetRateLimit changes the rate limit of a user (scope "user") or a
// bucket (scope "bucket") with fn and returns it.
func (d *Driver) SetRateLimit(ctx context.Context, scope, uid, bucket string, fn func(*ratelimit.Limit)) (ratelimit.Limit, error) {
	var out ratelimit.Limit
	apply := func(p **ratelimit.Limit) {
		l := (*p).OrNone()
		fn(&l)
		*p, out = &l, l
	}
	switch scope {
	case QuotaScopeBucket:
		if bucket == "" {
			return out, fmt.Errorf("%w: bucket rate limits need a bucket", ErrInvalidArgument)
		}
		_, err := d.UpdateBucketInstance(ctx, bucket, func(inst *Instance) error { apply(&inst.RateLimit); return nil })
		return out, err
	case QuotaScopeUser:
		_, err := d.UpdateUser(ctx, uid, func(u *User) error { apply(&u.RateLimit); return nil })
		return out, err
	}
	return out, fmt.Errorf("%w: ratelimit scope %q (want user or bucket)", ErrInvalidArgument, scope)
}

// GetRateLimit returns the rate limit SetRateLimit names.
func (d *Driver) GetRateLimit(ctx context.Context, scope, uid, bucket string) (ratelimit.Limit, error) {
	switch scope {
	case QuotaScopeBucket:
		inst, err := d.Instance(ctx, bucket)
		if err != nil {
			return ratelimit.Limit{}, err
		}
		return inst.RateLimit.OrNone(), nil
	case QuotaScopeUser:
		u, err := d.GetUser(ctx, uid)
		if err != nil {
			return ratelimit.Limit{}, err
		}
		return u.RateLimit.OrNone(), nil
	}
	return ratelimit.Limit{}, fmt.Errorf("%w: ratelimit scope %q (want user or bucket)", ErrInvalidArgument, scope)
}

// RateLimits returns the limits a request on bucket (may be "") by uid
// (may be "", anonymous) is held to: the user's and the bucket's, as this
// gateway caches them.
func (d *Driver) RateLimits(ctx context.Context, uid, bucket string) (user, bkt ratelimit.Limit, err error) {
	if uid != "" {
		ul, _, err := d.userLimits(ctx, uid)
		if err != nil {
			return user, bkt, err
		}
		user = ul.RateLimit
	}
	if bucket != "" {
		inst, err := d.Instance(ctx, bucket)
		if err != nil && !errors.Is(err, ErrNoSuchBucket) {
			return user, bkt, err
		}
		bkt = inst.RateLimit.OrNone()
	}
	return user, bkt, nil
}
