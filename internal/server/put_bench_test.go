package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7/pkg/signer"

	"github.com/cairn-s3/cairn/internal/config"
)

// The put-CPU benchmarks (issue 25 item 6) replay what warp sends: a 4 KiB
// PUT signed by minio-go's streaming signer (one 4 KiB chunk and the final
// empty one), as raw bytes parsed by net/http, through the gateway's
// handler. Run with -cpu 1 -benchmem:
//
//	go test -run x -bench 'GatewayPut|GatewayGet|ExpectReader' -benchmem -cpu 1 ./internal/server

const benchAK, benchSK = "putbenchadminkey0000", "putbenchadminsecret000000000000000000000"

func benchGateway(b *testing.B, args ...string) *Gateway {
	b.Helper()
	env := map[string]string{"CAIRN_ACCESS_KEY": benchAK, "CAIRN_SECRET_KEY": benchSK}
	cfg, err := config.Load(append([]string{"--data-dir", b.TempDir(), "--log-level", "error"}, args...), func(k string) string { return env[k] })
	if err != nil {
		b.Fatal(err)
	}
	g, err := Open(context.Background(), cfg, slog.New(slog.DiscardHandler), func(k string) string { return env[k] })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(g.Close)
	return g
}

// shaHasher adapts crypto/sha256 to minio-go's md5simd.Hasher.
type shaHasher struct{ hash.Hash }

func (shaHasher) Close() {}

// rawPut is the wire form of a streaming-signed PUT of data to path.
func rawPut(b *testing.B, path string, data []byte, at time.Time) []byte {
	req, err := http.NewRequest("PUT", "http://127.0.0.1:7480"+path, bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("User-Agent", "MinIO (linux; amd64) minio-go/v7.0.70 warp/(dev)")
	req = signer.StreamingSignV4(req, benchAK, benchSK, "", "us-east-1", int64(len(data)), at, shaHasher{sha256.New()})
	req.Header.Set("Content-Type", "application/octet-stream")
	var buf bytes.Buffer
	if err := req.Write(&buf); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// rawSigned is the wire form of a request with an empty signed payload.
func rawSigned(b *testing.B, method, path string, at time.Time) []byte {
	req, err := http.NewRequest(method, "http://127.0.0.1:7480"+path, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("User-Agent", "MinIO (linux; amd64) minio-go/v7.0.70 warp/(dev)")
	req.Header.Set("X-Amz-Content-Sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
	req = signer.SignV4(*req, benchAK, benchSK, "", "us-east-1")
	var buf bytes.Buffer
	if err := req.Write(&buf); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// benchWriter is a minimal ResponseWriter: the recorder's own allocations
// would blur the handler's.
type benchWriter struct {
	h    http.Header
	code int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *benchWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

// serveRaw parses raw as net/http's server does and serves it.
func serveRaw(b *testing.B, h http.Handler, raw []byte) int {
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		b.Fatal(err)
	}
	r.RemoteAddr = "127.0.0.1:40000"
	w := &benchWriter{h: http.Header{}}
	h.ServeHTTP(w, r)
	io.Copy(io.Discard, r.Body)
	if w.code == 0 {
		w.code = 200
	}
	return w.code
}

// BenchmarkGatewayPut4KiB runs 16 PUTs at a time, as warp does, so the
// store batches WAL syncs; cpu-µs/op is the process's CPU time (getrusage)
// per PUT, the figure scripts/bench/putcpu.sh reads from /proc.
func BenchmarkGatewayPut4KiB(b *testing.B) {
	for _, backend := range []string{"embedded", "null"} {
		b.Run(backend, func(b *testing.B) {
			g := benchGateway(b, "--backend", backend)
			at := time.Now().UTC()
			if code := serveRaw(b, g.Handler, rawSigned(b, "PUT", "/putbench", at)); code != 200 {
				b.Fatalf("create bucket: %d", code)
			}
			data := bytes.Repeat([]byte("0123456789abcdef"), 256)
			reqs := make([][]byte, b.N)
			for i := range reqs {
				reqs[i] = rawPut(b, fmt.Sprintf("/putbench/obj/%08d.rnd", i), data, at)
			}
			var next atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(16)
			c0 := cpuTime()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if code := serveRaw(b, g.Handler, reqs[next.Add(1)-1]); code != 200 {
						b.Errorf("put: %d", code)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/1e3, "cpu-µs/op")
		})
	}
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkGatewayGet4KiB(b *testing.B) {
	g := benchGateway(b)
	at := time.Now().UTC()
	if code := serveRaw(b, g.Handler, rawSigned(b, "PUT", "/getbench", at)); code != 200 {
		b.Fatalf("create bucket: %d", code)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 256)
	const n = 64
	gets := make([][]byte, n)
	for i := range n {
		path := fmt.Sprintf("/getbench/obj/%08d.rnd", i)
		if code := serveRaw(b, g.Handler, rawPut(b, path, data, at)); code != 200 {
			b.Fatalf("put: %d", code)
		}
		gets[i] = rawSigned(b, "GET", path, at)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if code := serveRaw(b, g.Handler, gets[i%n]); code != 200 {
			b.Fatalf("get: %d", code)
		}
	}
}
