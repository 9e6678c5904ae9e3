// Package config holds the gateway's options: one definition per option,
// bound to a flag, a YAML key and a CAIRN_<NAME> environment variable of the
// same name. Precedence: flag > environment > YAML file > default.
package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is everything `cairn serve` reads.
type Config struct {
	DataDir string
	Listen  string
	Backend string // embedded (default), null, or rados (needs a build with -tags rados)
	// Ceph cluster of the rados backend.
	CephConf       string
	CephUser       string
	CephPoolPrefix string
	Region         string // zonegroup name used in ARNs and event records
	Domain         string // enables virtual-host-style requests under this domain
	LogLevel       string

	BucketIndexShards int
	MaxObjsPerShard   int
	DynamicResharding bool
	MaxDynamicShards  int
	ReshardInterval   time.Duration
	ReshardCopyRate   int

	NotifShards       int
	NotifQueueSize    int64
	PersistMaxRetries int
	PersistTTL        time.Duration
	PersistSleep      time.Duration
	NotifLease        time.Duration
	NotifScan         time.Duration

	CacheSize int64 // embedded block cache; 0 = automatic

	LCDebugInterval time.Duration // length of a lifecycle day; 0 = real days
	LCMaxObjs       int
	LCRate          int

	GCMinWait       time.Duration
	ShutdownTimeout time.Duration
	MaxHeaderBytes  int
}

type option struct {
	name, help string
	def        string
	set        func(c *Config, v string) error
}

func intOpt(p func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return err
		}
		*p(c) = n
		return nil
	}
}

func sizeOpt(p func(*Config) *int64) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := ParseSize(v)
		if err != nil {
			return err
		}
		*p(c) = n
		return nil
	}
}

func durOpt(p func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		if n, err := strconv.Atoi(v); err == nil { // bare numbers are seconds, as in RGW
			*p(c) = time.Duration(n) * time.Second
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		*p(c) = d
		return nil
	}
}

func strOpt(p func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error { *p(c) = v; return nil }
}

func boolOpt(p func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return err
		}
		*p(c) = b
		return nil
	}
}

var options = []option{
	{"data-dir", "data directory of the embedded backend", "./data", strOpt(func(c *Config) *string { return &c.DataDir })},
	{"listen", "address to serve S3, SNS and admin on", "127.0.0.1:7480", strOpt(func(c *Config) *string { return &c.Listen })},
	{"backend", "object layer backend: embedded, rados (a Ceph cluster; binary built with -tags rados), or null (data discarded, for benchmarks)", "embedded", strOpt(func(c *Config) *string { return &c.Backend })},
	{"ceph-conf", "ceph.conf of the cluster (backend rados)", "", strOpt(func(c *Config) *string { return &c.CephConf })},
	{"ceph-user", "Ceph client name without \"client.\" (backend rados)", "admin", strOpt(func(c *Config) *string { return &c.CephUser })},
	{"ceph-pool-prefix", "prefix of every pool name, so several independent gateways share a cluster (backend rados)", "", strOpt(func(c *Config) *string { return &c.CephPoolPrefix })},
	{"region", "zonegroup/region name in ARNs and event records", "default", strOpt(func(c *Config) *string { return &c.Region })},
	{"domain", "domain for virtual-host-style bucket addressing (empty: path-style only)", "", strOpt(func(c *Config) *string { return &c.Domain })},
	{"log-level", "debug, info, warn or error", "info", strOpt(func(c *Config) *string { return &c.LogLevel })},
	{"bucket-index-shards", "index shards of new buckets (rgw_override_bucket_index_max_shards)", "11", intOpt(func(c *Config) *int { return &c.BucketIndexShards })},
	{"max-objs-per-shard", "objects per index shard that trigger dynamic resharding (rgw_max_objs_per_shard)", "100000", intOpt(func(c *Config) *int { return &c.MaxObjsPerShard })},
	{"dynamic-resharding", "reshard buckets automatically (rgw_dynamic_resharding)", "true", boolOpt(func(c *Config) *bool { return &c.DynamicResharding })},
	{"max-dynamic-shards", "upper bound for dynamic resharding (rgw_max_dynamic_shards)", "1999", intOpt(func(c *Config) *int { return &c.MaxDynamicShards })},
	{"reshard-interval", "how often the dynamic reshard check runs", "10s", durOpt(func(c *Config) *time.Duration { return &c.ReshardInterval })},
	{"reshard-copy-rate", "index entries per second a reshard copies (0 = unlimited); an uncapped copy starves foreground writes", "25000", intOpt(func(c *Config) *int { return &c.ReshardCopyRate })},
	{"notif-shards", "queue shards of new persistent topics (rgw_bucket_persistent_notif_num_shards)", "11", intOpt(func(c *Config) *int { return &c.NotifShards })},
	{"notif-queue-size", "capacity of one notification queue shard", "128MB", sizeOpt(func(c *Config) *int64 { return &c.NotifQueueSize })},
	{"topic-persistency-max-retries", "delivery attempts before an event expires, 0 = unlimited", "0", intOpt(func(c *Config) *int { return &c.PersistMaxRetries })},
	{"topic-persistency-time-to-live", "age at which an undelivered event expires, 0 = forever", "0", durOpt(func(c *Config) *time.Duration { return &c.PersistTTL })},
	{"topic-persistency-sleep-duration", "minimum wait between delivery attempts of one event, 0 = none", "0", durOpt(func(c *Config) *time.Duration { return &c.PersistSleep })},
	{"notif-lease", "how long a gateway owns a queue shard without renewing (a dead gateway's shards move after this)", "90s", durOpt(func(c *Config) *time.Duration { return &c.NotifLease })},
	{"notif-scan-interval", "how often delivery reads the queue registry, heartbeats and rebalances shards", "30s", durOpt(func(c *Config) *time.Duration { return &c.NotifScan })},
	{"cache-size", "block cache of the embedded backend (0 = an eighth of RAM, 64 MiB to 2 GiB); index lookups miss to disk when it is smaller than the hot index and filter blocks", "0", sizeOpt(func(c *Config) *int64 { return &c.CacheSize })},
	{"lc-debug-interval", "length of a lifecycle day for tests (rgw_lc_debug_interval); 0 = real days", "0", durOpt(func(c *Config) *time.Duration { return &c.LCDebugInterval })},
	{"lc-max-objs", "lifecycle registry shards, leased by gateways (rgw_lc_max_objs)", "32", intOpt(func(c *Config) *int { return &c.LCMaxObjs })},
	{"lc-rate", "objects per second a gateway's lifecycle pass examines (0 = unlimited); pacing keeps foreground latency", "1000", intOpt(func(c *Config) *int { return &c.LCRate })},
	{"gc-min-wait", "delay before replaced object data is collected (rgw_gc_obj_min_wait)", "30s", durOpt(func(c *Config) *time.Duration { return &c.GCMinWait })},
	{"shutdown-timeout", "how long SIGTERM waits for in-flight requests", "30s", durOpt(func(c *Config) *time.Duration { return &c.ShutdownTimeout })},
	{"max-header-bytes", "request header limit (larger: 431 RequestHeaderSectionTooLarge)", "65536", intOpt(func(c *Config) *int { return &c.MaxHeaderBytes })},
}

// EnvName is the environment variable of an option.
func EnvName(opt string) string {
	return "CAIRN_" + strings.ToUpper(strings.ReplaceAll(opt, "-", "_"))
}

// Load builds a Config from args (flags, including --config FILE), the
// environment and defaults, and validates it.
func Load(args []string, getenv func(string) string) (*Config, error) {
	c := &Config{}
	for _, o := range options {
		if err := o.set(c, o.def); err != nil {
			panic(fmt.Sprintf("config: bad default for %s: %v", o.name, err))
		}
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgFile := fs.String("config", getenv("CAIRN_CONFIG"), "YAML configuration file")
	flagVals := map[string]*string{}
	for _, o := range options {
		flagVals[o.name] = fs.String(o.name, "", fmt.Sprintf("%s (default %q, env %s)", o.help, o.def, EnvName(o.name)))
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	var errs []error
	if *cfgFile != "" {
		raw, err := os.ReadFile(*cfgFile)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", *cfgFile, err)
		}
		known := map[string]option{}
		for _, o := range options {
			known[o.name] = o
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			o, ok := known[k]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: unknown option %q", *cfgFile, k))
				continue
			}
			if err := o.set(c, fmt.Sprint(m[k])); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", *cfgFile, k, err))
			}
		}
	}
	for _, o := range options {
		if v := getenv(EnvName(o.name)); v != "" {
			if err := o.set(c, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", EnvName(o.name), err))
			}
		}
	}
	for _, o := range options {
		if v := *flagVals[o.name]; v != "" {
			if err := o.set(c, v); err != nil {
				errs = append(errs, fmt.Errorf("--%s: %w", o.name, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, c.Validate()
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.DataDir != "", "data-dir must not be empty")
	check(c.Listen != "", "listen must not be empty")
	check(c.Backend == "embedded" || c.Backend == "null" || c.Backend == "rados", "backend %q: want embedded, rados or null", c.Backend)
	check(c.Backend != "rados" || c.CephConf != "", "backend rados needs ceph-conf")
	check(c.BucketIndexShards >= 1 && c.BucketIndexShards <= 65521, "bucket-index-shards %d outside 1..65521", c.BucketIndexShards)
	check(c.MaxObjsPerShard >= 1, "max-objs-per-shard must be positive")
	check(c.MaxDynamicShards >= 1 && c.MaxDynamicShards <= 65521, "max-dynamic-shards %d outside 1..65521", c.MaxDynamicShards)
	check(c.ReshardCopyRate >= 0, "reshard-copy-rate %d is negative", c.ReshardCopyRate)
	check(c.NotifShards >= 1 && c.NotifShards <= 1024, "notif-shards %d outside 1..1024", c.NotifShards)
	check(c.NotifQueueSize >= 64<<10, "notif-queue-size must be at least 64KB")
	check(c.CacheSize == 0 || c.CacheSize >= 1<<20, "cache-size must be 0 (automatic) or at least 1MB")
	check(c.PersistMaxRetries >= 0, "topic-persistency-max-retries must not be negative")
	check(c.PersistTTL >= 0 && c.PersistSleep >= 0, "topic persistency durations must not be negative")
	check(c.LCDebugInterval >= 0 && c.LCRate >= 0, "lc-debug-interval and lc-rate must not be negative")
	check(c.LCMaxObjs >= 1 && c.LCMaxObjs <= 65521, "lc-max-objs %d outside 1..65521", c.LCMaxObjs)
	check(c.MaxHeaderBytes >= 8<<10, "max-header-bytes must be at least 8KB")
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log-level %q: want debug, info, warn or error", c.LogLevel))
	}
	return errors.Join(errs...)
}

// ParseSize parses 128MB, 64KiB, 1G or a plain byte count.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(strings.ToUpper(s))
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(s, u.suf) {
			mult, s = u.m, strings.TrimSuffix(s, u.suf)
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

// Options lists option names, defaults and help (for docs and usage).
func Options() [][3]string {
	out := make([][3]string, len(options))
	for i, o := range options {
		out[i] = [3]string{o.name, o.def, o.help}
	}
	return out
}
