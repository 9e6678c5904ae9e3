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

// TestNotificationsWalkthrough runs every ```sh block of
// docs/notifications.md, in order, as one bash script in a scratch
// directory, against the cairn binary under test: the walkthrough cannot
// rot. The JSON example the doc shows must be a line the commands print.
func TestNotificationsWalkthrough(t *testing.T) {
	for _, tool := range [][]string{{"aws", "--version"}, {"jq", "--version"}, {"curl", "--version"}, {"python3", "--version"}} {
		requireTool(t, tool[0], tool[1:]...)
	}
	const doc = "../docs/notifications.md"
	blocks := shellBlocks(t, doc)
	if len(blocks) < 8 {
		t.Fatalf("%s: only %d sh blocks", doc, len(blocks))
	}
	dir := t.TempDir()
	// A failing command stops the run; the background processes end with it.
	script := "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + strings.Join(blocks, "\n")
	if err := os.WriteFile(filepath.Join(dir, "walkthrough.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	port := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return strings.TrimPrefix(l.Addr().String(), "127.0.0.1:")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Output goes to a file, not a pipe: background processes of a failed
	// script must not keep Wait from returning.
	outPath := filepath.Join(dir, "walkthrough.out")
	outFile, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	cmd := exec.CommandContext(ctx, "bash", "walkthrough.sh")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = outFile, outFile
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(cairnBin)+":"+os.Getenv("PATH"),
		"S3_PORT="+port(), "HOOK_PORT="+port())
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
	if err != nil {
		gw, _ := os.ReadFile(filepath.Join(dir, "cairn.log"))
		t.Fatalf("walkthrough failed: %v\n--- output:\n%s\n--- cairn.log tail:\n%s", err, out, tail(string(gw), 3000))
	}
	t.Logf("walkthrough output:\n%s", out)
	for _, want := range append(jsonExampleLines(t, doc),
		`"entries": 1`, // queued while the receiver is down
		`"key": "c/while-down.txt"`,
		`"level":"WARN","msg":"notification push failed"`,
		`cairn_notify_queue_entries{topic="fishtopic"} 1`,
		"\n401\n", // an anonymous scrape is refused
	) {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
