package bench

// The quota workload (issue 23): the 4 KiB PUT rate of one bucket with
// the owner's user quota and the bucket's quota enabled (limits far above
// what the run writes, so every PUT is checked and admitted) vs both
// disabled, toggled through the admin API between ABBA slices on the same
// bucket so machine load hits both sides alike. Two key patterns: new keys
// (the common case: admissions counted locally, stats re-read once per
// quota-stats-ttl) and overwrites of a small key set (each overwrite frees
// data, so the next check re-reads the index stats).

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"
)

// QuotaConfig configures the quota workload.
type QuotaConfig struct {
	Endpoint             string
	AccessKey, SecretKey string // an admin's: the bucket's owner, and it sets the quotas
	UID                  string // the admin's user id; default "admin"
	Region               string
	Prefix               string
	Concurrency          int           // default 16
	Size                 int64         // default 4 KiB
	Duration             time.Duration // per side and key pattern (in 8 slices); default 10s
	OverwriteKeys        int           // keys of the overwrite pattern; default 1000
	Out                  io.Writer
}

// EnsureDefaults fills in zero fields.
func (c *QuotaConfig) EnsureDefaults() *QuotaConfig {
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.UID == "" {
		c.UID = "admin"
	}
	if c.Prefix == "" {
		c.Prefix = fmt.Sprintf("qb%06x", rand.Uint32()&0xffffff)
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
	if c.OverwriteKeys == 0 {
		c.OverwriteKeys = 1000
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	return c
}

// Validate reports every problem at once.
func (c *QuotaConfig) Validate() error {
	var errs []string
	if c.Endpoint == "" {
		errs = append(errs, "endpoint is required")
	}
	if c.AccessKey == "" || c.SecretKey == "" {
		errs = append(errs, "admin access and secret keys are required")
	}
	if c.Concurrency < 1 || c.OverwriteKeys < 1 || c.Duration <= 0 {
		errs = append(errs, "concurrency, overwrite-keys and duration must be positive")
	}
	if len(errs) > 0 {
		return fmt.Errorf("bench quota: %v", errs)
	}
	return nil
}

// QuotaSide is one key pattern's rates.
type QuotaSide struct {
	OffOps float64 `json:"quota_off_ops_s"`
	OnOps  float64 `json:"quota_on_ops_s"`
	Ratio  float64 `json:"on_over_off"`
	Errors int64   `json:"errors"`
}

// QuotaResult is the workload's JSON output.
type QuotaResult struct {
	Config struct {
		Concurrency int    `json:"concurrency"`
		Size        int64  `json:"size"`
		Duration    string `json:"duration_per_side"`
		Overwrite   int    `json:"overwrite_keys"`
	} `json:"config"`
	NewKeys   QuotaSide `json:"new_keys"`
	Overwrite QuotaSide `json:"overwrite"`
}

// RunQuota measures both key patterns.
func RunQuota(ctx context.Context, cfg QuotaConfig) (*QuotaResult, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	res := &QuotaResult{}
	res.Config.Concurrency, res.Config.Size, res.Config.Duration, res.Config.Overwrite = cfg.Concurrency, cfg.Size, cfg.Duration.String(), cfg.OverwriteKeys
	bucket := cfg.Prefix + "-put"
	c := newS3Client(S3Config{Endpoint: cfg.Endpoint, AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey,
		Region: cfg.Region, Bucket: bucket, Concurrency: cfg.Concurrency, Size: cfg.Size})
	admin := newS3Client(S3Config{Endpoint: cfg.Endpoint, AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey,
		Region: cfg.Region, Bucket: "admin", Concurrency: 1, Size: 16})
	if err := c.createBucket(ctx); err != nil {
		return nil, fmt.Errorf("create %s: %w", bucket, err)
	}
	// Limits no run reaches: every PUT is checked and admitted.
	set := func(on bool) error {
		en := fmt.Sprint(on)
		if _, err := admin.doQuery(ctx, http.MethodPut, "user", "quota=&uid="+cfg.UID+"&quota-type=user&max-objects=1000000000&max-size=1000000000000000&enabled="+en, nil, nil, nil); err != nil {
			return fmt.Errorf("user quota: %w", err)
		}
		if _, err := admin.doQuery(ctx, http.MethodPut, "bucket", "quota=&bucket="+bucket+"&max-objects=1000000000&max-size=1000000000000000&enabled="+en, nil, nil, nil); err != nil {
			return fmt.Errorf("bucket quota: %w", err)
		}
		return nil
	}
	defer func() { _ = set(false) }()
	for p, side := range []*QuotaSide{&res.NewKeys, &res.Overwrite} {
		keys := cfg.OverwriteKeys
		if p == 0 {
			keys = 1 << 30 // effectively always a new key
		}
		var ops [2]int64
		var sec [2]float64
		// ABBA four times: short slices, so load swings of the shared
		// machine hit both sides alike.
		var order []bool
		for range 4 {
			order = append(order, false, true, true, false)
		}
		for i, on := range order {
			if err := set(on); err != nil {
				return nil, err
			}
			n, errs, el := c.putLoop(ctx, keys, cfg.Duration/8, int64(100*p+i))
			side.Errors += errs
			k := 0
			if on {
				k = 1
			}
			ops[k] += n
			sec[k] += el.Seconds()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
		side.OffOps, side.OnOps = float64(ops[0])/sec[0], float64(ops[1])/sec[1]
		side.Ratio = side.OnOps / side.OffOps
		name := []string{"new keys", "overwrites"}[p]
		fmt.Fprintf(cfg.Out, "PUT %s, %s: quotas off %.0f ops/s, on %.0f ops/s: %.3f×\n", sizeString(cfg.Size), name, side.OffOps, side.OnOps, side.Ratio)
	}
	return res, nil
}
