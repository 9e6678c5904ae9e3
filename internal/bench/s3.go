package bench

// The s3 workload: a small closed-loop S3 load generator (PUT, GET, DELETE
// or the RGW mix) against any endpoint, so gateway benchmarks do not hinge
// on one external tool. Requests are SigV4-signed with aws-sdk-go-v2's
// signer over one tuned http.Client; by default the payload is
// UNSIGNED-PAYLOAD (as SDKs do over TLS) so the client spends its CPU on
// requests rather than hashing. SignPayload sends the body's SHA-256 so the
// server verifies it on every request; the client hashes each distinct body
// once, keeping client cost out of the comparison.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// S3 operations.
const (
	S3Put    = "put"
	S3Get    = "get"
	S3Delete = "delete"
	S3Stat   = "stat"
	S3Mixed  = "mixed"
	// S3Overwrite PUTs over random prefilled keys: replaced data for the
	// collector, used to age a store.
	S3Overwrite = "overwrite"
)

// S3Mix is the mixed workload's share of each operation in percent: the
// published RGW mix (warp mixed --get-distrib 45 --put-distrib 35
// --stat-distrib 15 --delete-distrib 5).
var S3Mix = []struct {
	Op      string
	Percent int
}{{S3Get, 45}, {S3Put, 35}, {S3Stat, 15}, {S3Delete, 5}}

// S3Config configures the s3 workload.
type S3Config struct {
	// Endpoint is the server's base URL, e.g. http://127.0.0.1:7480.
	Endpoint string
	// AccessKey and SecretKey sign requests.
	AccessKey, SecretKey string
	// SessionToken, when set, makes them temporary credentials (sent as
	// x-amz-security-token), e.g. from STS AssumeRole.
	SessionToken string
	// Region is the SigV4 signing region. Default us-east-1.
	Region string
	// Bucket is created if missing. Default cairn-bench.
	Bucket string
	// Prefix starts every key, so runs do not collide. Default a
	// per-run random prefix.
	Prefix string
	// Op is put, get, delete, mixed or overwrite.
	Op string
	// Concurrency is the number of closed-loop workers. Default 16.
	Concurrency int
	// Size is the object size in bytes. Default 4 KiB.
	Size int64
	// Duration bounds the measured phase. Default 20s.
	Duration time.Duration
	// Objects is how many objects are written before get and mixed (read
	// from) and before delete (deleted; the phase ends early when they run
	// out). Default 1000; for delete, size it to the expected rate times
	// Duration.
	Objects int
	// PrefillTimeout bounds the prefill. Default 5m.
	PrefillTimeout time.Duration
	// SignPayload sends the body's SHA-256 instead of UNSIGNED-PAYLOAD.
	SignPayload bool
	// Checksum adds an x-amz-checksum-<alg> header to PUTs: "" (none),
	// crc32, crc32c or sha256.
	Checksum string
	// Out receives progress lines; nil discards them.
	Out io.Writer
}

// EnsureDefaults fills in zero fields.
func (c *S3Config) EnsureDefaults() *S3Config {
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.Bucket == "" {
		c.Bucket = "cairn-bench"
	}
	if c.Prefix == "" {
		c.Prefix = fmt.Sprintf("b%08x", rand.Uint32())
	}
	if c.Concurrency == 0 {
		c.Concurrency = 16
	}
	if c.Size == 0 {
		c.Size = 4 << 10
	}
	if c.Duration == 0 {
		c.Duration = 20 * time.Second
	}
	if c.Objects == 0 {
		c.Objects = 1000
	}
	if c.PrefillTimeout == 0 {
		c.PrefillTimeout = 5 * time.Minute
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	return c
}

// Validate reports every problem at once.
func (c *S3Config) Validate() error {
	var errs []error
	if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("endpoint %q: want http(s)://host:port", c.Endpoint))
	}
	if c.AccessKey == "" || c.SecretKey == "" {
		errs = append(errs, errors.New("access key and secret key are required"))
	}
	switch c.Op {
	case S3Put, S3Get, S3Delete, S3Mixed, S3Overwrite:
	default:
		errs = append(errs, fmt.Errorf("op %q: want put, get, delete, mixed or overwrite", c.Op))
	}
	switch strings.ToLower(c.Checksum) {
	case "", "crc32", "crc32c", "sha256":
	default:
		errs = append(errs, fmt.Errorf("checksum %q: want crc32, crc32c or sha256", c.Checksum))
	}
	if c.Concurrency < 1 || c.Concurrency > 4096 {
		errs = append(errs, fmt.Errorf("concurrency %d outside 1..4096", c.Concurrency))
	}
	if c.Size < 0 || c.Size > 5<<30 {
		errs = append(errs, fmt.Errorf("size %d outside 0..5GiB", c.Size))
	}
	if c.Duration <= 0 || c.PrefillTimeout <= 0 {
		errs = append(errs, errors.New("durations must be positive"))
	}
	if c.Objects < 1 {
		errs = append(errs, errors.New("objects must be positive"))
	}
	return errors.Join(errs...)
}

// S3Latency is one operation's (or the phase's) rate and latency
// percentiles in milliseconds.
type S3Latency struct {
	Ops       int64   `json:"ops"`
	Errors    int64   `json:"errors"`
	OpsPerSec float64 `json:"ops_per_sec"`
	MiBPerSec float64 `json:"mib_per_sec"`
	MeanMs    float64 `json:"mean_ms"`
	P50Ms     float64 `json:"p50_ms"`
	P90Ms     float64 `json:"p90_ms"`
	P99Ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
}

// S3Result is the workload's outcome. The top-level latency fields cover
// every operation of the phase; ByOp splits them for mixed.
type S3Result struct {
	Endpoint    string  `json:"endpoint"`
	Bucket      string  `json:"bucket"`
	Op          string  `json:"op"`
	Concurrency int     `json:"concurrency"`
	Size        int64   `json:"size"`
	Objects     int     `json:"objects"`
	SignPayload bool    `json:"sign_payload"`
	Checksum    string  `json:"checksum,omitempty"`
	Seconds     float64 `json:"seconds"`
	S3Latency
	ByOp           map[string]S3Latency `json:"by_op,omitempty"`
	PrefillSeconds float64              `json:"prefill_seconds,omitempty"`
	FirstError     string               `json:"first_error,omitempty"`
}

func (r *S3Result) String() string {
	return fmt.Sprintf("%s %s x%d: %.0f ops/s  %.2f MiB/s  p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  max %.2f ms  (%d ops, %d errors, %.1fs)",
		r.Op, sizeString(r.Size), r.Concurrency, r.OpsPerSec, r.MiBPerSec, r.P50Ms, r.P90Ms, r.P99Ms, r.MaxMs, r.Ops, r.Errors, r.Seconds)
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// s3Client signs and sends requests.
type s3Client struct {
	cfg    S3Config
	hc     *http.Client
	signer *v4.Signer
	creds  aws.Credentials
	base   string
	body   []byte
	// Per-body header values, computed once (see the package comment).
	payloadHash  string
	checksumName string
	checksumVal  string
}

func newS3Client(cfg S3Config) *s3Client {
	tr := &http.Transport{
		Proxy:               nil, // loopback benchmarks: never a proxy
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        cfg.Concurrency * 2,
		MaxIdleConnsPerHost: cfg.Concurrency, // one kept-alive connection per worker
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		// Larger buffers cut syscalls for 4 MiB bodies.
		WriteBufferSize:       64 << 10,
		ReadBufferSize:        64 << 10,
		ResponseHeaderTimeout: 2 * time.Minute,
	}
	c := &s3Client{
		cfg:    cfg,
		hc:     &http.Client{Transport: tr},
		signer: v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }),
		creds:  aws.Credentials{AccessKeyID: cfg.AccessKey, SecretAccessKey: cfg.SecretKey, SessionToken: cfg.SessionToken},
		base:   strings.TrimSuffix(cfg.Endpoint, "/"),
		body:   make([]byte, cfg.Size),
	}
	// Random bytes, so no layer can compress them away.
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for i := 0; i+8 <= len(c.body); i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			c.body[i+j] = byte(v >> (8 * j))
		}
	}
	c.payloadHash = "UNSIGNED-PAYLOAD"
	if cfg.SignPayload {
		s := sha256.Sum256(c.body)
		c.payloadHash = hex.EncodeToString(s[:])
	}
	var h hash.Hash
	switch strings.ToLower(cfg.Checksum) {
	case "crc32":
		h, c.checksumName = crc32.NewIEEE(), "x-amz-checksum-crc32"
	case "crc32c":
		h, c.checksumName = crc32.New(crc32.MakeTable(crc32.Castagnoli)), "x-amz-checksum-crc32c"
	case "sha256":
		h, c.checksumName = sha256.New(), "x-amz-checksum-sha256"
	}
	if h != nil {
		h.Write(c.body)
		c.checksumVal = base64.StdEncoding.EncodeToString(h.Sum(nil))
	}
	return c
}

const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// do sends one signed request and drains the response. It returns the
// bytes moved (request body for PUT, response body for GET).
func (c *s3Client) do(ctx context.Context, method, key string, body []byte, buf []byte) (int64, error) {
	return c.doQuery(ctx, method, key, "", body, buf, nil)
}

// doQuery is do with a query string (already encoded) and, when keep is
// set, the response body copied into it instead of discarded.
func (c *s3Client) doQuery(ctx context.Context, method, key, query string, body []byte, buf []byte, keep *bytes.Buffer) (int64, error) {
	u := c.base + "/" + c.cfg.Bucket
	if key != "" {
		u += "/" + key
	}
	if query != "" {
		u += "?" + query
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, err
	}
	hash := emptySHA256 // exact for body-less requests in either mode
	if body != nil {
		req.ContentLength = int64(len(body))
		hash = c.payloadHash
		if c.checksumName != "" {
			req.Header.Set(c.checksumName, c.checksumVal)
		}
	}
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if err := c.signer.SignHTTP(ctx, c.creds, req, hash, "s3", c.cfg.Region, time.Now()); err != nil {
		return 0, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return 0, &s3Error{Status: resp.StatusCode, Code: s3ErrorCode(b)}
	}
	var sink io.Writer = io.Discard
	if keep != nil {
		sink = keep
	}
	n, err := io.CopyBuffer(sink, resp.Body, buf)
	if body != nil {
		n = int64(len(body))
	}
	return n, err
}

type s3Error struct {
	Status int
	Code   string
}

func (e *s3Error) Error() string { return fmt.Sprintf("HTTP %d %s", e.Status, e.Code) }

func s3ErrorCode(b []byte) string {
	var v struct{ Code string }
	if xml.Unmarshal(b, &v) == nil {
		return v.Code
	}
	return ""
}

func (c *s3Client) createBucket(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodPut, "", nil, nil)
	var se *s3Error
	if errors.As(err, &se) && se.Code == "BucketAlreadyOwnedByYou" {
		return nil
	}
	return err
}

// keyPool is the set of objects reads and deletes pick from. Deletes take
// the oldest key; reads skip the oldest margin keys so a read rarely races
// a delete of the same key.
type keyPool struct {
	mu     sync.Mutex
	keys   []string
	head   int
	margin int
	next   atomic.Int64
	prefix string
}

func (p *keyPool) newKey() string {
	return fmt.Sprintf("%s/%012d", p.prefix, p.next.Add(1))
}

func (p *keyPool) add(k string) {
	p.mu.Lock()
	p.keys = append(p.keys, k)
	p.mu.Unlock()
}

func (p *keyPool) pick(r *rand.Rand) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lo := p.head + p.margin
	if lo >= len(p.keys) {
		lo = p.head
	}
	if lo >= len(p.keys) {
		return "", false
	}
	return p.keys[lo+r.IntN(len(p.keys)-lo)], true
}

func (p *keyPool) takeOldest() (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.head >= len(p.keys) {
		return "", false
	}
	k := p.keys[p.head]
	p.keys[p.head] = ""
	p.head++
	return k, true
}

// errPoolEmpty ends a delete phase that ran out of objects.
var errPoolEmpty = errors.New("no objects left")

type s3Sample struct {
	op    uint8
	lat   time.Duration
	bytes int64
}

var s3OpNames = []string{S3Put, S3Get, S3Delete, S3Stat, S3Overwrite}

func opIndex(op string) uint8 {
	for i, n := range s3OpNames {
		if n == op {
			return uint8(i)
		}
	}
	panic("bench: unknown s3 op " + op)
}

// RunS3 prefills if the operation needs it, then runs Op from Concurrency
// workers for Duration and summarises the phase.
func RunS3(ctx context.Context, cfg S3Config) (*S3Result, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := newS3Client(cfg)
	defer c.hc.CloseIdleConnections()
	res := &S3Result{
		Endpoint: cfg.Endpoint, Bucket: cfg.Bucket, Op: cfg.Op, Concurrency: cfg.Concurrency,
		Size: cfg.Size, Objects: cfg.Objects, SignPayload: cfg.SignPayload, Checksum: strings.ToLower(cfg.Checksum),
	}
	bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := c.createBucket(bctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("create bucket %s: %w", cfg.Bucket, err)
	}
	pool := &keyPool{prefix: cfg.Prefix, margin: 4 * cfg.Concurrency}
	if cfg.Op != S3Put {
		t0 := time.Now()
		if err := c.prefill(ctx, pool, cfg.Objects); err != nil {
			return nil, fmt.Errorf("prefill: %w", err)
		}
		res.PrefillSeconds = time.Since(t0).Seconds()
		fmt.Fprintf(cfg.Out, "prefill: %d objects of %s in %.1fs\n", cfg.Objects, sizeString(cfg.Size), res.PrefillSeconds)
	}
	samples, firstErr, elapsed := c.load(ctx, pool)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res.Seconds = elapsed.Seconds()
	res.S3Latency = summariseS3(samples, elapsed, -1)
	if cfg.Op == S3Mixed {
		res.ByOp = map[string]S3Latency{}
		for i, name := range s3OpNames[:4] {
			res.ByOp[name] = summariseS3(samples, elapsed, i)
		}
	}
	if firstErr != nil {
		res.FirstError = firstErr.Error()
	}
	fmt.Fprintln(cfg.Out, res.String())
	if res.Ops == 0 && firstErr != nil {
		return res, fmt.Errorf("every request failed: %w", firstErr)
	}
	return res, nil
}

// prefill writes n objects with Concurrency workers and adds them to pool.
func (c *s3Client) prefill(ctx context.Context, pool *keyPool, n int) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.PrefillTimeout)
	defer cancel()
	var left atomic.Int64
	left.Store(int64(n))
	errc := make(chan error, c.cfg.Concurrency)
	var wg sync.WaitGroup
	for w := 0; w < min(c.cfg.Concurrency, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			for left.Add(-1) >= 0 {
				k := pool.newKey()
				if _, err := c.do(ctx, http.MethodPut, k, c.body, buf); err != nil {
					errc <- fmt.Errorf("PUT %s: %w", k, err)
					cancel()
					return
				}
				pool.add(k)
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

// load runs the measured phase. Requests cut off by the deadline are not
// counted; other failures are counted as errors and the worker goes on.
func (c *s3Client) load(ctx context.Context, pool *keyPool) ([][]s3Sample, error, time.Duration) {
	lctx, cancel := context.WithTimeout(ctx, c.cfg.Duration)
	defer cancel()
	samples := make([][]s3Sample, c.cfg.Concurrency)
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	var mu sync.Mutex
	end := start
	for w := 0; w < c.cfg.Concurrency; w++ {
		wg.Add(1)
		go pprof.Do(lctx, pprof.Labels("role", "client"), func(context.Context) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			buf := make([]byte, 64<<10)
			ss := make([]s3Sample, 0, 4096)
			for lctx.Err() == nil {
				op := c.cfg.Op
				if op == S3Mixed {
					op = pickMixed(r)
				}
				t0 := time.Now()
				n, err := c.one(lctx, op, pool, r, buf)
				lat := time.Since(t0)
				if errors.Is(err, errPoolEmpty) {
					cancel()
					break
				}
				if lctx.Err() != nil {
					break // cut off by the deadline: not a sample
				}
				s := s3Sample{op: opIndex(op), lat: lat, bytes: n}
				if err != nil {
					s.lat = -1 // marks an error
					firstErr.CompareAndSwap(nil, &err)
				}
				ss = append(ss, s)
			}
			samples[w] = ss
			mu.Lock()
			if t := time.Now(); t.After(end) {
				end = t
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	var fe error
	if p := firstErr.Load(); p != nil {
		fe = *p
	}
	elapsed := end.Sub(start)
	if elapsed > c.cfg.Duration {
		elapsed = c.cfg.Duration // the last cut-off requests are not counted
	}
	return samples, fe, elapsed
}

func pickMixed(r *rand.Rand) string {
	n := r.IntN(100)
	for _, m := range S3Mix {
		if n < m.Percent {
			return m.Op
		}
		n -= m.Percent
	}
	return S3Mix[0].Op
}

// one runs a single operation.
func (c *s3Client) one(ctx context.Context, op string, pool *keyPool, r *rand.Rand, buf []byte) (int64, error) {
	switch op {
	case S3Put:
		k := pool.newKey()
		n, err := c.do(ctx, http.MethodPut, k, c.body, buf)
		if err == nil {
			pool.add(k)
		}
		return n, err
	case S3Overwrite:
		k, ok := pool.pick(r)
		if !ok {
			return 0, errPoolEmpty
		}
		return c.do(ctx, http.MethodPut, k, c.body, buf)
	case S3Get, S3Stat:
		k, ok := pool.pick(r)
		if !ok {
			return 0, errPoolEmpty
		}
		m := http.MethodGet
		if op == S3Stat {
			m = http.MethodHead
		}
		return c.do(ctx, m, k, nil, buf)
	case S3Delete:
		k, ok := pool.takeOldest()
		if !ok {
			return 0, errPoolEmpty
		}
		_, err := c.do(ctx, http.MethodDelete, k, nil, buf)
		return 0, err
	}
	return 0, fmt.Errorf("unknown op %q", op)
}

// summariseS3 summarises samples of op (-1 = all).
func summariseS3(samples [][]s3Sample, elapsed time.Duration, op int) S3Latency {
	var lats []time.Duration
	var l S3Latency
	var bytes int64
	var sum time.Duration
	for _, ss := range samples {
		for _, s := range ss {
			if op >= 0 && int(s.op) != op {
				continue
			}
			if s.lat < 0 {
				l.Errors++
				continue
			}
			lats = append(lats, s.lat)
			bytes += s.bytes
			sum += s.lat
		}
	}
	l.Ops = int64(len(lats))
	if len(lats) == 0 || elapsed <= 0 {
		return l
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	pct := func(p float64) time.Duration { return lats[int(p*float64(len(lats)-1))] }
	l.OpsPerSec = float64(len(lats)) / elapsed.Seconds()
	l.MiBPerSec = float64(bytes) / (1 << 20) / elapsed.Seconds()
	l.MeanMs = ms(sum / time.Duration(len(lats)))
	l.P50Ms, l.P90Ms, l.P99Ms, l.MaxMs = ms(pct(0.50)), ms(pct(0.90)), ms(pct(0.99)), ms(lats[len(lats)-1])
	return l
}
