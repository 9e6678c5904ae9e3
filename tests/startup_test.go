package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A busy port fails the start before a new data directory is made: no
// half-initialised directory, no keys printed for it.
func TestStartupBusyPortLeavesNoDataDir(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cairnBin, "serve", "--data-dir", dir, "--listen", l.Addr().String())
	cmd.Env = append(os.Environ(), "CAIRN_ACCESS_KEY=", "CAIRN_SECRET_KEY=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("serve on a busy port succeeded:\n%s", out)
	}
	if !strings.Contains(string(out), "address already in use") {
		t.Errorf("error does not name the cause:\n%s", out)
	}
	if strings.Contains(string(out), "CAIRN_SECRET_KEY") {
		t.Errorf("keys printed for a data dir that failed to start:\n%s", out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(dir)
		t.Errorf("data dir left behind (%v): %d entries", err, len(entries))
	}
}

// Keys in the environment only seed a new data directory; other keys for
// an initialised one are ignored with a warning.
func TestStartupWarnsIgnoredKeys(t *testing.T) {
	g := StartGateway(t)
	if strings.Contains(g.Log.String(), "are ignored") {
		t.Fatalf("warned on first start:\n%s", g.Log.String())
	}
	g.Stop()
	g.Start() // same keys: nothing to say
	if strings.Contains(g.Log.String(), "are ignored") {
		t.Fatalf("warned although the keys match:\n%s", g.Log.String())
	}
	g.Stop()
	g.AccessKey, g.SecretKey = "OTHERKEY000000000000", "othersecret00000000000000000000000000000"
	g.Start()
	if !strings.Contains(g.Log.String(), `"level":"WARN"`) || !strings.Contains(g.Log.String(), "CAIRN_ACCESS_KEY/CAIRN_SECRET_KEY are ignored") {
		t.Fatalf("no warning for ignored keys:\n%s", g.Log.String())
	}
}

// A data directory seeded with keys from the environment gets no
// admin.credentials (only generated keys are written there); the start-up
// log line and /metrics name the build.
func TestStartupEnvKeysAndBuildInfo(t *testing.T) {
	g := StartGateway(t)
	if _, err := os.Stat(filepath.Join(g.DataDir, "admin.credentials")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("admin.credentials written for keys from the environment: %v", err)
	}
	out, err := exec.Command(cairnBin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var bi struct {
		Version   string `json:"version"`
		Commit    string `json:"commit"`
		GoVersion string `json:"go_version"`
	}
	if err := json.Unmarshal(out, &bi); err != nil || bi.Version == "" || bi.Commit == "" || bi.GoVersion == "" {
		t.Fatalf("cairn version --json: %q (%v)", out, err)
	}
	var started bool
	for _, line := range strings.Split(g.Log.String(), "\n") {
		if strings.Contains(line, `"msg":"cairn serving"`) {
			started = true
			for _, kv := range []string{`"version":"` + bi.Version + `"`, `"commit":"` + bi.Commit + `"`, `"go_version":"` + bi.GoVersion + `"`} {
				if !strings.Contains(line, kv) {
					t.Errorf("start-up line lacks %s: %s", kv, line)
				}
			}
		}
	}
	if !started {
		t.Fatalf("no start-up line:\n%s", g.Log.String())
	}
	res, err := http.Get(g.Endpoint + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	want := fmt.Sprintf(`cairn_build_info{commit=%q,goversion=%q,version=%q} 1`, bi.Commit, bi.GoVersion, bi.Version)
	if !strings.Contains(string(body), want) {
		t.Fatalf("/metrics lacks %s", want)
	}
}

// TestFreshDataDirCost measures what README documents: the time from
// exec to /healthz on a new data directory and its size on disk.
func TestFreshDataDirCost(t *testing.T) {
	start := time.Now()
	g := StartGateway(t)
	ready := time.Since(start)
	g.Stop()
	var apparent, allocated int64
	_ = filepath.Walk(g.DataDir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			apparent += fi.Size()
			allocated += diskUsage(fi)
		}
		return nil
	})
	t.Logf("fresh data dir: ready in %v; %.1f MiB apparent, %.1f MiB allocated", ready.Round(time.Millisecond),
		float64(apparent)/(1<<20), float64(allocated)/(1<<20))
	// README: about 70 MiB allocated (the WAL preallocated for a 64 MiB
	// memtable), apparent size near zero, ready in well under a second
	// (bounds loose for a loaded machine).
	if allocated > 128<<20 || apparent > 8<<20 {
		t.Errorf("fresh data dir larger than README says: %d allocated, %d apparent", allocated, apparent)
	}
	if ready > 10*time.Second {
		t.Errorf("fresh data dir took %v to become ready", ready)
	}
}
