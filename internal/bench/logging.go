package bench

// The bucket logging workload (issue 23, item 8): the 4 KiB PUT rate of
// one bucket with bucket logging off vs on, in standard mode (records
// buffered, appended once per second) and in journal mode (each PUT's
// record appended and synced before its response), toggled with
// PutBucketLogging between ABBA slices on the same bucket so machine load
// hits both sides alike. At the end every log object is read back and
// its records counted against the PUTs the "on" slices acknowledged.

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"
)

// LoggingConfig configures the logging workload.
type LoggingConfig struct {
	Endpoint             string
	AccessKey, SecretKey string // the buckets' owner
	Region               string
	Prefix               string
	Concurrency          int           // default 16
	Size                 int64         // default 4 KiB
	Duration             time.Duration // per side and mode (in 8 slices); default 10s
	// GatewayPID, when set, is the gateway's process: each side also
	// reports its CPU time per PUT (Linux /proc), a figure machine load
	// moves far less than the rates.
	GatewayPID int
	Out        io.Writer
}

// EnsureDefaults fills in zero fields.
func (c *LoggingConfig) EnsureDefaults() *LoggingConfig {
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.Prefix == "" {
		c.Prefix = fmt.Sprintf("lb%06x", rand.Uint32()&0xffffff)
	}
	if c.Concurrency == 0 {
		c.Concurrency = 16
	}
	if c.Size == 0 {
		c.Size = 4 << 10
	}
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	return c
}

// Validate reports every problem at once.
func (c *LoggingConfig) Validate() error {
	var errs []string
	if c.Endpoint == "" {
		errs = append(errs, "endpoint is required")
	}
	if c.AccessKey == "" || c.SecretKey == "" {
		errs = append(errs, "access and secret keys are required")
	}
	if c.Concurrency < 1 || c.Duration <= 0 || c.Size < 1 {
		errs = append(errs, "concurrency, size and duration must be positive")
	}
	if len(errs) > 0 {
		return fmt.Errorf("bench logging: %v", errs)
	}
	return nil
}

// LoggingSide is one mode's rates.
type LoggingSide struct {
	OffOps float64 `json:"logging_off_ops_s"`
	OnOps  float64 `json:"logging_on_ops_s"`
	Ratio  float64 `json:"on_over_off"`
	Errors int64   `json:"errors"`
	// OnPuts are the PUTs acknowledged while logging was on; Records the
	// records of this mode found in the log bucket afterwards.
	OnPuts  int64 `json:"on_puts"`
	Records int64 `json:"records"`
	// Gateway CPU microseconds per PUT (with GatewayPID).
	OffCPUus float64 `json:"logging_off_gateway_cpu_us_per_put,omitempty"`
	OnCPUus  float64 `json:"logging_on_gateway_cpu_us_per_put,omitempty"`
}

// LoggingResult is the workload's JSON output.
type LoggingResult struct {
	Config struct {
		Concurrency int    `json:"concurrency"`
		Size        int64  `json:"size"`
		Duration    string `json:"duration_per_side"`
	} `json:"config"`
	Standard LoggingSide `json:"standard"`
	Journal  LoggingSide `json:"journal"`
}

// RunLogging measures both modes.
func RunLogging(ctx context.Context, cfg LoggingConfig) (*LoggingResult, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	res := &LoggingResult{}
	res.Config.Concurrency, res.Config.Size, res.Config.Duration = cfg.Concurrency, cfg.Size, cfg.Duration.String()
	src, logs := cfg.Prefix+"-src", cfg.Prefix+"-logs"
	mk := func(bucket string, conc int) *s3Client {
		return newS3Client(S3Config{Endpoint: cfg.Endpoint, AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey,
			Region: cfg.Region, Bucket: bucket, Concurrency: conc, Size: cfg.Size})
	}
	c, lc := mk(src, cfg.Concurrency), mk(logs, 1)
	for _, b := range []*s3Client{c, lc} {
		if err := b.createBucket(ctx); err != nil {
			return nil, fmt.Errorf("create %s: %w", b.cfg.Bucket, err)
		}
	}
	policy := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"logging.s3.amazonaws.com"},`+
		`"Action":"s3:PutObject","Resource":"arn:aws:s3:::%s/*","Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:s3:::%s"}}}]}`, logs, src)
	if _, err := lc.doQuery(ctx, http.MethodPut, "", "policy", []byte(policy), nil, nil); err != nil {
		return nil, fmt.Errorf("log bucket policy: %w", err)
	}
	set := func(mode string) error {
		doc := `<BucketLoggingStatus xmlns="http://s3.amazonaws.com/doc/2006-03-01/"/>`
		if mode != "" {
			doc = `<BucketLoggingStatus xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LoggingEnabled>` +
				`<TargetBucket>` + logs + `</TargetBucket><TargetPrefix>` + mode + `/</TargetPrefix>` +
				`<LoggingType>` + mode + `</LoggingType></LoggingEnabled></BucketLoggingStatus>`
		}
		if _, err := c.doQuery(ctx, http.MethodPut, "", "logging", []byte(doc), nil, nil); err != nil {
			return fmt.Errorf("PutBucketLogging %q: %w", mode, err)
		}
		return nil
	}
	defer func() { _ = set("") }()
	for p, mode := range []string{"Standard", "Journal"} {
		side := []*LoggingSide{&res.Standard, &res.Journal}[p]
		var ops [2]int64
		var sec [2]float64
		var cpu [2]time.Duration
		var order []bool
		for range 4 {
			order = append(order, false, true, true, false)
		}
		for i, on := range order {
			m := ""
			if on {
				m = mode
			}
			if err := set(m); err != nil {
				return nil, err
			}
			cpu0 := procCPU(cfg.GatewayPID)
			n, errs, el := c.putLoop(ctx, 1<<30, cfg.Duration/8, int64(100*p+i))
			side.Errors += errs
			k := 0
			if on {
				k = 1
			}
			ops[k] += n
			sec[k] += el.Seconds()
			cpu[k] += procCPU(cfg.GatewayPID) - cpu0
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
		side.OffOps, side.OnOps = float64(ops[0])/sec[0], float64(ops[1])/sec[1]
		side.Ratio = side.OnOps / side.OffOps
		side.OnPuts = ops[1]
		fmt.Fprintf(cfg.Out, "PUT %s, logging %s: off %.0f ops/s, on %.0f ops/s: %.3f×\n", sizeString(cfg.Size), mode, side.OffOps, side.OnOps, side.Ratio)
		if cfg.GatewayPID != 0 && ops[0] > 0 && ops[1] > 0 {
			side.OffCPUus = float64(cpu[0].Microseconds()) / float64(ops[0])
			side.OnCPUus = float64(cpu[1].Microseconds()) / float64(ops[1])
			fmt.Fprintf(cfg.Out, "  gateway CPU per PUT: off %.0f µs, on %.0f µs\n", side.OffCPUus, side.OnCPUus)
		}
	}
	// Turning logging off delivered everything pending: count the records.
	if err := set(""); err != nil {
		return nil, err
	}
	for p, mode := range []string{"Standard", "Journal"} {
		n, err := lc.countRecords(ctx, mode+"/")
		if err != nil {
			return nil, err
		}
		side := []*LoggingSide{&res.Standard, &res.Journal}[p]
		side.Records = n
		fmt.Fprintf(cfg.Out, "logging %s: %d records for %d acknowledged PUTs\n", mode, n, side.OnPuts)
	}
	return res, nil
}

// countRecords reads every object under prefix and counts its lines.
func (c *s3Client) countRecords(ctx context.Context, prefix string) (int64, error) {
	var n int64
	token := ""
	for {
		q := "list-type=2&prefix=" + prefix
		if token != "" {
			q += "&continuation-token=" + token
		}
		var page bytes.Buffer
		if _, err := c.doQuery(ctx, http.MethodGet, "", q, nil, nil, &page); err != nil {
			return 0, err
		}
		var lp listPage
		if err := xml.Unmarshal(page.Bytes(), &lp); err != nil {
			return 0, err
		}
		for _, o := range lp.Contents {
			var body bytes.Buffer
			if _, err := c.doQuery(ctx, http.MethodGet, o.Key, "", nil, nil, &body); err != nil {
				return 0, err
			}
			n += int64(bytes.Count(body.Bytes(), []byte{'\n'}))
		}
		if !lp.IsTruncated {
			return n, nil
		}
		token = lp.NextContinuationToken
	}
}
