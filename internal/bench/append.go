package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/guardlog"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// AppendConfig configures the append workload: clients appending to one
// object, plain objstore Append vs the log class's epoch-guarded append
// (the CORFU/ZLog-on-RADOS measurement).
type AppendConfig struct {
	// Clients is the number of concurrent appenders. Default 1.
	Clients int
	// Duration of each phase. Default 10s.
	Duration time.Duration
	// Size of each append in bytes. Default 4096.
	Size int
	// Dir is the parent directory for the temporary stores ("" = the
	// system temp dir); pick it to pick the disk.
	Dir string
	// Out receives progress lines; nil discards them.
	Out io.Writer
	// Open returns handles on a fresh pool for one mode ("append-plain",
	// "append-guarded"), one per connection (client c uses handle c mod
	// len), and its cleanup. nil: a fresh embedded store in Dir per mode.
	// cmd/cairn binds the Ceph backend here.
	Open func(ctx context.Context, name string) ([]objstore.IOContext, func(), error)
	// Counters, if set, is sampled around each mode's slices and the
	// differences are reported (the RADOS backend's optimistic-path
	// counters: transactions, conflicts, state reads).
	Counters func() map[string]int64
}

// EnsureDefaults fills in zero fields.
func (c *AppendConfig) EnsureDefaults() *AppendConfig {
	if c.Clients == 0 {
		c.Clients = 1
	}
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.Size == 0 {
		c.Size = 4096
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	return c
}

// Validate reports every problem at once.
func (c *AppendConfig) Validate() error {
	var errs []error
	if c.Clients < 1 || c.Clients > 4096 {
		errs = append(errs, fmt.Errorf("clients %d: want 1..4096", c.Clients))
	}
	if c.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration %v: want > 0", c.Duration))
	}
	if c.Size < 1 || c.Size > 1<<20 {
		errs = append(errs, fmt.Errorf("size %d: want 1..1048576", c.Size))
	}
	return errors.Join(errs...)
}

// AppendResult is one run.
type AppendResult struct {
	Clients          int     `json:"clients"`
	Size             int     `json:"size"`
	DurationSec      float64 `json:"duration_sec"`
	Plain            Latency `json:"plain"`
	Guarded          Latency `json:"guarded"`
	PlainOpsPerSec   float64 `json:"plain_ops_per_sec"`
	GuardedOpsPerSec float64 `json:"guarded_ops_per_sec"`
	// Ratio is guarded / plain ops per second.
	Ratio float64 `json:"ratio"`
	// PlainCounters and GuardedCounters are Counters' increments during
	// each mode's slices (absent without Counters).
	PlainCounters   map[string]int64 `json:"plain_counters,omitempty"`
	GuardedCounters map[string]int64 `json:"guarded_counters,omitempty"`
}

// plainRollover bounds the plain object's size: past it appenders move to a
// new object (the benchmark's unit is the op, not the object; RADOS objects
// are bounded too).
const plainRollover = objstore.MaxObjectSize / 2

// RunAppend measures plain and guarded appends. Each gets a fresh store, so
// that neither inherits the other's LSM debt, and the two run in
// alternating slices of about a second (ABBA order), so that load from
// elsewhere on the machine hits both alike and the ratio stays meaningful.
func RunAppend(ctx context.Context, cfg AppendConfig) (*AppendResult, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	res := &AppendResult{Clients: cfg.Clients, Size: cfg.Size, DurationSec: cfg.Duration.Seconds()}
	data := pattern(cfg.Size, 7)

	open := cfg.Open
	if open == nil {
		open = func(ctx context.Context, name string) ([]objstore.IOContext, func(), error) {
			io, closeStore, err := benchPool(ctx, cfg.Dir, name)
			return []objstore.IOContext{io}, closeStore, err
		}
	}
	plainIOs, closePlain, err := open(ctx, "append-plain")
	if err != nil {
		return nil, err
	}
	defer closePlain()
	guardedIOs, closeGuarded, err := open(ctx, "append-guarded")
	if err != nil {
		return nil, err
	}
	defer closeGuarded()

	plainObj := newRollover("append.plain")
	defer plainObj.remove(plainIOs[0])
	plain := func(c, i int) error {
		oid, _ := plainObj.current()
		if err := plainIOs[c%len(plainIOs)].Operate(ctx, oid, objstore.NewWriteOp().Append(data)); err != nil {
			return fmt.Errorf("plain append: %w", err)
		}
		plainObj.add(len(data))
		return nil
	}
	const epoch = 1
	guardedObj := newRollover("append.guarded")
	defer guardedObj.remove(guardedIOs[0])
	// Each log object is sealed once, by whoever first uses it.
	var sealMu sync.Mutex
	sealed := map[string]bool{}
	guarded := func(c, i int) error {
		oid, _ := guardedObj.current()
		sealMu.Lock()
		if !sealed[oid] {
			if _, err := guardlog.Seal(ctx, guardedIOs[0], oid, epoch); err != nil {
				sealMu.Unlock()
				return fmt.Errorf("seal: %w", err)
			}
			sealed[oid] = true
		}
		sealMu.Unlock()
		if _, err := guardlog.Append(ctx, guardedIOs[c%len(guardedIOs)], oid, epoch, data); err != nil {
			return fmt.Errorf("guarded append: %w", err)
		}
		guardedObj.add(len(data))
		return nil
	}

	slices := int(cfg.Duration / time.Second)
	if slices < 1 {
		slices = 1
	}
	slice := cfg.Duration / time.Duration(slices)
	var ps, gs samples
	pc, gc := map[string]int64{}, map[string]int64{}
	runMode := func(s *samples, counted map[string]int64, op func(c, i int) error) error {
		var before map[string]int64
		if cfg.Counters != nil {
			before = cfg.Counters()
		}
		err := s.run(ctx, cfg.Clients, slice, op)
		if cfg.Counters != nil {
			for k, v := range cfg.Counters() {
				counted[k] += v - before[k]
			}
		}
		return err
	}
	for r := 0; r < slices; r++ {
		first, second := &ps, &gs
		fc, sc := pc, gc
		fop, sop := plain, guarded
		if r%2 == 1 {
			first, second, fc, sc, fop, sop = &gs, &ps, gc, pc, guarded, plain
		}
		if err := runMode(first, fc, fop); err != nil {
			return res, err
		}
		if err := runMode(second, sc, sop); err != nil {
			return res, err
		}
	}
	res.Plain, res.Guarded = ps.summary(), gs.summary()
	if cfg.Counters != nil {
		res.PlainCounters, res.GuardedCounters = pc, gc
	}
	fmt.Fprintf(cfg.Out, "plain   append, %3d clients: %s %v\n", cfg.Clients, res.Plain, res.PlainCounters)
	fmt.Fprintf(cfg.Out, "guarded append, %3d clients: %s %v\n", cfg.Clients, res.Guarded, res.GuardedCounters)
	res.PlainOpsPerSec, res.GuardedOpsPerSec = res.Plain.OpsPerSec, res.Guarded.OpsPerSec
	if res.PlainOpsPerSec > 0 {
		res.Ratio = res.GuardedOpsPerSec / res.PlainOpsPerSec
	}
	return res, nil
}

// rollover names the object appenders write to, moving to a new one past
// plainRollover bytes, and remembers every name for cleanup.
type rollover struct {
	prefix string
	mu     sync.Mutex
	gen    int
	bytes  atomic.Int64
}

func newRollover(prefix string) *rollover { return &rollover{prefix: prefix} }

func (r *rollover) current() (string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("%s.%d", r.prefix, r.gen), r.gen
}

func (r *rollover) add(n int) {
	if r.bytes.Add(int64(n)) > plainRollover {
		r.mu.Lock()
		if r.bytes.Load() > plainRollover {
			r.gen++
			r.bytes.Store(0)
		}
		r.mu.Unlock()
	}
}

// remove deletes every object written (a shared cluster keeps no
// benchmark debris); errors are ignored, the pool goes too where Open
// made one.
func (r *rollover) remove(io objstore.IOContext) {
	_, last := r.current()
	for g := 0; g <= last; g++ {
		io.Operate(context.Background(), fmt.Sprintf("%s.%d", r.prefix, g), objstore.NewWriteOp().Remove())
	}
}

// benchPool opens a fresh temporary store with a pool "bench".
func benchPool(ctx context.Context, parent, name string) (objstore.IOContext, func(), error) {
	st, _, closeStore, err := tempStore(parent, name)
	if err != nil {
		return nil, nil, err
	}
	if err := st.CreatePool(ctx, "bench"); err != nil {
		closeStore()
		return nil, nil, err
	}
	io, err := st.IOContext(ctx, "bench")
	if err != nil {
		closeStore()
		return nil, nil, err
	}
	return io, closeStore, nil
}
