package lifecycle

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/lock"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// The registry lives where RGW keeps its lc shards: pool default.rgw.log,
// namespace "lc", objects lc.0 … lc.<Shards-1>; each bucket with a
// configuration is one omap key (the bucket name) on shard
// hash(bucket) % Shards, its value the bucket's Status as JSON.
const (
	Namespace = "lc"
	LockName  = "lc_process"
)

// Processor applies a bucket's configuration. It resumes after marker
// (the last key it reported done, "" from the start), reports progress
// through p, and returns nil when the whole bucket was examined. It must
// be idempotent: after a crash the pass resumes from the last checkpoint
// and re-examines what followed it, so every decision is recomputed from
// the index (an expired version is gone and is not expired twice).
type Processor interface {
	ProcessBucket(ctx context.Context, bucket, marker string, p *Progress) error
}

// Status is one bucket's registry entry (radosgw-admin lc list).
type Status struct {
	Bucket string `json:"bucket"`
	// Shard is the registry shard the bucket lives on.
	Shard int `json:"shard"`
	// State: UNINITIAL (never processed), PROCESSING, COMPLETE, FAILED.
	State     string    `json:"status"`
	Started   time.Time `json:"started,omitzero"`
	Completed time.Time `json:"completed,omitzero"`
	// Marker is the checkpoint of a pass in progress.
	Marker string `json:"marker,omitempty"`
	// Examined and Expired count the last (or current) pass.
	Examined int64 `json:"examined"`
	Expired  int64 `json:"expired"`
	// Locked counts versions a rule would remove but object lock keeps.
	Locked int64 `json:"locked,omitempty"`
	// Transitioned counts versions moved to another storage class, and
	// TransitionedBytes the stored bytes copied.
	Transitioned      int64  `json:"transitioned,omitempty"`
	TransitionedBytes int64  `json:"transitioned_bytes,omitempty"`
	Error             string `json:"error,omitempty"`
	// Owner is the gateway that ran the last pass.
	Owner string `json:"owner,omitempty"`
}

// Config configures a Worker.
type Config struct {
	// IO is the log pool with namespace Namespace.
	IO objstore.IOContext
	// Processor applies configurations.
	Processor Processor
	// Owner names this gateway in locks and statuses; unique per gateway.
	Owner string
	// Shards is the registry size (RGW's rgw_lc_max_objs, default 32).
	Shards int
	// Day is the length of a lifecycle day; shorter for tests
	// (lc-debug-interval). Each bucket is processed once per day.
	Day time.Duration
	// Lease is how long a shard stays locked without renewal.
	Lease time.Duration
	// Poll is how often the worker looks for due shards.
	Poll time.Duration
	// Rate bounds objects examined per second per gateway (pacing, so
	// foreground requests keep their latency); 0 means unlimited.
	Rate int
	// CheckpointEvery is how many objects pass between checkpoints.
	CheckpointEvery int
	Logger          *slog.Logger
	Now             func() time.Time
}

func (c *Config) defaults() {
	if c.Shards <= 0 {
		c.Shards = 32
	}
	if c.Day <= 0 {
		c.Day = Day
	}
	if c.Lease <= 0 {
		c.Lease = 90 * time.Second
	}
	if c.Poll <= 0 {
		c.Poll = min(c.Day/4, 30*time.Second)
	}
	if c.CheckpointEvery <= 0 {
		c.CheckpointEvery = 1000
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Worker runs lifecycle passes. Every gateway runs one; shards are spread
// over gateways by exclusive leases, so each bucket is processed by one
// gateway at a time and once per day even when gateways die.
type Worker struct {
	cfg Config

	mu    sync.Mutex
	force map[string]bool // buckets an operator asked to process now
	kick  chan struct{}
}

// NewWorker returns a worker for cfg.
func NewWorker(cfg Config) (*Worker, error) {
	if cfg.IO == nil || cfg.Processor == nil || cfg.Owner == "" {
		return nil, errors.New("lifecycle: Config needs IO, Processor and Owner")
	}
	cfg.defaults()
	return &Worker{cfg: cfg, force: map[string]bool{}, kick: make(chan struct{}, 1)}, nil
}

// ShardOf is the registry shard of bucket.
func (w *Worker) ShardOf(bucket string) int {
	h := fnv.New32a()
	h.Write([]byte(bucket))
	return int(h.Sum32() % uint32(w.cfg.Shards))
}

func shardOID(i int) string { return "lc." + strconv.Itoa(i) }

// Register adds bucket to the registry (PutBucketLifecycleConfiguration).
// An existing entry keeps its state.
func (w *Worker) Register(ctx context.Context, bucket string) error {
	oid := shardOID(w.ShardOf(bucket))
	rd := objstore.NewReadOp()
	got := rd.GetOmapValuesByKeys(bucket)
	err := w.cfg.IO.OperateRead(ctx, oid, rd)
	if err == nil && len(got.Pairs) > 0 {
		return nil
	}
	if err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return err
	}
	return w.put(ctx, nil, Status{Bucket: bucket, Shard: w.ShardOf(bucket), State: "UNINITIAL"})
}

// Unregister removes bucket (DeleteBucketLifecycle, DeleteBucket).
func (w *Worker) Unregister(ctx context.Context, bucket string) error {
	op := objstore.NewWriteOp()
	op.RmOmapKeys(bucket)
	err := w.cfg.IO.Operate(ctx, shardOID(w.ShardOf(bucket)), op)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil
	}
	return err
}

// List returns every registered bucket's status, sorted by bucket.
func (w *Worker) List(ctx context.Context) ([]Status, error) {
	var out []Status
	for i := 0; i < w.cfg.Shards; i++ {
		st, err := w.shardEntries(ctx, i, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, st...)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Bucket < out[b].Bucket })
	return out, nil
}

// Get returns one bucket's status; ErrNotFound when not registered.
func (w *Worker) Get(ctx context.Context, bucket string) (Status, error) {
	rd := objstore.NewReadOp()
	got := rd.GetOmapValuesByKeys(bucket)
	if err := w.cfg.IO.OperateRead(ctx, shardOID(w.ShardOf(bucket)), rd); err != nil {
		return Status{}, err
	}
	if len(got.Pairs) == 0 {
		return Status{}, objstore.Errorf(objstore.ErrNotFound, "bucket %q has no lifecycle configuration", bucket)
	}
	var st Status
	err := json.Unmarshal(got.Pairs[0].Value, &st)
	return st, err
}

// Process asks for a pass over bucket now, whatever its day's state
// (radosgw-admin lc process --bucket). The pass runs on whichever gateway
// holds the bucket's shard; this one tries at once.
func (w *Worker) Process(ctx context.Context, bucket string) error {
	st, err := w.Get(ctx, bucket)
	if err != nil {
		return err
	}
	if st.State != "PROCESSING" {
		st.State, st.Completed = "UNINITIAL", time.Time{} // due again, on every gateway's view
		if err := w.put(ctx, nil, st); err != nil {
			return err
		}
	}
	w.mu.Lock()
	w.force[bucket] = true
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
	return nil
}

func (w *Worker) shardEntries(ctx context.Context, shard int, guard func(op lock.Execer)) ([]Status, error) {
	var out []Status
	after := ""
	for {
		rd := objstore.NewReadOp()
		if guard != nil {
			guard(rd)
		}
		vals := rd.GetOmapValues(after, "", 1000)
		err := w.cfg.IO.OperateRead(ctx, shardOID(shard), rd)
		if errors.Is(err, objstore.ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for _, kv := range vals.Pairs {
			var st Status
			if err := json.Unmarshal(kv.Value, &st); err != nil {
				return nil, fmt.Errorf("lifecycle: shard %d entry %q: %w", shard, kv.Key, err)
			}
			out = append(out, st)
			after = kv.Key
		}
		if !vals.More {
			return out, nil
		}
	}
}

// put writes st, under l's lease when l is set (a lapsed lease fails the
// write with ErrCanceled and changes nothing).
func (w *Worker) put(ctx context.Context, l *shardLease, st Status) error {
	v, err := json.Marshal(st)
	if err != nil {
		return err
	}
	op := objstore.NewWriteOp()
	if l != nil {
		l.guard(op)
	}
	op.SetOmap(objstore.KV{Key: st.Bucket, Value: v})
	return w.cfg.IO.Operate(ctx, shardOID(st.Shard), op)
}

// dayStart is the start of the lifecycle day containing t.
func (w *Worker) dayStart(t time.Time) time.Time { return t.Truncate(w.cfg.Day) }

// due reports whether st needs a pass now.
func (w *Worker) due(st Status, now time.Time) bool {
	w.mu.Lock()
	forced := w.force[st.Bucket]
	w.mu.Unlock()
	switch {
	case forced, st.State == "UNINITIAL", st.State == "PROCESSING":
		return true // PROCESSING here means a pass died: resume it
	}
	return st.Completed.Before(w.dayStart(now))
}

// Run processes due shards until ctx is done.
func (w *Worker) Run(ctx context.Context) {
	t := time.NewTicker(w.cfg.Poll)
	defer t.Stop()
	for {
		w.RunOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.kick:
		}
	}
}

// RunOnce visits every shard once, processing the due buckets of those
// whose lease it gets. It returns the number of buckets it completed.
func (w *Worker) RunOnce(ctx context.Context) int {
	done := 0
	// Start at an owner-dependent shard so gateways spread out.
	start := int(fnv32(w.cfg.Owner) % uint32(w.cfg.Shards))
	for i := 0; i < w.cfg.Shards && ctx.Err() == nil; i++ {
		shard := (start + i) % w.cfg.Shards
		n, err := w.processShard(ctx, shard)
		done += n
		if err != nil && ctx.Err() == nil {
			w.cfg.Logger.Warn("lifecycle shard pass failed", "shard", shard, "err", err)
		}
	}
	return done
}

func fnv32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

func (w *Worker) processShard(ctx context.Context, shard int) (int, error) {
	// A cheap unguarded look first: most shards have nothing due.
	entries, err := w.shardEntries(ctx, shard, nil)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	now := w.cfg.Now()
	anyDue := false
	for _, st := range entries {
		if w.due(st, now) {
			anyDue = true
			break
		}
	}
	if !anyDue {
		return 0, nil
	}
	l, err := w.acquire(ctx, shardOID(shard))
	if errors.Is(err, objstore.ErrBusy) {
		return 0, nil // another gateway has it
	}
	if err != nil {
		return 0, err
	}
	defer l.release(context.WithoutCancel(ctx))
	// Re-read under the lease: the view above may be stale.
	entries, err = w.shardEntries(ctx, shard, l.guard)
	if err != nil {
		return 0, err
	}
	done := 0
	for _, st := range entries {
		if ctx.Err() != nil || !w.due(st, w.cfg.Now()) {
			continue
		}
		if err := w.processBucket(ctx, l, st); err != nil {
			if errors.Is(err, errLeaseLost) {
				return done, err
			}
			continue
		}
		done++
	}
	return done, nil
}

var errLeaseLost = errors.New("lifecycle: shard lease lost")

func (w *Worker) processBucket(ctx context.Context, l *shardLease, st Status) error {
	w.mu.Lock()
	delete(w.force, st.Bucket)
	w.mu.Unlock()
	resume := st.State == "PROCESSING"
	if !resume {
		st.Marker, st.Examined, st.Expired, st.Locked = "", 0, 0, 0
		st.Transitioned, st.TransitionedBytes = 0, 0
	}
	st.State, st.Started, st.Owner, st.Error = "PROCESSING", w.cfg.Now().UTC(), w.cfg.Owner, ""
	if err := w.put(ctx, l, st); err != nil {
		return fencedErr(err)
	}
	p := &Progress{w: w, l: l, st: st, ctx: ctx, last: time.Now()}
	err := w.cfg.Processor.ProcessBucket(ctx, st.Bucket, st.Marker, p)
	st = p.st
	if err != nil {
		if errors.Is(err, errLeaseLost) || ctx.Err() != nil {
			return err // leave PROCESSING: the next holder resumes from the checkpoint
		}
		st.State, st.Error = "FAILED", err.Error()
		st.Completed = w.cfg.Now().UTC() // retried next day (or on lc process)
		w.cfg.Logger.Warn("lifecycle pass failed", "bucket", st.Bucket, "err", err)
		_ = w.put(ctx, l, st)
		return err
	}
	st.State, st.Marker, st.Completed = "COMPLETE", "", w.cfg.Now().UTC()
	w.cfg.Logger.Info("lifecycle pass complete", "bucket", st.Bucket, "examined", st.Examined, "expired", st.Expired, "transitioned", st.Transitioned)
	return fencedErr(w.put(ctx, l, st))
}

func fencedErr(err error) error {
	if errors.Is(err, objstore.ErrCanceled) {
		return errLeaseLost
	}
	return err
}

// Progress is a pass's checkpoint and pacing handle.
type Progress struct {
	w       *Worker
	l       *shardLease
	st      Status
	ctx     context.Context
	pending int
	last    time.Time // pacing window start
	inWin   int
}

// Examined reports that the processor looked at n more objects, the last
// of them key, and paces the pass to Config.Rate. Every CheckpointEvery
// objects it writes the checkpoint and renews the lease; a lost lease
// returns an error the processor must return (it stops the pass).
func (p *Progress) Examined(n int, key string) error {
	p.st.Examined += int64(n)
	p.st.Marker = key
	p.pending += n
	if r := p.w.cfg.Rate; r > 0 {
		p.inWin += n
		// Sleep so that inWin objects take at least inWin/r seconds.
		want := time.Duration(float64(p.inWin) / float64(r) * float64(time.Second))
		if el := time.Since(p.last); el < want {
			select {
			case <-p.ctx.Done():
				return p.ctx.Err()
			case <-time.After(want - el):
			}
		}
		if time.Since(p.last) > time.Second {
			p.last, p.inWin = time.Now(), 0
		}
	}
	if p.pending >= p.w.cfg.CheckpointEvery {
		return p.Checkpoint()
	}
	return nil
}

// Expired counts an expiry carried out (for the status).
func (p *Progress) Expired() { p.st.Expired++ }

// Locked counts a version kept by object lock (for the status).
func (p *Progress) Locked() { p.st.Locked++ }

// Transitioned counts a version moved to another storage class and the
// bytes copied (for the status).
func (p *Progress) Transitioned(bytes int64) {
	p.st.Transitioned++
	p.st.TransitionedBytes += bytes
}

// Checkpoint writes the marker under the lease and renews it.
func (p *Progress) Checkpoint() error {
	p.pending = 0
	if err := p.l.renew(p.ctx); err != nil {
		return err
	}
	return fencedErr(p.w.put(p.ctx, p.l, p.st))
}

// shardLease is an exclusive hold on a registry shard.
type shardLease struct {
	io     objstore.IOContext
	oid    string
	owner  string
	cookie string
	dur    time.Duration
}

func (l *shardLease) options(renew bool) lock.Options {
	return lock.Options{Name: LockName, Type: lock.Exclusive, Cookie: l.cookie, Locker: l.owner,
		Description: "lifecycle", Duration: l.dur, MustRenew: renew}
}

func (l *shardLease) guard(op lock.Execer) { lock.AssertLocked(op, LockName, l.cookie, lock.Exclusive) }

func (l *shardLease) renew(ctx context.Context) error {
	op := objstore.NewWriteOp().AssertExists()
	lock.AddLock(op, l.options(true))
	if err := l.io.Operate(ctx, l.oid, op); err != nil {
		if errors.Is(err, objstore.ErrNotFound) {
			return errLeaseLost
		}
		return err
	}
	return nil
}

func (l *shardLease) release(ctx context.Context) {
	_ = lock.Unlock(ctx, l.io, l.oid, LockName, l.cookie)
}

// acquire takes the shard's lease with a fresh cookie. A hold left by an
// earlier incarnation of this gateway (same Owner: it crashed) is broken
// at once rather than waited out; another gateway's hold is ErrBusy.
func (w *Worker) acquire(ctx context.Context, oid string) (*shardLease, error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	l := &shardLease{io: w.cfg.IO, oid: oid, owner: w.cfg.Owner, cookie: hex.EncodeToString(b[:]), dur: w.cfg.Lease}
	take := func() error {
		op := objstore.NewWriteOp().AssertExists()
		lock.AddLock(op, l.options(false))
		return w.cfg.IO.Operate(ctx, oid, op)
	}
	err := take()
	if !errors.Is(err, objstore.ErrBusy) {
		return l, err
	}
	info, ierr := lock.GetInfo(ctx, w.cfg.IO, oid, LockName)
	if ierr != nil {
		return nil, err
	}
	for _, h := range info.Lockers {
		if h.Locker != w.cfg.Owner {
			return nil, err
		}
		if berr := lock.BreakLock(ctx, w.cfg.IO, oid, LockName, h.Locker, h.Cookie); berr != nil && !errors.Is(berr, objstore.ErrNotFound) {
			return nil, berr
		}
	}
	if err := take(); err != nil {
		return nil, err
	}
	return l, nil
}
