package bench

// The versioning workload (issue 12's goals), against any S3 endpoint:
//
//  1. PUT rate on a versioning-Enabled bucket vs an unversioned one: 4 KiB
//     overwrites of random keys from a fixed set, so the Enabled side keeps
//     adding noncurrent versions; the two sides alternate in ABBA slices so
//     machine load hits both alike.
//  2. ListObjectsV2 of a bucket where every key has Noncurrent noncurrent
//     versions and half of the keys end in a delete marker, vs an
//     unversioned bucket holding the same live keys (ABBA again).
//  3. ListObjectVersions over the whole versioned bucket of step 2.

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// VersioningConfig configures the versioning workload.
type VersioningConfig struct {
	Endpoint             string
	AccessKey, SecretKey string
	Region               string // default us-east-1
	// Prefix names the run's buckets (<prefix>-put-plain, -put-vers,
	// -list-plain, -list-vers). Default a random one.
	Prefix      string
	Concurrency int           // closed-loop workers; default 16
	Size        int64         // PUT object size; default 4 KiB
	PutDuration time.Duration // per side; default 10s
	PutKeys     int           // keys the PUT phase overwrites; default 1000
	// LiveKeys is the number of live keys in both listed buckets; the
	// versioned one holds 2×LiveKeys keys of Noncurrent+1 versions each,
	// half of them under a delete marker. Default 5000.
	LiveKeys   int
	Noncurrent int           // default 10
	ListPage   int           // max-keys per page; default 1000
	ListTime   time.Duration // per side; default 10s
	Out        io.Writer
}

// EnsureDefaults fills in zero fields.
func (c *VersioningConfig) EnsureDefaults() *VersioningConfig {
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.Prefix == "" {
		c.Prefix = fmt.Sprintf("vb%06x", rand.Uint32()&0xffffff)
	}
	if c.Concurrency == 0 {
		c.Concurrency = 16
	}
	if c.Size == 0 {
		c.Size = 4 << 10
	}
	if c.PutDuration == 0 {
		c.PutDuration = 10 * time.Second
	}
	if c.PutKeys == 0 {
		c.PutKeys = 1000
	}
	if c.LiveKeys == 0 {
		c.LiveKeys = 5000
	}
	if c.Noncurrent == 0 {
		c.Noncurrent = 10
	}
	if c.ListPage == 0 {
		c.ListPage = 1000
	}
	if c.ListTime == 0 {
		c.ListTime = 10 * time.Second
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	return c
}

// Validate reports every problem at once.
func (c *VersioningConfig) Validate() error {
	var errs []string
	if c.Endpoint == "" {
		errs = append(errs, "endpoint is required")
	}
	if c.AccessKey == "" || c.SecretKey == "" {
		errs = append(errs, "access and secret keys are required")
	}
	if c.Concurrency < 1 || c.PutKeys < 1 || c.LiveKeys < 1 || c.Noncurrent < 0 || c.ListPage < 1 || c.ListPage > 1000 {
		errs = append(errs, "concurrency, put-keys, live-keys and list-page must be positive (list-page ≤ 1000)")
	}
	if len(errs) > 0 {
		return fmt.Errorf("bench versioning: %v", errs)
	}
	return nil
}

// VersioningResult is the workload's JSON output.
type VersioningResult struct {
	Config struct {
		Concurrency int    `json:"concurrency"`
		Size        int64  `json:"size"`
		PutKeys     int    `json:"put_keys"`
		LiveKeys    int    `json:"live_keys"`
		Noncurrent  int    `json:"noncurrent_per_key"`
		ListPage    int    `json:"list_page"`
		PutDuration string `json:"put_duration_per_side"`
		ListTime    string `json:"list_time_per_side"`
	} `json:"config"`
	PutPlainOps   float64 `json:"put_unversioned_ops_s"`
	PutVersOps    float64 `json:"put_enabled_ops_s"`
	PutRatio      float64 `json:"put_enabled_over_unversioned"`
	PutErrors     int64   `json:"put_errors"`
	FillSeconds   float64 `json:"fill_seconds"`
	StoredEntries int     `json:"versioned_bucket_entries"` // versions + markers
	ListPlainKeys float64 `json:"list_v2_unversioned_keys_s"`
	ListVersKeys  float64 `json:"list_v2_versioned_keys_s"`
	ListRatio     float64 `json:"list_v2_versioned_over_unversioned"`
	LOVEntries    float64 `json:"list_object_versions_entries_s"`
}

// RunVersioning runs the three phases and reports their rates.
func RunVersioning(ctx context.Context, cfg VersioningConfig) (*VersioningResult, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	res := &VersioningResult{}
	rc := &res.Config
	rc.Concurrency, rc.Size, rc.PutKeys, rc.LiveKeys, rc.Noncurrent, rc.ListPage = cfg.Concurrency, cfg.Size, cfg.PutKeys, cfg.LiveKeys, cfg.Noncurrent, cfg.ListPage
	rc.PutDuration, rc.ListTime = cfg.PutDuration.String(), cfg.ListTime.String()
	client := func(bucket string, size int64) *s3Client {
		return newS3Client(S3Config{Endpoint: cfg.Endpoint, AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey,
			Region: cfg.Region, Bucket: bucket, Concurrency: cfg.Concurrency, Size: size})
	}
	mk := func(c *s3Client, versioned bool) error {
		if err := c.createBucket(ctx); err != nil {
			return fmt.Errorf("create %s: %w", c.cfg.Bucket, err)
		}
		if versioned {
			body := []byte(`<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>`)
			if _, err := c.doQuery(ctx, http.MethodPut, "", "versioning=", body, nil, nil); err != nil {
				return fmt.Errorf("enable versioning on %s: %w", c.cfg.Bucket, err)
			}
		}
		return nil
	}

	// 1. PUT: ABBA slices of PutDuration/2.
	plain, vers := client(cfg.Prefix+"-put-plain", cfg.Size), client(cfg.Prefix+"-put-vers", cfg.Size)
	if err := mk(plain, false); err != nil {
		return nil, err
	}
	if err := mk(vers, true); err != nil {
		return nil, err
	}
	var opsP, opsV int64
	var secP, secV float64
	for i, side := range []bool{false, true, true, false} {
		c := plain
		if side {
			c = vers
		}
		n, errs, el := c.putLoop(ctx, cfg.PutKeys, cfg.PutDuration/2, int64(i))
		res.PutErrors += errs
		if side {
			opsV, secV = opsV+n, secV+el.Seconds()
		} else {
			opsP, secP = opsP+n, secP+el.Seconds()
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	res.PutPlainOps, res.PutVersOps = float64(opsP)/secP, float64(opsV)/secV
	res.PutRatio = res.PutVersOps / res.PutPlainOps
	fmt.Fprintf(cfg.Out, "PUT %s: unversioned %.0f ops/s, Enabled %.0f ops/s: %.2f×\n", sizeString(cfg.Size), res.PutPlainOps, res.PutVersOps, res.PutRatio)

	// 2. Fill the listed buckets.
	lp, lv := client(cfg.Prefix+"-list-plain", 16), client(cfg.Prefix+"-list-vers", 16)
	if err := mk(lp, false); err != nil {
		return nil, err
	}
	if err := mk(lv, true); err != nil {
		return nil, err
	}
	t0 := time.Now()
	key := func(i int) string { return fmt.Sprintf("obj/%08d", i) }
	// Versioned: keys 0..2L-1, each written Noncurrent+1 times; odd keys
	// then get a delete marker. Plain: the even keys (the live ones).
	type job struct {
		c      *s3Client
		method string
		key    string
	}
	var jobs []job
	for v := 0; v <= cfg.Noncurrent; v++ {
		for i := 0; i < 2*cfg.LiveKeys; i++ {
			jobs = append(jobs, job{lv, http.MethodPut, key(i)})
		}
	}
	for i := 0; i < 2*cfg.LiveKeys; i++ {
		if i%2 == 1 {
			jobs = append(jobs, job{lv, http.MethodDelete, key(i)})
		} else {
			jobs = append(jobs, job{lp, http.MethodPut, key(i)})
		}
	}
	// Versions of a key must land in order (the markers last): run the
	// rounds one after another, each in parallel.
	round := 2 * cfg.LiveKeys
	for start := 0; start < len(jobs); start += round {
		batch := jobs[start:min(start+round, len(jobs))]
		var next atomic.Int64
		var firstErr atomic.Pointer[error]
		var wg sync.WaitGroup
		for w := 0; w < cfg.Concurrency; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= len(batch) || ctx.Err() != nil {
						return
					}
					j := batch[i]
					var body []byte
					if j.method == http.MethodPut {
						body = j.c.body
					}
					if _, err := j.c.do(ctx, j.method, j.key, body, nil); err != nil {
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
	}
	res.FillSeconds = time.Since(t0).Seconds()
	res.StoredEntries = 2*cfg.LiveKeys*(cfg.Noncurrent+1) + cfg.LiveKeys
	fmt.Fprintf(cfg.Out, "fill: %d versioned entries, %d + %d live keys in %.1fs\n", res.StoredEntries, cfg.LiveKeys, cfg.LiveKeys, res.FillSeconds)

	// 3. ListObjectsV2, ABBA.
	var keysP, keysV int
	secP, secV = 0, 0
	for _, side := range []bool{false, true, true, false} {
		c := lp
		if side {
			c = lv
		}
		n, el, err := c.listLoop(ctx, cfg.ListPage, cfg.ListTime/2, cfg.LiveKeys)
		if err != nil {
			return nil, err
		}
		if side {
			keysV, secV = keysV+n, secV+el.Seconds()
		} else {
			keysP, secP = keysP+n, secP+el.Seconds()
		}
	}
	res.ListPlainKeys, res.ListVersKeys = float64(keysP)/secP, float64(keysV)/secV
	res.ListRatio = res.ListVersKeys / res.ListPlainKeys
	fmt.Fprintf(cfg.Out, "ListObjectsV2 (%d live keys): unversioned %.0f keys/s, versioned (%d noncurrent each, half under markers) %.0f keys/s: %.2f×\n",
		cfg.LiveKeys, res.ListPlainKeys, cfg.Noncurrent, res.ListVersKeys, res.ListRatio)

	// 4. ListObjectVersions over the versioned bucket.
	n, el, err := lv.listVersionsLoop(ctx, cfg.ListPage, cfg.ListTime, res.StoredEntries)
	if err != nil {
		return nil, err
	}
	res.LOVEntries = float64(n) / el.Seconds()
	fmt.Fprintf(cfg.Out, "ListObjectVersions (%d entries): %.0f entries/s\n", res.StoredEntries, res.LOVEntries)
	return res, nil
}

// putLoop overwrites random keys of a fixed set for d; it returns the
// successful PUTs, the errors and the time taken.
func (c *s3Client) putLoop(ctx context.Context, keys int, d time.Duration, seed int64) (int64, int64, time.Duration) {
	lctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var ok, bad atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < c.cfg.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), uint64(seed)))
			for lctx.Err() == nil {
				k := "put/" + strconv.Itoa(r.IntN(keys))
				_, err := c.do(lctx, http.MethodPut, k, c.body, nil)
				switch {
				case lctx.Err() != nil:
				case err != nil:
					bad.Add(1)
				default:
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return ok.Load(), bad.Load(), min(time.Since(start), d)
}

type listPage struct {
	IsTruncated           bool
	NextContinuationToken string
	Contents              []struct{ Key string }
	NextKeyMarker         string
	NextVersionIDMarker   string `xml:"NextVersionIdMarker"`
	Version               []struct{ Key string }
	DeleteMarker          []struct{ Key string }
}

// listLoop runs full ListObjectsV2 traversals for at least d (whole
// traversals only) and returns the keys listed and the time taken. Each
// traversal must list want keys.
func (c *s3Client) listLoop(ctx context.Context, page int, d time.Duration, want int) (int, time.Duration, error) {
	start := time.Now()
	total := 0
	var buf bytes.Buffer
	for time.Since(start) < d || total == 0 {
		token, n := "", 0
		for {
			q := url.Values{"list-type": {"2"}, "max-keys": {strconv.Itoa(page)}}
			if token != "" {
				q.Set("continuation-token", token)
			}
			buf.Reset()
			if _, err := c.doQuery(ctx, http.MethodGet, "", q.Encode(), nil, nil, &buf); err != nil {
				return 0, 0, err
			}
			var p listPage
			if err := xml.Unmarshal(buf.Bytes(), &p); err != nil {
				return 0, 0, err
			}
			n += len(p.Contents)
			if !p.IsTruncated {
				break
			}
			token = p.NextContinuationToken
		}
		if n != want {
			return 0, 0, fmt.Errorf("list %s: %d keys, want %d", c.cfg.Bucket, n, want)
		}
		total += n
	}
	return total, time.Since(start), nil
}

// listVersionsLoop is listLoop for ListObjectVersions (entries = versions
// and delete markers).
func (c *s3Client) listVersionsLoop(ctx context.Context, page int, d time.Duration, want int) (int, time.Duration, error) {
	start := time.Now()
	total := 0
	var buf bytes.Buffer
	for time.Since(start) < d || total == 0 {
		km, vm, n := "", "", 0
		for {
			q := url.Values{"versions": {""}, "max-keys": {strconv.Itoa(page)}}
			if km != "" {
				q.Set("key-marker", km)
				q.Set("version-id-marker", vm)
			}
			buf.Reset()
			if _, err := c.doQuery(ctx, http.MethodGet, "", q.Encode(), nil, nil, &buf); err != nil {
				return 0, 0, err
			}
			var p listPage
			if err := xml.Unmarshal(buf.Bytes(), &p); err != nil {
				return 0, 0, err
			}
			n += len(p.Version) + len(p.DeleteMarker)
			if !p.IsTruncated {
				break
			}
			km, vm = p.NextKeyMarker, p.NextVersionIDMarker
		}
		if n != want {
			return 0, 0, fmt.Errorf("list versions %s: %d entries, want %d", c.cfg.Bucket, n, want)
		}
		total += n
	}
	return total, time.Since(start), nil
}
