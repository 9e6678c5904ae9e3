package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/config"
)

func loopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// pprof-listen serves the runtime profiles on its own listener (what
// `cairn bench notify --gateway-profile-dir` fetches per cell), and only
// there: the S3 listener does not answer /debug/pprof/.
func TestPprofListen(t *testing.T) {
	addr, paddr := loopbackAddr(t), loopbackAddr(t)
	env := map[string]string{"CAIRN_ACCESS_KEY": "pprofadmin", "CAIRN_SECRET_KEY": "pprofsecret12345"}
	getenv := func(k string) string { return env[k] }
	cfg, err := config.Load([]string{"--data-dir", t.TempDir(), "--log-level", "error", "--listen", addr, "--pprof-listen", paddr}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), getenv) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	get := func(url string) (int, string) {
		for {
			resp, err := http.Get(url)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return resp.StatusCode, string(b)
			}
			select {
			case err := <-done:
				t.Fatalf("gateway exited: %v", err)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	if code, body := get("http://" + paddr + "/debug/pprof/goroutine?debug=1"); code != 200 || !strings.Contains(body, "goroutine profile: total") {
		t.Fatalf("pprof listener: %d %q", code, body)
	}
	if code, body := get("http://" + addr + "/debug/pprof/goroutine?debug=1"); code == 200 && strings.Contains(body, "goroutine profile") {
		t.Fatal("the S3 listener serves the profiles")
	}
}
