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

// RunAppend runs the plain phase, then the guarded phase, each on a fresh
// store so that neither inherits the other's LSM debt.
func RunAppend(ctx context.Context, cfg AppendConfig) (*AppendResult, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	res := &AppendResult{Clients: cfg.Clients, Size: cfg.Size, DurationSec: cfg.Duration.Seconds()}
	data := pattern(cfg.Size, 7)

	var err error
	res.Plain, err = appendPhase(ctx, cfg, "plain", func(io objstore.IOContext) (func(c, i int) error, error) {
		var (
			mu    sync.Mutex
			gen   int
			bytes atomic.Int64
		)
		return func(c, i int) error {
			mu.Lock()
			oid := fmt.Sprintf("append.plain.%d", gen)
			mu.Unlock()
			op := objstore.NewWriteOp().Append(data)
			if err := io.Operate(ctx, oid, op); err != nil {
				return err
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
		}, nil
	})
	if err != nil {
		return res, fmt.Errorf("plain append: %w", err)
	}
	fmt.Fprintf(cfg.Out, "plain   append, %3d clients: %s\n", cfg.Clients, res.Plain)

	const epoch = 1
	res.Guarded, err = appendPhase(ctx, cfg, "guarded", func(io objstore.IOContext) (func(c, i int) error, error) {
		if _, err := guardlog.Seal(ctx, io, "append.guarded", epoch); err != nil {
			return nil, err
		}
		return func(c, i int) error {
			_, err := guardlog.Append(ctx, io, "append.guarded", epoch, data)
			return err
		}, nil
	})
	if err != nil {
		return res, fmt.Errorf("guarded append: %w", err)
	}
	fmt.Fprintf(cfg.Out, "guarded append, %3d clients: %s\n", cfg.Clients, res.Guarded)

	res.PlainOpsPerSec, res.GuardedOpsPerSec = res.Plain.OpsPerSec, res.Guarded.OpsPerSec
	if res.PlainOpsPerSec > 0 {
		res.Ratio = res.GuardedOpsPerSec / res.PlainOpsPerSec
	}
	return res, nil
}

func appendPhase(ctx context.Context, cfg AppendConfig, name string,
	setup func(objstore.IOContext) (func(c, i int) error, error)) (Latency, error) {
	st, _, closeStore, err := tempStore(cfg.Dir, "append-"+name)
	if err != nil {
		return Latency{}, err
	}
	defer closeStore()
	if err := st.CreatePool(ctx, "bench"); err != nil {
		return Latency{}, err
	}
	io, err := st.IOContext(ctx, "bench")
	if err != nil {
		return Latency{}, err
	}
	op, err := setup(io)
	if err != nil {
		return Latency{}, err
	}
	return closedLoop(ctx, cfg.Clients, cfg.Duration, op)
}
