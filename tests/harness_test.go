// Package tests runs real clients against a real `cairn serve` process on
// loopback: aws-sdk-go-v2, boto3 and the aws CLI.
package tests

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var cairnBin string

// buildTags are passed to the build of the binary under test (files built
// with -tags rados add "rados"); afterAll runs once after every test (they
// stop shared fixtures such as a Ceph cluster).
var (
	buildTags []string
	afterAll  []func()
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cairn-tests-")
	if err != nil {
		panic(err)
	}
	cairnBin = filepath.Join(dir, "cairn")
	args := []string{"build", "-o", cairnBin}
	if len(buildTags) > 0 {
		args = append(args, "-tags", strings.Join(buildTags, ","))
	}
	build := exec.Command("go", append(args, "../cmd/cairn")...)
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build cairn:", err)
		os.Exit(1)
	}
	code := m.Run()
	for _, f := range afterAll {
		f()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// Gateway is a running `cairn serve`.
type Gateway struct {
	t         *testing.T
	Endpoint  string
	Addr      string
	DataDir   string
	AccessKey string
	SecretKey string
	cmd       *exec.Cmd
	args      []string
	Log       *strings.Builder
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// StartGateway runs cairn serve on a fresh data directory with fixed admin
// keys; extra flags are appended.
func StartGateway(t *testing.T, extra ...string) *Gateway {
	t.Helper()
	g := &Gateway{t: t, DataDir: t.TempDir(), AccessKey: "ADMINKEY0000000000AA", SecretKey: "adminsecret0000000000000000000000000000AA"}
	g.args = extra
	g.Start()
	t.Cleanup(g.Stop)
	return g
}

// Start (re)starts the process on the same data directory.
func (g *Gateway) Start() {
	t := g.t
	t.Helper()
	if g.Addr == "" {
		g.Addr = freeAddr(t) // a restart keeps the address so clients reconnect
	}
	g.Endpoint = "http://" + g.Addr
	args := append([]string{"serve", "--data-dir", g.DataDir, "--listen", g.Addr, "--gc-min-wait", "1s"}, g.args...)
	cmd := exec.Command(cairnBin, args...)
	cmd.Env = append(os.Environ(), "CAIRN_ACCESS_KEY="+g.AccessKey, "CAIRN_SECRET_KEY="+g.SecretKey)
	g.Log = &strings.Builder{}
	pr, pw, _ := os.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	logDone := make(chan struct{})
	go func(b *strings.Builder) {
		defer close(logDone)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
	}(g.Log)
	g.cmd = cmd
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(g.Endpoint + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if cmd.ProcessState != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	g.Kill()
	<-logDone
	t.Fatalf("gateway did not become healthy; log:\n%s", g.Log.String())
}

// Stop sends SIGTERM and waits.
func (g *Gateway) Stop() {
	if g.cmd == nil || g.cmd.Process == nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- g.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = g.cmd.Process.Kill()
		<-done
		g.t.Errorf("gateway did not stop on SIGTERM within 20s")
	}
	g.cmd = nil
}

// Kill sends SIGKILL (crash) and waits.
func (g *Gateway) Kill() {
	if g.cmd == nil || g.cmd.Process == nil {
		return
	}
	_ = g.cmd.Process.Kill()
	_ = g.cmd.Wait()
	g.cmd = nil
}

// Admin runs `cairn admin` against the gateway and returns stdout.
func (g *Gateway) Admin(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cairnBin, append([]string{"admin", "--endpoint", g.Endpoint}, args...)...)
	cmd.Env = append(os.Environ(), "CAIRN_ACCESS_KEY="+g.AccessKey, "CAIRN_SECRET_KEY="+g.SecretKey)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("cairn admin %v: %w: %s", args, err, stderr.String())
	}
	return string(out), nil
}
