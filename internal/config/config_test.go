package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := Load(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:7480" || c.DataDir != "./data" || c.BucketIndexShards != 11 ||
		c.MaxObjsPerShard != 100000 || !c.DynamicResharding || c.MaxDynamicShards != 1999 ||
		c.NotifShards != 11 || c.NotifQueueSize != 128<<20 || c.PersistTTL != 0 || !c.TopicRequirePublishPolicy ||
		!c.ReshardCopyLoad || !c.HugePages {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "c.yaml")
	os.WriteFile(f, []byte("notif-shards: 5\nbucket-index-shards: 7\nmax-objs-per-shard: 10\n"), 0o600)
	c, err := Load([]string{"--config", f, "--bucket-index-shards", "13"},
		env(map[string]string{"CAIRN_BUCKET_INDEX_SHARDS": "3", "CAIRN_MAX_OBJS_PER_SHARD": "20", "CAIRN_TOPIC_PERSISTENCY_TIME_TO_LIVE": "90"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.NotifShards != 5 || c.BucketIndexShards != 13 || c.MaxObjsPerShard != 20 || c.PersistTTL != 90*time.Second {
		t.Fatalf("precedence: %+v", c)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "c.yaml")
	os.WriteFile(f, []byte("bogus: 1\n"), 0o600)
	_, err := Load([]string{"--config", f, "--notif-shards", "0", "--log-level", "loud"}, env(nil))
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{"unknown option \"bogus\""} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	_, err = Load([]string{"--notif-shards", "0", "--log-level", "loud", "--malloc", "tcmalloc"}, env(nil))
	if err == nil || !strings.Contains(err.Error(), "notif-shards") || !strings.Contains(err.Error(), "log-level") || !strings.Contains(err.Error(), "malloc") {
		t.Fatalf("want all three problems, got %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"128MB": 128 << 20, "64KiB": 64 << 10, "1g": 1 << 30, "4096": 4096} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v", in, got, err)
		}
	}
	if _, err := ParseSize("lots"); err == nil {
		t.Error("want error")
	}
}

func TestRadosBackend(t *testing.T) {
	if _, err := Load([]string{"--backend", "rados"}, env(nil)); err == nil || !strings.Contains(err.Error(), "ceph-conf") {
		t.Fatalf("rados without ceph-conf: %v", err)
	}
	c, err := Load([]string{"--backend", "rados", "--ceph-conf", "/etc/ceph/ceph.conf"}, env(map[string]string{"CAIRN_CEPH_USER": "gw"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.CephConf != "/etc/ceph/ceph.conf" || c.CephUser != "gw" || c.CephPoolPrefix != "" {
		t.Fatalf("rados options: %+v", c)
	}
	if _, err := Load([]string{"--backend", "ramdisk"}, env(nil)); err == nil {
		t.Fatal("unknown backend accepted")
	}
}

func TestLimitsAndTLSOptions(t *testing.T) {
	c, err := Load(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.ShardCap() != 1999 || c.MaxBuckets != 1000 || c.RequestBodyIdleTimeout != 30*time.Second ||
		c.ReadHeaderTimeout != 30*time.Second || c.IdleTimeout != 60*time.Second || c.AllowInsecureEndpointSecrets || c.TLSCert != "" {
		t.Fatalf("defaults: %+v", c)
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "c.yaml")
	os.WriteFile(f, []byte("tls-cert: /c.pem\ntls-key: /k.pem\nallow-insecure-endpoint-secrets: true\nmax-bucket-index-shards: 64\n"), 0o600)
	c, err = Load([]string{"--config", f, "--max-dynamic-shards", "500"}, env(map[string]string{"CAIRN_TLS_LISTEN": "127.0.0.1:7443", "CAIRN_MAX_BUCKETS": "0"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.TLSCert != "/c.pem" || c.TLSKey != "/k.pem" || c.TLSListen != "127.0.0.1:7443" || !c.AllowInsecureEndpointSecrets || c.ShardCap() != 64 || c.MaxBuckets != 0 {
		t.Fatalf("set: %+v", c)
	}
	_, err = Load([]string{"--tls-cert", "/c.pem", "--max-bucket-index-shards", "70000", "--request-body-idle-timeout", "0"}, env(nil))
	for _, want := range []string{"tls-key", "max-bucket-index-shards", "request-body-idle-timeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want a %s problem, got %v", want, err)
		}
	}
	if _, err := Load([]string{"--tls-listen", ":7443"}, env(nil)); err == nil || !strings.Contains(err.Error(), "tls-listen") {
		t.Errorf("tls-listen without a certificate: %v", err)
	}
}

func TestBoolWithSeparateValueHints(t *testing.T) {
	_, err := Load([]string{"--dynamic-resharding", "false"}, env(nil))
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--dynamic-resharding=false") {
		t.Fatalf("Load = %v, want a usage error naming --dynamic-resharding=false", err)
	}
	c, err := Load([]string{"--dynamic-resharding=false"}, env(nil))
	if err != nil || c.DynamicResharding {
		t.Fatalf("Load = %+v, %v", c, err)
	}
}

func TestStorageClasses(t *testing.T) {
	c, err := Load([]string{"--storage-classes", "STANDARD_IA, GLACIER=/mnt/cold"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseStorageClasses(c.StorageClasses)
	if err != nil || len(got) != 2 || got[0] != (StorageClassSpec{Name: "STANDARD_IA"}) || got[1] != (StorageClassSpec{Name: "GLACIER", Location: "/mnt/cold"}) {
		t.Fatalf("parsed %+v, %v", got, err)
	}
	for _, bad := range []string{"standard_ia", "STANDARD", "COLD,COLD", "COLD=", "A-B"} {
		if _, err := Load([]string{"--storage-classes", bad}, env(nil)); err == nil || !strings.Contains(err.Error(), "storage-classes") {
			t.Errorf("%q: err %v, want a storage-classes error", bad, err)
		}
	}
}

// Deferred commits are refused on rados: a dead gateway's intents wait
// for its restart there.
func TestCommitLingerNeedsEmbedded(t *testing.T) {
	if _, err := Load([]string{"--notif-commit-linger", "50ms"}, env(nil)); err != nil {
		t.Fatalf("embedded: %v", err)
	}
	_, err := Load([]string{"--notif-commit-linger", "50ms", "--backend", "rados", "--ceph-conf", "/etc/ceph/ceph.conf"}, env(nil))
	if err == nil || !strings.Contains(err.Error(), "notif-commit-linger") {
		t.Fatalf("rados: %v", err)
	}
	// The default ("auto") defers on embedded and commits before the reply on rados.
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, DefaultCommitLinger},
		{[]string{"--backend", "rados", "--ceph-conf", "/etc/ceph/ceph.conf"}, 0},
		{[]string{"--notif-commit-linger", "0"}, 0},
		{[]string{"--notif-commit-linger", "auto", "--backend", "rados", "--ceph-conf", "/etc/ceph/ceph.conf"}, 0},
	} {
		c, err := Load(tc.args, env(nil))
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if c.NotifCommitLinger != tc.want {
			t.Errorf("%v: linger %v, want %v", tc.args, c.NotifCommitLinger, tc.want)
		}
	}
}

// The list spacing of busy shards: defaults as delivery's, set by flag or
// environment, bounds checked.
func TestWakeFlags(t *testing.T) {
	c, err := Load(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.NotifWakeBatch != 32 || c.NotifMaxWakeGap != 200*time.Millisecond {
		t.Errorf("defaults %d %v, want 32 200ms", c.NotifWakeBatch, c.NotifMaxWakeGap)
	}
	c, err = Load([]string{"--notif-wake-batch", "96"}, env(map[string]string{"CAIRN_NOTIF_MAX_WAKE_GAP": "400ms"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.NotifWakeBatch != 96 || c.NotifMaxWakeGap != 400*time.Millisecond {
		t.Errorf("set %d %v, want 96 400ms", c.NotifWakeBatch, c.NotifMaxWakeGap)
	}
	for _, args := range [][]string{{"--notif-wake-batch", "0"}, {"--notif-max-wake-gap", "5ms"}, {"--notif-max-wake-gap", "1m"}} {
		if _, err := Load(args, env(nil)); err == nil || !strings.Contains(err.Error(), args[0][2:]) {
			t.Errorf("%v: %v, want an error naming it", args, err)
		}
	}
}

// gomaxprocs: 0 keeps the runtime's default, a count sets it, a negative
// count is refused.
func TestGOMAXPROCSOption(t *testing.T) {
	c, err := Load([]string{"--gomaxprocs", "4"}, env(nil))
	if err != nil || c.GOMAXPROCS != 4 {
		t.Fatalf("--gomaxprocs 4: %v, %d", err, c.GOMAXPROCS)
	}
	if c, err = Load(nil, env(nil)); err != nil || c.GOMAXPROCS != 0 {
		t.Fatalf("default: %v, %d", err, c.GOMAXPROCS)
	}
	if _, err = Load([]string{"--gomaxprocs", "-1"}, env(nil)); err == nil || !strings.Contains(err.Error(), "gomaxprocs") {
		t.Fatalf("--gomaxprocs -1: %v", err)
	}
}

// The runtime profiles name code and data: pprof-listen takes loopback only.
func TestPprofListenLoopbackOnly(t *testing.T) {
	for _, a := range []string{"127.0.0.1:6061", "[::1]:6061", "localhost:0"} {
		c, err := Load([]string{"--pprof-listen", a}, env(nil))
		if err != nil || c.PprofListen != a {
			t.Errorf("%s: %v", a, err)
		}
	}
	for _, a := range []string{"0.0.0.0:6061", ":6061", "10.1.2.3:6061", "127.0.0.1"} {
		if _, err := Load([]string{"--pprof-listen", a}, env(nil)); err == nil || !strings.Contains(err.Error(), "pprof-listen") {
			t.Errorf("%s: accepted (%v)", a, err)
		}
	}
}

func TestGOGC(t *testing.T) {
	c, err := Load(nil, env(nil))
	if err != nil || c.GOGC != 0 {
		t.Fatalf("default: %d %v", c.GOGC, err)
	}
	if c, err = Load(nil, env(map[string]string{"CAIRN_GOGC": "400"})); err != nil || c.GOGC != 400 {
		t.Fatalf("CAIRN_GOGC: %d %v", c.GOGC, err)
	}
	if _, err := Load([]string{"--gogc", "-1"}, env(nil)); err == nil || !strings.Contains(err.Error(), "gogc") {
		t.Fatalf("negative: %v", err)
	}
}

// The collector's growth: the option, else GOGC from the environment
// (left to the runtime), else DefaultGOGC.
func TestGCPercent(t *testing.T) {
	for _, c := range []struct {
		opt  int
		env  string
		want int
	}{{0, "", DefaultGOGC}, {0, "150", 0}, {0, "off", 0}, {200, "", 200}, {200, "150", 200}} {
		if got := (&Config{GOGC: c.opt}).GCPercent(c.env); got != c.want {
			t.Errorf("gogc %d, GOGC %q: %d, want %d", c.opt, c.env, got, c.want)
		}
	}
	if DefaultGOGC <= 100 {
		t.Errorf("DefaultGOGC %d: the runtime's own is 100", DefaultGOGC)
	}
}

// The soft memory limit: the option, else GOMEMLIMIT from the environment
// (left to the runtime), else DefaultGoMemoryLimit; the option parses sizes.
func TestMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		opt  int64
		env  string
		want int64
	}{{0, "", DefaultGoMemoryLimit}, {0, "2GiB", 0}, {0, "off", 0}, {1 << 30, "", 1 << 30}, {1 << 30, "2GiB", 1 << 30}} {
		if got := (&Config{GoMemoryLimit: c.opt}).MemoryLimit(c.env); got != c.want {
			t.Errorf("go-memory-limit %d, GOMEMLIMIT %q: %d, want %d", c.opt, c.env, got, c.want)
		}
	}
	cfg, err := Load([]string{"--go-memory-limit", "3G"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GoMemoryLimit != 3<<30 || cfg.MemoryLimit("") != 3<<30 {
		t.Fatalf("--go-memory-limit 3G: %d", cfg.GoMemoryLimit)
	}
}

// TestMemtableSize: the option reaches the config, defaults to pebble's
// 64 MiB as the embedded store's own default, and is bounded by pebble's
// limits (below 4 GiB) and a floor.
func TestMemtableSize(t *testing.T) {
	c, err := Load(nil, env(nil))
	if err != nil || c.MemTableSize != 64<<20 {
		t.Fatalf("default %d, %v", c.MemTableSize, err)
	}
	c, err = Load([]string{"--memtable-size", "256MiB"}, env(nil))
	if err != nil || c.MemTableSize != 256<<20 {
		t.Fatalf("256MiB: %d, %v", c.MemTableSize, err)
	}
	for _, bad := range []string{"100KiB", "4GiB", "0"} {
		if _, err := Load([]string{"--memtable-size", bad}, env(nil)); err == nil || !strings.Contains(err.Error(), "memtable-size") {
			t.Errorf("--memtable-size %s: %v", bad, err)
		}
	}
}

// TestMmapReads: on by default (the embedded store reads its tables
// through mappings); off for an RSS that shows no table pages.
func TestMmapReads(t *testing.T) {
	c, err := Load(nil, env(nil))
	if err != nil || !c.MmapReads {
		t.Fatalf("default %v, %v", c.MmapReads, err)
	}
	c, err = Load([]string{"--mmap-reads=false"}, env(nil))
	if err != nil || c.MmapReads {
		t.Fatalf("--mmap-reads=false: %v, %v", c.MmapReads, err)
	}
}
