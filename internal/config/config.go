// Package config holds the gateway's options: one definition per option,
// bound to a flag, a YAML key and a CAIRN_<NAME> environment variable of the
// same name. Precedence: flag > environment > YAML file > default.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
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
	Malloc         string // C allocator: auto, jemalloc or system (cmd/cairn/malloc_linux.go)
	// HugePages has a preloaded jemalloc back its memory with transparent
	// huge pages (MALLOC_CONF thp:always; cmd/cairn/malloc_linux.go).
	HugePages bool
	// GOMAXPROCS > 0 sets the Go processors (0: the runtime's default).
	GOMAXPROCS int
	// GOGC > 0 sets the Go collector's heap growth percentage; 0 leaves
	// it to GCPercent's default (see there).
	GOGC int
	// GoMemoryLimit > 0 is the Go runtime's soft memory limit in bytes;
	// 0 leaves it to MemoryLimit's default (see there).
	GoMemoryLimit int64

	BucketIndexShards int
	// BucketIndexView: new buckets keep an ordered index view where the
	// backend has views (embedded), so listings read one range.
	BucketIndexView   bool
	MaxObjsPerShard   int
	DynamicResharding bool
	MaxDynamicShards  int
	ReshardInterval   time.Duration
	ReshardCopyRate   int
	// ReshardCopyAdaptive paces the copy by foreground write latency
	// (between 5,000/s and ReshardCopyRate).
	ReshardCopyAdaptive bool
	// ReshardCopyLoad copies a reshard's entries as a bulk load of sorted
	// tables on the embedded store (no WAL, memtable or compaction), in
	// key-range chunks with the logged writes of loaded ranges replayed
	// between them.
	ReshardCopyLoad bool

	NotifShards       int
	NotifQueueSize    int64
	PersistMaxRetries int
	PersistTTL        time.Duration
	PersistSleep      time.Duration
	NotifLease        time.Duration
	NotifScan         time.Duration
	// NotifCommitLinger > 0 answers a notified write once its link (with
	// the event's intent) is durable and commits the event after, batched
	// per queue shard for up to this long; 0 commits before the reply.
	// "auto" (the default) is DefaultCommitLinger on the embedded backend
	// and 0 on rados, where only the writing gateway resolves its intents.
	NotifCommitLinger time.Duration
	// NotifPushPipeline bounds the HTTP POSTs a queue shard's delivery
	// writes on one connection before reading their answers.
	NotifPushPipeline int
	// NotifWakeBatch and NotifMaxWakeGap set how a busy queue shard's
	// lists are spaced (delivery.Config.WakeBatch, MaxWakeGap): larger
	// means fewer store ops per event and a longer delivery lag.
	NotifWakeBatch  int
	NotifMaxWakeGap time.Duration
	// TopicRequirePublishPolicy refuses attaching another user's topic to
	// a bucket unless the topic's Policy allows sns:Publish to the caller.
	TopicRequirePublishPolicy bool
	// Notification wire format and configuration dialect (see
	// docs/design/notifications-format.md).
	NotifEventSource      string
	NotifKafkaCompression string
	NotifConfigMode       string // aws (replace on PUT) or rgw (merge by Id)

	CacheSize int64 // embedded block cache; 0 = automatic
	// ValueSeparation: values of at least this size go to the embedded
	// store's blob files, out of compactions; 0 = off.
	ValueSeparation int64
	// CompactionConcurrency: the embedded store's most concurrent compactions.
	CompactionConcurrency int
	// MaxOpenFiles: sstables the embedded store keeps open; 0 = automatic.
	MaxOpenFiles int
	// MemTableSize: the embedded store's memtable; 0 = its default.
	MemTableSize int64
	// MmapReads: the embedded store reads its tables through mappings.
	MmapReads bool

	// StorageClasses are the storage classes besides STANDARD, each with a
	// data pool of its own: NAME[=LOCATION],... (ParseStorageClasses).
	StorageClasses string

	LCDebugInterval time.Duration // length of a lifecycle day; 0 = real days
	LCMaxObjs       int
	LCRate          int
	// LCTransitionRate bounds the bytes per second a gateway's lifecycle
	// transitions copy; 0 = unlimited.
	LCTransitionRate int64
	// LCTransitionBusyRate replaces it while the gateway has S3 requests
	// in flight; 0 = no separate rate.
	LCTransitionBusyRate int64

	GCMinWait time.Duration
	// InlineMax: PUT bodies of at most this many bytes (default class,
	// unencrypted) live in their index entry, not a data object.
	InlineMax int64
	// The orphan scan (docs/design/orphans.md): how often one gateway of
	// the cluster runs it (0 = never) and how old data must be.
	OrphanScanInterval time.Duration
	OrphanMinAge       time.Duration
	OrphanScanRate     int
	ShutdownTimeout    time.Duration
	MaxHeaderBytes     int

	// Limits and hostile-client defences (README "Limits and TLS").
	MaxBucketIndexShards   int // cap on x-cairn-bucket-index-shards; 0 = MaxDynamicShards
	MaxBuckets             int // buckets per user unless the user record says otherwise; 0 = unlimited
	RequestBodyIdleTimeout time.Duration
	ReadHeaderTimeout      time.Duration
	IdleTimeout            time.Duration
	// TLS: with TLSCert and TLSKey, HTTPS is served on TLSListen beside
	// plain HTTP on Listen, or on Listen alone when TLSListen is empty.
	TLSCert   string
	TLSKey    string
	TLSListen string
	// AllowInsecureEndpointSecrets accepts topic credentials over plain
	// HTTP (rgw_allow_notification_secrets_in_cleartext).
	AllowInsecureEndpointSecrets bool

	// Server-side encryption (README "Encryption", docs/format/kms-keyring.md).
	KMSKeyring       string // key file of the local keyring; "" = <data-dir>/kms.keyring
	KMSMasterKey     string // base64 of 32 bytes: the default key instead of the file's
	KMSKeys          string // id=<base64 32 bytes>,... (rgw_crypt_s3_kms_encryption_keys)
	KMSDefaultKey    string // key id SSE-S3 uses; "" = cairn-default
	CryptRequireTLS  bool   // SSE-C only over HTTPS (rgw_crypt_require_ssl)
	EncryptByDefault bool   // SSE-S3 for every new object that asks for no encryption

	// Key management (internal/kms; README "Encryption keys").
	KMSBackend     string // keyring (default) or kmip
	KMIPEndpoint   string // host:port (rgw_crypt_kmip_addr)
	KMIPCA         string // PEM CA of the server (rgw_crypt_kmip_ca_path)
	KMIPCert       string // PEM client certificate (rgw_crypt_kmip_client_cert)
	KMIPKey        string // PEM client key (rgw_crypt_kmip_client_key)
	KMIPDefaultKey string // key id SSE-S3 and sealed secrets use
	KMIPTimeout    time.Duration
	// SecretsKey is the KMS key id that seals user secret keys and topic
	// credentials at rest ("" = the backend's default key).
	SecretsKey string
	// /metrics access (README "Metrics"). By default a scrape needs an
	// admin's SigV4 signature or the bearer token; MetricsListen serves
	// it on its own listener instead (open there unless a token is set).
	MetricsToken        string
	MetricsTokenFile    string
	MetricsListen       string
	MetricsPublic       bool
	MetricsTenantLabels bool // keep topic/bucket labels (else summed away)
	// PprofListen serves net/http/pprof on a loopback address (profiling a
	// benchmark's gateway); "" = off.
	PprofListen string

	// Quotas, rate limits and the usage log (README "Quotas, rate limits
	// and usage"). Default quotas: -1 = none.
	QuotaStatsTTL                time.Duration
	UserDefaultQuotaMaxObjects   int64
	UserDefaultQuotaMaxSize      int64
	BucketDefaultQuotaMaxObjects int64
	BucketDefaultQuotaMaxSize    int64
	RateLimitInterval            time.Duration
	UsageLog                     bool
	UsageFlushInterval           time.Duration
	// Bucket logging: the roll time of configurations that set none.
	BucketLoggingObjRollTime time.Duration
}

// MinMetricsTokenLen is the shortest bearer token accepted for /metrics.
const MinMetricsTokenLen = 16

// DefaultGOGC is the collector's heap growth when neither the gogc
// option nor the GOGC environment variable sets it. The gateway's live Go
// heap is small (the store's caches and memtables are off it), so the
// runtime's 100 collects several times a second under load: at 400 a
// plain 4 KiB PUT cost ~10 % less gateway CPU and a 30M-object store's
// RSS grew 3 % (docs/bench/notify-issue25.md, "A quiet matrix in stop 38").
const DefaultGOGC = 400

// DefaultGoMemoryLimit is the Go runtime's soft memory limit when
// neither the go-memory-limit option nor GOMEMLIMIT sets it. At
// DefaultGOGC the heap may grow to 5x what is live, and a large reshard
// holds hundreds of MiB live for minutes (its target writers, the log
// records it reads and defers): a 30M-object bucket's third reshard took
// the RSS from 3.1 to 4.5 GiB. The limit caps that growth, not the live
// heap (~100-500 MiB in those runs): near it the collector runs more
// often (docs/bench/scale.md, "Stop 44").
const DefaultGoMemoryLimit = 1536 << 20

// MemoryLimit is what the gateway passes to debug.SetMemoryLimit, 0 for
// nothing: the go-memory-limit option when set, else nothing when the
// GOMEMLIMIT environment variable is set (envLimit; the runtime applied
// it), else DefaultGoMemoryLimit.
func (c *Config) MemoryLimit(envLimit string) int64 {
	return runtimeSetting(c.GoMemoryLimit, envLimit, DefaultGoMemoryLimit)
}

// GCPercent is what the gateway passes to debug.SetGCPercent, 0 for
// nothing: the gogc option when set, else nothing when the GOGC
// environment variable is set (envGOGC, the runtime applied it), else
// DefaultGOGC.
func (c *Config) GCPercent(envGOGC string) int {
	return runtimeSetting(c.GOGC, envGOGC, DefaultGOGC)
}

// runtimeSetting is a Go runtime setting to apply, 0 for none: the
// option when set (> 0), else none when the runtime's environment
// variable is set (it applied that), else def.
func runtimeSetting[T int | int64](opt T, env string, def T) T {
	switch {
	case opt > 0:
		return opt
	case env != "":
		return 0
	}
	return def
}

// ShardCap is the largest x-cairn-bucket-index-shards a user may ask for.
func (c *Config) ShardCap() int {
	if c.MaxBucketIndexShards > 0 {
		return c.MaxBucketIndexShards
	}
	return c.MaxDynamicShards
}

type option struct {
	name, help string
	def        string
	set        setter
}

// setter parses one option's text into a Config; kind names its type in
// `--help` (string, int, bool, duration, size).
type setter struct {
	kind string
	fn   func(c *Config, v string) error
}

func intOpt(p func(*Config) *int) setter {
	return setter{"int", func(c *Config, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		*p(c) = n
		return nil
	}}
}

func sizeOpt(p func(*Config) *int64) setter {
	return setter{"size", func(c *Config, v string) error {
		n, err := ParseSize(v)
		if err != nil {
			return err
		}
		*p(c) = n
		return nil
	}}
}

// limitOpt is a count or size limit where -1 means none.
func limitOpt(p func(*Config) *int64) setter {
	return setter{"size", func(c *Config, v string) error {
		if strings.TrimSpace(v) == "-1" {
			*p(c) = -1
			return nil
		}
		n, err := ParseSize(v)
		if err != nil {
			return err
		}
		*p(c) = n
		return nil
	}}
}

func durOpt(p func(*Config) *time.Duration) setter {
	return setter{"duration", func(c *Config, v string) error {
		d, err := ParseDuration(v)
		if err != nil {
			return err
		}
		*p(c) = d
		return nil
	}}
}

// lingerAuto marks notif-commit-linger "auto" until the backend is known.
const lingerAuto = -1

// DefaultCommitLinger is notif-commit-linger's "auto" on the embedded
// backend: long enough to batch an 11-shard topic's commits at a few
// hundred PUT/s, short against delivery's own lag.
const DefaultCommitLinger = 50 * time.Millisecond

var lingerOpt = setter{"duration", func(c *Config, v string) error {
	if v == "auto" {
		c.NotifCommitLinger = lingerAuto
		return nil
	}
	d, err := ParseDuration(v)
	if err != nil {
		return err
	}
	c.NotifCommitLinger = d
	return nil
}}

func strOpt(p func(*Config) *string) setter {
	return setter{"string", func(c *Config, v string) error { *p(c) = v; return nil }}
}

func boolOpt(p func(*Config) *bool) setter {
	return setter{"bool", func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%q is not a boolean (true or false)", v)
		}
		*p(c) = b
		return nil
	}}
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
	{"malloc", "C allocator of the embedded store's block cache and memtables: auto (jemalloc when libjemalloc.so.2 is installed; Linux, embedded backend), jemalloc (refuse to start without it) or system (glibc's; at scale its calloc costs 10-18 % of the CPU, docs/bench/scale.md)", "auto", strOpt(func(c *Config) *string { return &c.Malloc })},
	{"huge-pages", "with jemalloc preloaded (malloc above) and MALLOC_CONF unset: back its memory (the block cache, memtables) with transparent huge pages (jemalloc thp:always; needs the kernel's THP mode madvise or always). In a 30M-object bucket, random index reads miss the TLB: RWLD ran 1.14x the ops with it (docs/bench/scale.md, \"Stop 43\")", "true", boolOpt(func(c *Config) *bool { return &c.HugePages })},
	{"gomaxprocs", "Go processors (GOMAXPROCS); 0: the runtime's default (the GOMAXPROCS environment variable, else the CPUs available). More than the CPUs can help a disk-bound store: on 2 CPUs a 30M-object bucket's RWLD mix ran ~1.4x faster at 4, where a CPU-bound PUT mix cost ~7-10 % more CPU per PUT (docs/bench/scale.md, stop 37)", "0", intOpt(func(c *Config) *int { return &c.GOMAXPROCS })},
	{"gogc", "Go garbage collector's target heap growth in percent; 0: the GOGC environment variable when set, else 400. The gateway's live Go heap is small (~13 MB under a PUT load; the store's caches are off the Go heap), so at the runtime's 100 it collects several times a second: at 400 a plain 4 KiB PUT cost 114-123 us of gateway CPU against 129-133, and a 30M-object store's RSS grew 3 % (docs/bench/notify-issue25.md, stop 38), for a heap goal of 5x the live heap instead of 2x", "0", intOpt(func(c *Config) *int { return &c.GOGC })},
	{"go-memory-limit", "the Go runtime's soft memory limit (debug.SetMemoryLimit); 0: the GOMEMLIMIT environment variable when set, else 1.5 GiB. With gogc's 400 the Go heap may grow to 5x what is live; a large reshard holds hundreds of MiB live for minutes, so the limit, not the live heap, bounds the Go share of the RSS (with cache-size and the memtables: docs/bench/scale.md, \"Stop 44\"); near it the collector runs more often", "0", sizeOpt(func(c *Config) *int64 { return &c.GoMemoryLimit })},
	{"bucket-index-shards", "index shards of new buckets (rgw_override_bucket_index_max_shards)", "11", intOpt(func(c *Config) *int { return &c.BucketIndexShards })},
	{"bucket-index-view", "new buckets keep an ordered view of their index for listings (embedded backend; ignored on RADOS)", "true", boolOpt(func(c *Config) *bool { return &c.BucketIndexView })},
	{"max-objs-per-shard", "objects per index shard that trigger dynamic resharding (rgw_max_objs_per_shard)", "100000", intOpt(func(c *Config) *int { return &c.MaxObjsPerShard })},
	{"dynamic-resharding", "reshard buckets automatically (rgw_dynamic_resharding)", "true", boolOpt(func(c *Config) *bool { return &c.DynamicResharding })},
	{"max-dynamic-shards", "upper bound for dynamic resharding (rgw_max_dynamic_shards)", "1999", intOpt(func(c *Config) *int { return &c.MaxDynamicShards })},
	{"reshard-interval", "how often the dynamic reshard check runs", "10s", durOpt(func(c *Config) *time.Duration { return &c.ReshardInterval })},
	{"reshard-copy-rate", "index entries per second a reshard copies (0 = unlimited); an uncapped copy starves foreground writes", "25000", intOpt(func(c *Config) *int { return &c.ReshardCopyRate })},
	{"reshard-copy-load", "embedded store: copy a reshard's entries into the new shards as a bulk load of sorted tables ingested into the LSM, instead of through write ops (the WAL, memtable and every compaction level), in key-range chunks; after each chunk the writes logged for keys already loaded are replayed; off, a bucket filled at full speed can outrun the copy (docs/bench/scale.md, \"Stop 43\"); other backends always copy through ops", "true", boolOpt(func(c *Config) *bool { return &c.ReshardCopyLoad })},
	{"reshard-copy-adaptive", "pace a reshard's copy by foreground write latency: from 5000/s up to reshard-copy-rate while writes stay within 1.15× their latency of the minute before", "true", boolOpt(func(c *Config) *bool { return &c.ReshardCopyAdaptive })},
	{"notif-shards", "queue shards of new persistent topics (rgw_bucket_persistent_notif_num_shards)", "11", intOpt(func(c *Config) *int { return &c.NotifShards })},
	{"notif-queue-size", "capacity of one notification queue shard", "128MB", sizeOpt(func(c *Config) *int64 { return &c.NotifQueueSize })},
	{"topic-persistency-max-retries", "delivery attempts before an event expires, 0 = unlimited", "0", intOpt(func(c *Config) *int { return &c.PersistMaxRetries })},
	{"topic-persistency-time-to-live", "age at which an undelivered event expires, 0 = forever", "0", durOpt(func(c *Config) *time.Duration { return &c.PersistTTL })},
	{"topic-persistency-sleep-duration", "minimum wait between delivery attempts of one event, 0 = none", "0", durOpt(func(c *Config) *time.Duration { return &c.PersistSleep })},
	{"notif-lease", "how long a gateway owns a queue shard without renewing (a dead gateway's shards move after this)", "90s", durOpt(func(c *Config) *time.Duration { return &c.NotifLease })},
	{"notif-scan-interval", "how often delivery reads the queue registry, heartbeats and rebalances shards", "30s", durOpt(func(c *Config) *time.Duration { return &c.NotifScan })},
	{"notif-commit-linger", "a persistent event is durable in its write's index op (link intent); its queue commit follows the reply, batched per queue shard for up to this long (0 = commit before the reply, one op per write or group; embedded backend only; auto = 50ms on embedded, 0 on rados)", "auto", lingerOpt},
	{"notif-wake-batch", "events a busy queue shard's list aims to carry: its lists are spaced (20ms up to notif-max-wake-gap) until each carries about this many; larger = fewer store ops per event, longer delivery lag", "32", intOpt(func(c *Config) *int { return &c.NotifWakeBatch })},
	{"notif-max-wake-gap", "longest spacing of a busy queue shard's lists (bounds the lag notif-wake-batch adds)", "200ms", durOpt(func(c *Config) *time.Duration { return &c.NotifMaxWakeGap })},
	{"notif-push-pipeline", "notification pushes of one queue shard sent as one exchange: HTTP POSTs pipelined on one connection (written together, answers read in order), Kafka records produced together, AMQP publishes confirmed together (1 = one push per exchange)", "32", intOpt(func(c *Config) *int { return &c.NotifPushPipeline })},
	{"topic-require-publish-policy", "attaching another user's topic to a bucket notification needs sns:Publish in the topic's Policy (rgw_topic_require_publish_policy)", "true", boolOpt(func(c *Config) *bool { return &c.TopicRequirePublishPolicy })},
	{"notif-event-source", "eventSource of event records (RGW's ceph:s3; AWS sends aws:s3)", "ceph:s3", strOpt(func(c *Config) *string { return &c.NotifEventSource })},
	{"notif-kafka-compression", "compression of Kafka batches: none (as RGW; every consumer reads it), gzip, snappy, lz4 or zstd", "none", strOpt(func(c *Config) *string { return &c.NotifKafkaCompression })},
	{"notification-config-mode", "PutBucketNotificationConfiguration semantics: aws (replaces the whole configuration) or rgw (adds or updates by Id; only an empty configuration deletes all)", "aws", strOpt(func(c *Config) *string { return &c.NotifConfigMode })},
	{"cache-size", "block cache of the embedded backend (0 = an eighth of RAM, 64 MiB to 2 GiB); index lookups miss to disk when it is smaller than the hot index and filter blocks", "0", sizeOpt(func(c *Config) *int64 { return &c.CacheSize })},
	{"value-separation", "embedded backend: values of at least this size (object data chunks) are kept in blob files beside the LSM's tables, so compactions move a short handle instead of the bytes (0 = off; index entries and notification records, below 1KiB, stay in the tables either way; switching it never needs a migration)", "1KiB", sizeOpt(func(c *Config) *int64 { return &c.ValueSeparation })},
	{"compaction-concurrency", "embedded backend: most compactions at once; the store runs one and adds more only while L0 or its compaction debt grows", "1", intOpt(func(c *Config) *int { return &c.CompactionConcurrency })},
	{"max-open-files", "embedded backend: sstables kept open (pebble's file cache; a read of a closed one reopens it, reading its footer and index); 0 = half the open file limit, 1000 to 16384", "0", intOpt(func(c *Config) *int { return &c.MaxOpenFiles })},
	{"memtable-size", "embedded backend: size of the write buffer (pebble's memtable; up to two are held while one flushes, counted in the RSS bound with cache-size)", "64MiB", sizeOpt(func(c *Config) *int64 { return &c.MemTableSize })},
	{"mmap-reads", "embedded backend: a table read that misses the block cache copies from a read-only mapping of the table instead of a pread system call (RWLD at 2M objects with a 64MiB cache 1.2x the ops); the mapped pages are the page cache's and count in the RSS as file pages (RssFile); a page the kernel cannot read fails that read, as a pread would. Off: pread per block", "true", boolOpt(func(c *Config) *bool { return &c.MmapReads })},
	{"storage-classes", "storage classes besides STANDARD, NAME[=LOCATION],...: each stores its data in a pool of its own (default.rgw.<name>.data; LOCATION is a data directory of its own on the embedded backend, a pool name on rados), as RGW's placement storage classes", "", strOpt(func(c *Config) *string { return &c.StorageClasses })},
	{"lc-debug-interval", "length of a lifecycle day for tests (rgw_lc_debug_interval); 0 = real days", "0", durOpt(func(c *Config) *time.Duration { return &c.LCDebugInterval })},
	{"lc-max-objs", "lifecycle registry shards, leased by gateways (rgw_lc_max_objs)", "32", intOpt(func(c *Config) *int { return &c.LCMaxObjs })},
	{"lc-rate", "objects per second a gateway's lifecycle pass examines (0 = unlimited); pacing keeps foreground latency", "1000", intOpt(func(c *Config) *int { return &c.LCRate })},
	{"lc-transition-rate", "bytes per second a gateway's lifecycle transitions copy between storage classes (0 = unlimited); pacing keeps foreground latency", "2MiB", sizeOpt(func(c *Config) *int64 { return &c.LCTransitionRate })},
	{"lc-transition-busy-rate", "bytes per second transitions copy while this gateway has client requests in flight (0 = lc-transition-rate throughout); the foreground keeps its rate", "512KiB", sizeOpt(func(c *Config) *int64 { return &c.LCTransitionBusyRate })},
	{"inline-max", "a PUT body of at most this size (default storage class, not encrypted) is kept in its bucket index entry instead of a data object: a GET reads one record, nothing is left for GC; 0 = never, at most 64KiB. Larger values make index entries, and the entries a reshard copies, larger (docs/bench/scale.md, stop 40)", "1KiB", sizeOpt(func(c *Config) *int64 { return &c.InlineMax })},
	{"gc-min-wait", "delay before replaced object data is collected (rgw_gc_obj_min_wait)", "30s", durOpt(func(c *Config) *time.Duration { return &c.GCMinWait })},
	{"orphan-scan-interval", "how often one gateway (a lease decides which) removes data no index entry, GC record or upload references, left by crashes; 0 = never (run `cairn admin orphans rm`)", "24h", durOpt(func(c *Config) *time.Duration { return &c.OrphanScanInterval })},
	{"orphan-min-age", "the orphan scan leaves data younger than this (it must exceed the longest upload of one object or part)", "24h", durOpt(func(c *Config) *time.Duration { return &c.OrphanMinAge })},
	{"orphan-scan-rate", "data objects per second the periodic orphan scan examines (0 = unlimited); pacing that keeps foreground throughput", "1000", intOpt(func(c *Config) *int { return &c.OrphanScanRate })},
	{"shutdown-timeout", "how long SIGTERM waits for in-flight requests", "30s", durOpt(func(c *Config) *time.Duration { return &c.ShutdownTimeout })},
	{"max-header-bytes", "request header limit (larger: 400 RequestHeaderSectionTooLarge)", "65536", intOpt(func(c *Config) *int { return &c.MaxHeaderBytes })},

	// Limits and hostile-client defences.
	{"max-bucket-index-shards", "largest x-cairn-bucket-index-shards a CreateBucket may ask for (0 = max-dynamic-shards); admins may go higher", "0", intOpt(func(c *Config) *int { return &c.MaxBucketIndexShards })},
	{"max-buckets", "buckets a user may own unless the user record sets its own max_buckets (rgw_user_max_buckets); 0 = unlimited", "1000", intOpt(func(c *Config) *int { return &c.MaxBuckets })},
	{"request-body-idle-timeout", "a request body that sends nothing for this long gets 400 RequestTimeout", "30s", durOpt(func(c *Config) *time.Duration { return &c.RequestBodyIdleTimeout })},
	{"read-header-timeout", "time allowed to send a request's headers (slowloris)", "30s", durOpt(func(c *Config) *time.Duration { return &c.ReadHeaderTimeout })},
	{"idle-timeout", "idle keep-alive connections are closed after this long", "60s", durOpt(func(c *Config) *time.Duration { return &c.IdleTimeout })},
	{"tls-cert", "PEM certificate (chain) file: serve HTTPS", "", strOpt(func(c *Config) *string { return &c.TLSCert })},
	{"tls-key", "PEM private key of tls-cert", "", strOpt(func(c *Config) *string { return &c.TLSKey })},
	{"tls-listen", "address for HTTPS beside plain HTTP on listen (empty: listen serves HTTPS when tls-cert is set)", "", strOpt(func(c *Config) *string { return &c.TLSListen })},
	{"kms-backend", "key-management backend of SSE and sealed secrets: keyring (local) or kmip (an external KMIP server)", "keyring", strOpt(func(c *Config) *string { return &c.KMSBackend })},
	{"kmip-endpoint", "host:port of the KMIP server (kms-backend kmip; rgw_crypt_kmip_addr)", "", strOpt(func(c *Config) *string { return &c.KMIPEndpoint })},
	{"kmip-ca", "PEM CA certificate that signed the KMIP server's certificate (rgw_crypt_kmip_ca_path)", "", strOpt(func(c *Config) *string { return &c.KMIPCA })},
	{"kmip-cert", "PEM client certificate for mutual TLS with the KMIP server (rgw_crypt_kmip_client_cert)", "", strOpt(func(c *Config) *string { return &c.KMIPCert })},
	{"kmip-key", "PEM private key of kmip-cert (rgw_crypt_kmip_client_key)", "", strOpt(func(c *Config) *string { return &c.KMIPKey })},
	{"kmip-default-key", "KMIP key name used when a request names none (SSE-S3, sealed secrets); empty: none", "", strOpt(func(c *Config) *string { return &c.KMIPDefaultKey })},
	{"kmip-timeout", "bound on one KMIP request, connecting included: past it the KMS counts as unavailable (503)", "5s", durOpt(func(c *Config) *time.Duration { return &c.KMIPTimeout })},
	{"secrets-key", "KMS key id that seals user secret keys and topic credentials at rest (empty: with kmip the backend's default key; with the local keyring none, they stay in clear)", "", strOpt(func(c *Config) *string { return &c.SecretsKey })},
	{"metrics-token", "bearer token a /metrics scrape may present (Authorization: Bearer); prefer metrics-token-file or the environment to a flag", "", strOpt(func(c *Config) *string { return &c.MetricsToken })},
	{"metrics-token-file", "file holding the /metrics bearer token (read at each scrape, so it can be rotated in place)", "", strOpt(func(c *Config) *string { return &c.MetricsTokenFile })},
	{"metrics-listen", "address serving /metrics (and /healthz) alone; the main listener then does not serve /metrics", "", strOpt(func(c *Config) *string { return &c.MetricsListen })},
	{"pprof-listen", "loopback address serving the Go runtime profiles (/debug/pprof/, e.g. 127.0.0.1:6061) to profile a running gateway; empty: off", "", strOpt(func(c *Config) *string { return &c.PprofListen })},
	{"metrics-public", "serve /metrics to anyone who can reach it, without credentials", "false", boolOpt(func(c *Config) *bool { return &c.MetricsPublic })},
	{"metrics-tenant-labels", "export per-topic/per-bucket labels (tenant resource names) on /metrics; off: such series are summed over topics", "false", boolOpt(func(c *Config) *bool { return &c.MetricsTenantLabels })},
	{"allow-insecure-endpoint-secrets", "accept topic endpoint credentials over plain HTTP (rgw_allow_notification_secrets_in_cleartext)", "false", boolOpt(func(c *Config) *bool { return &c.AllowInsecureEndpointSecrets })},
	{"kms-keyring", "key file of the local KMS keyring, created 0600 when absent (empty: <data-dir>/kms.keyring)", "", strOpt(func(c *Config) *string { return &c.KMSKeyring })},
	{"kms-master-key", "base64 of 32 bytes: the keyring's default key, instead of the key file's (prefer the CAIRN_KMS_MASTER_KEY environment variable)", "", strOpt(func(c *Config) *string { return &c.KMSMasterKey })},
	{"kms-keys", "named SSE-KMS keys id=<base64 32 bytes>,... (rgw_crypt_s3_kms_encryption_keys)", "", strOpt(func(c *Config) *string { return &c.KMSKeys })},
	{"kms-default-key", "key id SSE-S3 (and SSE-KMS without a key id) uses; empty: cairn-default", "", strOpt(func(c *Config) *string { return &c.KMSDefaultKey })},
	{"crypt-require-tls", "accept SSE-C keys only over HTTPS (rgw_crypt_require_ssl)", "true", boolOpt(func(c *Config) *bool { return &c.CryptRequireTLS })},
	{"encrypt-by-default", "encrypt every new object that asks for no encryption with SSE-S3, as AWS does", "false", boolOpt(func(c *Config) *bool { return &c.EncryptByDefault })},

	// Quotas, rate limits, usage.
	{"quota-stats-ttl", "how long a quota check trusts the bucket index stats it read, plus this gateway's own writes since (rgw_bucket_quota_ttl); 0 = read them at every check (exact across gateways)", "5s", durOpt(func(c *Config) *time.Duration { return &c.QuotaStatsTTL })},
	{"user-default-quota-max-objects", "object quota given to new users, -1 = none (rgw_user_default_quota_max_objects)", "-1", limitOpt(func(c *Config) *int64 { return &c.UserDefaultQuotaMaxObjects })},
	{"user-default-quota-max-size", "size quota given to new users, -1 = none (rgw_user_default_quota_max_size)", "-1", limitOpt(func(c *Config) *int64 { return &c.UserDefaultQuotaMaxSize })},
	{"bucket-default-quota-max-objects", "object quota given to new buckets, -1 = none (rgw_bucket_default_quota_max_objects)", "-1", limitOpt(func(c *Config) *int64 { return &c.BucketDefaultQuotaMaxObjects })},
	{"bucket-default-quota-max-size", "size quota given to new buckets, -1 = none (rgw_bucket_default_quota_max_size)", "-1", limitOpt(func(c *Config) *int64 { return &c.BucketDefaultQuotaMaxSize })},
	{"ratelimit-interval", "the window rate limits are per: a spent limit refills over it (RGW: one minute)", "1m", durOpt(func(c *Config) *time.Duration { return &c.RateLimitInterval })},
	{"usage-log", "count requests in the usage log (rgw_enable_usage_log)", "true", boolOpt(func(c *Config) *bool { return &c.UsageLog })},
	{"usage-flush-interval", "how often usage counts are written (rgw_usage_log_tick_interval); a kill -9 loses at most this much", "30s", durOpt(func(c *Config) *time.Duration { return &c.UsageFlushInterval })},
	{"bucket-logging-obj-roll-time", "how long bucket logging records gather in one log object before it is written to the target bucket, for configurations without ObjectRollTime (rgw_bucket_logging_obj_roll_time)", "5m", durOpt(func(c *Config) *time.Duration { return &c.BucketLoggingObjRollTime })},
}

// UsageError is a command line that does not parse (unknown flag, missing
// value, stray argument): the caller prints it with a hint to --help.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// EnvName is the environment variable of an option.
func EnvName(opt string) string {
	return "CAIRN_" + strings.ToUpper(strings.ReplaceAll(opt, "-", "_"))
}

// Load builds a Config from args (flags, including --config FILE), the
// environment and defaults, and validates it.
func Load(args []string, getenv func(string) string) (*Config, error) {
	c := &Config{}
	for _, o := range options {
		if err := o.set.fn(c, o.def); err != nil {
			panic(fmt.Sprintf("config: bad default for %s: %v", o.name, err))
		}
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	// Errors are returned, not printed with the whole usage; --help is
	// flag.ErrHelp and the caller prints Usage.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	cfgFile := fs.String("config", getenv("CAIRN_CONFIG"), "YAML configuration file")
	flagVals := map[string]*flagValue{}
	for _, o := range options {
		flagVals[o.name] = &flagValue{kind: o.set.kind}
		fs.Var(flagVals[o.name], o.name, o.help)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &UsageError{err}
	}
	if fs.NArg() > 0 {
		if v := strings.ToLower(fs.Arg(0)); v == "true" || v == "false" {
			// "--dynamic-resharding false": Go's boolean flags take no
			// separate value.
			return nil, &UsageError{fmt.Errorf("unexpected arguments: %v (boolean options take their value after '=', e.g. --dynamic-resharding=%s)", fs.Args(), v)}
		}
		return nil, &UsageError{fmt.Errorf("unexpected arguments: %v", fs.Args())}
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
			if err := o.set.fn(c, fmt.Sprint(m[k])); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", *cfgFile, k, err))
			}
		}
	}
	for _, o := range options {
		if v := getenv(EnvName(o.name)); v != "" {
			if err := o.set.fn(c, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", EnvName(o.name), err))
			}
		}
	}
	for _, o := range options {
		if f := flagVals[o.name]; f.set {
			if err := o.set.fn(c, f.val); err != nil {
				errs = append(errs, fmt.Errorf("--%s: %w", o.name, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if c.NotifCommitLinger == lingerAuto {
		c.NotifCommitLinger = DefaultCommitLinger
		if c.Backend == "rados" {
			c.NotifCommitLinger = 0
		}
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
	check(c.InlineMax >= 0 && c.InlineMax <= 64<<10, "inline-max %d outside 0..64KiB", c.InlineMax)
	check(c.BucketIndexShards >= 1 && c.BucketIndexShards <= 65521, "bucket-index-shards %d outside 1..65521", c.BucketIndexShards)
	check(c.MaxObjsPerShard >= 1, "max-objs-per-shard must be positive")
	check(c.MaxDynamicShards >= 1 && c.MaxDynamicShards <= 65521, "max-dynamic-shards %d outside 1..65521", c.MaxDynamicShards)
	check(c.ReshardCopyRate >= 0, "reshard-copy-rate %d is negative", c.ReshardCopyRate)
	check(c.NotifShards >= 1 && c.NotifShards <= 1024, "notif-shards %d outside 1..1024", c.NotifShards)
	check(c.NotifQueueSize >= 64<<10, "notif-queue-size must be at least 64KB")
	check(c.CacheSize == 0 || c.CacheSize >= 1<<20, "cache-size must be 0 (automatic) or at least 1MB")
	check(c.ValueSeparation == 0 || (c.ValueSeparation >= 64 && c.ValueSeparation <= 1<<30), "value-separation must be 0 (off) or 64B to 1GiB")
	check(c.CompactionConcurrency >= 1 && c.CompactionConcurrency <= 64, "compaction-concurrency %d outside 1..64", c.CompactionConcurrency)
	check(c.MaxOpenFiles == 0 || c.MaxOpenFiles >= 100, "max-open-files must be 0 (automatic) or at least 100")
	check(c.MemTableSize >= 1<<20 && c.MemTableSize < 4<<30, "memtable-size must be at least 1MiB and below 4GiB")
	check(c.PersistMaxRetries >= 0, "topic-persistency-max-retries must not be negative")
	check(c.PersistTTL >= 0 && c.PersistSleep >= 0, "topic persistency durations must not be negative")
	check(c.LCDebugInterval >= 0 && c.LCRate >= 0 && c.LCTransitionRate >= 0 && c.LCTransitionBusyRate >= 0, "lc-debug-interval, lc-rate, lc-transition-rate and lc-transition-busy-rate must not be negative")
	check(c.LCMaxObjs >= 1 && c.LCMaxObjs <= 65521, "lc-max-objs %d outside 1..65521", c.LCMaxObjs)
	check(c.OrphanScanInterval >= 0 && c.OrphanScanRate >= 0, "orphan-scan-interval and orphan-scan-rate must not be negative")
	check(c.OrphanMinAge >= time.Minute, "orphan-min-age must be at least 1m: younger data may be a write in progress")
	if _, err := ParseStorageClasses(c.StorageClasses); err != nil {
		errs = append(errs, err)
	}
	check(c.MaxHeaderBytes >= 8<<10, "max-header-bytes must be at least 8KB")
	check(c.MaxBucketIndexShards >= 0 && c.MaxBucketIndexShards <= 65521, "max-bucket-index-shards %d outside 0..65521", c.MaxBucketIndexShards)
	check(c.MaxBuckets >= 0, "max-buckets must not be negative")
	check(c.QuotaStatsTTL >= 0, "quota-stats-ttl must not be negative")
	check(c.RateLimitInterval > 0 && c.UsageFlushInterval > 0, "ratelimit-interval and usage-flush-interval must be positive")
	check(c.BucketLoggingObjRollTime >= time.Second, "bucket-logging-obj-roll-time must be at least 1s")
	for _, v := range []int64{c.UserDefaultQuotaMaxObjects, c.UserDefaultQuotaMaxSize, c.BucketDefaultQuotaMaxObjects, c.BucketDefaultQuotaMaxSize} {
		check(v >= -1, "default quotas must be -1 (none) or a limit, not %d", v)
	}
	check(c.RequestBodyIdleTimeout > 0 && c.ReadHeaderTimeout > 0 && c.IdleTimeout > 0, "request-body-idle-timeout, read-header-timeout and idle-timeout must be positive")
	check((c.TLSCert == "") == (c.TLSKey == ""), "tls-cert and tls-key must be given together")
	check(c.TLSListen == "" || c.TLSCert != "", "tls-listen needs tls-cert and tls-key")
	check(c.NotifEventSource != "", "notif-event-source must not be empty")
	check(c.MetricsToken == "" || c.MetricsTokenFile == "", "metrics-token and metrics-token-file are exclusive")
	check(c.MetricsToken == "" || len(c.MetricsToken) >= MinMetricsTokenLen, "metrics-token must be at least %d characters", MinMetricsTokenLen)
	check(!c.MetricsPublic || (c.MetricsToken == "" && c.MetricsTokenFile == ""), "metrics-public contradicts metrics-token/metrics-token-file")
	check(c.MetricsListen == "" || (c.MetricsListen != c.Listen && c.MetricsListen != c.TLSListen), "metrics-listen must differ from listen and tls-listen")
	check(c.PprofListen == "" || isLoopbackAddr(c.PprofListen), "pprof-listen %q: want a loopback host:port", c.PprofListen)
	// Checked here, not only by delivery: a bad pair must fail before a
	// new data directory is initialised.
	check(c.NotifPushPipeline >= 1 && c.NotifPushPipeline <= 1024, "notif-push-pipeline %d outside 1..1024", c.NotifPushPipeline)
	check(c.NotifWakeBatch >= 1 && c.NotifWakeBatch <= 10000, "notif-wake-batch %d outside 1..10000", c.NotifWakeBatch)
	check(c.NotifMaxWakeGap >= 20*time.Millisecond && c.NotifMaxWakeGap <= 10*time.Second, "notif-max-wake-gap %s outside 20ms..10s", c.NotifMaxWakeGap)
	check(c.NotifCommitLinger >= 0 && c.NotifCommitLinger <= 10*time.Second, "notif-commit-linger %s outside 0..10s", c.NotifCommitLinger)
	// Only the writer resolves its intents: with several gateways on one
	// cluster, a dead one's answered events would wait for its restart.
	check(c.NotifCommitLinger == 0 || c.Backend != "rados", "notif-commit-linger needs the embedded backend (on rados a dead gateway's deferred events would wait for its restart)")
	check(c.NotifScan > 0 && c.NotifScan <= c.NotifLease/2, "notif-scan-interval %s must be positive and at most half of notif-lease %s", c.NotifScan, c.NotifLease)
	switch c.NotifKafkaCompression {
	case "none", "gzip", "snappy", "lz4", "zstd":
	default:
		errs = append(errs, fmt.Errorf("notif-kafka-compression %q: want none, gzip, snappy, lz4 or zstd", c.NotifKafkaCompression))
	}
	check(c.NotifConfigMode == "aws" || c.NotifConfigMode == "rgw", "notification-config-mode %q: want aws or rgw", c.NotifConfigMode)
	switch c.KMSBackend {
	case "keyring":
	case "kmip":
		check(c.KMIPEndpoint != "", "kms-backend kmip needs kmip-endpoint")
		check(c.KMIPCA != "" && c.KMIPCert != "" && c.KMIPKey != "", "kms-backend kmip needs kmip-ca, kmip-cert and kmip-key (mutual TLS)")
		check(c.KMIPTimeout > 0, "kmip-timeout must be positive")
	default:
		errs = append(errs, fmt.Errorf("kms-backend %q: want keyring or kmip", c.KMSBackend))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log-level %q: want debug, info, warn or error", c.LogLevel))
	}
	if c.GOGC < 0 {
		errs = append(errs, fmt.Errorf("gogc %d: want 0 (the runtime's default) or more", c.GOGC))
	}
	if c.GOMAXPROCS < 0 {
		errs = append(errs, fmt.Errorf("gomaxprocs %d: want 0 (the runtime's default) or more", c.GOMAXPROCS))
	}
	switch c.Malloc {
	case "auto", "jemalloc", "system":
	default:
		errs = append(errs, fmt.Errorf("malloc %q: want auto, jemalloc or system", c.Malloc))
	}
	return errors.Join(errs...)
}

// StorageClassSpec is one entry of storage-classes.
type StorageClassSpec struct {
	Name string
	// Location is a data directory of its own (embedded backend) or a
	// pool name (rados); "" = the pool default.rgw.<lower-case name>.data
	// in the gateway's store.
	Location string
}

// ParseStorageClasses parses storage-classes: NAME[=LOCATION] entries
// separated by commas. Names are upper-case letters, digits and
// underscores (S3's spelling, e.g. STANDARD_IA); STANDARD is implicit.
func ParseStorageClasses(s string) ([]StorageClassSpec, error) {
	var out []StorageClassSpec
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, loc, _ := strings.Cut(part, "=")
		name, loc = strings.TrimSpace(name), strings.TrimSpace(loc)
		ok := name != "" && len(name) <= 64 && name[0] >= 'A' && name[0] <= 'Z'
		for _, r := range name {
			ok = ok && (r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
		}
		switch {
		case !ok:
			return nil, fmt.Errorf("storage-classes: %q is not a class name (upper-case letters, digits and _)", name)
		case name == "STANDARD":
			return nil, fmt.Errorf("storage-classes: STANDARD is always there (the default data pool)")
		case seen[name]:
			return nil, fmt.Errorf("storage-classes: %s named twice", name)
		case strings.Contains(part, "=") && loc == "":
			return nil, fmt.Errorf("storage-classes: %s= names no location", name)
		}
		seen[name] = true
		out = append(out, StorageClassSpec{Name: name, Location: loc})
	}
	return out, nil
}

// SizeUnits documents what ParseSize accepts. Units are case-insensitive
// and binary, as in Ceph's options: K = KB = KiB = 1024 bytes.
const SizeUnits = "a byte count with an optional unit B, K/KB/KiB, M/MB/MiB, G/GB/GiB or T/TB/TiB (1K = 1024)"

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
}

// ParseSize parses 128MB, 64KiB, 1G or a plain byte count (SizeUnits).
// The error names the input as given.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	mult, ok := sizeUnits[strings.ToLower(strings.TrimSpace(t[i:]))]
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if !ok || err != nil || (n > 0 && mult > math.MaxInt64/n) {
		return 0, fmt.Errorf("size %q: want %s", s, SizeUnits)
	}
	return n * mult, nil
}

// ParseDuration parses a Go duration ("30s", "1m30s") or a bare number of
// seconds (RGW's options are seconds). Negative durations are refused.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	var d time.Duration
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		d = time.Duration(n) * time.Second
	} else if d, err = time.ParseDuration(t); err != nil {
		return 0, fmt.Errorf("duration %q: want a number of seconds or a Go duration such as 30s, 5m, 1h30m", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

// flagValue holds a flag's text until Load applies it after the file and
// the environment (precedence); kind is shown by Usage.
type flagValue struct {
	kind string
	val  string
	set  bool
}

func (f *flagValue) String() string { return f.val }
func (f *flagValue) Set(v string) error {
	f.val, f.set = v, true
	return nil
}

// IsBoolFlag lets `--dynamic-resharding` stand for `--dynamic-resharding=true`.
func (f *flagValue) IsBoolFlag() bool { return f.kind == "bool" }

// Usage writes `cairn serve --help`: every option with its type, default
// and environment variable.
func Usage(w io.Writer) {
	fmt.Fprint(w, `usage: cairn serve [flags]

Runs the S3 gateway. Every flag is also a key of the YAML file given with
--config and an environment variable CAIRN_<NAME>; precedence: flag >
environment > file > default.
Sizes: `+SizeUnits+`.
Durations: seconds or Go durations (30s, 5m, 1h30m); never negative.

flags:
  --config file
        YAML configuration file (env CAIRN_CONFIG)
`)
	for _, o := range options {
		def := o.def
		if o.set.kind == "string" {
			def = strconv.Quote(def)
		}
		fmt.Fprintf(w, "  --%s %s\n        %s (default %s; env %s)\n", o.name, o.set.kind, o.help, def, EnvName(o.name))
	}
}

// Options lists option names, defaults and help (for docs and usage).
func Options() [][3]string {
	out := make([][3]string, len(options))
	for i, o := range options {
		out[i] = [3]string{o.name, o.def, o.help}
	}
	return out
}

// isLoopbackAddr: host:port whose host is localhost or a loopback IP (the
// profiles name code and data; they are not for the network).
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
