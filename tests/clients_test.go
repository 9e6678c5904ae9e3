package tests

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Command-line and non-Go clients against a real gateway: the Node SDK
// (tests/node, installed by .ci/run with npm ci), rclone and s3cmd
// (installed by .ci/run from PyPI). Each skips when missing unless
// CAIRN_REQUIRE_CLIENTS=1.

func runClient(t *testing.T, g *Gateway, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s\ngateway log tail:\n%s", name, strings.Join(args, " "), err,
			tail(out.String(), 4000), tail(errb.String(), 4000), tail(g.Log.String(), 4000))
	}
	return out.String()
}

func TestNodeSDK(t *testing.T) {
	requireTool(t, "node", "--version")
	requireTool(t, "node", "-e", "require.resolve('@aws-sdk/client-s3', {paths: ['node']}); require.resolve('@aws-sdk/lib-storage', {paths: ['node']})")
	g := StartGateway(t)
	runClient(t, g, []string{"CAIRN_ENDPOINT=" + g.Endpoint, "CAIRN_ACCESS_KEY=" + g.AccessKey, "CAIRN_SECRET_KEY=" + g.SecretKey},
		"node", "--test", "node/s3.test.mjs")
}

func writeRandomFile(t *testing.T, dir, name string, n int) ([]byte, string) {
	t.Helper()
	data := randomData(t, n)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return data, p
}

func md5hex(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }

func TestRclone(t *testing.T) {
	requireTool(t, "rclone", "version")
	g := StartGateway(t)
	env := []string{
		"RCLONE_CONFIG=" + filepath.Join(t.TempDir(), "none.conf"),
		"RCLONE_CONFIG_CAIRN_TYPE=s3", "RCLONE_CONFIG_CAIRN_PROVIDER=Ceph",
		"RCLONE_CONFIG_CAIRN_ENDPOINT=" + g.Endpoint,
		"RCLONE_CONFIG_CAIRN_ACCESS_KEY_ID=" + g.AccessKey, "RCLONE_CONFIG_CAIRN_SECRET_ACCESS_KEY=" + g.SecretKey,
		"RCLONE_CONFIG_CAIRN_REGION=us-east-1",
	}
	src := t.TempDir()
	small, _ := writeRandomFile(t, src, "small.bin", 1000)
	big, _ := writeRandomFile(t, src, "big.bin", 11*mib+7)
	if err := os.MkdirAll(filepath.Join(src, "sub dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeRandomFile(t, filepath.Join(src, "sub dir"), "x+y z.txt", 10)
	rc := func(args ...string) string {
		return runClient(t, g, env, "rclone", append(args, "--retries", "1", "--low-level-retries", "1")...)
	}
	rc("mkdir", "cairn:rclone-bkt")
	// Multipart above 5 MiB; rclone sends Content-MD5 per part.
	rc("copy", src, "cairn:rclone-bkt/tree", "--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M")
	rc("check", src, "cairn:rclone-bkt/tree", "--download")
	var entries []struct {
		Path string
		Size int64
	}
	if err := json.Unmarshal([]byte(rc("lsjson", "-R", "--files-only", "cairn:rclone-bkt/tree")), &entries); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, e := range entries {
		got[e.Path] = e.Size
	}
	if got["small.bin"] != int64(len(small)) || got["big.bin"] != int64(len(big)) || got["sub dir/x+y z.txt"] != 10 || len(got) != 3 {
		t.Fatalf("lsjson: %v", got)
	}
	if out := rc("cat", "cairn:rclone-bkt/tree/big.bin"); md5hex([]byte(out)) != md5hex(big) {
		t.Fatalf("cat big.bin: %d bytes differ", len(out))
	}
	// rcat streams stdin of unknown size (multipart).
	cmdIn := randomData(t, 6*mib+1)
	cmd := exec.Command("rclone", "rcat", "cairn:rclone-bkt/streamed", "--s3-chunk-size", "5M")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(cmdIn)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rclone rcat: %v\n%s", err, out)
	}
	if out := rc("cat", "cairn:rclone-bkt/streamed"); md5hex([]byte(out)) != md5hex(cmdIn) {
		t.Fatal("rcat round trip differs")
	}
	rc("purge", "cairn:rclone-bkt")
}

func TestS3cmd(t *testing.T) {
	requireTool(t, "s3cmd", "--version")
	g := StartGateway(t)
	host := strings.TrimPrefix(g.Endpoint, "http://")
	cfg := filepath.Join(t.TempDir(), "s3cfg")
	conf := "[default]\naccess_key = " + g.AccessKey + "\nsecret_key = " + g.SecretKey + "\nhost_base = " + host +
		"\nhost_bucket = " + host + "\nuse_https = False\nsignature_v2 = False\nbucket_location = us-east-1\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s := func(args ...string) string {
		return runClient(t, g, nil, "s3cmd", append([]string{"-c", cfg, "--no-progress"}, args...)...)
	}
	dir := t.TempDir()
	big, bigPath := writeRandomFile(t, dir, "big.bin", 11*mib+3)
	small, smallPath := writeRandomFile(t, dir, "small.bin", 500)
	s("mb", "s3://s3cmd-bkt")
	s("put", "--multipart-chunk-size-mb=5", bigPath, "s3://s3cmd-bkt/dir/big.bin")
	s("put", smallPath, "s3://s3cmd-bkt/dir/small.bin")
	ls := s("ls", "-r", "s3://s3cmd-bkt")
	if !strings.Contains(ls, "s3://s3cmd-bkt/dir/big.bin") || !strings.Contains(ls, "s3://s3cmd-bkt/dir/small.bin") {
		t.Fatalf("ls:\n%s", ls)
	}
	for name, want := range map[string][]byte{"big.bin": big, "small.bin": small} {
		out := filepath.Join(dir, "got-"+name)
		s("get", "s3://s3cmd-bkt/dir/"+name, out)
		got, err := os.ReadFile(out)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("get %s: %d bytes (%v)", name, len(got), err)
		}
	}
	info := s("info", "s3://s3cmd-bkt/dir/big.bin")
	if !strings.Contains(info, "File size: "+strconv.Itoa(len(big))) {
		t.Fatalf("info:\n%s", info)
	}
	s("del", "--recursive", "--force", "s3://s3cmd-bkt/dir/")
	s("rb", "s3://s3cmd-bkt")
}
