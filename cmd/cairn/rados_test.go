package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cairn-s3/cairn/internal/server"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// cairnBin builds the cairn binary once per test run.
func cairnBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cairn-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "cairn")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = err
			binPath = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build cairn: %v\n%s", buildErr, binPath)
	}
	return binPath
}

type result struct {
	out, err string
	code     int
}

func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(cairnBin(t), args...)
	cmd.Env = append(os.Environ(), "CAIRN_ACCESS_KEY=", "CAIRN_SECRET_KEY=")
	var o, e bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &o, &e
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{o.String(), e.String(), code}
}

func TestRadosCLI(t *testing.T) {
	dir := t.TempDir()
	dd := "--data-dir=" + dir
	ok := func(stdin string, args ...string) string {
		t.Helper()
		r := run(t, stdin, args...)
		if r.code != 0 {
			t.Fatalf("cairn %q: exit %d: %s", args, r.code, r.err)
		}
		return r.out
	}
	fail := func(wantCode int, wantErr string, args ...string) {
		t.Helper()
		r := run(t, "", args...)
		if r.code != wantCode || !strings.Contains(r.err, wantErr) {
			t.Fatalf("cairn %q: exit %d, stderr %q; want %d and %q", args, r.code, r.err, wantCode, wantErr)
		}
	}
	fail(1, "no Cairn data directory", "rados", dd, "lspools")
	ok("", "rados", dd, "mkpool", "default.rgw.log")
	fail(1, "already exists", "rados", "mkpool", "default.rgw.log", dd)
	ok("", "rados", "mkpool", "p2", dd)
	if got := ok("", "rados", "lspools", dd); got != "default.rgw.log\np2\n" {
		t.Fatalf("lspools: %q", got)
	}
	fail(1, `pool "nope" does not exist`, "rados", dd, "--pool", "nope", "ls")
	fail(2, "--pool is required", "rados", dd, "ls")
	fail(2, "unknown command", "rados", dd, "frobnicate")
	fail(2, "want OBJ FILE", "rados", dd, "-p", "p2", "get", "x")
	// --endpoint needs admin keys (tests/notify_test.go runs it against a gateway).
	fail(2, "set CAIRN_ACCESS_KEY", "rados", "--endpoint", "http://127.0.0.1:7480", "ls")

	// Objects in a namespace; flags before and after the verb.
	file := filepath.Join(dir, "in.bin")
	payload := []byte("some\x00binary\xffdata")
	if err := os.WriteFile(file, payload, 0o600); err != nil {
		t.Fatal(err)
	}
	ns := []string{"rados", dd, "--pool", "default.rgw.log", "--namespace", "notif"}
	cmd := func(args ...string) []string { return append(append([]string{}, ns...), args...) }
	ok("", cmd("put", ":topic", file)...)
	ok("from stdin", "rados", "put", ":topic.1", "-", "-p", "default.rgw.log", "-N", "notif", dd)
	if got := ok("", cmd("ls")...); got != ":topic\n:topic.1\n" {
		t.Fatalf("ls: %q", got)
	}
	if got := ok("", "rados", dd, "-p", "default.rgw.log", "ls"); got != "" {
		t.Fatalf("default namespace not empty: %q", got)
	}
	if got := ok("", cmd("get", ":topic", "-")...); got != string(payload) {
		t.Fatalf("get: %q", got)
	}
	outFile := filepath.Join(dir, "out.bin")
	ok("", cmd("get", ":topic.1", outFile)...)
	if b, _ := os.ReadFile(outFile); string(b) != "from stdin" {
		t.Fatalf("get to file: %q", b)
	}
	if got := ok("", cmd("stat", ":topic")...); !strings.HasPrefix(got, "default.rgw.log/:topic mtime ") || !strings.Contains(got, ", size 16") {
		t.Fatalf("stat: %q", got)
	}
	for _, k := range []string{"zeta", "alpha", "mid"} {
		ok("", cmd("setomapval", ":topic", k, "v-"+k)...)
	}
	ok("from-stdin", cmd("setomapval", ":topic", "beta")...)
	if got := ok("", cmd("listomapkeys", ":topic")...); got != "alpha\nbeta\nmid\nzeta\n" {
		t.Fatalf("listomapkeys: %q", got)
	}
	vals := ok("", cmd("listomapvals", ":topic")...)
	if !strings.HasPrefix(vals, "alpha\nvalue (7 bytes) :\n00000000  76 2d 61 6c 70 68 61") || !strings.Contains(vals, "|from-stdin|") {
		t.Fatalf("listomapvals: %q", vals)
	}
	ok("", cmd("rmomapkey", ":topic", "mid")...)
	if got := ok("", cmd("listomapkeys", ":topic")...); got != "alpha\nbeta\nzeta\n" {
		t.Fatalf("after rmomapkey: %q", got)
	}
	ok("", cmd("setxattr", ":topic", "user.b", "2")...)
	ok("", cmd("setxattr", ":topic", "user.a", "1")...)
	if got := ok("", cmd("listxattr", ":topic")...); got != "user.a\nuser.b\n" {
		t.Fatalf("listxattr: %q", got)
	}
	if got := ok("", cmd("getxattr", ":topic", "user.b")...); got != "2" {
		t.Fatalf("getxattr: %q", got)
	}
	ok("", cmd("rm", ":topic")...)
	fail(1, "no such object", cmd("stat", ":topic")...)
	fail(1, "no such object", cmd("rm", ":topic")...)
	if got := ok("", cmd("ls")...); got != ":topic.1\n" {
		t.Fatalf("ls after rm: %q", got)
	}

	// A data directory held by a running store (a gateway) is refused.
	st, err := embedded.Open(embedded.Options{Dir: server.StoreDir(dir), Classes: server.Classes()})
	if err != nil {
		t.Fatal(err)
	}
	fail(1, "in use", cmd("ls")...)
	st.Close()
	ok("", cmd("ls")...)
}

func TestBenchCLI(t *testing.T) {
	r := run(t, "", "bench", "append", "--clients", "2", "--duration", "200ms", "--size", "1024", "--data-dir", t.TempDir())
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line not JSON: %q", lines[len(lines)-1])
	}
	for _, k := range []string{"clients", "plain_ops_per_sec", "guarded_ops_per_sec", "ratio"} {
		if _, ok := res[k]; !ok {
			t.Fatalf("JSON lacks %s: %v", k, res)
		}
	}
	if r := run(t, "", "bench", "nope"); r.code != 2 || !strings.Contains(r.err, "unknown workload") {
		t.Fatalf("unknown workload: %+v", r)
	}
}
