package tests

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shellBlocks returns the bodies of a markdown file's ```sh blocks, in order.
func shellBlocks(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur *strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```sh":
			cur = &strings.Builder{}
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	if cur != nil {
		t.Fatalf("%s: unterminated ```sh block", path)
	}
	return blocks
}

// jsonExampleLines returns the lines of a markdown file's ```json blocks.
func jsonExampleLines(t *testing.T, path string) []string {
	t.Helper()
	raw, _ := os.ReadFile(path)
	var out []string
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case strings.TrimSpace(line) == "```json":
			in = true
		case in && strings.TrimSpace(line) == "```":
			in = false
		case in:
			out = append(out, line)
		}
	}
	return out
}

// runDocScript runs script with bash in dir, in its own process group
// (whatever it starts in the background dies with it), with env added to
// the test's environment, and returns its combined output.
func runDocScript(t *testing.T, dir, script string, env []string) (string, error) {
	t.Helper()
	return runDocScriptEnv(t, dir, script, append(os.Environ(), env...))
}

// runDocScriptEnv is runDocScript with exactly env as the environment.
func runDocScriptEnv(t *testing.T, dir, script string, env []string) (string, error) {
	t.Helper()
	// A failing command stops the run; the background processes end with it.
	script = "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + script
	if err := os.WriteFile(filepath.Join(dir, "doc.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Output goes to a file, not a pipe: background processes of a failed
	// script must not keep Wait from returning.
	outPath := filepath.Join(dir, "doc.out")
	outFile, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	cmd := exec.CommandContext(ctx, "bash", "doc.sh")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = outFile, outFile
	cmd.Env = env
	// Own process group: the gateway and receiver the script starts in the
	// background are killed with it (by the group id of the process this
	// test started) whether it passes or fails.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	out, _ := os.ReadFile(outPath)
	return string(out), err
}

// freePort returns a port nothing listens on (for a script to bind).
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strings.TrimPrefix(l.Addr().String(), "127.0.0.1:")
}

// pathWithoutCairn is PATH less any directory holding a cairn binary: the
// walkthrough must work with cairn named by $CAIRN alone.
func pathWithoutCairn() string {
	var keep []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, "cairn")); err != nil {
			keep = append(keep, d)
		}
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// TestNotificationsWalkthrough runs every ```sh block of
// docs/notifications.md, in order, as one bash script in a scratch
// directory, against the cairn binary under test named by $CAIRN (not on
// PATH), with another gateway on the README's port 7480 when that port is
// free: the walkthrough cannot rot, and it does not need the README's
// gateway to be stopped. The JSON example the doc shows must be a line the
// commands print.
func TestNotificationsWalkthrough(t *testing.T) {
	for _, tool := range [][]string{{"aws", "--version"}, {"jq", "--version"}, {"curl", "--version"}, {"python3", "--version"}} {
		requireTool(t, tool[0], tool[1:]...)
	}
	const doc = "../docs/notifications.md"
	blocks := shellBlocks(t, doc)
	if len(blocks) < 8 {
		t.Fatalf("%s: only %d sh blocks", doc, len(blocks))
	}
	// The README's gateway, where it can be had; the walkthrough's own
	// gateway runs beside it on its default port 7490 unless that is taken.
	if l, err := net.Listen("tcp", "127.0.0.1:7480"); err == nil {
		l.Close()
		readme := &Gateway{t: t, DataDir: t.TempDir(), Addr: "127.0.0.1:7480", AccessKey: "admin", SecretKey: "adminsecret"}
		readme.Start()
		t.Cleanup(readme.Stop)
	}
	env := []string{"CAIRN=" + cairnBin, "PATH=" + pathWithoutCairn()}
	if l, err := net.Listen("tcp", "127.0.0.1:7490"); err != nil {
		env = append(env, "S3_PORT="+freePort(t))
	} else {
		l.Close()
	}
	env = append(env, "HOOK_PORT="+freePort(t))
	dir := t.TempDir()
	out, err := runDocScript(t, dir, strings.Join(blocks, "\n"), env)
	if err != nil {
		gw, _ := os.ReadFile(filepath.Join(dir, "cairn.log"))
		t.Fatalf("walkthrough failed: %v\n--- output:\n%s\n--- cairn.log tail:\n%s", err, out, tail(string(gw), 3000))
	}
	t.Logf("walkthrough output:\n%s", out)
	for _, want := range append(jsonExampleLines(t, doc),
		`"msg":"cairn serving"`,
		`"entries": 1`, // queued while the receiver is down
		`"key": "c/while-down.txt"`,
		`"level":"WARN","msg":"notification push failed"`,
		`cairn_notify_queue_entries{topic="fishtopic"} 1`,
		"\n401\n", // an anonymous scrape is refused
	) {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// The walkthrough's first block fails, loudly, when its port is another
// gateway's, and when no cairn can be found: it never goes on against the
// wrong gateway.
func TestNotificationsWalkthroughFailsLoudly(t *testing.T) {
	for _, tool := range [][]string{{"jq", "--version"}, {"curl", "--version"}} {
		requireTool(t, tool[0], tool[1:]...)
	}
	blocks := shellBlocks(t, "../docs/notifications.md")
	other := StartGateway(t)
	port := other.Addr[strings.LastIndexByte(other.Addr, ':')+1:]
	out, err := runDocScript(t, t.TempDir(), blocks[0]+"\necho REACHED-END\n",
		[]string{"CAIRN=" + cairnBin, "S3_PORT=" + port, "HOOK_PORT=" + freePort(t)})
	if err == nil || strings.Contains(out, "REACHED-END") || !strings.Contains(out, "already answers on port "+port) {
		t.Fatalf("first block against a busy port: err %v, output:\n%s", err, out)
	}
	out, err = runDocScript(t, t.TempDir(), blocks[0]+"\necho REACHED-END\n",
		[]string{"CAIRN=", "PATH=" + pathWithoutCairn(), "S3_PORT=" + freePort(t), "HOOK_PORT=" + freePort(t)})
	if err == nil || strings.Contains(out, "REACHED-END") || !strings.Contains(out, "cairn not found") {
		t.Fatalf("first block without cairn: err %v, output:\n%s", err, out)
	}
}
