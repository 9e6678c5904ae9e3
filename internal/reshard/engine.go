package reshard

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Result describes a finished reshard.
type Result struct {
	Bucket   string
	From, To bucketindex.Layout
	// Entries in the source when the copy started; Sizing is why a
	// dynamic reshard chose To (nil for admin reshards).
	Entries uint64
	Sizing  *Sizing
	// Copied entries in CopyTime (the bulk copy only).
	Copied   uint64
	CopyTime time.Duration
	// Replayed log records, in ReplayRounds rounds before the close (the
	// replay step's and the catch-up after the closing record), and Tail
	// records replayed while writers waited.
	Replayed     uint64
	ReplayRounds int
	Tail         uint64
	// Block is how long index writes were refused: from closing the
	// source shards to the instance write that switched the layout;
	// BlockClose, BlockTail and BlockSwitch are its parts (closing the
	// sources, replaying the Tail, writing the instance).
	Block                              time.Duration
	BlockClose, BlockTail, BlockSwitch time.Duration
	// Start is when this run of the engine began; Total its duration.
	Start time.Time
	Total time.Duration
	// RolledBack is set when the reshard was undone (cancel or failure).
	RolledBack bool
	Resumed    bool // a reshard started elsewhere was taken over
	// EarlyReplayed records were replayed during the copy step (sources
	// whose copy was done), included in neither Replayed nor Tail.
	EarlyReplayed uint64
	// CopyLoaded: the copy was a bulk load (bucketindex.CopyLoad), in
	// LoadChunks chunks; ReplaySkipped log records read between chunks
	// were not replayed because the copy read their keys after them;
	// MidChunkRounds range replay rounds ran while chunks were staged.
	CopyLoaded     bool
	LoadChunks     int
	MidChunkRounds int
	ReplaySkipped  uint64
	// Released records waited for their chunk's commit (their keys were
	// read but not loaded), to be applied at the pace they were logged;
	// MaxReady is the most records of loaded keys a round left waiting.
	Released uint64
	MaxReady int
	// Where a loaded copy's loop spent its time: waiting for the pacer,
	// reading source pages, in mid-chunk replay rounds, committing chunks
	// (ingest and the commit's replay); the rest is the merge and staging.
	LoadPaceWait, LoadRead, LoadMidRounds, LoadCommits time.Duration
	// RateCuts is how often the adaptive governor cut the rate, MinRate
	// the lowest rate it set (entries/s), over the copy and replay steps.
	RateCuts int
	MinRate  float64
}

var (
	// ErrLostLease: another gateway took over this reshard (our lease
	// lapsed); this one stops without touching anything.
	ErrLostLease = errors.New("reshard: lease lost to another gateway")
	// ErrCannotCancel: the reshard is switching; it can only finish.
	ErrCannotCancel = errors.New("reshard: already switching, too late to cancel")
	// ErrCanceled: the reshard was canceled and rolled back.
	ErrCanceled = errors.New("reshard: canceled")
	// errSourceMoved: a source shard is not in the state the reshard left
	// it in (e.g. a bucket deletion closed or reopened it): roll back.
	errSourceMoved = errors.New("reshard: source shard changed state under the reshard")
)

// Crash is returned when a failpoint fired: the engine stopped at once, as
// if the process had died, leaving everything for a later resume.
type Crash struct{ Point string }

func (c *Crash) Error() string { return "reshard: crashed at failpoint " + c.Point }

func isCrash(err error) bool { var c *Crash; return errors.As(err, &c) }

// engine drives one bucket's reshard as the record's owner.
type engine struct {
	m        *Manager
	d        *driver.Driver
	bucket   string
	id       string
	recMu    sync.Mutex // rec is also written by the keepalive goroutine
	rec      Record     // as last written by us
	epoch    uint64
	src, dst bucketindex.Index

	copied  atomic.Uint64
	renewed atomic.Int64 // unix nanos of the last successful record write
	res     Result

	// replayed[i] is the last seq of source i's log applied in this run
	// (early replay during the copy, then the replay step).
	replayed []uint64
	pace     *pacer
	gov      *governor // nil unless CopyRateAdaptive
}

func (m *Manager) newEngine(inst driver.Instance, rec Record) *engine {
	e := &engine{
		m: m, d: m.d, bucket: inst.Name, id: inst.ID, rec: rec, epoch: rec.Epoch,
		src: bucketindex.Index{IO: m.d.IndexIO(), BucketID: inst.ID, Layout: rec.Source},
		dst: bucketindex.Index{IO: m.d.IndexIO(), BucketID: inst.ID, Layout: rec.Target},
	}
	e.renewed.Store(m.now().UnixNano())
	e.res = Result{Bucket: inst.Name, From: rec.Source, To: rec.Target, Sizing: rec.Sizing, Entries: rec.Total}
	e.pace = newPacer(float64(m.cfg.CopyRateLimit))
	if m.cfg.CopyRateAdaptive {
		lo, hi := m.cfg.adaptiveBounds()
		var base time.Duration
		if m.fg != nil && m.cfg.Foreground == nil {
			base = m.fg.baseline()
		}
		if base > 0 {
			e.gov = newBaselineGovernor(e.pace, lo, hi, m.cfg.ForegroundStats, base, m.cfg.CopyLatencyTarget)
		} else {
			e.pace.setRate((lo + hi) / 2)
			e.gov = newGovernor(e.pace, lo, hi, m.cfg.Foreground)
		}
		if m.cfg.RampIn >= 0 {
			e.gov.rampTicks = int(cmp.Or(m.cfg.RampIn, rampIn) / governorTick)
		}
		if m.cfg.RebaseEvery >= 0 && e.gov.fixed {
			e.gov.rebase = true
			if every := m.cfg.RebaseEvery; every > 0 {
				e.gov.probeEvery = max(probeMinGap, int(every/governorTick))
			}
		}
	}
	return e
}

func (e *engine) failpoint(name string) error {
	if fp := e.m.cfg.Failpoints; fp != nil && fp.Hit != nil {
		if fp.Hit(e.bucket, name) {
			return &Crash{Point: name}
		}
	}
	return nil
}

// update rewrites the instance with fn's changes to the record (fn returns
// the new record; nil clears it), renewing the lease. It retries when
// someone else wrote the instance in between (an admin cancel, metadata),
// and fails with ErrLostLease when the record is no longer ours.
func (e *engine) update(ctx context.Context, fn func(inst *driver.Instance, rec *Record) (*Record, error)) error {
	for attempt := 0; ; attempt++ {
		inst, ver, err := e.d.ReadInstance(ctx, e.id)
		if err != nil {
			return err
		}
		rec, err := decodeRecord(inst.Reshard)
		if err != nil {
			return err
		}
		if rec == nil || rec.Owner != e.m.cookie || rec.Epoch != e.epoch {
			return ErrLostLease
		}
		if time.Duration(e.m.now().UnixNano()-e.renewed.Load()) > e.m.cfg.LeaseDuration {
			// Our lease may have lapsed: someone may own it now.
			return ErrLostLease
		}
		nr, err := fn(&inst, rec)
		if err != nil {
			return err
		}
		if nr != nil {
			nr.Lease = e.m.now().Add(e.m.cfg.LeaseDuration)
		}
		inst.Reshard = nr.encode()
		err = e.d.WriteInstance(ctx, inst, ver)
		if errors.Is(err, objstore.ErrCanceled) && attempt < 100 {
			continue
		}
		if err != nil {
			return err
		}
		e.renewed.Store(e.m.now().UnixNano())
		if nr != nil {
			e.recMu.Lock()
			e.rec = *nr
			e.recMu.Unlock()
		}
		return nil
	}
}

// setState records a step change (with progress).
func (e *engine) setState(ctx context.Context, st State, mod func(*Record)) error {
	return e.update(ctx, func(_ *driver.Instance, rec *Record) (*Record, error) {
		rec.State = st
		rec.Copied = e.copied.Load()
		if mod != nil {
			mod(rec)
		}
		return rec, nil
	})
}

// keepalive renews the lease and publishes progress while a long step
// runs; it cancels the step when the lease is lost or a cancel is asked.
func (e *engine) keepalive(ctx context.Context, allowCancel bool) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(e.m.cfg.LeaseDuration / 4)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			err := e.update(ctx, func(_ *driver.Instance, rec *Record) (*Record, error) {
				rec.Copied = e.copied.Load()
				return rec, nil
			})
			if err != nil && ctx.Err() == nil {
				cancel(err)
				return
			}
			e.recMu.Lock()
			canceled := e.rec.Cancel
			e.recMu.Unlock()
			if allowCancel && canceled {
				cancel(ErrCanceled)
				return
			}
		}
	}()
	return ctx, func() { close(stop); <-done; cancel(nil) }
}

// stepErr prefers the cancellation cause (lost lease, cancel) over the
// context error a step saw.
func stepErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
			return c
		}
	}
	return err
}

// run drives the reshard from its recorded state to the end.
func (e *engine) run(ctx context.Context) (Result, error) {
	// A CPU profile (the gateway's /debug/pprof, the scale bench's) tells
	// the reshard's share apart from the writers' by this label; the
	// goroutines it starts inherit it.
	outer := ctx
	ctx = pprof.WithLabels(ctx, pprof.Labels("task", "reshard"))
	pprof.SetGoroutineLabels(ctx)
	defer pprof.SetGoroutineLabels(outer)
	start := e.m.now()
	e.res.Start = time.Now()
	retries := 0
	for {
		var err error
		switch e.rec.State {
		case StateCopy:
			err = e.copyStep(ctx)
		case StateReplay:
			err = e.replayStep(ctx)
		case StateClosing:
			// Writers wait on this step: a caller going away (an admin
			// request's connection) must not leave it half done.
			err = e.switchStep(context.WithoutCancel(ctx))
		case StateCleanup:
			err = e.cleanupStep(context.WithoutCancel(ctx))
			if err == nil {
				e.res.Total = e.m.now().Sub(start)
				return e.res, nil
			}
		case StateRollback:
			err = e.rollbackStep(ctx)
			if err == nil {
				e.res.RolledBack = true
				e.res.Total = e.m.now().Sub(start)
				if e.rec.Cancel {
					return e.res, ErrCanceled
				}
				return e.res, fmt.Errorf("reshard of %s rolled back: %s", e.bucket, e.rec.Error)
			}
		default:
			return e.res, fmt.Errorf("reshard: unknown state %q", e.rec.State)
		}
		if err == nil {
			continue
		}
		if isCrash(err) || errors.Is(err, ErrLostLease) || ctx.Err() != nil {
			return e.res, err
		}
		if errors.Is(err, driver.ErrNoSuchBucket) {
			// The bucket was deleted under us: remove what we created.
			e.dropTargets(context.WithoutCancel(ctx))
			_ = e.m.dequeue(context.WithoutCancel(ctx), e.bucket, e.rec.Source.Gen)
			return e.res, err
		}
		rollback := errors.Is(err, ErrCanceled) || errors.Is(err, errSourceMoved) ||
			e.rec.State == StateCopy || e.rec.State == StateReplay
		if !rollback || e.rec.State == StateRollback || e.rec.State == StateCleanup {
			// Forward-only steps must finish: writers may be waiting.
			// Retry here a while, then leave it to a later Process.
			if retries++; retries > 20 {
				return e.res, err
			}
			e.m.log.Warn("reshard: retrying step", "bucket", e.bucket, "state", e.rec.State, "err", err)
			select {
			case <-ctx.Done():
				return e.res, ctx.Err()
			case <-time.After(time.Duration(retries) * 10 * time.Millisecond):
			}
			continue
		}
		e.m.log.Warn("reshard: rolling back", "bucket", e.bucket, "state", e.rec.State, "err", err)
		msg := err.Error()
		if uerr := e.setState(ctx, StateRollback, func(r *Record) { r.Error = msg }); uerr != nil {
			if errors.Is(uerr, driver.ErrNoSuchBucket) {
				e.dropTargets(context.WithoutCancel(ctx))
				_ = e.m.dequeue(context.WithoutCancel(ctx), e.bucket, e.rec.Source.Gen)
			}
			return e.res, errors.Join(err, uerr)
		}
	}
}

// govern runs the adaptive rate governor (if any) until the returned
// function is called.
func (e *engine) govern(ctx context.Context) func() {
	if e.gov == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); e.gov.run(ctx) }()
	return func() {
		cancel()
		<-done
		e.res.RateCuts, e.res.MinRate = e.gov.stats()
	}
}

func (e *engine) sources() []int { return seq(e.src.Layout.NumShards) }

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// parallel runs fn for each item on at most w goroutines; the first error
// cancels the rest.
func parallel(ctx context.Context, w int, items []int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ch := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for k := 0; k < min(w, len(items)); k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ch {
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel(err) })
				}
			}
		}()
	}
feed:
	for _, i := range items {
		select {
		case ch <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	if first != nil {
		return first
	}
	return context.Cause(ctx)
}

// copyStep (re)creates the target generation, makes every source log, and
// copies every entry. Resuming repeats it from the start: the fresh
// targets and the cleared logs make the copy exact again.
func (e *engine) copyStep(ctx context.Context) error {
	ctx, stop := e.keepalive(ctx, true)
	defer stop()
	defer e.govern(ctx)()
	err := e.copyBody(ctx)
	return stepErr(ctx, err)
}

func (e *engine) copyBody(ctx context.Context) error {
	if err := e.dst.Remove(ctx); err != nil {
		return err
	}
	if err := e.dst.InitFenced(ctx, e.epoch); err != nil {
		return err
	}
	if err := e.failpoint("after-init-target"); err != nil {
		return err
	}
	var total atomic.Uint64
	err := parallel(ctx, e.m.cfg.Workers, e.sources(), func(ctx context.Context, i int) error {
		err := e.src.SetShardState(ctx, i, bucketindex.StateChange{
			To: bucketindex.StateLogging, From: []string{bucketindex.StateOpen, bucketindex.StateLogging},
			Epoch: e.epoch, ClearLog: true,
		})
		if errors.Is(err, objstore.ErrCanceled) || errors.Is(err, objstore.ErrNotFound) {
			return fmt.Errorf("%w: shard %d: %v", errSourceMoved, i, err)
		}
		if err != nil {
			return err
		}
		si, err := e.src.ShardInfo(ctx, i)
		total.Add(si.Stats.NumObjects)
		return err
	})
	if err != nil {
		return err
	}
	if err := e.failpoint("after-logging"); err != nil {
		return err
	}
	e.copied.Store(0)
	e.res.Entries = total.Load()
	e.replayed = make([]uint64, e.src.Layout.NumShards)
	if err := e.update(ctx, func(_ *driver.Instance, rec *Record) (*Record, error) {
		rec.Total, rec.Copied = total.Load(), 0
		return rec, nil
	}); err != nil {
		return err
	}
	t0 := time.Now()
	if err := e.copyAll(ctx, total.Load()); err != nil {
		return err
	}
	e.res.Copied = e.copied.Load()
	e.res.CopyTime = time.Since(t0)
	if !e.m.cfg.NoEarlyReplay {
		// Everything is copied: one round over every source, so the
		// replay step starts from a short backlog.
		n, err := e.replayRound(ctx, e.replayed, e.sources(), e.m.cfg.Workers, true)
		e.res.EarlyReplayed += n
		if err != nil {
			return err
		}
		if err := e.failpoint("mid-copy-replay"); err != nil {
			return err
		}
	}
	if err := e.failpoint("after-copy"); err != nil {
		return err
	}
	return e.setState(ctx, StateReplay, nil)
}

func (e *engine) copyAll(ctx context.Context, total uint64) error {
	if e.m.cfg.CopyLoad {
		load, err := e.dst.NewCopyLoad(ctx, e.epoch)
		if err != nil {
			return err
		}
		if load != nil {
			e.res.CopyLoaded = true
			return e.copyLoaded(ctx, total, load)
		}
	}
	var mid sync.Once
	var midErr atomic.Pointer[error]
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	tb := newTargetBuffers(e)
	// Writers: many copy ops in flight, so the backend shares their syncs.
	var wg sync.WaitGroup
	var werr atomic.Pointer[error]
	for w := 0; w < e.m.cfg.CopyWriters; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range tb.out {
				if werr.Load() != nil {
					continue // drain
				}
				if err := tb.write(ctx, b); err != nil {
					werr.Store(&err)
					cancel(err)
				}
			}
		}()
	}
	// Early replay: a source whose entries are all in the targets has its
	// log replayed while the rest is still copying, so no backlog is left
	// for after the copy.
	early := e.startEarlyReplay(ctx, tb, cancel)
	err := parallel(ctx, e.m.cfg.Workers, e.sources(), func(ctx context.Context, i int) error {
		err := e.copyShard(ctx, i, tb, func(n int) error {
			if err := e.pace.wait(ctx, n); err != nil {
				return err
			}
			if e.copied.Load()*2 >= total {
				mid.Do(func() {
					if err := e.failpoint("mid-copy"); err != nil {
						midErr.Store(&err)
					}
				})
			}
			if p := midErr.Load(); p != nil {
				return *p
			}
			return nil
		})
		if err == nil {
			tb.sourceDone(i)
		}
		return err
	})
	if err == nil {
		tb.flushRest(ctx)
	}
	close(tb.out)
	wg.Wait()
	eerr := early.stop()
	if p := werr.Load(); p != nil && (err == nil || errors.Is(err, context.Canceled)) {
		return *p
	}
	if err == nil {
		err = eerr
	}
	return err
}

// copyLoaded reads every source shard in pages, merges them in key order
// (so each target's pairs arrive in order, as a load needs) and stages
// each pair for its target. The load commits in chunks of LoadChunk
// pairs: the merge emits keys in ascending order, so after a chunk every
// key up to its last one is final in the targets (no later chunk holds
// it), and the logs' records of keys in that range are replayed before
// the copy goes on (rangeReplay). Pacing and the mid-copy failpoint work
// per page, as in copyShard.
func (e *engine) copyLoaded(ctx context.Context, total uint64, load *bucketindex.CopyLoad) error {
	defer load.Abort()
	// A loaded entry costs the foreground a read and a sequential table
	// write, not a WAL record and its compactions: the copy may run
	// faster, and every entry it copies sooner is a log record fewer to
	// replay behind it. The replays between chunks go through replay ops
	// like the replay step's, so they run under the usual ceiling.
	raise, lower := func() {}, func() {}
	if e.gov != nil {
		hi := e.gov.ceiling()
		raise = func() { e.gov.setHi(hi * loadRateFactor) }
		lower = func() {
			e.gov.setHi(hi)
			if e.pace.current() > hi {
				e.pace.setRate(hi)
			}
		}
	} else if r := e.pace.current(); r > 0 {
		raise = func() { e.pace.setRate(r * loadRateFactor) }
		lower = func() { e.pace.setRate(r) }
	}
	raise()
	defer lower()
	nt := e.dst.Layout.NumShards
	srcs := e.sources()
	curs := make([]*loadCursor, len(srcs))
	for _, i := range srcs {
		curs[i] = &loadCursor{src: i, more: true}
	}
	read := func(ctx context.Context, c *loadCursor) error {
		kvs, more, err := e.src.RawEntries(ctx, c.src, c.after, e.m.cfg.CopyBatch)
		if err != nil {
			return fmt.Errorf("read source shard %d: %w", c.src, err)
		}
		c.buf, c.more = kvs, more
		if len(kvs) > 0 {
			c.after = kvs[len(kvs)-1].Key
		}
		return nil
	}
	if err := parallel(ctx, e.m.cfg.Workers, srcs, func(ctx context.Context, i int) error {
		return read(ctx, curs[i])
	}); err != nil {
		return err
	}
	h := loadHeap{}
	for _, i := range srcs {
		if c := curs[i]; len(c.buf) > 0 {
			h = append(h, c)
		}
	}
	heap.Init(&h)
	rr := newRangeReplay(len(srcs), time.Now())
	rr.atOnce = e.m.cfg.MidReplayEvery < 0
	chunk := e.m.cfg.LoadChunk
	if chunk == 0 {
		chunk = max(minLoadChunk, nt*minLoadChunkPerShard)
	}
	midDone := false
	n := 0
	last := ""
	// committed: the bound of the chunks ingested so far ("": none). Between
	// chunks, every midReplayEvery, one range replay round applies the
	// logged writes of keys up to it, so that the replay runs beside the
	// staging at the rate writes arrive: left for the chunk's commit, it ran
	// in bursts that cut the fill to 0.85 for the ~6 s after each commit
	// (docs/bench/scale.md, "Stop 41").
	committed, lastMid := "", time.Now()
	every := e.m.cfg.MidReplayEvery
	if every == 0 {
		every = midReplayEvery
	}
	for h.Len() > 0 {
		c := h[0]
		kv := c.buf[0]
		c.buf = c.buf[1:]
		if err := load.Add(bucketindex.PlaceOf(kv.Key, nt), kv); err != nil {
			return fmt.Errorf("load into shard %d: %w", bucketindex.PlaceOf(kv.Key, nt), err)
		}
		last = kv.Key
		if len(c.buf) == 0 && c.more {
			done := e.timed(&e.res.LoadRead)
			err := read(ctx, c)
			done()
			if err != nil {
				return err
			}
		}
		if len(c.buf) == 0 {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
		if n++; n == e.m.cfg.CopyBatch || h.Len() == 0 {
			e.copied.Add(uint64(n))
			done := e.timed(&e.res.LoadPaceWait)
			err := e.pace.wait(ctx, n)
			done()
			if err != nil {
				return err
			}
			n = 0
			if !midDone && e.copied.Load()*2 >= total {
				midDone = true
				if err := e.failpoint("mid-copy"); err != nil {
					return err
				}
			}
			if committed != "" && every >= 0 && !e.m.cfg.NoEarlyReplay && time.Since(lastMid) >= every {
				if err := e.midChunkReplay(ctx, rr, curs, committed); err != nil {
					return err
				}
				lastMid = time.Now()
			}
		}
		if load.Staged() >= chunk && h.Len() > 0 {
			done := e.timed(&e.res.LoadCommits)
			err := e.commitChunk(ctx, load, rr, curs, last, false, raise, lower)
			done()
			if err != nil {
				return err
			}
			committed, lastMid = last, time.Now()
		}
	}
	defer e.timed(&e.res.LoadCommits)()
	return e.commitChunk(ctx, load, rr, curs, "", true, raise, lower)
}

// timed adds the time until the returned func is called to *d.
func (e *engine) timed(d *time.Duration) func() {
	t0 := time.Now()
	return func() { *d += time.Since(t0) }
}

// Chunk size of a loaded copy when Config.LoadChunk is 0: at least this
// many pairs, and this many per target shard, so that each target's table
// of a chunk is not tiny (every chunk adds one table per target to the
// LSM's lowest level until compactions merge them).
const (
	minLoadChunk         = 128 << 10
	minLoadChunkPerShard = 2048
)

// commitChunk ingests the staged chunk, adds its stats, and replays the
// records of keys up to bound (every key when final) that the logs hold.
// No source read is in flight: the merge loop calls it between reads, so
// curs says exactly which keys each source has yet to read.
func (e *engine) commitChunk(ctx context.Context, load *bucketindex.CopyLoad, rr *rangeReplay, curs []*loadCursor, bound string, final bool, raise, lower func()) error {
	if err := load.Ingest(ctx); err != nil {
		return err
	}
	if err := e.failpoint("load-ingested"); err != nil {
		return err
	}
	if err := load.AddStats(ctx); err != nil {
		return err
	}
	e.res.LoadChunks++
	if e.m.cfg.NoEarlyReplay {
		return nil
	}
	rr.committed(time.Now(), bound)
	lower()
	// Read the logs to their end, not one round's worth: a record read
	// before the copy reaches its key is skipped for nothing, one left
	// for after the copy is applied by an op. At 163 sources one round
	// (maxRoundRecords over all of them) per chunk fell behind the fill
	// and left 10.2M records for after the copy (docs/bench/scale.md,
	// "Stop 35"). Bounded, so writers faster than the replay cannot hold
	// the copy here. What the commit released is applied by these rounds
	// and the mid-chunk ones after them at the pace it was logged
	// (rangeReplay.take), not here at once.
	for r := 0; r < maxChunkRounds; r++ {
		n, skipped, more, err := e.rangeReplayRound(ctx, rr, curs, bound, final, true)
		e.res.EarlyReplayed += n
		e.res.ReplaySkipped += skipped
		if err != nil {
			raise()
			return err
		}
		if !more {
			break
		}
	}
	raise()
	return e.failpoint("load-replayed")
}

// maxChunkRounds bounds the range replay rounds after one chunk.
const maxChunkRounds = 32

// midReplayEvery is Config.MidReplayEvery's default.
const midReplayEvery = time.Second

// midChunkReplay runs one range replay round while a chunk is staged:
// records of keys up to committed (loaded) are applied, those of keys a
// cursor has read past it wait in rr for the chunk that loads them, those
// ahead of the cursors are skipped. No source read is in flight (the merge
// loop calls it between reads), as rangeReplayRound needs.
func (e *engine) midChunkReplay(ctx context.Context, rr *rangeReplay, curs []*loadCursor, committed string) error {
	defer e.timed(&e.res.LoadMidRounds)()
	n, skipped, _, err := e.rangeReplayRound(ctx, rr, curs, committed, false, false)
	e.res.EarlyReplayed += n
	e.res.ReplaySkipped += skipped
	e.res.MidChunkRounds++
	return err
}

// rangeReplay is a loaded copy's replay state between chunks: per
// source, the records read from its log whose keys the copy has read but
// not yet loaded (deferred, in log order), and those of loaded keys not
// yet applied (ready, in log order). e.replayed[i] is the last seq read
// from source i's log; every record up to it was applied, skipped (the
// copy reads its key later), is deferred or is ready.
//
// A chunk's commit releases the records of its keys: everything logged for
// them while it was staged, deferred or still in a log (~300,000 records a chunk at 487
// targets in the 30M run). Applied at once, they cut the fill to ~0.7 of
// its rate for the ~20 s they took (docs/bench/scale.md, "Stop 51"): a
// replayed record costs the foreground what a client's write does (WAL,
// memtable, compactions), a copied entry a fraction of it. So they are
// applied at the rate they were logged, over as long as the chunk took
// to stage, beside the next chunk's copy. Applying a ready record later
// is as exact as applying it now: a record only names its key, replay
// writes the key's value in the source when it runs, and no later chunk
// holds the key.
type rangeReplay struct {
	deferred [][]bucketindex.RawLogRecord
	ready    [][]bucketindex.RawLogRecord
	// backlog: ready records beyond the ones a round found fresh, applied
	// at drain records/s.
	backlog float64
	drain   float64
	// staged: how long the last committed chunk took to stage (from the
	// commit before it, or the copy's start); last: the previous round.
	staged           time.Duration
	lastCommit, last time.Time
	// bound: the last commit's bound; below: the one before it. What a
	// commit's rounds find of keys in (below, bound] it released: logged
	// while the chunk was staged, whether deferred or still in a log (no
	// round reads the logs before the first commit, and a source holding
	// its deferred share is not read).
	bound, below string
	// atOnce: no rounds run between commits (MidReplayEvery < 0), so a
	// commit applies all it releases.
	atOnce bool
}

func newRangeReplay(sources int, start time.Time) *rangeReplay {
	return &rangeReplay{
		deferred:   make([][]bucketindex.RawLogRecord, sources),
		ready:      make([][]bucketindex.RawLogRecord, sources),
		lastCommit: start,
		last:       start,
	}
}

// pending is how many ready records wait.
func (rr *rangeReplay) pending() int {
	n := 0
	for _, q := range rr.ready {
		n += len(q)
	}
	return n
}

// committed notes a chunk's commit at now, of keys up to bound.
func (rr *rangeReplay) committed(now time.Time, bound string) {
	rr.staged = max(now.Sub(rr.lastCommit), time.Millisecond)
	rr.lastCommit = now
	rr.below, rr.bound = rr.bound, bound
}

// take decides how many ready records a round at now applies, fresh of
// them new in it (read from the logs, of loaded keys) and released by a
// commit in it: every fresh one (they arrive at the writers' rate, as
// before chunks existed) and the backlog at the drain rate set when it
// was released, its records spread over the time the chunk took to
// stage; all when final. The records are taken from the heads of the
// sources' queues in proportion to their lengths, so log order holds.
func (rr *rangeReplay) take(now time.Time, fresh, released int, final bool) [][]bucketindex.RawLogRecord {
	dt := now.Sub(rr.last).Seconds()
	rr.last = now
	if released > 0 {
		rr.backlog += float64(released)
		rr.drain = rr.backlog / rr.staged.Seconds()
	}
	d := min(rr.backlog, rr.drain*dt)
	rr.backlog -= d
	// Beyond maxReadyLeft records the excess is applied now: the queue holds
	// ~100 bytes a record.
	total := rr.pending()
	n := min(total, max(fresh+int(math.Ceil(d)), total-maxReadyLeft))
	if rr.backlog < 1 || final || rr.atOnce {
		n, rr.backlog, rr.drain = total, 0, 0
	}
	out := make([][]bucketindex.RawLogRecord, len(rr.ready))
	if n == 0 {
		return out
	}
	left := n
	for i, q := range rr.ready {
		if len(q) == 0 {
			continue
		}
		k := min(len(q), left, int(math.Ceil(float64(len(q))*float64(n)/float64(total))))
		out[i], rr.ready[i] = q[:k:k], q[k:]
		left -= k
	}
	return out
}

// maxDeferred bounds the records a range replay holds back, over all
// sources: a source holding its share is not read until a chunk releases
// them. maxReadyLeft bounds those it leaves for later rounds.
const (
	maxDeferred  = 256 << 10
	maxReadyLeft = 512 << 10
)

// rangeReplayRound reads every source's log past e.replayed (at most a
// round's pages), then sorts each record, with those deferred before, by
// its key K (an omap key of the source, as the merge orders them):
//
//   - K <= bound (or final): its chunk is loaded, nothing later copies
//     K: it is ready (with the key's deferred records first, in log
//     order), and applied now or in a later round (rangeReplay.take);
//   - K above what source i's cursor has read: the copy reads K after
//     this record was written (the log was read before the cursor's
//     position), so the copied value includes it: skip it;
//   - otherwise K was read and waits in a cursor's page: defer it until
//     a chunk loads K. Applying it now would let the older value read
//     for K overwrite it at the ingest.
//
// A key's records fall in one class per round, so per key the order of
// the log is kept. In a commit's rounds the ready records of the chunk's
// keys are released (rangeReplay.take), the others are fresh. It returns
// the records applied and skipped, and more if a log it read has records
// past the round's pages.
func (e *engine) rangeReplayRound(ctx context.Context, rr *rangeReplay, curs []*loadCursor, bound string, final, commit bool) (applied, skipped uint64, more bool, err error) {
	srcs := e.sources()
	ns := len(srcs)
	var read []int
	for _, i := range srcs {
		if len(rr.deferred[i]) < maxDeferred/ns {
			read = append(read, i)
		}
	}
	logs, drained, err := e.readLogs(ctx, e.replayed, read, e.m.cfg.Workers)
	if err != nil {
		return 0, 0, false, err
	}
	fresh, released := 0, 0
	for _, i := range srcs {
		c := curs[i]
		var keep []bucketindex.RawLogRecord
		for _, part := range [2][]bucketindex.RawLogRecord{rr.deferred[i], logs[i]} {
			for _, r := range part {
				switch {
				case final || r.Key <= bound:
					rr.ready[i] = append(rr.ready[i], r)
					if commit && r.Key > rr.below {
						released++
					} else {
						fresh++
					}
				case c.more && r.Key > c.after:
					skipped++
				default:
					keep = append(keep, r)
				}
			}
		}
		rr.deferred[i] = keep
	}
	e.res.Released += uint64(released)
	apply := rr.take(time.Now(), fresh, released, final)
	e.res.MaxReady = max(e.res.MaxReady, rr.pending())
	applied, err = e.applyLogs(ctx, apply, e.m.cfg.Workers, true)
	if err != nil {
		return 0, 0, false, err
	}
	for i, recs := range logs {
		if len(recs) > 0 {
			e.replayed[i] = recs[len(recs)-1].Seq
		}
	}
	return applied, skipped, !drained, nil
}

// loadRateFactor raises the copy's rate ceiling for a loaded copy's
// entries (not its replays). In the quiet 5M scale run a loaded copy at
// 21,000 entries/s left the fill at its rate outside the reshard, while
// the replay of what was logged during the copy's 120 s then cut it to
// half (docs/bench/scale.md, "Stop 33").
const loadRateFactor = 4

// loadCursor is one source shard's page in copyLoaded's merge.
type loadCursor struct {
	src   int
	buf   []objstore.KV
	after string
	more  bool
}

type loadHeap []*loadCursor

func (h loadHeap) Len() int           { return len(h) }
func (h loadHeap) Less(i, j int) bool { return h[i].buf[0].Key < h[j].buf[0].Key }
func (h loadHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *loadHeap) Push(v any)        { *h = append(*h, v.(*loadCursor)) }
func (h *loadHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// earlyReplay replays sources' logs during the copy, paced with it.
type earlyReplay struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func (e *engine) startEarlyReplay(ctx context.Context, tb *targetBuffers, fail context.CancelCauseFunc) *earlyReplay {
	er := &earlyReplay{done: make(chan struct{})}
	if e.m.cfg.NoEarlyReplay {
		close(er.done)
		er.cancel = func() {}
		return er
	}
	ctx, er.cancel = context.WithCancel(ctx)
	go func() {
		defer close(er.done)
		t := time.NewTicker(earlyReplayTick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tb.ready:
			case <-t.C:
			}
			srcs := tb.readySources()
			if len(srcs) == 0 {
				continue
			}
			n, err := e.replayRound(ctx, e.replayed, srcs, e.m.cfg.Workers, true)
			e.res.EarlyReplayed += n
			if err != nil {
				if ctx.Err() == nil {
					er.err = err
					fail(err)
				}
				return
			}
		}
	}()
	return er
}

func (er *earlyReplay) stop() error {
	er.cancel()
	<-er.done
	return er.err
}

// earlyReplayTick is how often ready sources' logs are replayed during the
// copy (besides when a source becomes ready).
const earlyReplayTick = 250 * time.Millisecond

// targetBuffers gather copied entries per target shard across all source
// workers, so each copy op carries a full batch however many targets
// there are: the number of (synced) ops, not the entries, bounds the copy.
// They also track, per source shard, entries not yet written, so that a
// source's log is replayed only once all its entries are in the targets
// (a replayed change must never be overwritten by an older copied value).
type targetBuffers struct {
	e      *engine
	limit  int // entries per target before a flush
	mu     []sync.Mutex
	bufs   [][]objstore.KV
	owners [][]srcCount // per target: sources of the buffered entries
	out    chan copyBatch

	pending []atomic.Int64 // per source: entries buffered or being written
	done    []atomic.Bool  // per source: fully read
	taken   []bool         // per source: handed to the early replay
	ready   chan struct{}  // a source may have become ready
}

type srcCount struct{ src, n int }

type copyBatch struct {
	t      int
	kvs    []objstore.KV
	owners []srcCount
}

// maxBuffered bounds entries held in memory across all targets.
const maxBuffered = 1 << 18

func newTargetBuffers(e *engine) *targetBuffers {
	nt, ns := e.dst.Layout.NumShards, e.src.Layout.NumShards
	limit := min(e.m.cfg.CopyBatch, max(64, maxBuffered/nt))
	return &targetBuffers{e: e, limit: limit, mu: make([]sync.Mutex, nt), bufs: make([][]objstore.KV, nt),
		owners: make([][]srcCount, nt), out: make(chan copyBatch, e.m.cfg.CopyWriters),
		pending: make([]atomic.Int64, ns), done: make([]atomic.Bool, ns), taken: make([]bool, ns),
		ready: make(chan struct{}, 1)}
}

// add appends kvs (all from source src, for target t) and hands a full
// buffer to the writers (waiting when they are all busy: that bounds
// memory).
func (tb *targetBuffers) add(ctx context.Context, src, t int, kvs []objstore.KV) error {
	tb.pending[src].Add(int64(len(kvs)))
	tb.mu[t].Lock()
	tb.bufs[t] = append(tb.bufs[t], kvs...)
	if o := tb.owners[t]; len(o) > 0 && o[len(o)-1].src == src {
		o[len(o)-1].n += len(kvs)
	} else {
		tb.owners[t] = append(o, srcCount{src, len(kvs)})
	}
	var full copyBatch
	if len(tb.bufs[t]) >= tb.limit {
		full = copyBatch{t, tb.bufs[t], tb.owners[t]}
		tb.bufs[t], tb.owners[t] = make([]objstore.KV, 0, tb.limit), nil
	}
	tb.mu[t].Unlock()
	if full.kvs == nil {
		return nil
	}
	select {
	case tb.out <- full:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (tb *targetBuffers) write(ctx context.Context, b copyBatch) error {
	t0 := time.Now()
	full := len(b.kvs) >= tb.limit
	for kvs := b.kvs; len(kvs) > 0; {
		n := min(len(kvs), tb.e.m.cfg.CopyBatch)
		if err := tb.e.dst.CopyIn(ctx, b.t, tb.e.epoch, kvs[:n]); err != nil {
			return fmt.Errorf("copy into shard %d: %w", b.t, err)
		}
		kvs = kvs[n:]
	}
	if full {
		tb.e.gov.observe(time.Since(t0))
	}
	woke := false
	for _, o := range b.owners {
		if tb.pending[o.src].Add(-int64(o.n)) == 0 && tb.done[o.src].Load() {
			woke = true
		}
	}
	if woke {
		tb.wake()
	}
	return nil
}

func (tb *targetBuffers) wake() {
	select {
	case tb.ready <- struct{}{}:
	default:
	}
}

// sourceDone marks source i fully read.
func (tb *targetBuffers) sourceDone(i int) {
	tb.done[i].Store(true)
	if tb.pending[i].Load() == 0 {
		tb.wake()
	}
}

// readySources returns the sources fully read and written (only the early
// replay goroutine calls it). Once ready, a source stays ready.
func (tb *targetBuffers) readySources() []int {
	var r []int
	for i := range tb.done {
		if !tb.taken[i] && tb.done[i].Load() && tb.pending[i].Load() == 0 {
			tb.taken[i] = true
		}
		if tb.taken[i] {
			r = append(r, i)
		}
	}
	return r
}

func (tb *targetBuffers) flushRest(ctx context.Context) {
	for t := range tb.bufs {
		if len(tb.bufs[t]) > 0 {
			select {
			case tb.out <- copyBatch{t, tb.bufs[t], tb.owners[t]}:
			case <-ctx.Done():
				return
			}
			tb.bufs[t], tb.owners[t] = nil, nil
		}
	}
}

// copyShard pages through source shard i into the target buffers.
func (e *engine) copyShard(ctx context.Context, i int, tb *targetBuffers, afterPage func(n int) error) error {
	nt := e.dst.Layout.NumShards
	split := make([][]objstore.KV, nt)
	after := ""
	for {
		kvs, more, err := e.src.RawEntries(ctx, i, after, e.m.cfg.CopyBatch)
		if err != nil {
			return fmt.Errorf("read source shard %d: %w", i, err)
		}
		for _, kv := range kvs {
			t := bucketindex.PlaceOf(kv.Key, nt)
			split[t] = append(split[t], kv)
		}
		for t, part := range split {
			if len(part) > 0 {
				if err := tb.add(ctx, i, t, part); err != nil {
					return err
				}
				split[t] = part[:0]
			}
		}
		if len(kvs) > 0 {
			after = kvs[len(kvs)-1].Key
		}
		e.copied.Add(uint64(len(kvs)))
		if err := afterPage(len(kvs)); err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
}

// replayRound reads every source shard's log past replayed[i] (all
// shards concurrently, at most maxRoundPages pages each), then applies the
// records grouped by target shard, all targets concurrently, and returns
// how many it applied. Two waves of parallel operations, whatever the shard
// counts: this keeps the tail replay, which writers wait for, short. A key's
// records all come from one source shard, in log order, and go to one
// target, so per-key order is kept.
//
// srcs are the source shards to replay; paced rounds (not the tail, which
// writers wait for) charge the pacer for every batch they apply.
func (e *engine) replayRound(ctx context.Context, replayed []uint64, srcs []int, fanout int, paced bool) (uint64, error) {
	n, _, err := e.replayPart(ctx, replayed, srcs, fanout, paced)
	return n, err
}

// replayDrain replays rounds until every source's log is read to its end:
// after the sources close, nothing may be left behind, however long the
// tail (a single round stopped at maxRoundPages per source, and the
// switch lost the rest).
func (e *engine) replayDrain(ctx context.Context, replayed []uint64, srcs []int, fanout int) (uint64, error) {
	var total uint64
	for {
		n, drained, err := e.replayPart(ctx, replayed, srcs, fanout, false)
		total += n
		if err != nil || drained {
			return total, err
		}
	}
}

// catchUpRoundsPerDrained bounds a catch-up's rounds of every kind at this
// many times MaxReplayRounds (which bounds the rounds that drain every log).
const catchUpRoundsPerDrained = 5

// Replay round bounds: pages per source, and records a round holds in
// memory across all sources (a round at 97 shards held 1.5M records).
const (
	maxRoundPages   = 16
	maxRoundRecords = 256 << 10
)

// replayPart is one replay round; drained reports that it read every
// source's log to its end.
func (e *engine) replayPart(ctx context.Context, replayed []uint64, srcs []int, fanout int, paced bool) (uint64, bool, error) {
	logs, drained, err := e.readLogs(ctx, replayed, srcs, fanout)
	if err != nil {
		return 0, false, err
	}
	n, err := e.applyLogs(ctx, logs, fanout, paced)
	if err != nil {
		return 0, false, err
	}
	for i, recs := range logs {
		if len(recs) > 0 {
			replayed[i] = recs[len(recs)-1].Seq
		}
	}
	return n, drained, nil
}

// readLogs reads the logs of srcs past replayed[i], all concurrently, at
// most a round's pages each (logs is indexed by source shard); drained
// reports that it read every one to its end.
func (e *engine) readLogs(ctx context.Context, replayed []uint64, srcs []int, fanout int) ([][]bucketindex.RawLogRecord, bool, error) {
	ns := e.src.Layout.NumShards
	pages := min(maxRoundPages, max(1, maxRoundRecords/(max(1, len(srcs))*e.m.cfg.CopyBatch)))
	logs := make([][]bucketindex.RawLogRecord, ns)
	left := make([]bool, ns)
	err := parallel(ctx, fanout, srcs, func(ctx context.Context, i int) error {
		after := replayed[i]
		for p := 0; p < pages; p++ {
			recs, more, err := e.src.ReadLogRaw(ctx, i, after, e.m.cfg.CopyBatch)
			if err != nil {
				return fmt.Errorf("read log of shard %d: %w", i, err)
			}
			logs[i] = append(logs[i], recs...)
			if len(recs) > 0 {
				after = recs[len(recs)-1].Seq
			}
			if !more {
				return nil
			}
		}
		left[i] = true
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	drained := true
	for _, l := range left {
		drained = drained && !l
	}
	return logs, drained, nil
}

// applyLogs applies records (per source shard, in log order) grouped by
// target shard, all targets concurrently, and returns how many.
// A record names a key; what it writes is the key's current value in its
// source (bucketindex.Index.Resolve, one read per source and batch).
func (e *engine) applyLogs(ctx context.Context, logs [][]bucketindex.RawLogRecord, fanout int, paced bool) (uint64, error) {
	var n uint64
	var srcs []int
	for i, recs := range logs {
		if len(recs) > 0 {
			srcs = append(srcs, i)
			n += uint64(len(recs))
		}
	}
	resolved := make([][]bucketindex.RawLogRecord, len(logs))
	err := parallel(ctx, fanout, srcs, func(ctx context.Context, i int) error {
		var err error
		if resolved[i], err = e.src.Resolve(ctx, i, logs[i]); err != nil {
			return fmt.Errorf("read logged keys of shard %d: %w", i, err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	nt := e.dst.Layout.NumShards
	groups := make([][]bucketindex.RawLogRecord, nt)
	for _, recs := range resolved {
		for _, r := range recs {
			t := bucketindex.PlaceOf(r.Key, nt)
			groups[t] = append(groups[t], r)
		}
	}
	var targets []int
	for t, g := range groups {
		if len(g) > 0 {
			targets = append(targets, t)
		}
	}
	err = parallel(ctx, fanout, targets, func(ctx context.Context, t int) error {
		for g := groups[t]; len(g) > 0; {
			k := min(len(g), e.m.cfg.CopyBatch)
			if err := e.dst.Replay(ctx, t, e.epoch, g[:k]); err != nil {
				return fmt.Errorf("replay into shard %d: %w", t, err)
			}
			g = g[k:]
			if paced {
				if err := e.pace.wait(ctx, k); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// replayStep replays the logs until what is left is small enough to
// replay while writers wait, then records the point of no return.
func (e *engine) replayStep(ctx context.Context) error {
	ctx, stop := e.keepalive(ctx, true)
	defer stop()
	defer e.govern(ctx)()
	return stepErr(ctx, e.replayBody(ctx))
}

func (e *engine) replayBody(ctx context.Context) error {
	// Progress of this run's early replay carries over; a resumed
	// reshard replays from the start (replay is idempotent).
	if len(e.replayed) != e.src.Layout.NumShards {
		e.replayed = make([]uint64, e.src.Layout.NumShards)
	}
	replayed := e.replayed
	if err := e.catchUp(ctx, replayed, e.m.cfg.Workers, true, "mid-replay"); err != nil {
		return err
	}
	if err := e.failpoint("before-closing"); err != nil {
		return err
	}
	return e.setState(ctx, StateClosing, func(r *Record) { r.Replayed, r.Closing = replayed, true })
}

// catchUp replays rounds until one replays at most TailRecords records, or
// an unpaced round that read every log to its end was not a tenth shorter
// than the drained one before (writers add about as much as a round takes:
// more rounds would not shorten the tail), at most MaxReplayRounds drained
// rounds. A round that could not read a log to its end (a backlog longer
// than a round, e.g. what the writes of a long copy left) says nothing
// about convergence: its length is the round's cap. Taking it for a fixed
// point closed the sources with millions of records to replay, and
// writers waited over a minute (the stop-31 scale runs). If paced, rounds
// are paced while they shrink; a round that did not shrink (the write rate
// outruns the pace, or the backlog fills every round) makes the rest
// unpaced, so the tail that writers wait for stays short. point is a
// failpoint hit after each round.
func (e *engine) catchUp(ctx context.Context, replayed []uint64, fanout int, paced bool, point string) error {
	small := uint64(e.m.cfg.TailRecords)
	last := ^uint64(0)       // the last round's length
	lastDrained := uint64(0) // the last drained round's length (0: none yet)
	drainedRounds, rounds := 0, 0
	for {
		n, drained, err := e.replayPart(ctx, replayed, e.sources(), fanout, paced)
		if err != nil {
			return err
		}
		e.res.Replayed += n
		e.res.ReplayRounds++
		if err := e.failpoint(point); err != nil {
			return err
		}
		// Not shrinking: writes outrun the pace. Only a round that read
		// every log to its end says so; one cut at its cap has the cap's
		// length whatever the backlog, and going unpaced on a long
		// backlog (a loaded copy's) replayed it at full speed and halved
		// the fill.
		if drained && n >= last {
			paced = false
		}
		last = n
		rounds++
		if !drained {
			// Writers outran every round so far (each reads at most
			// maxRoundPages per source): stop catching up after a bound,
			// or the reshard never ends and its logs grow without one.
			// The switch replays whatever is left while writers wait.
			if rounds >= catchUpRoundsPerDrained*e.m.cfg.MaxReplayRounds {
				return nil
			}
			continue
		}
		drainedRounds++
		// Unpaced and not a tenth shorter than the last drained round:
		// the fixed point.
		stalled := !paced && lastDrained > 0 && n*10 >= lastDrained*9
		lastDrained = max(n, 1)
		if n <= small || stalled || drainedRounds >= e.m.cfg.MaxReplayRounds {
			return nil
		}
	}
}

// switchStep closes the sources, replays the last records and switches
// the instance to the target layout. Writers wait (retrying on ErrStale)
// only between the close and the switch.
func (e *engine) switchStep(ctx context.Context) error {
	replayed := e.rec.Replayed
	if len(replayed) != e.src.Layout.NumShards {
		replayed = make([]uint64, e.src.Layout.NumShards)
	}
	// Writes went on while the closing record was written: catch up
	// (unpaced) before the close, so writers wait only for what arrives
	// during the last short round and the close itself. Progress stays in
	// memory: a resume starts from the recorded seqs (replay is idempotent).
	// As wide as the switch itself: the last round's length is the tail.
	kctx, stop := e.keepalive(ctx, false)
	err := stepErr(kctx, e.catchUp(kctx, replayed, e.m.cfg.SwitchFanout, false, "mid-catch-up"))
	stop()
	if err != nil {
		return err
	}
	if err := e.failpoint("before-close"); err != nil {
		return err
	}
	t0 := time.Now()
	// The close needs no sync of its own: the switch's instance write
	// below is synced on the same store and makes it durable; a crash
	// before that resumes in closing and closes again.
	cctx := objstore.WithDeferredSync(ctx, e.d.IndexIO())
	err = parallel(cctx, e.m.cfg.SwitchFanout, e.sources(), func(ctx context.Context, i int) error {
		err := e.src.SetShardState(ctx, i, bucketindex.StateChange{
			To: bucketindex.StateClosed, From: []string{bucketindex.StateLogging, bucketindex.StateClosed},
			Epoch: e.epoch,
		})
		if errors.Is(err, objstore.ErrCanceled) || errors.Is(err, objstore.ErrNotFound) {
			// Someone reopened the shard: its changes since were not logged.
			return fmt.Errorf("%w: shard %d: %v", errSourceMoved, i, err)
		}
		return err
	})
	if err != nil {
		return err
	}
	if err := e.failpoint("after-close"); err != nil {
		return err
	}
	t1 := time.Now()
	n, err := e.replayDrain(ctx, replayed, e.sources(), e.m.cfg.SwitchFanout)
	if err != nil {
		return err
	}
	e.res.Tail = n
	t2 := time.Now()
	if err := e.failpoint("before-switch"); err != nil {
		return err
	}
	if e.dst.Layout.View {
		// The targets now hold what the view holds (the sources' union)
		// and nobody writes them until the switch: from here their writes
		// keep the view. Joining again after a crash is harmless, and a
		// rollback removes them without touching the view.
		// Unsynced like the close: the instance write makes it durable.
		if err := e.dst.JoinView(objstore.WithDeferredSync(ctx, e.d.IndexIO())); err != nil {
			return err
		}
		if err := e.failpoint("after-join"); err != nil {
			return err
		}
	}
	err = e.update(ctx, func(inst *driver.Instance, rec *Record) (*Record, error) {
		if inst.Layout != e.rec.Source {
			return nil, fmt.Errorf("reshard: instance layout %+v is not the source %+v", inst.Layout, e.rec.Source)
		}
		inst.Layout = rec.Target
		rec.State = StateCleanup
		rec.Replayed = nil
		return rec, nil
	})
	if err != nil {
		return err
	}
	e.res.Block = time.Since(t0)
	e.res.BlockClose, e.res.BlockTail, e.res.BlockSwitch = t1.Sub(t0), t2.Sub(t1), time.Since(t2)
	return e.failpoint("after-switch")
}

// cleanupStep moves the sources' GC records and link intents to the
// target generation (their data is still due for collection, their events
// maybe still to commit) and removes the sources.
func (e *engine) cleanupStep(ctx context.Context) error {
	nt := e.dst.Layout.NumShards
	err := parallel(ctx, e.m.cfg.Workers, e.sources(), func(ctx context.Context, i int) error {
		recs, err := e.src.GCRecords(ctx, i)
		if errors.Is(err, objstore.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		// Link intents too: a notification the source still waits for.
		intents, err := e.src.IntentRecords(ctx, i)
		if err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return err
		}
		recs = append(recs, intents...)
		groups := map[int][]objstore.KV{}
		for _, kv := range recs {
			t := bucketindex.ShardOf(kv.Key, nt)
			groups[t] = append(groups[t], kv)
		}
		for t, g := range groups {
			if err := e.dst.PutGCRecords(ctx, t, g); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := e.failpoint("mid-cleanup"); err != nil {
		return err
	}
	if err := e.src.Remove(ctx); err != nil {
		return err
	}
	if err := e.update(ctx, func(*driver.Instance, *Record) (*Record, error) { return nil, nil }); err != nil {
		return err
	}
	if err := e.failpoint("after-cleanup"); err != nil {
		return err
	}
	return e.m.dequeue(ctx, e.bucket, e.rec.Source.Gen)
}

// rollbackStep reopens the sources (dropping their logs) and removes the
// targets. The source generation was authoritative throughout, so nothing
// written is lost.
func (e *engine) rollbackStep(ctx context.Context) error {
	from := []string{bucketindex.StateLogging, bucketindex.StateOpen}
	if e.rec.Closing {
		from = append(from, bucketindex.StateClosed)
	}
	err := parallel(ctx, e.m.cfg.Workers, e.sources(), func(ctx context.Context, i int) error {
		err := e.src.SetShardState(ctx, i, bucketindex.StateChange{
			To: bucketindex.StateOpen, From: from, Epoch: e.epoch, ClearLog: true,
		})
		if errors.Is(err, objstore.ErrCanceled) || errors.Is(err, objstore.ErrNotFound) {
			return nil // not ours to reopen (bucket deletion)
		}
		return err
	})
	if err != nil {
		return err
	}
	if err := e.failpoint("mid-rollback"); err != nil {
		return err
	}
	if err := e.dst.Remove(ctx); err != nil {
		return err
	}
	if err := e.update(ctx, func(*driver.Instance, *Record) (*Record, error) { return nil, nil }); err != nil {
		return err
	}
	return e.m.dequeue(ctx, e.bucket, e.rec.Source.Gen)
}

func (e *engine) dropTargets(ctx context.Context) {
	if err := e.dst.Remove(ctx); err != nil {
		e.m.log.Warn("reshard: remove targets", "bucket", e.bucket, "err", err)
	}
}
