package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cairn-s3/cairn/internal/reshard"
)

// ReshardConfig is the dynamic-resharding workload (`cairn bench reshard`):
// fill one bucket through the driver with small objects while dynamic
// resharding grows its index, then measure listing against shard count.
type ReshardConfig struct {
	// Dir is the parent of the temporary store ("" = system temp dir).
	Dir string
	// Objects to PUT. Default 2,000,000.
	Objects int
	// Clients issuing PUTs concurrently. Default 32.
	Clients int
	// Size of each object body in bytes. Default 16.
	Size int
	// InitialShards of the bucket. Default 11 (bucket-index-shards).
	InitialShards int
	// MaxObjsPerShard for the dynamic trigger, lowered so that several
	// reshards happen during the fill. Default 10,000.
	MaxObjsPerShard int
	// CopyRateLimit caps each reshard's copy (entries/s; 0 = unlimited).
	CopyRateLimit int
	// CopyRateAdaptive lets the governor move the rate between
	// CopyRateMin and CopyRateLimit; ForegroundSignal feeds it the fill's
	// mean PUT latency (else it uses the copy's own batch latency).
	CopyRateAdaptive bool
	CopyRateMin      int
	ForegroundSignal bool
	// NoEarlyReplay: replay logs only after the copy (comparison runs).
	NoEarlyReplay bool
	// CopyWriters: copy ops in flight per reshard (0: the manager's default).
	CopyWriters int
	// CheckInterval of the reshard manager. Default 100 ms.
	CheckInterval time.Duration
	// ListShards are the shard counts at which listing is measured (the
	// filled bucket is resharded to each). Default 11, 101, 1009.
	ListShards []int
	// NoList skips the listing measurement.
	NoList bool
	// Rate, if > 0, makes the fill open-loop: PUTs are issued on a fixed
	// schedule of Rate per second (Clients bound how many are in flight)
	// instead of as fast as the clients can go. At a rate the store
	// sustains, a reshard shows as a drop only if it blocks or starves
	// writes; the closed-loop default shows its CPU cost at saturation.
	Rate int
	// ListKeys is how many keys each listing measurement reads (pages of
	// 1000). Default 200,000.
	ListKeys int
	// MaxDuration stops the fill early (the result says how many objects
	// went in). Default 10 minutes.
	MaxDuration time.Duration
}

// EnsureDefaults fills zero fields.
func (c *ReshardConfig) EnsureDefaults() *ReshardConfig {
	if c.Objects == 0 {
		c.Objects = 2_000_000
	}
	if c.Clients == 0 {
		c.Clients = 32
	}
	if c.Size == 0 {
		c.Size = 16
	}
	if c.InitialShards == 0 {
		c.InitialShards = 11
	}
	if c.MaxObjsPerShard == 0 {
		c.MaxObjsPerShard = 10_000
	}
	if c.CheckInterval == 0 {
		c.CheckInterval = 100 * time.Millisecond
	}
	if c.ListShards == nil {
		c.ListShards = []int{11, 101, 1009}
	}
	if c.ListKeys == 0 {
		c.ListKeys = 200_000
	}
	if c.MaxDuration == 0 {
		c.MaxDuration = 10 * time.Minute
	}
	return c
}

// Validate reports every problem at once.
func (c *ReshardConfig) Validate() error {
	var errs []error
	if c.Objects < 1 || c.Clients < 1 || c.Size < 0 || c.InitialShards < 1 || c.MaxObjsPerShard < 1 || c.ListKeys < 1 {
		errs = append(errs, fmt.Errorf("bench reshard: objects %d, clients %d, size %d, shards %d, max-objs-per-shard %d, list keys %d must be positive",
			c.Objects, c.Clients, c.Size, c.InitialShards, c.MaxObjsPerShard, c.ListKeys))
	}
	for _, n := range c.ListShards {
		if n < 1 || n > driver.MaxShards {
			errs = append(errs, fmt.Errorf("bench reshard: list shard count %d", n))
		}
	}
	return errors.Join(errs...)
}

// ReshardEvent is one reshard during the fill.
type ReshardEvent struct {
	FromShards      int     `json:"from_shards"`
	ToShards        int     `json:"to_shards"`
	StartSec        float64 `json:"start_sec"` // since the fill began
	EndSec          float64 `json:"end_sec"`
	Copied          uint64  `json:"copied"`
	CopySec         float64 `json:"copy_sec"`
	CopyPerSec      float64 `json:"copy_entries_per_sec"`
	EarlyReplayed   uint64  `json:"replayed_during_copy"`
	Replayed        uint64  `json:"replayed"`
	ReplayRounds    int     `json:"replay_rounds"`
	Tail            uint64  `json:"tail_records"`
	BlockMs         float64 `json:"block_ms"` // sources closed → switched
	SteadyPerSec    float64 `json:"steady_puts_per_sec"`
	MinWindowPerSec float64 `json:"min_window_puts_per_sec"`
	MinRatio        float64 `json:"min_window_ratio"`
	RateCuts        int     `json:"rate_cuts,omitempty"`
	MinRate         float64 `json:"min_rate,omitempty"`
}

// ListPoint is the listing rate at one shard count.
type ListPoint struct {
	Shards     int     `json:"shards"`
	Keys       int     `json:"keys"`
	KeysPerSec float64 `json:"keys_per_sec"`
	MsPerPage  float64 `json:"ms_per_page"`
	ReshardSec float64 `json:"reshard_sec"`
}

// ReshardResult is the workload's outcome.
type ReshardResult struct {
	Config     ReshardConfig `json:"config"`
	Objects    int64         `json:"objects"`
	FillSec    float64       `json:"fill_sec"`
	PutsPerSec []int         `json:"puts_per_sec"` // completed PUTs in each second of the fill
	// StallMsPerSec: milliseconds of each second of the fill in which the
	// store's LSM stopped writes (flushes/compactions behind), sampled.
	StallMsPerSec  []int          `json:"stall_ms_per_sec"`
	Reshards       []ReshardEvent `json:"reshards"`
	Inside         Latency        `json:"put_latency_inside_reshard"`
	Outside        Latency        `json:"put_latency_outside_reshard"`
	MaxBlockMs     float64        `json:"max_block_ms"`
	MinCopyPerSec  float64        `json:"min_copy_entries_per_sec"`
	MaxCopyPerSec  float64        `json:"max_copy_entries_per_sec"`
	MinWindowRatio float64        `json:"min_window_ratio"`
	// The same ratio (1 s window / mean of the 5 s before it), sampled
	// every 100 ms, for windows inside reshards and for windows wholly
	// outside them: the outside figures are the machine's own noise floor.
	RatioInside     RatioDist   `json:"window_ratio_inside"`
	RatioOutside    RatioDist   `json:"window_ratio_outside"`
	FinalShards     int         `json:"final_shards"`
	FinalNumObjects uint64      `json:"final_num_objects"`
	Listing         []ListPoint `json:"listing"`
	GOMAXPROCS      int         `json:"gomaxprocs"`
}

// RatioDist summarises 1 s window ratios.
type RatioDist struct {
	N   int     `json:"n"`
	Min float64 `json:"min"`
	P5  float64 `json:"p5"`
	P50 float64 `json:"p50"`
}

func ratioDist(v []float64) RatioDist {
	if len(v) == 0 {
		return RatioDist{}
	}
	sort.Float64s(v)
	return RatioDist{N: len(v), Min: v[0], P5: v[len(v)*5/100], P50: v[len(v)/2]}
}

// String is a short human summary.
func (r *ReshardResult) String() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "filled %d objects in %.1f s (%.0f PUT/s), %d reshards, final %d shards\n",
		r.Objects, r.FillSec, float64(r.Objects)/r.FillSec, len(r.Reshards), r.FinalShards)
	for _, ev := range r.Reshards {
		fmt.Fprintf(&b, "  %4d → %4d at %6.1f s: copied %8d in %6.3f s (%8.0f/s), replayed %6d during copy + %6d in %d rounds, tail %4d, block %6.2f ms, min 1s window %5.0f/%5.0f = %.2f (rate cuts %d, min rate %.0f)\n",
			ev.FromShards, ev.ToShards, ev.StartSec, ev.Copied, ev.CopySec, ev.CopyPerSec, ev.EarlyReplayed, ev.Replayed, ev.ReplayRounds, ev.Tail, ev.BlockMs, ev.MinWindowPerSec, ev.SteadyPerSec, ev.MinRatio, ev.RateCuts, ev.MinRate)
	}
	fmt.Fprintf(&b, "PUT inside reshards:  %v\nPUT outside reshards: %v\n", r.Inside, r.Outside)
	fmt.Fprintf(&b, "max block %.2f ms; copy %.0f..%.0f entries/s; min window ratio %.2f\n", r.MaxBlockMs, r.MinCopyPerSec, r.MaxCopyPerSec, r.MinWindowRatio)
	fmt.Fprintf(&b, "1 s window / prior 5 s: inside reshards %+v, outside %+v\n", r.RatioInside, r.RatioOutside)
	stalled, secs := 0, 0
	for _, ms := range r.StallMsPerSec {
		stalled += ms
		if ms > 0 {
			secs++
		}
	}
	fmt.Fprintf(&b, "LSM write stalls: %d ms in all, in %d of %d seconds\n", stalled, secs, len(r.StallMsPerSec))
	for _, p := range r.Listing {
		fmt.Fprintf(&b, "  list %4d shards: %8.0f keys/s, %6.2f ms/page of 1000\n", p.Shards, p.KeysPerSec, p.MsPerPage)
	}
	return b.String()
}

type putSample struct {
	done int64 // ns since fill start
	lat  int64 // ns
}

// RunReshard runs the workload on a fresh embedded store on disk.
func RunReshard(ctx context.Context, cfg ReshardConfig) (*ReshardResult, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(cfg.Dir, "cairn-bench-reshard-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: dir, Classes: reg})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: cfg.InitialShards})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	const bucket = "bench-reshard"
	if err := d.CreateBucket(ctx, "bench", bucket, "", cfg.InitialShards); err != nil {
		return nil, err
	}

	res := &ReshardResult{Config: cfg, GOMAXPROCS: runtime.GOMAXPROCS(0)}
	start := time.Now()
	var evMu sync.Mutex
	var events []reshard.Result
	// Foreground signal: mean PUT latency since the previous call.
	var fgSum, fgN atomic.Int64
	var fg func() time.Duration
	if cfg.ForegroundSignal {
		fg = func() time.Duration {
			n := fgN.Swap(0)
			s := fgSum.Swap(0)
			if n == 0 {
				return 0
			}
			return time.Duration(s / n)
		}
	}
	m, err := reshard.New(ctx, reshard.Config{
		Driver: d, Store: st, Enabled: true, MaxObjsPerShard: cfg.MaxObjsPerShard, Interval: cfg.CheckInterval, CopyRateLimit: cfg.CopyRateLimit, CopyWriters: cfg.CopyWriters,
		CopyRateAdaptive: cfg.CopyRateAdaptive, CopyRateMin: cfg.CopyRateMin, Foreground: fg, NoEarlyReplay: cfg.NoEarlyReplay,
		OnDone: func(r reshard.Result) { evMu.Lock(); events = append(events, r); evMu.Unlock() },
	})
	if err != nil {
		return nil, err
	}
	m.Start()
	stopped := false
	stopManager := func() {
		if !stopped {
			m.Close()
			stopped = true
		}
	}
	defer stopManager()

	// Fill.
	body := pattern(cfg.Size, 7)
	var next atomic.Int64
	samples := make([][]putSample, cfg.Clients)
	errs := make([]error, cfg.Clients)
	fillCtx, cancel := context.WithTimeout(ctx, cfg.MaxDuration)
	defer cancel()
	var wg sync.WaitGroup
	stallDone := make(chan struct{})
	stallStopped := make(chan struct{})
	go func() {
		defer close(stallStopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		_, last := st.WriteStalls()
		for {
			select {
			case <-stallDone:
				return
			case <-t.C:
				_, tot := st.WriteStalls()
				res.StallMsPerSec = append(res.StallMsPerSec, int((tot-last)/time.Millisecond))
				last = tot
			}
		}
	}()
	for c := 0; c < cfg.Clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			ss := make([]putSample, 0, cfg.Objects/cfg.Clients+16)
			for fillCtx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(cfg.Objects) {
					break
				}
				if cfg.Rate > 0 {
					due := start.Add(time.Duration(i) * time.Second / time.Duration(cfg.Rate))
					if d := time.Until(due); d > 0 {
						time.Sleep(d)
					}
				}
				t0 := time.Now()
				_, err := d.PutObject(fillCtx, driver.PutObjectInput{
					Bucket: bucket, Key: fmt.Sprintf("obj/%09d", i*7919%int64(cfg.Objects)), Body: bytes.NewReader(body), Size: int64(len(body)),
				})
				if err != nil {
					if fillCtx.Err() == nil {
						errs[c] = fmt.Errorf("put %d: %w", i, err)
					}
					break
				}
				t1 := time.Now()
				ss = append(ss, putSample{done: int64(t1.Sub(start)), lat: int64(t1.Sub(t0))})
				if fg != nil {
					fgSum.Add(int64(t1.Sub(t0)))
					fgN.Add(1)
				}
			}
			samples[c] = ss
		}(c)
	}
	wg.Wait()
	fill := time.Since(start)
	close(stallDone)
	<-stallStopped
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Let a reshard triggered at the very end finish, then stop the manager.
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if l, err := m.List(ctx); err == nil && len(l) == 0 {
			break
		}
	}
	stopManager()

	var all []putSample
	for _, ss := range samples {
		all = append(all, ss...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].done < all[j].done })
	res.Objects = int64(len(all))
	res.FillSec = fill.Seconds()
	secs := int(fill/time.Second) + 1
	res.PutsPerSec = make([]int, secs)
	for _, s := range all {
		res.PutsPerSec[int(s.done/int64(time.Second))]++
	}
	// Reshard windows and the PUT rate around them.
	evMu.Lock()
	evs := append([]reshard.Result(nil), events...)
	evMu.Unlock()
	sort.Slice(evs, func(i, j int) bool { return evs[i].Start.Before(evs[j].Start) })
	type window struct{ lo, hi int64 }
	var wins []window
	res.MinWindowRatio = 1
	res.MinCopyPerSec = 0
	for _, r := range evs {
		lo := int64(r.Start.Sub(start))
		hi := lo + int64(r.Total)
		wins = append(wins, window{lo, hi})
		ev := ReshardEvent{
			FromShards: r.From.NumShards, ToShards: r.To.NumShards, StartSec: float64(lo) / 1e9, EndSec: float64(hi) / 1e9,
			Copied: r.Copied, CopySec: r.CopyTime.Seconds(), EarlyReplayed: r.EarlyReplayed, Replayed: r.Replayed, RateCuts: r.RateCuts, MinRate: r.MinRate, ReplayRounds: r.ReplayRounds, Tail: r.Tail,
			BlockMs: float64(r.Block.Microseconds()) / 1000,
		}
		if r.CopyTime > 0 {
			ev.CopyPerSec = float64(r.Copied) / r.CopyTime.Seconds()
		}
		// Steady state: the mean rate of the 5 whole seconds before the
		// reshard; then every whole 1 s window inside it (sliding by 100 ms).
		ev.SteadyPerSec = rate(all, lo-5*int64(time.Second), lo) / 5
		ev.MinWindowPerSec = -1
		for w := lo; w+int64(time.Second) <= hi && w+int64(time.Second) <= int64(fill); w += int64(100 * time.Millisecond) {
			r := rate(all, w, w+int64(time.Second))
			if ev.MinWindowPerSec < 0 || r < ev.MinWindowPerSec {
				ev.MinWindowPerSec = r
			}
		}
		if ev.MinWindowPerSec >= 0 && ev.SteadyPerSec > 0 && lo >= 5*int64(time.Second) {
			ev.MinRatio = ev.MinWindowPerSec / ev.SteadyPerSec
			res.MinWindowRatio = min(res.MinWindowRatio, ev.MinRatio)
		}
		res.MaxBlockMs = max(res.MaxBlockMs, ev.BlockMs)
		if ev.CopyPerSec > 0 && ev.Copied >= 10000 {
			if res.MinCopyPerSec == 0 || ev.CopyPerSec < res.MinCopyPerSec {
				res.MinCopyPerSec = ev.CopyPerSec
			}
			res.MaxCopyPerSec = max(res.MaxCopyPerSec, ev.CopyPerSec)
		}
		res.Reshards = append(res.Reshards, ev)
	}
	// Window ratios inside vs outside reshards (a window touching a
	// reshard counts inside; the 5 s reference must lie in the fill).
	var rin, rout []float64
	for w := int64(5 * time.Second); w+int64(time.Second) <= int64(fill); w += int64(100 * time.Millisecond) {
		ref := rate(all, w-5*int64(time.Second), w) / 5
		if ref <= 0 {
			continue
		}
		ratio := rate(all, w, w+int64(time.Second)) / ref
		inside := false
		for _, win := range wins {
			if w < win.hi && w+int64(time.Second) > win.lo {
				inside = true
				break
			}
		}
		if inside {
			rin = append(rin, ratio)
		} else {
			rout = append(rout, ratio)
		}
	}
	res.RatioInside, res.RatioOutside = ratioDist(rin), ratioDist(rout)
	var in, out []time.Duration
	var inSpan, outSpan time.Duration
	for _, s := range all {
		inside := false
		for _, w := range wins {
			if s.done >= w.lo && s.done-s.lat <= w.hi {
				inside = true
				break
			}
		}
		if inside {
			in = append(in, time.Duration(s.lat))
		} else {
			out = append(out, time.Duration(s.lat))
		}
	}
	for _, w := range wins {
		// Only the part of a window inside the fill counts.
		inSpan += time.Duration(max(0, min(w.hi, int64(fill))-w.lo))
	}
	outSpan = fill - inSpan
	res.Inside, res.Outside = summarise(in, inSpan), summarise(out, outSpan)

	bs, err := d.BucketStats(ctx, bucket)
	if err != nil {
		return nil, err
	}
	res.FinalShards, res.FinalNumObjects = bs.NumShards, bs.NumObjects
	if bs.NumObjects != uint64(res.Objects) {
		return nil, fmt.Errorf("bench reshard: bucket holds %d objects, %d were put", bs.NumObjects, res.Objects)
	}
	if cfg.NoList {
		return res, nil
	}
	// Listing rate against shard count on the filled bucket.
	m2, err := reshard.New(ctx, reshard.Config{Driver: d, Store: st})
	if err != nil {
		return nil, err
	}
	for _, n := range cfg.ListShards {
		p := ListPoint{Shards: n}
		if cur, _ := d.BucketStats(ctx, bucket); cur.NumShards != n {
			t0 := time.Now()
			if _, err := m2.Reshard(ctx, bucket, n); err != nil {
				return nil, err
			}
			p.ReshardSec = time.Since(t0).Seconds()
		}
		t0 := time.Now()
		after, pages := "", 0
		for p.Keys < cfg.ListKeys {
			lr, err := d.ListObjects(ctx, driver.ListObjectsInput{Bucket: bucket, StartAfter: after, MaxKeys: 1000})
			if err != nil {
				return nil, err
			}
			pages++
			p.Keys += len(lr.Objects)
			if !lr.IsTruncated {
				break
			}
			after = lr.NextMarker
		}
		el := time.Since(t0)
		p.KeysPerSec = float64(p.Keys) / el.Seconds()
		p.MsPerPage = float64(el.Microseconds()) / 1000 / float64(pages)
		res.Listing = append(res.Listing, p)
	}
	return res, nil
}

// rate counts samples (sorted by completion) completed in [lo, hi).
func rate(all []putSample, lo, hi int64) float64 {
	i := sort.Search(len(all), func(i int) bool { return all[i].done >= lo })
	j := sort.Search(len(all), func(i int) bool { return all[i].done >= hi })
	return float64(j - i)
}

// CopyRateConfig measures the reshard copy alone: a bucket index of
// Entries entries (written straight into the index, no data objects) on an
// otherwise idle store, resharded From → To shards.
type CopyRateConfig struct {
	Dir      string
	Entries  int // default 1,000,000
	From, To int // default 11 → 23
	// NoEarlyReplay: the engine's switch of that name (A/B runs).
	NoEarlyReplay bool
}

// CopyRateResult is the copy measured by CopyRate.
type CopyRateResult struct {
	Entries    int     `json:"entries"`
	From       int     `json:"from_shards"`
	To         int     `json:"to_shards"`
	CopySec    float64 `json:"copy_sec"`
	CopyPerSec float64 `json:"copy_entries_per_sec"`
	TotalSec   float64 `json:"reshard_sec"`
	BlockMs    float64 `json:"block_ms"`
	// CPUSec is the process CPU time (user+system) the reshard used, and
	// CopyPerCPUSec the entries copied per CPU-second: a rate independent
	// of other load on the machine.
	CPUSec        float64 `json:"cpu_sec"`
	CopyPerCPUSec float64 `json:"copy_entries_per_cpu_sec"`
}

// CopyRate runs the copy-only measurement.
func CopyRate(ctx context.Context, cfg CopyRateConfig) (*CopyRateResult, error) {
	if cfg.Entries == 0 {
		cfg.Entries = 1_000_000
	}
	if cfg.From == 0 {
		cfg.From, cfg.To = 11, 23
	}
	dir, err := os.MkdirTemp(cfg.Dir, "cairn-bench-copy-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: dir, Classes: reg})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	d, err := driver.New(ctx, driver.Options{Store: st})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	const bucket = "bench-copy"
	if err := d.CreateBucket(ctx, "bench", bucket, "", cfg.From); err != nil {
		return nil, err
	}
	inst, err := d.Instance(ctx, bucket)
	if err != nil {
		return nil, err
	}
	ix := bucketindex.Index{IO: d.IndexIO(), BucketID: inst.ID, Layout: inst.Layout}
	// Entries shaped like a small PUT's.
	bufs := make([][]objstore.KV, cfg.From)
	now := time.Now().UTC()
	for i := 0; i < cfg.Entries; i++ {
		key := fmt.Sprintf("obj/%09d", i)
		e := bucketindex.Entry{Key: key, Size: 16, ETag: "0123456789abcdef0123456789abcdef", ModTime: now, Owner: "bench",
			Tag: fmt.Sprintf("tag_%d", i), Manifest: bucketindex.Manifest{Runs: []bucketindex.Run{{Prefix: inst.ID + "/" + key + "." + fmt.Sprint(i), Size: 16, StripeSize: driver.StripeSize}}},
			Meta: []byte(`{}`)}
		b, _ := json.Marshal(e)
		s := bucketindex.ShardOf(key, cfg.From)
		bufs[s] = append(bufs[s], objstore.KV{Key: key, Value: b})
		if len(bufs[s]) == 1000 || i == cfg.Entries-1 {
			for s2, kvs := range bufs {
				if len(kvs) > 0 && (s2 == s || i == cfg.Entries-1) {
					if err := ix.CopyIn(ctx, s2, 0, kvs); err != nil {
						return nil, err
					}
					bufs[s2] = bufs[s2][:0]
				}
			}
		}
	}
	m, err := reshard.New(ctx, reshard.Config{Driver: d, Store: st, NoEarlyReplay: cfg.NoEarlyReplay})
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	cpu0 := cpuTime()
	r, err := m.Reshard(ctx, bucket, cfg.To)
	if err != nil {
		return nil, err
	}
	out := &CopyRateResult{Entries: int(r.Copied), From: cfg.From, To: cfg.To, CopySec: r.CopyTime.Seconds(),
		TotalSec: time.Since(t0).Seconds(), BlockMs: float64(r.Block.Microseconds()) / 1000}
	out.CPUSec = (cpuTime() - cpu0).Seconds()
	out.CopyPerCPUSec = float64(r.Copied) / out.CPUSec
	out.CopyPerSec = float64(r.Copied) / r.CopyTime.Seconds()
	if r.Copied != uint64(cfg.Entries) {
		return nil, fmt.Errorf("bench copy: copied %d of %d", r.Copied, cfg.Entries)
	}
	return out, nil
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
