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

	plainIO, closePlain, err := benchPool(ctx, cfg.Dir, "append-plain")
	if err != nil {
		return nil, err
	}
	defer closePlain()
	guardedIO, closeGuarded, err := benchPool(ctx, cfg.Dir, "append-guarded")
	if err != nil {
		return nil, err
	}
	defer closeGuarded()

	var (
		mu    sync.Mutex
		gen   int
		bytes atomic.Int64
	)
	plain := func(c, i int) error {
		mu.Lock()
		oid := fmt.Sprintf("append.plain.%d", gen)
		mu.Unlock()
		if err := plainIO.Operate(ctx, oid, objstore.NewWriteOp().Append(data)); err != nil {
			return fmt.Errorf("plain append: %w", err)
		}
		if bytes.Add(int64(len(data))) > plainRollover {
			mu.Lock()
			if bytes.Load() > plainRollover {
				gen++
				bytes.Store(0)
			}
			mu.Unlock()
		}
		return nil
	}
	const epoch = 1
	if _, err := guardlog.Seal(ctx, guardedIO, "append.guarded", epoch); err != nil {
		return nil, err
	}
	guarded := func(c, i int) error {
		if _, err := guardlog.Append(ctx, guardedIO, "append.guarded", epoch, data); err != nil {
			return fmt.Errorf("guarded append: %w", err)
		}
		return nil
	}

	slices := int(cfg.Duration / time.Second)
	if slices < 1 {
		slices = 1
	}
	slice := cfg.Duration / time.Duration(slices)
	var ps, gs samples
	for r := 0; r < slices; r++ {
		first, second := &ps, &gs
		fop, sop := plain, guarded
		if r%2 == 1 {
			first, second, fop, sop = &gs, &ps, guarded, plain
		}
		if err := first.run(ctx, cfg.Clients, slice, fop); err != nil {
			return res, err
		}
		if err := second.run(ctx, cfg.Clients, slice, sop); err != nil {
			return res, err
		}
	}
	res.Plain, res.Guarded = ps.summary(), gs.summary()
	fmt.Fprintf(cfg.Out, "plain   append, %3d clients: %s\n", cfg.Clients, res.Plain)
	fmt.Fprintf(cfg.Out, "guarded append, %3d clients: %s\n", cfg.Clients, res.Guarded)
	res.PlainOpsPerSec, res.GuardedOpsPerSec = res.Plain.OpsPerSec, res.Guarded.OpsPerSec
	if res.PlainOpsPerSec > 0 {
		res.Ratio = res.GuardedOpsPerSec / res.PlainOpsPerSec
	}
	return res, nil
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
