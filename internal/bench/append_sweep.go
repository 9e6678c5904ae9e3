package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// AppendSweepConfig runs the append workload at several client counts,
// several rounds over all of them, so the spread between rounds shows.
type AppendSweepConfig struct {
	// Base is the configuration of each point; its Clients is ignored.
	Base AppendConfig
	// Clients are the client counts, each run every round. Default
	// 1, 2, 4, 8, 16, 32.
	Clients []int
	// Rounds over all client counts. Default 1.
	Rounds int
	// Backend and Command are recorded in the result.
	Backend, Command string
}

// AppendPoint is one client count over all rounds.
type AppendPoint struct {
	Clients int `json:"clients"`
	// Per round, in round order.
	PlainOpsPerSec   []float64 `json:"plain_ops_per_sec"`
	GuardedOpsPerSec []float64 `json:"guarded_ops_per_sec"`
	Ratios           []float64 `json:"ratios"`
	// Medians over rounds; the ratio's min and max are the spread.
	PlainMedian   float64 `json:"plain_ops_per_sec_median"`
	GuardedMedian float64 `json:"guarded_ops_per_sec_median"`
	RatioMedian   float64 `json:"ratio_median"`
	RatioMin      float64 `json:"ratio_min"`
	RatioMax      float64 `json:"ratio_max"`
}

// AppendSweepResult is the whole sweep.
type AppendSweepResult struct {
	Command     string  `json:"command"`
	Backend     string  `json:"backend"`
	Size        int     `json:"size"`
	DurationSec float64 `json:"duration_sec_per_mode"`
	Rounds      int     `json:"rounds"`
	// GuardedOverPlain32 is the median guarded/plain ratio at 32 clients
	// (0 when 32 was not among the client counts).
	GuardedOverPlain32 float64         `json:"guarded_over_plain_32"`
	Points             []AppendPoint   `json:"points"`
	Runs               []*AppendResult `json:"runs"`
}

// RunAppendSweep runs RunAppend for every client count, Rounds times.
func RunAppendSweep(ctx context.Context, cfg AppendSweepConfig) (*AppendSweepResult, error) {
	if len(cfg.Clients) == 0 {
		cfg.Clients = []int{1, 2, 4, 8, 16, 32}
	}
	if cfg.Rounds == 0 {
		cfg.Rounds = 1
	}
	if cfg.Rounds < 0 || cfg.Rounds > 1000 {
		return nil, errors.New("rounds: want 1..1000")
	}
	cfg.Base.EnsureDefaults()
	res := &AppendSweepResult{Command: cfg.Command, Backend: cfg.Backend, Size: cfg.Base.Size,
		DurationSec: cfg.Base.Duration.Seconds(), Rounds: cfg.Rounds}
	points := make([]AppendPoint, len(cfg.Clients))
	for r := 0; r < cfg.Rounds; r++ {
		for i, n := range cfg.Clients {
			c := cfg.Base
			c.Clients = n
			fmt.Fprintf(c.Out, "round %d/%d, %d clients\n", r+1, cfg.Rounds, n)
			run, err := RunAppend(ctx, c)
			if err != nil {
				return res, err
			}
			res.Runs = append(res.Runs, run)
			p := &points[i]
			p.Clients = n
			p.PlainOpsPerSec = append(p.PlainOpsPerSec, run.PlainOpsPerSec)
			p.GuardedOpsPerSec = append(p.GuardedOpsPerSec, run.GuardedOpsPerSec)
			p.Ratios = append(p.Ratios, run.Ratio)
		}
	}
	for i := range points {
		p := &points[i]
		p.PlainMedian, p.GuardedMedian = median(p.PlainOpsPerSec), median(p.GuardedOpsPerSec)
		p.RatioMedian = median(p.Ratios)
		p.RatioMin, p.RatioMax = slices.Min(p.Ratios), slices.Max(p.Ratios)
		if p.Clients == 32 {
			res.GuardedOverPlain32 = p.RatioMedian
		}
		fmt.Fprintf(cfg.Base.Out, "%3d clients: plain %.0f/s, guarded %.0f/s, guarded/plain %.2f (rounds %.2f..%.2f)\n",
			p.Clients, p.PlainMedian, p.GuardedMedian, p.RatioMedian, p.RatioMin, p.RatioMax)
	}
	res.Points = points
	return res, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
