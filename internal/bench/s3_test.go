package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/server"
)

// gateway starts a real gateway (handler stack, SigV4, checksums) on the
// given backend behind an httptest server.
func gateway(t testing.TB, backend string) string {
	t.Helper()
	env := map[string]string{"CAIRN_ACCESS_KEY": "benchadmin", "CAIRN_SECRET_KEY": "benchsecret123"}
	cfg, err := config.Load([]string{"--backend", backend, "--data-dir", t.TempDir(), "--log-level", "error"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	g, err := server.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler)
	t.Cleanup(func() { srv.Close(); g.Close() })
	return srv.URL
}

func TestS3Workloads(t *testing.T) {
	backends := []string{"null", "embedded"}
	if testing.Short() {
		backends = backends[:1]
	}
	for _, be := range backends {
		url := gateway(t, be)
		for _, tc := range []struct {
			op       string
			sign     bool
			checksum string
			size     int64
		}{
			{S3Put, false, "", 4 << 10},
			{S3Put, true, "crc32c", 100 << 10},
			{S3Get, false, "", 64 << 10},
			{S3Delete, false, "", 1 << 10},
			{S3Mixed, true, "sha256", 4 << 10},
			{S3Overwrite, false, "crc32", 4 << 10},
		} {
			t.Run(be+"/"+tc.op, func(t *testing.T) {
				var out strings.Builder
				r, err := RunS3(context.Background(), S3Config{
					Endpoint: url, AccessKey: "benchadmin", SecretKey: "benchsecret123",
					Op: tc.op, Concurrency: 3, Size: tc.size, Duration: 300 * time.Millisecond,
					Objects: 40, SignPayload: tc.sign, Checksum: tc.checksum, Out: &out,
				})
				if err != nil {
					t.Fatalf("%v\n%s", err, out.String())
				}
				if r.Ops == 0 || r.Errors != 0 || r.FirstError != "" || r.OpsPerSec <= 0 || r.P50Ms > r.MaxMs || r.P90Ms > r.P99Ms {
					t.Fatalf("result %+v\n%s", r, out.String())
				}
				if tc.op != S3Delete && r.MiBPerSec <= 0 {
					t.Fatalf("no throughput: %+v", r)
				}
				if tc.op == S3Mixed && (len(r.ByOp) != 4 || r.ByOp[S3Get].Ops == 0 || r.ByOp[S3Put].Ops == 0) {
					t.Fatalf("by op %+v", r.ByOp)
				}
				b, _ := json.Marshal(r)
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil || m["ops_per_sec"] == nil || m["p99_ms"] == nil || strings.Contains(string(b), "benchsecret") {
					t.Fatalf("json %s", b)
				}
			})
		}
	}
}

func TestS3BadSignature(t *testing.T) {
	url := gateway(t, "null")
	r, err := RunS3(context.Background(), S3Config{
		Endpoint: url, AccessKey: "benchadmin", SecretKey: "wrong-secret", Op: S3Put, Concurrency: 1, Duration: 100 * time.Millisecond,
	})
	if err == nil || !strings.Contains(err.Error(), "SignatureDoesNotMatch") {
		t.Fatalf("got %v, %+v", err, r)
	}
}

func TestS3Validate(t *testing.T) {
	c := S3Config{Endpoint: "ftp://x", Op: "scan", Checksum: "md4", Concurrency: -1}
	c.EnsureDefaults()
	err := c.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{"endpoint", "access key", "op", "checksum", "concurrency"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

// BenchmarkS3 drives an in-process gateway (client and server in one
// process, so a CPU profile shows both; filter on s3api/driver frames):
//
//	go test -run x -bench 'S3/embedded/put-4k' -cpuprofile cpu.out ./internal/bench
func BenchmarkS3(b *testing.B) {
	for _, be := range []string{"null", "embedded"} {
		for _, tc := range []struct {
			op   string
			size int64
		}{{S3Put, 4 << 10}, {S3Get, 4 << 10}, {S3Put, 4 << 20}, {S3Get, 4 << 20}} {
			b.Run(fmt.Sprintf("%s/%s-%s", be, tc.op, strings.ToLower(sizeString(tc.size)[:2])), func(b *testing.B) {
				url := gateway(b, be)
				cfg := S3Config{Endpoint: url, AccessKey: "benchadmin", SecretKey: "benchsecret123", Op: tc.op, Size: tc.size, Objects: 64}
				cfg.EnsureDefaults()
				c := newS3Client(cfg)
				defer c.hc.CloseIdleConnections()
				ctx := context.Background()
				if err := c.createBucket(ctx); err != nil {
					b.Fatal(err)
				}
				pool := &keyPool{prefix: cfg.Prefix}
				if tc.op == S3Get {
					if err := c.prefill(ctx, pool, cfg.Objects); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(tc.size)
				b.ReportAllocs()
				b.SetParallelism(max(1, cfg.Concurrency/runtime.GOMAXPROCS(0)))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					r := rand.New(rand.NewPCG(rand.Uint64(), 1))
					buf := make([]byte, 64<<10)
					for pb.Next() {
						if _, err := c.one(ctx, tc.op, pool, r, buf); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
