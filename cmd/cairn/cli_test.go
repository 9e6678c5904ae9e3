package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// runCairn runs the binary with a clean environment (no CAIRN_* from the
// caller) and returns exit code, stdout and stderr.
func runCairn(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(cairnBin(t), args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	cmd.Dir = t.TempDir() // a stray serve would make ./data here, not in the repo
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// commands lists every command line of the CLI: the top level, each
// noun+verb of admin, each rados verb, each bench workload.
func commands() [][]string {
	cmds := [][]string{{}, {"serve"}, {"admin"}, {"rados"}, {"rados", "--endpoint", "http://127.0.0.1:1", "ls"}, {"bench"}, {"version"}}
	var keys []string
	for k := range adminRoutes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmds = append(cmds, append([]string{"admin"}, strings.Fields(k)...))
	}
	for _, v := range []string{"lspools", "mkpool", "ls", "stat", "get", "put", "rm", "listomapkeys", "listomapvals",
		"setomapval", "listxattr", "setxattr"} {
		cmds = append(cmds, []string{"rados", v})
	}
	for w := range benchWorkloads {
		cmds = append(cmds, []string{"bench", w})
	}
	return cmds
}

// Every command: --help exits 0 with the usage on stdout; an unknown flag
// exits 2 with one line naming it and a hint, not the whole usage.
func TestEveryCommandHelpAndUnknownFlag(t *testing.T) {
	for _, c := range commands() {
		name := strings.Join(append([]string{"cairn"}, c...), " ")
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runCairn(t, nil, append(append([]string{}, c...), "--help")...)
			if code != 0 || !strings.Contains(out, "usage:") || errOut != "" {
				t.Errorf("--help: exit %d, stdout %q, stderr %q", code, head(out), errOut)
			}
			code, out, errOut = runCairn(t, nil, append(append([]string{}, c...), "--no-such-flag")...)
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if code != 2 || out != "" || len(lines) != 2 || !strings.Contains(lines[0], "no-such-flag") || !strings.Contains(lines[1], "--help") {
				t.Errorf("unknown flag: exit %d, stdout %q, stderr %q", code, head(out), errOut)
			}
		})
	}
}

func head(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// serve --help shows each option's type and default, not "string" for all.
func TestServeHelpShowsTypesAndDefaults(t *testing.T) {
	_, out, _ := runCairn(t, nil, "serve", "--help")
	for _, want := range []string{
		"--notif-queue-size size\n", "(default 128MB;",
		"--shutdown-timeout duration\n", "(default 30s;",
		"--dynamic-resharding bool\n", "(default true;",
		"--bucket-index-shards int\n", "(default 11;",
		"--listen string\n", `(default "127.0.0.1:7480";`,
		"--notification-config-mode string\n", "--notif-kafka-compression string\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
}

// Bad values are refused before anything starts, naming the input.
func TestServeRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--notif-queue-size", "12XB"}, `size "12XB"`},
		{[]string{"--cache-size", "-1M"}, `size "-1M"`},
		{[]string{"--gc-min-wait", "-5s"}, `duration "-5s" is negative`},
		{[]string{"--topic-persistency-time-to-live", "-3"}, `duration "-3" is negative`},
		{[]string{"--shutdown-timeout", "soon"}, `duration "soon"`},
		{[]string{"--dynamic-resharding=maybe"}, `"maybe" is not a boolean`},
		{[]string{"--notification-config-mode", "s3"}, `notification-config-mode "s3"`},
		{[]string{"--notif-scan-interval", "1h"}, `notif-scan-interval 1h0m0s must be positive and at most half of notif-lease`},
	} {
		dir := t.TempDir()
		code, _, errOut := runCairn(t, nil, append([]string{"serve", "--data-dir", dir + "/d", "--listen", "127.0.0.1:1"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
		if _, err := os.Stat(dir + "/d"); err == nil {
			t.Errorf("%v: a data dir was made for a refused configuration", tc.args)
		}
	}
	// Documented units are accepted (the gateway then fails on the
	// unusable port 1, after the configuration was taken).
	for _, v := range []string{"64KiB", "1m", "2G", "1048576", "3 MB", "1tb"} {
		if _, _, errOut := runCairn(t, nil, "serve", "--notif-queue-size", v, "--listen", "256.0.0.1:1"); strings.Contains(errOut, "size") {
			t.Errorf("size %q refused: %s", v, errOut)
		}
	}
}

// Admin's integer parameters are typed in --help and checked when parsed.
func TestAdminIntFlags(t *testing.T) {
	_, out, _ := runCairn(t, nil, "admin", "--help")
	if !strings.Contains(out, "--num-shards int\n") || !strings.Contains(out, "--max-entries int\n") {
		t.Fatalf("admin --help:\n%s", out)
	}
	code, _, errOut := runCairn(t, nil, "admin", "bucket", "reshard", "--bucket", "b", "--num-shards", "many")
	if code != 2 || !strings.Contains(errOut, `"many" is not a non-negative integer`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// Admin failures are one JSON shape on stderr, whatever failed.
func TestAdminErrorShape(t *testing.T) {
	code, out, errOut := runCairn(t, []string{"CAIRN_ACCESS_KEY=a", "CAIRN_SECRET_KEY=b"},
		"admin", "--endpoint", "http://127.0.0.1:1", "user", "list")
	var e adminError
	if code != 1 || out != "" || json.Unmarshal([]byte(errOut), &e) != nil || e.Code != "ConnectionError" || e.Message == "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, tc := range []struct {
		status int
		body   string
		want   adminError
	}{
		{404, `{"Code":"NoSuchBucket","Message":"m","RequestId":"r","HostId":"h"}`, adminError{"NoSuchBucket", "m", 404, "r", "h"}},
		{403, `<?xml version="1.0"?><Error><Code>SignatureDoesNotMatch</Code><Message>x</Message><RequestId>r</RequestId></Error>`,
			adminError{"SignatureDoesNotMatch", "x", 403, "r", ""}},
		{502, `bad gateway`, adminError{"Bad Gateway", "bad gateway", 502, "", ""}},
	} {
		if got := parseAdminError(tc.status, []byte(tc.body)); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.body, got, tc.want)
		}
	}
}

// Log durations read as "30s", not 30000000000.
func TestLogDurationsHuman(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&b, &slog.HandlerOptions{ReplaceAttr: humanDurations}))
	log.Info("x", "timeout", 30*time.Second, slog.Group("g", "age", 1500*time.Millisecond))
	if !strings.Contains(b.String(), `"timeout":"30s"`) || !strings.Contains(b.String(), `"age":"1.5s"`) {
		t.Fatal(b.String())
	}
}

// `cairn version` and `cairn --version` name the version, the commit (go
// build's VCS stamp here; the Makefile's -ldflags in bin/cairn) and Go.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		code, out, errOut := runCairn(t, nil, arg)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "cairn ") || !strings.Contains(out, "(commit ") ||
			!strings.Contains(out, runtime.Version()) || strings.Count(out, "\n") != 1 {
			t.Errorf("cairn %s: exit %d, stdout %q, stderr %q", arg, code, out, errOut)
		}
	}
	code, out, _ := runCairn(t, nil, "version", "--json")
	var v struct {
		Version   string `json:"version"`
		Commit    string `json:"commit"`
		GoVersion string `json:"go_version"`
	}
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Version == "" || v.Commit == "" || v.GoVersion != runtime.Version() {
		t.Errorf("cairn version --json: exit %d, %q (%v)", code, out, err)
	}
	if code, _, _ := runCairn(t, nil, "version", "extra"); code != 2 {
		t.Errorf("cairn version extra: exit %d, want 2", code)
	}
}

// Admin commands that answer only when their work is done never time out
// (a reshard of a 3M-object bucket outlived the old 60 s limit); the rest
// keep it.
func TestAdminTimeout(t *testing.T) {
	for _, c := range []struct {
		method, path string
		unbounded    bool
	}{
		{"POST", "/admin/reshard", true},
		{"POST", "/admin/lc", true},
		{"POST", "/admin/gc", true},
		{"GET", "/admin/orphans", true},
		{"DELETE", "/admin/orphans", true},
		{"POST", "/admin/kms", true},
		{"GET", "/admin/reshard", false},
		{"GET", "/admin/bucket", false},
		{"PUT", "/admin/user", false},
	} {
		if got := adminTimeout(c.method, c.path); (got == 0) != c.unbounded {
			t.Errorf("%s %s: timeout %v", c.method, c.path, got)
		}
	}
}
