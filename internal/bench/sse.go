package bench

// The server-side encryption workload (issue 20's goals):
//
//  1. Over HTTP against one gateway, encrypted vs plain, alternated in ABBA
//     slices so machine load hits both alike: 4 MiB PUT, 4 MiB GET and
//     4 KiB PUT. The encrypted bucket gets a default encryption rule
//     (PutBucketEncryption), so the client sends the same requests to both.
//  2. In process, on a fresh embedded store: the bytes a 1 MiB range GET of
//     a large encrypted object reads from the store, and the KMS calls per
//     PUT and per GET with and without a bucket key.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/crypt"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/kms"
	"github.com/cairn-s3/cairn/internal/kms/keyring"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// SSEConfig configures the SSE workload.
type SSEConfig struct {
	Endpoint             string
	AccessKey, SecretKey string
	Region               string // default us-east-1
	Prefix               string // buckets <prefix>-plain, <prefix>-enc; default random
	// Algorithm is the encrypted bucket's default rule: AES256 (default) or
	// aws:kms (KMSKeyID then names a key the gateway has).
	Algorithm   string
	KMSKeyID    string
	BucketKey   bool
	Concurrency int           // default 8
	Duration    time.Duration // per side and phase (two ABBA halves); default 10s
	Keys        int           // 4 MiB objects per bucket the GET phase reads; default 16
	// RangeObject is the size of the in-process object for the range
	// measurement; default 1 GiB, negative skips phase 2.
	RangeObject int64
	Dir         string // parent of the in-process store; "" = temp dir
	// GatewayPID, when set, is the gateway's process: each phase also
	// reports its CPU time per operation (from /proc), a cost that machine
	// load does not skew the way it skews rates.
	GatewayPID int
	Out        io.Writer
}

// EnsureDefaults fills in zero fields.
func (c *SSEConfig) EnsureDefaults() *SSEConfig {
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.Prefix == "" {
		c.Prefix = fmt.Sprintf("sse%06x", mrand.Uint32()&0xffffff)
	}
	if c.Algorithm == "" {
		c.Algorithm = "AES256"
	}
	if c.Concurrency == 0 {
		c.Concurrency = 8
	}
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.Keys == 0 {
		c.Keys = 16
	}
	if c.RangeObject == 0 {
		c.RangeObject = 1 << 30
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	return c
}

// SSEPhase is one encrypted-vs-plain comparison.
type SSEPhase struct {
	PlainOps float64 `json:"plain_ops_s"`
	EncOps   float64 `json:"encrypted_ops_s"`
	Ratio    float64 `json:"encrypted_over_plain"`
	Errors   int64   `json:"errors"`
	// Gateway CPU milliseconds per operation (with GatewayPID).
	PlainCPUms float64 `json:"plain_gateway_cpu_ms_per_op,omitempty"`
	EncCPUms   float64 `json:"encrypted_gateway_cpu_ms_per_op,omitempty"`
}

// procCPU is a process's user+system CPU time from /proc (0 if unknown).
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command: state is field 3; utime and
	// stime are fields 14 and 15, in clock ticks (100 Hz on Linux).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// SSEResult is the workload's report.
type SSEResult struct {
	Config struct {
		Algorithm   string `json:"algorithm"`
		BucketKey   bool   `json:"bucket_key"`
		Concurrency int    `json:"concurrency"`
		Duration    string `json:"duration_per_side"`
	} `json:"config"`
	Put4M SSEPhase `json:"put_4mib"`
	Get4M SSEPhase `json:"get_4mib"`
	Put4K SSEPhase `json:"put_4kib"`
	Range struct {
		ObjectBytes int64 `json:"object_bytes"`
		Offset      int64 `json:"range_offset"`
		Length      int64 `json:"range_length"`
		StoreBytes  int64 `json:"bytes_read_from_store"`
		Bound       int64 `json:"bound_range_plus_two_packages"`
	} `json:"range_get"`
	KMS struct {
		PutNoBucketKey float64 `json:"calls_per_put_without_bucket_key"`
		GetNoBucketKey float64 `json:"calls_per_get_without_bucket_key"`
		PutBucketKey   float64 `json:"calls_per_put_with_bucket_key"`
		GetBucketKey   float64 `json:"calls_per_get_with_bucket_key"`
	} `json:"kms"`
}

// RunSSE runs both phases.
func RunSSE(ctx context.Context, cfg SSEConfig) (*SSEResult, error) {
	cfg.EnsureDefaults()
	res := &SSEResult{}
	res.Config.Algorithm, res.Config.BucketKey, res.Config.Concurrency, res.Config.Duration = cfg.Algorithm, cfg.BucketKey, cfg.Concurrency, cfg.Duration.String()
	if cfg.Endpoint != "" {
		if err := sseHTTP(ctx, cfg, res); err != nil {
			return nil, err
		}
	}
	if cfg.RangeObject > 0 {
		if err := sseInProcess(ctx, cfg, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func sseHTTP(ctx context.Context, cfg SSEConfig, res *SSEResult) error {
	client := func(bucket string, size int64) *s3Client {
		return newS3Client(S3Config{Endpoint: cfg.Endpoint, AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey,
			Region: cfg.Region, Bucket: bucket, Concurrency: cfg.Concurrency, Size: size})
	}
	mk := func(c *s3Client, enc bool) error {
		if err := c.createBucket(ctx); err != nil {
			return fmt.Errorf("create %s: %w", c.cfg.Bucket, err)
		}
		if !enc {
			return nil
		}
		kmsID := ""
		if cfg.KMSKeyID != "" {
			kmsID = "<KMSMasterKeyID>" + cfg.KMSKeyID + "</KMSMasterKeyID>"
		}
		body := []byte(`<ServerSideEncryptionConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>` +
			cfg.Algorithm + `</SSEAlgorithm>` + kmsID + `</ApplyServerSideEncryptionByDefault><BucketKeyEnabled>` + strconv.FormatBool(cfg.BucketKey) + `</BucketKeyEnabled></Rule></ServerSideEncryptionConfiguration>`)
		if _, err := c.doQuery(ctx, http.MethodPut, "", "encryption=", body, nil, nil); err != nil {
			return fmt.Errorf("PutBucketEncryption on %s: %w", c.cfg.Bucket, err)
		}
		return nil
	}
	big := [2]*s3Client{client(cfg.Prefix+"-plain", 4<<20), client(cfg.Prefix+"-enc", 4<<20)}
	small := [2]*s3Client{client(cfg.Prefix+"-plain", 4<<10), client(cfg.Prefix+"-enc", 4<<10)}
	for i, c := range big {
		if err := mk(c, i == 1); err != nil {
			return err
		}
	}
	// Objects the GET phase reads.
	for _, c := range big {
		for k := 0; k < cfg.Keys; k++ {
			if _, err := c.do(ctx, http.MethodPut, "get/"+strconv.Itoa(k), c.body, nil); err != nil {
				return fmt.Errorf("prefill: %w", err)
			}
		}
	}
	abba := func(name string, cs [2]*s3Client, op func(c *s3Client, r *mrand.Rand, buf []byte) error) (SSEPhase, error) {
		var ph SSEPhase
		var ops [2]int64
		var secs [2]float64
		var cpu [2]time.Duration
		for i, side := range []int{0, 1, 1, 0} {
			c := cs[side]
			lctx, cancel := context.WithTimeout(ctx, cfg.Duration/2)
			var n, bad atomic.Int64
			done := make(chan struct{})
			start, cpu0 := time.Now(), procCPU(cfg.GatewayPID)
			for w := 0; w < cfg.Concurrency; w++ {
				go func(w int) {
					defer func() { done <- struct{}{} }()
					r := mrand.New(mrand.NewPCG(uint64(w), uint64(i)))
					buf := make([]byte, 256<<10)
					for lctx.Err() == nil {
						err := op(c, r, buf)
						switch {
						case lctx.Err() != nil:
						case err != nil:
							bad.Add(1)
						default:
							n.Add(1)
						}
					}
				}(w)
			}
			for w := 0; w < cfg.Concurrency; w++ {
				<-done
			}
			cancel()
			cpu[side] += procCPU(cfg.GatewayPID) - cpu0
			ops[side] += n.Load()
			secs[side] += min(time.Since(start), cfg.Duration/2).Seconds()
			ph.Errors += bad.Load()
			if ctx.Err() != nil {
				return ph, ctx.Err()
			}
		}
		ph.PlainOps, ph.EncOps = float64(ops[0])/secs[0], float64(ops[1])/secs[1]
		ph.Ratio = ph.EncOps / ph.PlainOps
		fmt.Fprintf(cfg.Out, "%s: plain %.1f ops/s, encrypted %.1f ops/s: %.3f× (%d errors)\n", name, ph.PlainOps, ph.EncOps, ph.Ratio, ph.Errors)
		if cfg.GatewayPID != 0 && ops[0] > 0 && ops[1] > 0 {
			ph.PlainCPUms = float64(cpu[0].Microseconds()) / 1000 / float64(ops[0])
			ph.EncCPUms = float64(cpu[1].Microseconds()) / 1000 / float64(ops[1])
			fmt.Fprintf(cfg.Out, "%s: gateway CPU per op: plain %.3f ms, encrypted %.3f ms\n", name, ph.PlainCPUms, ph.EncCPUms)
		}
		return ph, nil
	}
	put := func(c *s3Client, r *mrand.Rand, buf []byte) error {
		_, err := c.do(ctx, http.MethodPut, "put/"+strconv.Itoa(r.IntN(256)), c.body, nil)
		return err
	}
	var err error
	if res.Put4M, err = abba("PUT 4 MiB", big, put); err != nil {
		return err
	}
	if res.Get4M, err = abba("GET 4 MiB", big, func(c *s3Client, r *mrand.Rand, buf []byte) error {
		n, err := c.do(ctx, http.MethodGet, "get/"+strconv.Itoa(r.IntN(cfg.Keys)), nil, buf)
		if err == nil && n != 4<<20 {
			err = fmt.Errorf("GET returned %d bytes", n)
		}
		return err
	}); err != nil {
		return err
	}
	res.Put4K, err = abba("PUT 4 KiB", small, put)
	return err
}

// countingStore counts the data bytes every OperateRead returns.
type countingStore struct {
	objstore.Store
	n *atomic.Int64
}

func (s countingStore) IOContext(ctx context.Context, pool string) (objstore.IOContext, error) {
	io, err := s.Store.IOContext(ctx, pool)
	return countingIO{io, s.n}, err
}

type countingIO struct {
	objstore.IOContext
	n *atomic.Int64
}

func (c countingIO) OperateRead(ctx context.Context, oid string, op *objstore.ReadOp) error {
	err := c.IOContext.OperateRead(ctx, oid, op)
	for _, s := range op.Steps {
		if r, ok := s.(*objstore.ReadStep); ok {
			c.n.Add(int64(len(r.Data)))
		}
	}
	return err
}

// countingKMS counts calls.
type countingKMS struct {
	kms.KMS
	n atomic.Int64
}

func (k *countingKMS) GenerateDataKey(ctx context.Context, id string, aad []byte) (kms.DataKey, error) {
	k.n.Add(1)
	return k.KMS.GenerateDataKey(ctx, id, aad)
}

func (k *countingKMS) Decrypt(ctx context.Context, id string, sealed, aad []byte) ([]byte, error) {
	k.n.Add(1)
	return k.KMS.Decrypt(ctx, id, sealed, aad)
}

func sseInProcess(ctx context.Context, cfg SSEConfig, res *SSEResult) error {
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, _, closeStore, err := tempStoreWith(cfg.Dir, "sse", reg)
	if err != nil {
		return err
	}
	defer closeStore()
	var read atomic.Int64
	key := make([]byte, 32)
	rand.Read(key)
	kr, err := keyring.Open(keyring.Options{MasterKey: base64.StdEncoding.EncodeToString(key), Keys: "bench=" + base64.StdEncoding.EncodeToString(key)})
	if err != nil {
		return err
	}
	ck := &countingKMS{KMS: kr}
	d, err := driver.New(ctx, driver.Options{Store: countingStore{st, &read}, KMS: ck, GCMinWait: -1})
	if err != nil {
		return err
	}
	defer d.Close()
	const bucket = "bench-sse"
	if err := d.CreateBucket(ctx, "bench", bucket, "", 0); err != nil {
		return err
	}
	// 1. Range read of a large object.
	sctx := driver.WithSSE(ctx, driver.SSERequest{Put: &driver.SSESpec{Mode: driver.SSEModeS3}})
	fmt.Fprintf(cfg.Out, "writing a %s encrypted object...\n", sizeString(cfg.RangeObject))
	if _, err := d.PutObject(sctx, driver.PutObjectInput{Bucket: bucket, Key: "large", Body: io.LimitReader(randReader{mrand.New(mrand.NewPCG(1, 2))}, cfg.RangeObject), Size: cfg.RangeObject}); err != nil {
		return err
	}
	r := &res.Range
	r.ObjectBytes, r.Length = cfg.RangeObject, 1<<20
	r.Offset = cfg.RangeObject/2 + 12345 // unaligned, mid-object
	r.Offset = min(r.Offset, cfg.RangeObject-r.Length)
	read.Store(0)
	_, rd, err := d.GetObject(ctx, bucket, "large", &driver.Range{Start: r.Offset, Length: r.Length})
	if err != nil {
		return err
	}
	n, err := io.Copy(io.Discard, rd)
	rd.Close()
	if err != nil || n != r.Length {
		return fmt.Errorf("range read: %d bytes, %v", n, err)
	}
	r.StoreBytes = read.Load()
	r.Bound = r.Length + 2*crypt.MaxPackage
	fmt.Fprintf(cfg.Out, "1 MiB range of %s: %d bytes read from the store (bound: 1 MiB + two packages = %d)\n", sizeString(cfg.RangeObject), r.StoreBytes, r.Bound)

	// 2. KMS calls per PUT and GET.
	const n2 = 200
	body := bytes.Repeat([]byte("x"), 4<<10)
	for _, bk := range []bool{false, true} {
		pctx := driver.WithSSE(ctx, driver.SSERequest{Put: &driver.SSESpec{Mode: driver.SSEModeKMS, KMSKeyID: "bench", BucketKey: bk}})
		ck.n.Store(0)
		for i := 0; i < n2; i++ {
			if _, err := d.PutObject(pctx, driver.PutObjectInput{Bucket: bucket, Key: fmt.Sprintf("k-%v-%d", bk, i), Body: bytes.NewReader(body), Size: int64(len(body))}); err != nil {
				return err
			}
		}
		puts := float64(ck.n.Load()) / n2
		ck.n.Store(0)
		for i := 0; i < n2; i++ {
			_, rd, err := d.GetObject(ctx, bucket, fmt.Sprintf("k-%v-%d", bk, i), nil)
			if err != nil {
				return err
			}
			io.Copy(io.Discard, rd)
			rd.Close()
		}
		gets := float64(ck.n.Load()) / n2
		if bk {
			res.KMS.PutBucketKey, res.KMS.GetBucketKey = puts, gets
		} else {
			res.KMS.PutNoBucketKey, res.KMS.GetNoBucketKey = puts, gets
		}
		fmt.Fprintf(cfg.Out, "SSE-KMS, bucket key %v: %.3f KMS calls per PUT, %.3f per GET\n", bk, puts, gets)
	}
	return nil
}

type randReader struct{ r *mrand.Rand }

func (r randReader) Read(p []byte) (int, error) {
	for i := 0; i < len(p); i += 8 {
		v := r.r.Uint64()
		for j := 0; j < 8 && i+j < len(p); j++ {
			p[i+j] = byte(v >> (8 * j))
		}
	}
	return len(p), nil
}

// tempStoreWith is tempStore with a given class registry.
func tempStoreWith(parent, name string, reg *objstore.Registry) (objstore.Store, string, func(), error) {
	dir, err := os.MkdirTemp(parent, "cairn-bench-"+name+"-")
	if err != nil {
		return nil, "", nil, err
	}
	st, err := embedded.Open(embedded.Options{Dir: dir, Classes: reg})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	return st, dir, func() { st.Close(); os.RemoveAll(dir) }, nil
}

var (
	osMkdirTemp = os.MkdirTemp
	osRemoveAll = os.RemoveAll
)
