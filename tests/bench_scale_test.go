package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// `cairn bench scale` in HTTP mode against a real gateway (SigV4, admin
// bucket stats), scaled down: thresholds lowered so that dynamic reshards
// run during two small rounds. Keeps the command behind
// docs/bench/scale-s3.json working.
func TestBenchScaleHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a bucket")
	}
	g := StartGateway(t, "--max-objs-per-shard", "300", "--reshard-interval", "100ms", "--bucket-index-shards", "2")
	out := filepath.Join(t.TempDir(), "scale-s3.json")
	cmd := exec.Command(cairnBin, "bench", "scale", "--endpoint", g.Endpoint, "--gateway-pid", strconv.Itoa(g.cmd.Process.Pid),
		"--gateway-dir", g.DataDir, "--targets", "1000,3000", "--clients", "4", "--rwld", "1s", "--list-repeats", "1",
		"--aging", "2s", "--out", out)
	cmd.Env = append(os.Environ(), "CAIRN_ACCESS_KEY="+g.AccessKey, "CAIRN_SECRET_KEY="+g.SecretKey)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bench scale: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Mode     string  `json:"mode"`
		Done     bool    `json:"done"`
		Objects  uint64  `json:"objects"`
		Reshards int     `json:"reshards"`
		MaxRSS   uint64  `json:"max_rss_bytes"`
		Aged     float64 `json:"aged_ratio"`
		Walk     *struct {
			Complete bool  `json:"complete"`
			Keys     int64 `json:"keys"`
		} `json:"walk"`
		Rounds []struct {
			Complete bool               `json:"complete"`
			Shards   int                `json:"shards"`
			RWLD     map[string]any     `json:"rwld"`
			List     map[string]float64 `json:"list"`
			Disk     map[string]any     `json:"disk"`
		} `json:"rounds"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Mode != "http" || !r.Done || r.Objects == 0 || r.Reshards == 0 || r.MaxRSS == 0 || r.Aged <= 0 || len(r.Rounds) != 2 ||
		r.Walk == nil || !r.Walk.Complete || r.Walk.Keys < 3000 {
		t.Fatalf("report %s", b)
	}
	for _, rd := range r.Rounds {
		if !rd.Complete || len(rd.RWLD) != 4 || rd.List["continuation_ms"] <= 0 || rd.Disk["total_bytes"] == nil {
			t.Fatalf("round %+v", rd)
		}
	}
	if r.Rounds[1].Shards <= 2 {
		t.Fatalf("no reshard grew the bucket: %d shards", r.Rounds[1].Shards)
	}
}
