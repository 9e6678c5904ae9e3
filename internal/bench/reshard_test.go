package bench

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"
)

// TestReshardSmoke runs a small fill with two dynamic reshards.
func TestReshardSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a bucket")
	}
	r, err := RunReshard(context.Background(), ReshardConfig{
		Dir: t.TempDir(), Objects: 6000, Clients: 8, InitialShards: 2, MaxObjsPerShard: 1000,
		CheckInterval: 20_000_000, ListShards: []int{3, 11}, ListKeys: 3000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Objects != 6000 || r.FinalNumObjects != 6000 || len(r.Reshards) == 0 || len(r.Listing) != 2 || r.Listing[1].Keys != 3000 {
		t.Fatalf("result %+v", r)
	}
	t.Log("\n" + r.String())
}

// TestReshardWorkload is the full benchmark, run by command:
//
//	CAIRN_BENCH_RESHARD_OUT=docs/bench/reshard.json CAIRN_BENCH_RESHARD_OBJECTS=2000000 \
//	  go test ./internal/bench -run TestReshardWorkload -timeout 60m -v
func TestReshardWorkload(t *testing.T) {
	out := os.Getenv("CAIRN_BENCH_RESHARD_OUT")
	if out == "" {
		t.Skip("set CAIRN_BENCH_RESHARD_OUT to run the reshard workload")
	}
	cfg := ReshardConfig{Dir: os.Getenv("CAIRN_BENCH_DIR")}
	if n, err := strconv.Atoi(os.Getenv("CAIRN_BENCH_RESHARD_OBJECTS")); err == nil {
		cfg.Objects = n
	}
	if n, err := strconv.Atoi(os.Getenv("CAIRN_BENCH_RESHARD_RATE")); err == nil {
		cfg.Rate = n // open-loop fill at n PUT/s
	}
	if n, err := strconv.Atoi(os.Getenv("CAIRN_BENCH_RESHARD_CLIENTS")); err == nil {
		cfg.Clients = n
	}
	if n, err := strconv.Atoi(os.Getenv("CAIRN_BENCH_RESHARD_MAX_OBJS")); err == nil {
		cfg.MaxObjsPerShard = n // a huge value: the same fill without reshards, for the noise floor
	}
	if n, err := strconv.Atoi(os.Getenv("CAIRN_BENCH_RESHARD_COPY_LIMIT")); err == nil {
		cfg.CopyRateLimit = n
	}
	if n, err := strconv.Atoi(os.Getenv("CAIRN_BENCH_RESHARD_COPY_WRITERS")); err == nil {
		cfg.CopyWriters = n
	}
	if n, err := strconv.Atoi(os.Getenv("CAIRN_BENCH_RESHARD_COPY_MIN")); err == nil {
		cfg.CopyRateMin = n
	}
	cfg.CopyRateAdaptive = os.Getenv("CAIRN_BENCH_RESHARD_ADAPTIVE") != ""
	cfg.ForegroundSignal = os.Getenv("CAIRN_BENCH_RESHARD_FG") != ""
	cfg.NoEarlyReplay = os.Getenv("CAIRN_BENCH_RESHARD_NO_EARLY") != ""
	if os.Getenv("CAIRN_BENCH_RESHARD_NOLIST") != "" {
		cfg.NoList = true
	}
	r, err := RunReshard(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + r.String())
	b, _ := json.MarshalIndent(r, "", " ")
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCopyRate: CAIRN_BENCH_COPY_ENTRIES=1000000 go test ./internal/bench -run TestCopyRate -v
func TestCopyRate(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("CAIRN_BENCH_COPY_ENTRIES"))
	if err != nil {
		n = 20000
		if testing.Short() {
			t.Skip("fills an index")
		}
	}
	r, err := CopyRate(context.Background(), CopyRateConfig{Dir: os.Getenv("CAIRN_BENCH_DIR"), Entries: n,
		NoEarlyReplay: os.Getenv("CAIRN_BENCH_COPY_NO_EARLY") != ""})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *r)
}
