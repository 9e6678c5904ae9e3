package bench

// The lifecycle workload (issue 15's goal), against a running gateway
// whose lifecycle options (lc-rate) are the thing measured:
//
//  1. fill a bucket with Objects small objects, every other one 16 bytes
//     (a whole-bucket rule with ObjectSizeLessThan 20 and a past
//     Expiration Date expires those), the others 32 bytes: the pass lists
//     and examines every object and expires half;
//  2. foreground 4 KiB PUT rate with no pass running (A);
//  3. install the rule, ask for a pass (POST /admin/lc), and measure the
//     same PUT load while the pass runs (B);
//  4. after the pass, the PUT load again (A), and the pass's examined/s
//     from its status (examined over completed - started).
//
// With TransitionClass set it is the transition workload instead (issue
// 23): every object is ObjectSize bytes and the rule moves them all to
// that storage class (a Transition with a past Date), so the pass copies
// each object's data to the class's pool and switches its manifest;
// objects and MiB moved per second come from the status.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// LifecycleConfig configures the lifecycle workload.
type LifecycleConfig struct {
	Endpoint             string
	AccessKey, SecretKey string
	Region               string
	Prefix               string        // bucket name prefix; default random
	Objects              int           // objects in the processed bucket; default 100000
	FillConcurrency      int           // default 32
	Concurrency          int           // foreground PUT workers; default 8
	Size                 int64         // foreground PUT size; default 4 KiB
	Duration             time.Duration // each foreground phase; default 20s
	// TransitionClass, when set, makes it the transition workload: the
	// rule moves every object to this class (which the gateway must
	// configure), each ObjectSize bytes (default 64 KiB).
	TransitionClass string
	ObjectSize      int64
	// GatewayPID, when set, is the gateway's process: the result also
	// has its CPU time per foreground PUT and per moved object (Linux
	// /proc), figures machine load moves far less than the rates.
	GatewayPID int
	Out        io.Writer
}

// LifecycleResult is the workload's JSON output.
type LifecycleResult struct {
	Objects        int     `json:"objects"`
	Expiring       int     `json:"expiring"`
	FillPerSec     float64 `json:"fill_puts_per_sec"`
	PutBefore      float64 `json:"put_ops_before"`
	PutDuring      float64 `json:"put_ops_during_pass"`
	PutAfter       float64 `json:"put_ops_after"`
	DuringSeconds  float64 `json:"during_seconds"`
	Ratio          float64 `json:"ratio_during_vs_without"`
	PassSeconds    float64 `json:"pass_seconds"`
	Examined       int64   `json:"examined"`
	Expired        int64   `json:"expired"`
	ExaminedPerSec float64 `json:"examined_per_sec"`
	PutErrors      int64   `json:"put_errors"`
	// The transition workload's.
	TransitionClass     string  `json:"transition_class,omitempty"`
	ObjectSize          int64   `json:"object_size,omitempty"`
	Transitioned        int64   `json:"transitioned,omitempty"`
	TransitionedBytes   int64   `json:"transitioned_bytes,omitempty"`
	TransitionedPerSec  float64 `json:"transitioned_per_sec,omitempty"`
	TransitionMiBPerSec float64 `json:"transition_mib_per_sec,omitempty"`
	// With GatewayPID: CPU per foreground PUT without a pass, and per
	// object moved during the pass (the CPU of that phase beyond its
	// PUTs', over the objects moved in it, at the pass's mean rate).
	CPUPerPutUs  float64 `json:"gateway_cpu_us_per_put_without_pass,omitempty"`
	CPUPerMoveUs float64 `json:"gateway_cpu_us_per_moved_object,omitempty"`
}

type lcStatusDoc struct {
	State     string    `json:"status"`
	Started   time.Time `json:"started"`
	Completed time.Time `json:"completed"`
	Examined  int64     `json:"examined"`
	Expired   int64     `json:"expired"`
	Moved     int64     `json:"transitioned"`
	MovedB    int64     `json:"transitioned_bytes"`
}

// RunLifecycle runs the workload.
func RunLifecycle(ctx context.Context, cfg LifecycleConfig) (*LifecycleResult, error) {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Prefix == "" {
		cfg.Prefix = fmt.Sprintf("lb%06x", rand.Uint32()&0xffffff)
	}
	if cfg.Objects == 0 {
		cfg.Objects = 100000
	}
	if cfg.FillConcurrency == 0 {
		cfg.FillConcurrency = 32
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 8
	}
	if cfg.Size == 0 {
		cfg.Size = 4 << 10
	}
	if cfg.Duration == 0 {
		cfg.Duration = 20 * time.Second
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	fillSize := int64(32)
	if cfg.TransitionClass != "" {
		if cfg.ObjectSize == 0 {
			cfg.ObjectSize = 64 << 10
		}
		fillSize = cfg.ObjectSize
	}
	client := func(bucket string, size int64, conc int) *s3Client {
		return newS3Client(S3Config{Endpoint: cfg.Endpoint, AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey,
			Region: cfg.Region, Bucket: bucket, Concurrency: conc, Size: size})
	}
	lc := client(cfg.Prefix+"-lc", fillSize, cfg.FillConcurrency)
	fg := client(cfg.Prefix+"-fg", cfg.Size, cfg.Concurrency)
	admin := client("admin", 0, 1)
	for _, c := range []*s3Client{lc, fg} {
		if err := c.createBucket(ctx); err != nil {
			return nil, fmt.Errorf("create %s: %w", c.cfg.Bucket, err)
		}
	}
	res := &LifecycleResult{Objects: cfg.Objects, Expiring: cfg.Objects / 2}
	if cfg.TransitionClass != "" {
		res.Expiring, res.TransitionClass, res.ObjectSize = 0, cfg.TransitionClass, cfg.ObjectSize
	}

	// 1. Fill.
	t0 := time.Now()
	var next atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for w := 0; w < cfg.FillConcurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= cfg.Objects || ctx.Err() != nil {
					return
				}
				body := lc.body // 32 bytes: kept
				if i%2 == 0 && cfg.TransitionClass == "" {
					body = body[:16] // expires
				}
				if _, err := lc.do(ctx, http.MethodPut, fmt.Sprintf("obj/%08d", i), body, nil); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if p := firstErr.Load(); p != nil {
		return nil, fmt.Errorf("fill: %w", *p)
	}
	res.FillPerSec = float64(cfg.Objects) / time.Since(t0).Seconds()
	fmt.Fprintf(cfg.Out, "fill: %d objects at %.0f PUT/s\n", cfg.Objects, res.FillPerSec)

	var phaseOps [4]int64
	var phaseCPU [4]time.Duration
	put := func(d time.Duration, stop func() bool, seed int64) (float64, float64) {
		cpu0 := procCPU(cfg.GatewayPID)
		defer func() { phaseCPU[seed] = procCPU(cfg.GatewayPID) - cpu0 }()
		lctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if stop != nil {
			go func() {
				for lctx.Err() == nil {
					if stop() {
						cancel()
						return
					}
					time.Sleep(200 * time.Millisecond)
				}
			}()
		}
		ok, bad, el := fg.putLoop(lctx, 1000, d, seed)
		phaseOps[seed] = ok
		res.PutErrors += bad
		return float64(ok) / el.Seconds(), el.Seconds()
	}
	status := func() (lcStatusDoc, error) {
		var st lcStatusDoc
		var buf bytes.Buffer
		if _, err := admin.doQuery(ctx, http.MethodGet, "lc", "bucket="+lc.cfg.Bucket+"&status=", nil, nil, &buf); err != nil {
			return st, err
		}
		return st, json.Unmarshal(buf.Bytes(), &st)
	}

	// 2. Foreground alone.
	res.PutBefore, _ = put(cfg.Duration, nil, 1)
	fmt.Fprintf(cfg.Out, "PUT %s without a pass: %.0f ops/s\n", sizeString(cfg.Size), res.PutBefore)

	// 3. The rule and a pass.
	rule := []byte(`<LifecycleConfiguration><Rule><ID>bench</ID><Status>Enabled</Status><Filter><ObjectSizeLessThan>20</ObjectSizeLessThan></Filter>` +
		`<Expiration><Date>2020-01-01T00:00:00Z</Date></Expiration></Rule></LifecycleConfiguration>`)
	if cfg.TransitionClass != "" {
		rule = []byte(`<LifecycleConfiguration><Rule><ID>bench</ID><Status>Enabled</Status><Filter><Prefix></Prefix></Filter>` +
			`<Transition><Date>2020-01-01T00:00:00Z</Date><StorageClass>` + cfg.TransitionClass + `</StorageClass></Transition></Rule></LifecycleConfiguration>`)
	}
	if _, err := lc.doQuery(ctx, http.MethodPut, "", "lifecycle=", rule, nil, nil); err != nil {
		return nil, fmt.Errorf("put lifecycle: %w", err)
	}
	if _, err := admin.doQuery(ctx, http.MethodPost, "lc", "bucket="+lc.cfg.Bucket, nil, nil, nil); err != nil {
		return nil, fmt.Errorf("lc process: %w", err)
	}
	for {
		st, err := status()
		if err != nil {
			return nil, err
		}
		if st.State == "PROCESSING" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	passDone := func() bool {
		st, err := status()
		return err == nil && st.State != "PROCESSING"
	}
	res.PutDuring, res.DuringSeconds = put(cfg.Duration, passDone, 2)
	fmt.Fprintf(cfg.Out, "PUT %s during the pass (%.1fs): %.0f ops/s\n", sizeString(cfg.Size), res.DuringSeconds, res.PutDuring)
	var st lcStatusDoc
	for {
		var err error
		if st, err = status(); err != nil {
			return nil, err
		}
		if st.State != "PROCESSING" && !st.Completed.IsZero() {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	res.PassSeconds = st.Completed.Sub(st.Started).Seconds()
	res.Examined, res.Expired = st.Examined, st.Expired
	res.ExaminedPerSec = float64(st.Examined) / res.PassSeconds
	fmt.Fprintf(cfg.Out, "pass: %d examined, %d expired in %.1fs: %.0f objects/s (%s)\n", st.Examined, st.Expired, res.PassSeconds, res.ExaminedPerSec, st.State)
	if cfg.TransitionClass != "" {
		res.Transitioned, res.TransitionedBytes = st.Moved, st.MovedB
		res.TransitionedPerSec = float64(st.Moved) / res.PassSeconds
		res.TransitionMiBPerSec = float64(st.MovedB) / (1 << 20) / res.PassSeconds
		fmt.Fprintf(cfg.Out, "transitioned %d objects (%d bytes) to %s: %.0f objects/s, %.1f MiB/s\n",
			st.Moved, st.MovedB, cfg.TransitionClass, res.TransitionedPerSec, res.TransitionMiBPerSec)
	}

	// 4. Foreground alone again.
	res.PutAfter, _ = put(cfg.Duration, nil, 3)
	res.Ratio = res.PutDuring / ((res.PutBefore + res.PutAfter) / 2)
	fmt.Fprintf(cfg.Out, "PUT %s after the pass: %.0f ops/s; during/without = %.2f\n", sizeString(cfg.Size), res.PutAfter, res.Ratio)
	if without := phaseOps[1] + phaseOps[3]; cfg.GatewayPID != 0 && without > 0 {
		perPut := float64((phaseCPU[1] + phaseCPU[3]).Microseconds()) / float64(without)
		res.CPUPerPutUs = perPut
		fmt.Fprintf(cfg.Out, "gateway CPU: %.0f µs per PUT without a pass", perPut)
		if moved := float64(st.Moved) / res.PassSeconds * res.DuringSeconds; cfg.TransitionClass != "" && moved > 0 {
			res.CPUPerMoveUs = (float64(phaseCPU[2].Microseconds()) - perPut*float64(phaseOps[2])) / moved
			fmt.Fprintf(cfg.Out, "; %.0f µs per object moved (%.1f PUTs' worth)", res.CPUPerMoveUs, res.CPUPerMoveUs/perPut)
		}
		fmt.Fprintln(cfg.Out)
	}
	return res, nil
}
