package reshard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Config configures a Manager. Zero fields take the documented defaults
// (EnsureDefaults); Validate reports every problem.
type Config struct {
	Driver *driver.Driver
	// Store holds the reshard queue (pool default.rgw.log, namespace
	// "reshard"); it is the store the driver uses.
	Store objstore.Store
	// Enabled turns dynamic resharding on (dynamic-resharding). Queued and
	// admin reshards run either way.
	Enabled bool
	// MaxObjsPerShard triggers a dynamic reshard (max-objs-per-shard).
	// Default 100000.
	MaxObjsPerShard int
	// MaxDynamicShards caps dynamic shard counts (max-dynamic-shards).
	// Default 1999.
	MaxDynamicShards int
	// TriggerSizing sizes a dynamic reshard for the objects at the trigger
	// (RGW's rule), not for those expected when it ends (Sizing); for
	// comparison runs.
	TriggerSizing bool
	// Interval between background passes (dynamic check and queue
	// processing). Default 1 minute.
	Interval time.Duration
	// LeaseDuration is how long a gateway owns a reshard without renewing
	// it; another gateway takes over an expired one. Default 30 s.
	LeaseDuration time.Duration
	// CopyBatch is the page size for reading sources and the batch size
	// for writing targets. Default 1000.
	CopyBatch int
	// Workers bounds concurrent shard operations. Default 2 × GOMAXPROCS,
	// at least 4.
	Workers int
	// CopyRateLimit caps the copy at this many entries per second, to
	// leave CPU and disk to client traffic. 0: unlimited.
	CopyRateLimit int
	// CopyRateAdaptive lets the rate float between CopyRateMin and
	// CopyRateLimit (or 1M/s when that is 0), cut when foreground latency
	// rises (see Foreground) and raised while it stays low.
	CopyRateAdaptive bool
	// CopyRateMin is the adaptive rate's floor. Default 5000.
	CopyRateMin int
	// ForegroundStats returns the cumulative count and summed latency of
	// foreground index writes (default: Driver.IndexWriteStats). The
	// Manager records their mean latency in each second of the minute
	// before a reshard; the adaptive rate starts at CopyRateMin and keeps
	// the mean during the reshard within CopyLatencyTarget times that
	// level (the median second), so a closed-loop client keeps about
	// 1/CopyLatencyTarget of its throughput.
	ForegroundStats func() (uint64, time.Duration)
	// CopyLatencyTarget: see ForegroundStats. Default 1.15.
	CopyLatencyTarget float64
	// Foreground, if set, returns recent foreground index-write latency
	// (e.g. p90 over the last fraction of a second, 0 if none): the
	// adaptive rate's signal against the lowest value seen during the
	// reshard (comparison runs; it takes precedence over ForegroundStats).
	// With neither and no baseline yet, the copy's own batch latency is
	// used.
	Foreground func() time.Duration
	// NoEarlyReplay turns off replaying each source's log during the copy
	// once its entries are in the targets (for comparison runs).
	NoEarlyReplay bool
	// CopyLoad copies as a bulk load (bucketindex.CopyLoad) on a backend
	// that loads omaps (reshard-copy-load), committed in key-range chunks;
	// after each chunk the logs' records of keys already loaded are
	// replayed (docs/design/resharding.md). The zero value copies through
	// ops; cairn serve turns it on (reshard-copy-load).
	CopyLoad bool
	// LoadChunk is how many entries a loaded copy commits at a time.
	// Default (0): 131,072, and at least 2,048 per target shard.
	LoadChunk int
	// RampIn: with CopyRateAdaptive, the pace's ceiling climbs from the
	// lower bound to the upper one over this long from a reshard's start.
	// Default (0): 2 minutes; negative: none.
	RampIn time.Duration
	// MidReplayEvery: while a loaded copy stages a chunk, a range replay
	// round of the keys already loaded runs this often. Default (0): 1 s;
	// negative: never (the replay waits for each chunk's commit).
	MidReplayEvery time.Duration
	// RebaseEvery: with CopyRateAdaptive and a baseline, the governor
	// holds the pace at its lower bound for a moment whenever the write
	// rate has doubled or halved since the last such probe (a change of
	// phase), and also this often, and scales the baseline by how the
	// foreground latency at that pace moved since the reshard's first
	// probe. Default (0): on a change of phase only; negative: never (the
	// minute before the reshard stays the baseline throughout).
	RebaseEvery time.Duration
	// CopyWriters is how many copy ops may be in flight. Default 32.
	CopyWriters int
	// SwitchFanout bounds concurrent shard operations while writers wait
	// (closing sources, replaying the tail) and in the catch-up rounds just
	// before (their length is the tail): high, so that the backend
	// batches their syncs and the block stays short with many shards.
	// Default 256.
	SwitchFanout int
	// TailRecords: replay rounds continue until one replays at most this
	// many records (or an unpaced round stops shrinking); then the closing
	// state is recorded, rounds catch up again with what arrived meanwhile,
	// and the sources close. Writers wait for what arrives during the last
	// round and the close: a small bound keeps that short. Default 256.
	TailRecords int
	// MaxReplayRounds bounds the catch-up rounds that read every log to
	// its end before closing (a write rate faster than replay would
	// otherwise never converge); rounds cut short by a longer backlog
	// count against five times as many, for writers that outrun every
	// round. Default 20.
	MaxReplayRounds int
	// Failpoints (tests, crash drills) stop the engine at named steps.
	Failpoints *Failpoints
	// OnDone is called after each reshard that finished or rolled back.
	OnDone func(Result)
	Logger *slog.Logger
	// Now is the clock for leases; default time.Now.
	Now func() time.Time
}

// Defaults.
const (
	DefaultMaxObjsPerShard  = 100000
	DefaultMaxDynamicShards = 1999
	DefaultInterval         = time.Minute
	DefaultLeaseDuration    = 30 * time.Second
	DefaultCopyBatch        = 1000
	DefaultTailRecords      = 256
	DefaultMaxReplayRounds  = 20
)

// EnsureDefaults fills zero fields.
func (c *Config) EnsureDefaults() *Config {
	if c.MaxObjsPerShard == 0 {
		c.MaxObjsPerShard = DefaultMaxObjsPerShard
	}
	if c.MaxDynamicShards == 0 {
		c.MaxDynamicShards = DefaultMaxDynamicShards
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.CopyBatch == 0 {
		c.CopyBatch = DefaultCopyBatch
	}
	if c.Workers == 0 {
		c.Workers = max(4, 2*runtime.GOMAXPROCS(0))
	}
	if c.CopyWriters == 0 {
		c.CopyWriters = 32
	}
	if c.CopyRateMin == 0 {
		c.CopyRateMin = 5000
	}
	if c.CopyLatencyTarget == 0 {
		c.CopyLatencyTarget = 1.15
	}
	if c.ForegroundStats == nil && c.Driver != nil {
		c.ForegroundStats = c.Driver.IndexWriteStats
	}
	if c.SwitchFanout == 0 {
		c.SwitchFanout = 256
	}
	if c.TailRecords == 0 {
		c.TailRecords = DefaultTailRecords
	}
	if c.MaxReplayRounds == 0 {
		c.MaxReplayRounds = DefaultMaxReplayRounds
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// adaptiveBounds are the adaptive copy rate's floor and cap (entries/s).
func (c *Config) adaptiveBounds() (lo, hi float64) {
	hi = float64(c.CopyRateLimit)
	if hi <= 0 {
		hi = 1e6
	}
	return min(hi, float64(c.CopyRateMin)), hi
}

// expectedPace is the copy pace (entries/s, 0: unlimited) a reshard is
// expected to hold with writers adding arrivals entries/s: the fixed cap,
// or the adaptive governor's floor (it never paces below convergeFactor ×
// the arrivals, and under a fast fill the foreground is congested, so it
// sits there; a faster copy only leaves more room).
func (c *Config) expectedPace(arrivals float64) float64 {
	if !c.CopyRateAdaptive {
		return float64(c.CopyRateLimit)
	}
	lo, hi := c.adaptiveBounds()
	return min(hi, max(lo, convergeFactor*arrivals))
}

// Validate reports every problem with c at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Driver == nil {
		errs = append(errs, errors.New("reshard: Config.Driver is required"))
	}
	if c.Store == nil {
		errs = append(errs, errors.New("reshard: Config.Store is required"))
	}
	if c.MaxObjsPerShard < 1 {
		errs = append(errs, fmt.Errorf("reshard: max-objs-per-shard %d < 1", c.MaxObjsPerShard))
	}
	if c.MaxDynamicShards < 1 || c.MaxDynamicShards > driver.MaxShards {
		errs = append(errs, fmt.Errorf("reshard: max-dynamic-shards %d outside 1..%d", c.MaxDynamicShards, driver.MaxShards))
	}
	if c.Interval < 0 || c.LeaseDuration < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("reshard: bad interval %v or lease %v", c.Interval, c.LeaseDuration))
	}
	if c.CopyBatch < 1 || c.CopyBatch > 10000 {
		errs = append(errs, fmt.Errorf("reshard: copy batch %d outside 1..10000", c.CopyBatch))
	}
	if c.CopyLatencyTarget <= 1 {
		errs = append(errs, fmt.Errorf("reshard: copy latency target %v must exceed 1", c.CopyLatencyTarget))
	}
	if c.Workers < 1 || c.CopyRateLimit < 0 || c.CopyRateMin < 0 || c.CopyWriters < 1 || c.SwitchFanout < 1 || c.TailRecords < 0 || c.MaxReplayRounds < 1 || c.LoadChunk < 0 {
		errs = append(errs, fmt.Errorf("reshard: workers %d, tail %d, rounds %d, load chunk %d", c.Workers, c.TailRecords, c.MaxReplayRounds, c.LoadChunk))
	}
	return errors.Join(errs...)
}

// Failpoints stop a reshard at a named step, as if the process died there.
// Hit is called with the bucket and point name; returning true fires it.
// Points, in order: after-init-target, after-logging, mid-copy,
// load-ingested (a loaded copy's chunk is ingested, its stats not added),
// load-replayed (after the replay that follows each chunk),
// mid-copy-replay, after-copy, mid-replay (after each replay round),
// before-closing, mid-catch-up (after each round after the closing record),
// before-close, after-close, before-switch, after-join (the targets joined
// the bucket's view), after-switch, mid-cleanup,
// after-cleanup, mid-rollback.
type Failpoints struct {
	Hit func(bucket, point string) bool
}

// Points lists every failpoint name in step order.
var Points = []string{
	"after-init-target", "after-logging", "mid-copy", "load-ingested", "load-replayed", "mid-copy-replay", "after-copy", "mid-replay",
	"before-closing", "mid-catch-up", "before-close", "after-close", "before-switch", "after-join", "after-switch",
	"mid-cleanup", "after-cleanup", "mid-rollback",
}

// ExitFailpoints kills the process (exit status 137, like kill -9) at the
// point named by the environment variable CAIRN_RESHARD_FAILPOINT, for
// crash drills against a real gateway process.
func ExitFailpoints() *Failpoints {
	want := os.Getenv("CAIRN_RESHARD_FAILPOINT")
	if want == "" {
		return nil
	}
	return &Failpoints{Hit: func(_, p string) bool {
		if p == want {
			os.Exit(137)
		}
		return false
	}}
}

// Manager runs reshards: admin requests, the queue, and (when enabled) the
// dynamic trigger. Several gateways may each run one; the lease in the
// bucket instance makes one of them drive each reshard.
type Manager struct {
	cfg    Config
	d      *driver.Driver
	queue  objstore.IOContext
	cookie string
	log    *slog.Logger

	mu      sync.Mutex
	running map[string]bool // buckets this Manager is driving
	engines map[*engine]struct{}
	growth  *growth    // per bucket: arrival rate, last reshard's duration
	fg      *fgTracker // foreground latency before reshards (nil: no stats)

	stop chan struct{}
	done chan struct{}
}

// New returns a Manager; Start runs its background loop.
func New(ctx context.Context, cfg Config) (*Manager, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Store.CreatePool(ctx, driver.PoolLog); err != nil && !errors.Is(err, objstore.ErrExists) {
		return nil, err
	}
	io, err := cfg.Store.IOContext(ctx, driver.PoolLog)
	if err != nil {
		return nil, err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	m := &Manager{
		cfg: cfg, d: cfg.Driver, queue: io.WithNamespace(queueNamespace), log: cfg.Logger,
		cookie: host + "/" + hex.EncodeToString(b[:]), running: map[string]bool{}, engines: map[*engine]struct{}{}, growth: newGrowth(),
	}
	if cfg.ForegroundStats != nil {
		m.fg = newFGTracker(cfg.ForegroundStats)
	}
	return m, nil
}

func (m *Manager) now() time.Time { return m.cfg.Now() }

// Start runs the background loop: every Interval, the dynamic check (when
// enabled) and one pass over the queue, which also resumes reshards whose
// owner died. Close stops it.
func (m *Manager) Start() {
	// The goroutines use their own copies: Close clears the fields.
	stop, done := make(chan struct{}), make(chan struct{})
	m.stop, m.done = stop, done
	go func() {
		defer close(done)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-stop; cancel() }()
		if m.fg != nil {
			go m.fg.run(ctx)
		}
		t := time.NewTicker(m.cfg.Interval)
		defer t.Stop()
		for {
			if m.cfg.Enabled {
				if err := m.Scan(ctx); err != nil && ctx.Err() == nil {
					m.log.Warn("reshard: dynamic check", "err", err)
				}
			}
			if err := m.Process(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("reshard: process queue", "err", err)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
}

// Close stops the background loop, abandoning (not undoing) a reshard in
// progress: its lease lapses and a Manager resumes it.
func (m *Manager) Close() {
	if m.stop != nil {
		close(m.stop)
		<-m.done
		m.stop = nil
	}
}

// errInvalidShards wraps driver.ErrInvalidArgument.
func invalidShards(n int, why string) error {
	return fmt.Errorf("%w: shard count %d: %s", driver.ErrInvalidArgument, n, why)
}

// instance reads a bucket's instance fresh (not from the driver's cache).
func (m *Manager) instance(ctx context.Context, bucket string) (driver.Instance, uint64, *Record, error) {
	if !driver.ValidBucketName(bucket) {
		return driver.Instance{}, 0, nil, driver.ErrNoSuchBucket
	}
	m.d.Invalidate(bucket)
	inst, err := m.d.Instance(ctx, bucket)
	if err != nil {
		return driver.Instance{}, 0, nil, err
	}
	inst, ver, err := m.d.ReadInstance(ctx, inst.ID)
	if err != nil {
		return driver.Instance{}, 0, nil, err
	}
	rec, err := decodeRecord(inst.Reshard)
	return inst, ver, rec, err
}

func (m *Manager) checkCount(inst driver.Instance, n int) error {
	switch {
	case n < 1:
		return invalidShards(n, "must be at least 1")
	case n > driver.MaxShards:
		return invalidShards(n, fmt.Sprintf("above the maximum %d", driver.MaxShards))
	case n == inst.Layout.NumShards:
		return invalidShards(n, "the bucket already has that many shards")
	}
	return nil
}

// Reshard reshards bucket to n shards now (grow or shrink) and returns when
// it is done (`bucket reshard --num-shards N`). Errors:
// driver.ErrNoSuchBucket, driver.ErrReshardInProgress, an error wrapping
// driver.ErrInvalidArgument for a bad count, ErrCanceled when canceled.
func (m *Manager) Reshard(ctx context.Context, bucket string, n int) (Result, error) {
	inst, ver, rec, err := m.instance(ctx, bucket)
	if err != nil {
		return Result{}, err
	}
	if rec != nil {
		return Result{}, fmt.Errorf("%w: bucket %s is resharding to %d shards", driver.ErrReshardInProgress, bucket, rec.Target.NumShards)
	}
	if err := m.checkCount(inst, n); err != nil {
		return Result{}, err
	}
	if err := m.enqueue(ctx, queueEntry{Bucket: bucket, BucketID: inst.ID, FromGen: inst.Layout.Gen, NumShards: n, Reason: "admin", Queued: m.now()}); err != nil {
		return Result{}, err
	}
	return m.begin(ctx, inst, ver, n, "admin", nil)
}

// begin records a new reshard (version-guarded: one gateway wins) and runs it.
func (m *Manager) begin(ctx context.Context, inst driver.Instance, ver uint64, n int, reason string, sz *Sizing) (Result, error) {
	if !m.claim(inst.Name) {
		return Result{}, fmt.Errorf("%w: bucket %s", driver.ErrReshardInProgress, inst.Name)
	}
	defer m.release(inst.Name)
	src := bucketindex.Index{IO: m.d.IndexIO(), BucketID: inst.ID, Layout: inst.Layout}
	// Epochs grow across reshards: the sources carry the last one's.
	var epoch uint64
	for i := 0; i < inst.Layout.NumShards; i++ {
		si, err := src.ShardInfo(ctx, i)
		if err != nil {
			return Result{}, err
		}
		epoch = max(epoch, si.Epoch)
	}
	rec := &Record{
		State: StateCopy, Source: inst.Layout, Target: bucketindex.Layout{Gen: inst.Layout.Gen + 1, NumShards: n, View: inst.Layout.View},
		Reason: reason, Owner: m.cookie, Lease: m.now().Add(m.cfg.LeaseDuration), Epoch: epoch + 1, Started: m.now().UTC(),
		Sizing: sz,
	}
	inst.Reshard = rec.encode()
	if err := m.d.WriteInstance(ctx, inst, ver); err != nil {
		if errors.Is(err, objstore.ErrCanceled) {
			return Result{}, fmt.Errorf("%w: bucket %s changed; retry", driver.ErrReshardInProgress, inst.Name)
		}
		return Result{}, err
	}
	return m.drive(ctx, inst, *rec, false)
}

func (m *Manager) drive(ctx context.Context, inst driver.Instance, rec Record, resumed bool) (Result, error) {
	if m.fg != nil {
		m.fg.pause(1)
		defer m.fg.pause(-1)
	}
	e := m.newEngine(inst, rec)
	e.res.Resumed = resumed
	m.mu.Lock()
	m.engines[e] = struct{}{}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.engines, e)
		m.mu.Unlock()
	}()
	m.log.Info("reshard: running", "bucket", inst.Name, "from", rec.Source.NumShards, "to", rec.Target.NumShards, "state", rec.State, "resumed", resumed)
	res, err := e.run(ctx)
	if err == nil && !res.RolledBack {
		m.log.Info("reshard: done", "bucket", inst.Name, "from", res.From.NumShards, "to", res.To.NumShards,
			"entries", res.Entries, "copied", res.Copied, "replayed", res.Replayed, "rounds", res.ReplayRounds,
			"tail", res.Tail, "block", res.Block, "block_close", res.BlockClose, "block_tail", res.BlockTail,
			"block_switch", res.BlockSwitch, "total", res.Total, "early_replayed", res.EarlyReplayed,
			"load_chunks", res.LoadChunks, "replay_skipped", res.ReplaySkipped)
		if !resumed && rec.Reason == "dynamic" {
			// The next dynamic reshard of this bucket expects as long per entry.
			m.growth.finished(inst.Name, res.Entries, res.Total)
		}
	}
	if (err == nil || res.RolledBack) && m.cfg.OnDone != nil {
		m.cfg.OnDone(res)
	}
	return res, err
}

func (m *Manager) claim(bucket string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running[bucket] {
		return false
	}
	m.running[bucket] = true
	return true
}

func (m *Manager) release(bucket string) {
	m.mu.Lock()
	delete(m.running, bucket)
	m.mu.Unlock()
}

// takeOver makes this Manager the owner of an abandoned reshard (its lease
// expired, or it belonged to this Manager's earlier life) with a new epoch.
func (m *Manager) takeOver(ctx context.Context, inst driver.Instance, ver uint64, rec *Record) (Record, error) {
	rec.Owner = m.cookie
	rec.Epoch++
	rec.Lease = m.now().Add(m.cfg.LeaseDuration)
	inst.Reshard = rec.encode()
	if err := m.d.WriteInstance(ctx, inst, ver); err != nil {
		return Record{}, err
	}
	return *rec, nil
}

// Enqueue queues bucket for a background reshard to n shards (`reshard
// add`). Errors as for Reshard.
func (m *Manager) Enqueue(ctx context.Context, bucket string, n int) error {
	inst, _, rec, err := m.instance(ctx, bucket)
	if err != nil {
		return err
	}
	if rec != nil {
		return fmt.Errorf("%w: bucket %s", driver.ErrReshardInProgress, bucket)
	}
	if err := m.checkCount(inst, n); err != nil {
		return err
	}
	return m.enqueue(ctx, queueEntry{Bucket: bucket, BucketID: inst.ID, FromGen: inst.Layout.Gen, NumShards: n, Reason: "admin", Queued: m.now()})
}

// Process makes one pass over the queue (`reshard process`): it starts
// queued reshards and resumes or rolls back those whose owner died. It
// returns the first error after trying every entry.
func (m *Manager) Process(ctx context.Context) error {
	entries, err := m.entries(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, qe := range entries {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if _, err := m.processEntry(ctx, qe); err != nil && !errors.Is(err, driver.ErrReshardInProgress) && !errors.Is(err, ErrCanceled) {
			errs = append(errs, fmt.Errorf("bucket %s: %w", qe.Bucket, err))
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) processEntry(ctx context.Context, qe queueEntry) (Result, error) {
	inst, ver, err := m.d.ReadInstance(ctx, qe.BucketID)
	if errors.Is(err, driver.ErrNoSuchBucket) {
		// Deleted: remove any target shards a dead reshard left behind.
		for g := qe.FromGen + 1; g <= qe.FromGen+1; g++ {
			ix := bucketindex.Index{IO: m.d.IndexIO(), BucketID: qe.BucketID, Layout: bucketindex.Layout{Gen: g, NumShards: qe.NumShards}}
			_ = ix.Remove(ctx)
		}
		return Result{}, m.dequeue(ctx, qe.Bucket, qe.FromGen)
	}
	if err != nil {
		return Result{}, err
	}
	rec, err := decodeRecord(inst.Reshard)
	if err != nil {
		return Result{}, err
	}
	if rec == nil {
		if inst.Layout.Gen != qe.FromGen || inst.Layout.NumShards == qe.NumShards {
			return Result{}, m.dequeue(ctx, qe.Bucket, qe.FromGen) // done already
		}
		return m.begin(ctx, inst, ver, qe.NumShards, qe.Reason, qe.Sizing)
	}
	if !m.claim(inst.Name) {
		return Result{}, fmt.Errorf("%w: running here", driver.ErrReshardInProgress)
	}
	defer m.release(inst.Name)
	if rec.Owner != m.cookie && m.now().Before(rec.Lease) {
		return Result{}, fmt.Errorf("%w: owned by %s until %s", driver.ErrReshardInProgress, rec.Owner, rec.Lease.Format(time.RFC3339))
	}
	r, err := m.takeOver(ctx, inst, ver, rec)
	if err != nil {
		return Result{}, err
	}
	return m.drive(ctx, inst, r, true)
}

// Scan checks every bucket for the dynamic trigger and queues those due.
func (m *Manager) Scan(ctx context.Context) error {
	bs, err := m.d.ListBuckets(ctx, "")
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range bs {
		if _, err := m.Check(ctx, b.Name); err != nil && !errors.Is(err, driver.ErrNoSuchBucket) {
			errs = append(errs, err)
		}
	}
	m.growth.sweep()
	return errors.Join(errs...)
}

// Check queues bucket for a dynamic reshard when its objects per shard
// exceed MaxObjsPerShard, and returns the queued shard count (0: none).
// The target is sized for the objects expected when the reshard ends
// (Sizing): each call also samples the bucket's entry count, and the
// growth between calls is the arrival rate.
func (m *Manager) Check(ctx context.Context, bucket string) (int, error) {
	st, err := m.d.BucketStats(ctx, bucket)
	if err != nil {
		return 0, err
	}
	// Every version is an index entry: count them all (RGW does too).
	objs := max(st.NumObjects, st.NumVersions)
	arrivals, secsPerEntry := m.growth.observe(bucket, m.now(), objs)
	if st.ReshardState != "none" {
		return 0, nil
	}
	if TargetShards(objs, 2*objs, st.NumShards, m.cfg.MaxObjsPerShard, m.cfg.MaxDynamicShards) == 0 {
		return 0, nil
	}
	sz := Predict(objs, 0, 0, 0)
	if !m.cfg.TriggerSizing {
		sz = Predict(objs, arrivals, m.cfg.expectedPace(arrivals), secsPerEntry)
	}
	n := TargetShards(objs, sz.Capacity, st.NumShards, m.cfg.MaxObjsPerShard, m.cfg.MaxDynamicShards)
	if qe, ok, err := m.entry(ctx, bucket); err != nil || ok && qe.FromGen == st.Generation {
		return 0, err // already queued
	}
	m.log.Info("reshard: queued", "bucket", bucket, "objects", objs, "shards", st.NumShards, "to", n,
		"arrivals_per_sec", sz.ArrivalsPerSec, "expected_sec", int64(sz.ExpectedSec), "basis", sz.Basis,
		"predicted_objects", sz.Predicted, "capacity", sz.Capacity)
	return n, m.enqueue(ctx, queueEntry{Bucket: bucket, BucketID: st.ID, FromGen: st.Generation, NumShards: n, Reason: "dynamic", Queued: m.now(), Sizing: &sz})
}

// Status is one bucket's reshard as `reshard status` shows it.
type Status struct {
	Bucket   string `json:"bucket"`
	BucketID string `json:"bucket_id"`
	// State: "queued", or a State of an in-progress reshard.
	State        string    `json:"state"`
	Reason       string    `json:"reason,omitempty"`
	SourceShards int       `json:"source_shards"`
	TargetShards int       `json:"target_shards"`
	SourceGen    uint64    `json:"source_gen"`
	Copied       uint64    `json:"entries_copied"`
	Total        uint64    `json:"entries_total"`
	Owner        string    `json:"owner,omitempty"`
	Started      time.Time `json:"started,omitzero"`
	Queued       time.Time `json:"queued,omitzero"`
	Cancel       bool      `json:"cancel_requested,omitempty"`
	Error        string    `json:"error,omitempty"`
	// Sizing: why a dynamic reshard chose TargetShards (absent for admin
	// reshards).
	Sizing *Sizing `json:"sizing,omitempty"`
}

// Status returns bucket's queued or running reshard. Errors:
// driver.ErrNoSuchBucket, driver.ErrNoSuchReshard (none).
func (m *Manager) Status(ctx context.Context, bucket string) (Status, error) {
	inst, _, rec, err := m.instance(ctx, bucket)
	if err != nil {
		return Status{}, err
	}
	qe, queued, err := m.entry(ctx, bucket)
	if err != nil {
		return Status{}, err
	}
	return m.status(inst, rec, qe, queued)
}

func (m *Manager) status(inst driver.Instance, rec *Record, qe queueEntry, queued bool) (Status, error) {
	st := Status{Bucket: inst.Name, BucketID: inst.ID, SourceShards: inst.Layout.NumShards, SourceGen: inst.Layout.Gen}
	switch {
	case rec != nil:
		st.State, st.Reason = string(rec.State), rec.Reason
		st.SourceShards, st.TargetShards, st.SourceGen = rec.Source.NumShards, rec.Target.NumShards, rec.Source.Gen
		st.Copied, st.Total, st.Owner, st.Started, st.Cancel, st.Error = rec.Copied, rec.Total, rec.Owner, rec.Started, rec.Cancel, rec.Error
		st.Sizing = rec.Sizing
	case queued && qe.FromGen == inst.Layout.Gen:
		st.State, st.Reason, st.TargetShards, st.Sizing = "queued", qe.Reason, qe.NumShards, qe.Sizing
	default:
		return Status{}, fmt.Errorf("%w: %s", driver.ErrNoSuchReshard, inst.Name)
	}
	if queued {
		st.Queued = qe.Queued
	}
	return st, nil
}

// List returns every queued or running reshard, by bucket name.
func (m *Manager) List(ctx context.Context) ([]Status, error) {
	entries, err := m.entries(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Status, 0, len(entries))
	for _, qe := range entries {
		inst, _, err := m.d.ReadInstance(ctx, qe.BucketID)
		if errors.Is(err, driver.ErrNoSuchBucket) {
			continue
		}
		if err != nil {
			return nil, err
		}
		rec, err := decodeRecord(inst.Reshard)
		if err != nil {
			return nil, err
		}
		if st, err := m.status(inst, rec, qe, true); err == nil {
			out = append(out, st)
		}
	}
	return out, nil
}

// Cancel cancels bucket's reshard (`reshard cancel`): a queued one is
// dropped; a running one rolls back (its owner notices within a quarter
// lease; an abandoned one is rolled back here). It waits for the rollback
// until ctx ends. Errors: driver.ErrNoSuchBucket, driver.ErrNoSuchReshard,
// ErrCannotCancel once the reshard is switching.
func (m *Manager) Cancel(ctx context.Context, bucket string) error {
	for {
		inst, ver, rec, err := m.instance(ctx, bucket)
		if err != nil {
			return err
		}
		if rec == nil {
			qe, ok, err := m.entry(ctx, bucket)
			if err != nil {
				return err
			}
			if !ok || qe.FromGen != inst.Layout.Gen {
				return fmt.Errorf("%w: %s", driver.ErrNoSuchReshard, bucket)
			}
			return m.dequeue(ctx, bucket, qe.FromGen)
		}
		if rec.forwardOnly() {
			return fmt.Errorf("%w (bucket %s is %s)", ErrCannotCancel, bucket, rec.State)
		}
		if !rec.Cancel {
			rec.Cancel = true
			inst.Reshard = rec.encode()
			if err := m.d.WriteInstance(ctx, inst, ver); err != nil {
				if errors.Is(err, objstore.ErrCanceled) {
					continue
				}
				return err
			}
			continue
		}
		if rec.Owner == m.cookie || m.now().After(rec.Lease) {
			if !m.claim(bucket) {
				if err := m.pause(ctx); err != nil {
					return err
				}
				continue
			}
			r, err := m.takeOver(ctx, inst, ver, rec)
			if err != nil {
				m.release(bucket)
				if errors.Is(err, objstore.ErrCanceled) {
					continue
				}
				return err
			}
			r.State = StateRollback
			e := m.newEngine(inst, r)
			if err := e.setState(ctx, StateRollback, nil); err != nil {
				m.release(bucket)
				return err
			}
			_, err = e.run(ctx)
			m.release(bucket)
			if errors.Is(err, ErrCanceled) {
				return nil
			}
			return err
		}
		// A live owner rolls back within a quarter lease; should it die
		// first, the next pass takes over.
		if err := m.pause(ctx); err != nil {
			return err
		}
		if _, _, r2, err := m.instance(ctx, bucket); err == nil && r2 == nil {
			return m.waitGone(ctx, bucket, rec.Source.Gen)
		}
	}
}

func (m *Manager) pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Millisecond):
		return nil
	}
}

// waitGone waits until bucket has no reshard record: rolled back (nil) or
// finished before the owner saw the cancel (ErrCannotCancel).
func (m *Manager) waitGone(ctx context.Context, bucket string, gen uint64) error {
	for {
		inst, _, rec, err := m.instance(ctx, bucket)
		if err != nil {
			return err
		}
		if rec == nil {
			if inst.Layout.Gen != gen {
				return fmt.Errorf("%w (bucket %s finished resharding)", ErrCannotCancel, bucket)
			}
			return nil
		}
		if rec.State == StateCleanup {
			return fmt.Errorf("%w (bucket %s switched)", ErrCannotCancel, bucket)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
