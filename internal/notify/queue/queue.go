package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clsq "github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Defaults.
const (
	DefaultCapacity       = 128 << 20 // bytes per shard (RGW's fixed size)
	DefaultSlotSize       = 4 << 10   // bytes reserved per event (RGW's 4 KiB)
	DefaultReservationTTL = 120 * time.Second
	DefaultExpiryInterval = 30 * time.Second
	DefaultPoolMax        = 64
	DefaultDeferLinger    = 50 * time.Millisecond
	DefaultDeferBatch     = 64
	// MaxRegistryPage bounds one registry page.
	MaxRegistryPage = 1000
)

// ErrQueueGone reports that a shard no longer exists: its topic was
// deleted or made non-persistent while an event was on its way.
var ErrQueueGone = errors.New("queue: shard no longer exists")

// Options configure Queues. Zero values take the documented defaults.
type Options struct {
	// Capacity of one shard in bytes (notif-queue-size). Default 128 MiB.
	Capacity uint64
	// SlotSize is the room reserved for one event whose record is known to
	// fit (the service estimates an upper bound). Default 4 KiB.
	SlotSize uint64
	// ReservationTTL: reservations older than this are expired by the
	// expiry job (a crashed gateway's). Default 120 s. It must exceed the
	// longest S3 request, or a slow PUT's reservation expires; Commit then
	// reserves afresh (see Reservation.Commit).
	ReservationTTL time.Duration
	// ExpiryInterval is the period of RunExpiry. Default 30 s.
	ExpiryInterval time.Duration
	// PoolMax bounds the reservations a gateway keeps ready per shard.
	// Default 64, further limited to capacity/(64*SlotSize); negative
	// disables pooling (every PUT then does reserve and commit as two ops).
	PoolMax int
	// DeferLinger is how long a deferred commit (Reservation.CommitDeferred)
	// waits for others before the committer's next round (one op per
	// waiting shard, all in one store call); DeferBatch pending commits on
	// one shard start it at once. Defaults 50 ms and 64.
	DeferLinger time.Duration
	DeferBatch  int
	Logger      *slog.Logger
	// Now is the gateway clock, used for pool ages. Default time.Now.
	Now func() time.Time
}

func (o *Options) ensureDefaults() {
	if o.Capacity == 0 {
		o.Capacity = DefaultCapacity
	}
	if o.SlotSize == 0 {
		o.SlotSize = DefaultSlotSize
	}
	if o.ReservationTTL <= 0 {
		o.ReservationTTL = DefaultReservationTTL
	}
	if o.ExpiryInterval <= 0 {
		o.ExpiryInterval = DefaultExpiryInterval
	}
	if o.PoolMax == 0 {
		o.PoolMax = DefaultPoolMax
	}
	if lim := int(o.Capacity / (64 * o.SlotSize)); o.PoolMax > lim {
		o.PoolMax = lim
	}
	if o.DeferLinger <= 0 {
		o.DeferLinger = DefaultDeferLinger
	}
	if o.DeferBatch <= 0 {
		o.DeferBatch = DefaultDeferBatch
	}
	o.DeferBatch = min(o.DeferBatch, groupMaxOps)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Queues manages the sharded queues of one store. Safe for concurrent use.
type Queues struct {
	opts Options
	io   objstore.IOContext // default.rgw.log / notif
	log  *slog.Logger

	pmu   sync.Mutex
	pools map[string]*shardPool // by shard oid

	groupOps, groupEvents atomic.Uint64 // successful group commits
	reserveOps            atomic.Uint64 // reservations that took an op
	unfinished            counter       // deferred commits not done yet
	later                 committer     // deferred commits of every shard

	hooks atomic.Pointer[[]func(oid string)]           // OnCommit subscribers
	bound atomic.Pointer[func(oid string) clsq.Marker] // SetStatsBound
}

// SetStatsBound gives Stats, per shard, a marker up to which every entry is
// gone ("" if unknown): the delivery manager's bound for the shards it
// owns, so a shard's oldest entry is looked for past its removed ones
// (clsq.GetStatsAfter). fn must be cheap and safe for concurrent use.
func (q *Queues) SetStatsBound(fn func(oid string) clsq.Marker) { q.bound.Store(&fn) }

// OnCommit registers fn to be called, synchronously and without locks
// held, after every commit through these Queues succeeded on a shard (at
// least once per op; several events may share a call). fn must not block:
// the delivery manager uses it to wake the shard's worker. Commits through
// other gateways are not seen.
func (q *Queues) OnCommit(fn func(oid string)) {
	for {
		old := q.hooks.Load()
		var next []func(string)
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, fn)
		if q.hooks.CompareAndSwap(old, &next) {
			return
		}
	}
}

func (q *Queues) committed(oid string) {
	if hs := q.hooks.Load(); hs != nil {
		for _, fn := range *hs {
			fn(oid)
		}
	}
}

// Open returns Queues on store, creating the log pool if needed.
func Open(ctx context.Context, store objstore.Store, opts Options) (*Queues, error) {
	if err := store.CreatePool(ctx, Pool); err != nil && !errors.Is(err, objstore.ErrExists) {
		return nil, fmt.Errorf("queue: create pool %s: %w", Pool, err)
	}
	io, err := store.IOContext(ctx, Pool)
	if err != nil {
		return nil, err
	}
	return New(io, opts), nil
}

// New returns Queues on io's pool, in namespace "notif" (io's own namespace
// is ignored).
func New(io objstore.IOContext, opts Options) *Queues {
	opts.ensureDefaults()
	return &Queues{opts: opts, io: io.WithNamespace(Namespace), log: opts.Logger, pools: map[string]*shardPool{}}
}

// IO is the handle on the queue namespace, for the delivery manager (which
// fences its list/remove calls on shard objects with lock.AssertLocked).
func (q *Queues) IO() objstore.IOContext { return q.io }

// Options returns the effective options.
func (q *Queues) Options() Options { return q.opts }

// Create initialises the n shards of queue name and registers it. It is
// idempotent: existing shards are kept (with their entries), so a retried
// or interrupted create completes. Shards are created before the registry
// entry, so the delivery manager never finds a registered queue without
// shards.
func (q *Queues) Create(ctx context.Context, name string, n int) error {
	if n < 1 {
		return fmt.Errorf("queue: %d shards: %w", n, objstore.ErrInvalid)
	}
	err := forEachShard(ctx, ShardOIDs(name, n), func(ctx context.Context, oid string) error {
		err := clsq.Init(ctx, q.io, oid, q.opts.Capacity)
		if errors.Is(err, objstore.ErrExists) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("queue: create %s: %w", name, err)
	}
	op := objstore.NewWriteOp().Create(false).SetOmap(objstore.KV{Key: name, Value: []byte(strconv.Itoa(n))})
	if err := q.io.Operate(ctx, RegistryObject, op); err != nil {
		return fmt.Errorf("queue: register %s: %w", name, err)
	}
	return nil
}

// Delete unregisters queue name and removes all its shard objects,
// including any left over from an earlier incarnation with more shards.
// Undelivered entries are lost (RGW does the same). Missing pieces are
// fine: Delete is idempotent.
func (q *Queues) Delete(ctx context.Context, name string) error {
	op := objstore.NewWriteOp().Create(false).RmOmapKeys(name)
	if err := q.io.Operate(ctx, RegistryObject, op); err != nil {
		return fmt.Errorf("queue: unregister %s: %w", name, err)
	}
	oids, err := q.shardObjects(ctx, name)
	if err != nil {
		return err
	}
	q.dropPools(oids)
	return forEachShard(ctx, oids, func(ctx context.Context, oid string) error {
		err := q.io.Operate(ctx, oid, objstore.NewWriteOp().Remove())
		if errors.Is(err, objstore.ErrNotFound) {
			return nil
		}
		return err
	})
}

// shardObjects lists the existing shard objects of queue name by scanning
// the namespace: name itself and every "name.<i>".
func (q *Queues) shardObjects(ctx context.Context, name string) ([]string, error) {
	var out []string
	marker := name
	if _, err := clsq.GetStats(ctx, q.io, name); err == nil {
		out = append(out, name)
	} else if !errors.Is(err, objstore.ErrNotFound) {
		return nil, err
	}
	prefix := name + "."
	for {
		oids, more, err := q.io.ListObjects(ctx, marker, 1000)
		if err != nil {
			return nil, err
		}
		for _, oid := range oids {
			if strings.HasPrefix(oid, prefix) {
				if b, _, ok := ParseShardOID(oid); ok && b == name {
					out = append(out, oid)
				}
			} else if oid > prefix {
				return out, nil // past every "name." object
			}
			marker = oid
		}
		if !more || len(oids) == 0 {
			return out, nil
		}
	}
}

// Info is one registry entry.
type Info struct {
	Name   string `json:"name"`
	Shards int    `json:"shards"`
}

// Lookup returns queue name's shard count from the registry;
// objstore.ErrNotFound when it is not registered.
func (q *Queues) Lookup(ctx context.Context, name string) (int, error) {
	op := objstore.NewReadOp()
	s := op.GetOmapValuesByKeys(name)
	if err := q.io.OperateRead(ctx, RegistryObject, op); err != nil {
		return 0, err
	}
	if len(s.Pairs) == 0 {
		return 0, objstore.Errorf(objstore.ErrNotFound, "queue %q not registered", name)
	}
	return parseCount(s.Pairs[0])
}

func parseCount(kv objstore.KV) (int, error) {
	n, err := strconv.Atoi(string(kv.Value))
	if err != nil || n < 1 {
		return 0, objstore.Errorf(objstore.ErrInvalid, "queue registry: bad shard count %q for %q", kv.Value, kv.Key)
	}
	return n, nil
}

// List returns up to max registered queues after marker in name order
// (max <= 0 or > MaxRegistryPage means MaxRegistryPage) and whether more
// remain; pass the last returned name as the next marker.
func (q *Queues) List(ctx context.Context, marker string, max int) ([]Info, bool, error) {
	if max <= 0 || max > MaxRegistryPage {
		max = MaxRegistryPage
	}
	op := objstore.NewReadOp()
	st := op.GetOmapValues(marker, "", max)
	err := q.io.OperateRead(ctx, RegistryObject, op)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := make([]Info, 0, len(st.Pairs))
	for _, kv := range st.Pairs {
		n, err := parseCount(kv)
		if err != nil {
			q.log.Warn("queue registry: skipping bad entry", "queue", kv.Key, "err", err)
			continue
		}
		out = append(out, Info{Name: kv.Key, Shards: n})
	}
	return out, st.More, nil
}

// ForEach calls fn for every registered queue, page by page.
func (q *Queues) ForEach(ctx context.Context, fn func(Info) error) error {
	marker := ""
	for {
		page, more, err := q.List(ctx, marker, MaxRegistryPage)
		if err != nil {
			return err
		}
		for _, in := range page {
			if err := fn(in); err != nil {
				return err
			}
			marker = in.Name
		}
		if !more || len(page) == 0 {
			return nil
		}
	}
}

// ShardStats is one shard's accounting.
//
// Keys are snake_case, radosgw-admin's style, at every level. Reservations
// are pending writes: the class's reservations less the ones this gateway
// holds idle in its pool (see pool.go), which are reported apart as
// pooled_reservations. Other gateways' pools cannot be seen from here and
// count as pending.
type ShardStats struct {
	Shard              int       `json:"shard"`
	OID                string    `json:"oid"`
	Capacity           uint64    `json:"capacity"`
	Entries            uint64    `json:"entries"`
	Bytes              uint64    `json:"size"`
	Reservations       uint64    `json:"reservations"`
	ReservedBytes      uint64    `json:"reserved_size"`
	PooledReservations uint64    `json:"pooled_reservations"`
	PooledBytes        uint64    `json:"pooled_size"`
	Oldest             time.Time `json:"oldest_entry_time,omitzero"` // absent when the shard is empty
}

// Stats is a queue's accounting summed over its shards (fields as in
// ShardStats).
type Stats struct {
	Shards             int       `json:"shards"`
	Capacity           uint64    `json:"capacity"` // summed
	Entries            uint64    `json:"entries"`
	Bytes              uint64    `json:"size"`
	Reservations       uint64    `json:"reservations"`
	ReservedBytes      uint64    `json:"reserved_size"`
	PooledReservations uint64    `json:"pooled_reservations"`
	PooledBytes        uint64    `json:"pooled_size"`
	Oldest             time.Time `json:"oldest_entry_time,omitzero"`
	// OldestAge is the age of the oldest entry at the time of the call
	// (absent when the queue is empty).
	OldestAge time.Duration `json:"oldest_entry_age_ns,omitzero"`
	// PerShard lists each shard; missing shards are absent.
	PerShard []ShardStats `json:"per_shard"`
}

// shardStats converts the class's accounting, moving this gateway's
// pooled reservations out of the pending ones. The pool is read after the
// class, so a reservation taken in between may make pooled exceed the
// class's count: clamp.
func (q *Queues) shardStats(i int, oid string, st clsq.Stats) ShardStats {
	pooled := min(uint64(q.Pooled(oid)), st.Reservations)
	pooledBytes := min(pooled*q.opts.SlotSize, st.ReservedBytes)
	return ShardStats{
		Shard: i, OID: oid, Capacity: st.Capacity, Entries: st.Entries, Bytes: st.Bytes,
		Reservations: st.Reservations - pooled, ReservedBytes: st.ReservedBytes - pooledBytes,
		PooledReservations: pooled, PooledBytes: pooledBytes, Oldest: st.Oldest,
	}
}

// Stats reads every shard of queue name (n shards) concurrently. Missing
// shards are skipped; an error is returned only when none could be read.
func (q *Queues) Stats(ctx context.Context, name string, n int) (Stats, error) {
	res := make([]ShardStats, n)
	ok := make([]bool, n)
	var mu sync.Mutex
	var firstErr error
	_ = forEachShard(ctx, ShardOIDs(name, n), func(ctx context.Context, oid string) error {
		_, i, _ := ParseShardOID(oid)
		var after clsq.Marker
		if f := q.bound.Load(); f != nil {
			after = (*f)(oid)
		}
		st, err := clsq.GetStatsAfter(ctx, q.io, oid, after)
		if err != nil {
			mu.Lock()
			if firstErr == nil && !errors.Is(err, objstore.ErrNotFound) {
				firstErr = err
			}
			mu.Unlock()
			return nil
		}
		res[i], ok[i] = q.shardStats(i, oid, st), true
		return nil
	})
	s := Stats{Shards: n}
	for i, r := range res {
		if !ok[i] {
			continue
		}
		s.PerShard = append(s.PerShard, r)
		s.Capacity += r.Capacity
		s.Entries += r.Entries
		s.Bytes += r.Bytes
		s.Reservations += r.Reservations
		s.ReservedBytes += r.ReservedBytes
		s.PooledReservations += r.PooledReservations
		s.PooledBytes += r.PooledBytes
		if !r.Oldest.IsZero() && (s.Oldest.IsZero() || r.Oldest.Before(s.Oldest)) {
			s.Oldest = r.Oldest
		}
	}
	if !s.Oldest.IsZero() {
		s.OldestAge = q.opts.Now().Sub(s.Oldest)
	}
	if len(s.PerShard) == 0 {
		if firstErr != nil {
			return s, firstErr
		}
		return s, objstore.Errorf(objstore.ErrNotFound, "queue %q has no shards", name)
	}
	return s, nil
}

func forEachShard(ctx context.Context, oids []string, fn func(context.Context, string) error) error {
	if len(oids) == 1 {
		return fn(ctx, oids[0])
	}
	errs := make([]error, len(oids))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, oid := range oids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = fn(ctx, oid)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
