package bench

// The scale workload (`cairn bench scale`): the published RGW seed test on
// one machine. One bucket is filled in rounds while dynamic resharding grows
// its index; after each round a fixed-length RWLD phase (70 % GET, 20 % PUT,
// 5 % LIST, 5 % DELETE) and ListObjectsV2 page timings; after the last round
// an aging phase (45 % GET, 35 % PUT with overwrites, 15 % HEAD, 5 % DELETE).
// The JSON report is rewritten after every round, so a run cut short still
// publishes what it reached. Driver mode runs the store in this process (the
// code below HTTP); HTTP mode drives a running `cairn serve` with SigV4.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cairn-s3/cairn/internal/reshard"
)

// ScaleConfig configures the scale workload.
type ScaleConfig struct {
	// Dir is the parent of the store's directory in driver mode ("" = the
	// system temp dir). The directory is removed at the end unless Keep.
	Dir  string
	Keep bool
	// Endpoint selects HTTP mode: a running gateway's base URL. AccessKey
	// and SecretKey are an admin's (the bench reads /admin/bucket stats).
	Endpoint, AccessKey, SecretKey, Region string
	// GatewayPID (HTTP mode) is whose RSS is reported; GatewayDir is its
	// data directory (disk usage).
	GatewayPID int
	GatewayDir string
	// Bucket name. Default bench-scale.
	Bucket string
	// Targets are the object counts after each fill round. Default
	// 100k, 200k, 500k, 1M, 2M, 5M, 10M, 20M, 30M.
	Targets []int64
	// Clients issue requests concurrently. Default 32.
	Clients int
	// Size of each object body. Default 64 bytes.
	Size int
	// RWLD is the length of each round's mixed phase. Default 60 s.
	RWLD time.Duration
	// ProfileDir, when set, receives a CPU profile of each RWLD phase
	// (rwld-<target>.pprof) with every op labelled op=<name>, so a
	// profile splits CPU per op type at each size, and of each fill
	// (fill-<target>.pprof: op=fill, a reshard's work task=reshard).
	ProfileDir string
	// ListRepeats: each listing timing is the median of this many pages.
	// Default 5.
	ListRepeats int
	// Aging is the length of the final aging phase (0: none).
	Aging time.Duration
	// PreShards > 0 creates the bucket with that many shards (the
	// pre-sharded variant); 0 leaves it to dynamic resharding.
	PreShards int
	// InitialShards of a bucket not pre-sharded (bucket-index-shards).
	// Default 11.
	InitialShards int
	// Driver mode's reshard manager, as `cairn serve` sets it up by
	// default: MaxObjsPerShard 100,000, CheckInterval 10 s, CopyRateLimit
	// 25,000 (negative: unlimited).
	MaxObjsPerShard  int
	CheckInterval    time.Duration
	CopyRateLimit    int
	CopyRateAdaptive bool
	// TriggerSizing sizes dynamic reshards by RGW's rule (objects at the
	// trigger) instead of the objects expected when they end (A/B runs).
	TriggerSizing bool
	// NoIndexView lists by merging every index shard even on the embedded
	// store (driver.Options.NoIndexView), for A/B runs.
	NoIndexView bool
	// InlineMax is driver.Options.InlineMax (driver mode; cairn serve's
	// --inline-max default unless set; 0 = never inline).
	InlineMax int64
	// Allocator names the C allocator of this process (driver mode),
	// for the report.
	Allocator string
	// MallocConf is jemalloc's MALLOC_CONF in this process (driver
	// mode), for the report.
	MallocConf string
	// GOGC is the collector setting of this process (driver mode; the
	// caller sets it), for the report.
	GOGC int
	// GoMemoryLimit is this process's soft memory limit (driver mode;
	// the caller sets it), for the report.
	GoMemoryLimit int64
	// CopyLoad copies reshards as one bulk load instead of through write
	// ops (reshard.Config.CopyLoad), for A/B runs.
	CopyLoad bool
	// CacheSize of the embedded store (0: its automatic size).
	CacheSize int64
	// CompactionConcurrency of the embedded store (0: its default).
	CompactionConcurrency int
	// NoIngestSplit: embedded.Options.NoIngestSplit (A/B runs).
	NoIngestSplit bool
	// MaxOpenFiles: embedded.Options.MaxOpenFiles (0: its default).
	MaxOpenFiles int
	// MemTableSize: embedded.Options.MemTableSize (0: its default).
	MemTableSize int64
	// NoMmap: embedded.Options.DisableMmap (cairn serve's mmap-reads=false).
	NoMmap bool
	// RebaseEvery: reshard.Config.RebaseEvery (0: its default; negative:
	// the governor keeps the minute before the reshard as its base).
	RebaseEvery time.Duration
	// MaxDuration stops the run (after the current phase is cut short);
	// what was reached is reported. 0: no limit.
	MaxDuration time.Duration
	// Walk, after the rounds: a full ListObjectsV2 walk of the bucket
	// (pages of 1000 by continuation token) and a bucket stats call, timed.
	Walk bool
	// VersionsWalk (driver mode), after the walk: a full ListObjectVersions
	// walk, 1000 per page, that must see every live key.
	VersionsWalk bool
	// FinalReshard > 0 (driver mode), after the walks: a manual reshard to
	// that many shards (`bucket reshard --num-shards N`), timed, with
	// bucket stats and reshard status before and after, then a
	// ListObjectsV2 walk that must see every key.
	FinalReshard int
	// FillFor ends the rounds after this long (the current one is cut
	// short and reported as incomplete) and goes on to aging, so a run
	// that cannot reach the last target in the time it has still ages
	// the bucket it filled. 0: no limit.
	FillFor time.Duration
	// Out is the JSON report's path, rewritten after every round.
	Out string
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Command is recorded in the report.
	Command string
	// Resume (driver mode) is the directory of a store an earlier run kept
	// (--keep): its bucket is opened as it is, no rounds run, and the
	// walks, final reshard and aging run on it as configured. The live key
	// range is found by probing (keys are deleted oldest first), and the
	// store's GC records are counted exactly before and after.
	Resume string
	// ResumeRWLD > 0: a resumed run first runs one RWLD phase this long
	// and times the list pages, as after a round.
	ResumeRWLD time.Duration
	// ResumeWarmup > 0: before that phase, an RWLD phase this long whose
	// figures only go to the log (ScaleResume.WarmupPerSec): a reopened
	// store starts with an empty block cache, where a round's RWLD phase
	// runs on the cache the fill left.
	ResumeWarmup time.Duration
}

// DefaultScaleTargets are the seed's fill rounds up to 30M objects.
var DefaultScaleTargets = []int64{100_000, 200_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000, 20_000_000, 30_000_000}

// EnsureDefaults fills zero fields.
func (c *ScaleConfig) EnsureDefaults() *ScaleConfig {
	if c.Bucket == "" {
		c.Bucket = "bench-scale"
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if len(c.Targets) == 0 {
		c.Targets = DefaultScaleTargets
	}
	if c.Clients == 0 {
		c.Clients = 32
	}
	if c.Size == 0 {
		c.Size = 64
	}
	if c.RWLD == 0 {
		c.RWLD = 60 * time.Second
	}
	if c.ListRepeats == 0 {
		c.ListRepeats = 5
	}
	if c.InitialShards == 0 {
		c.InitialShards = 11
	}
	if c.MaxObjsPerShard == 0 {
		c.MaxObjsPerShard = reshard.DefaultMaxObjsPerShard
	}
	if c.CheckInterval == 0 {
		c.CheckInterval = 10 * time.Second
	}
	if c.CopyRateLimit == 0 {
		c.CopyRateLimit = 25_000
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return c
}

// Validate reports every problem at once.
func (c *ScaleConfig) Validate() error {
	var errs []error
	if c.Clients < 1 || c.Size < 0 || c.RWLD < 0 || c.Aging < 0 || c.PreShards < 0 || c.InitialShards < 1 || c.ListRepeats < 1 {
		errs = append(errs, fmt.Errorf("bench scale: clients %d, size %d, rwld %v, aging %v, pre-shards %d, initial shards %d, list repeats %d out of range",
			c.Clients, c.Size, c.RWLD, c.Aging, c.PreShards, c.InitialShards, c.ListRepeats))
	}
	for i, t := range c.Targets {
		if t < 1 || (i > 0 && t <= c.Targets[i-1]) {
			errs = append(errs, fmt.Errorf("bench scale: targets must be positive and increasing: %v", c.Targets))
			break
		}
	}
	if c.FinalReshard < 0 {
		errs = append(errs, fmt.Errorf("bench scale: final reshard %d: want a shard count, or 0 for none", c.FinalReshard))
	}
	if c.Endpoint != "" && (c.VersionsWalk || c.FinalReshard > 0) {
		errs = append(errs, errors.New("bench scale: the versions walk and the final reshard run in driver mode only"))
	}
	if c.Endpoint != "" && c.Resume != "" {
		errs = append(errs, errors.New("bench scale: --resume opens a kept store: driver mode only"))
	}
	if c.Endpoint != "" && (c.AccessKey == "" || c.SecretKey == "") {
		errs = append(errs, errors.New("bench scale: HTTP mode needs an admin's access and secret key"))
	}
	return errors.Join(errs...)
}

// ScaleOp is one operation type's rate and latency in a phase.
type ScaleOp struct {
	Ops       int64   `json:"ops"`
	Misses    int64   `json:"misses,omitempty"` // GET/HEAD of a key deleted meanwhile
	OpsPerSec float64 `json:"ops_per_sec"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
}

// ScaleList is one kind of ListObjectsV2 page of 1000 keys.
type ScaleList struct {
	StartMs        float64 `json:"start_ms"`         // from the bucket's first key
	PrefixMs       float64 `json:"middle_prefix_ms"` // prefix "o/8" (the key space's middle)
	ContinuationMs float64 `json:"continuation_ms"`  // the page after one started mid-bucket
}

// ScaleDisk is the store's size.
type ScaleDisk struct {
	TotalBytes       uint64             `json:"total_bytes"` // the data directory (du)
	IndexBytes       uint64             `json:"index_bytes,omitempty"`
	DataBytes        uint64             `json:"data_bytes,omitempty"`
	IndexBytesPerObj float64            `json:"index_bytes_per_object,omitempty"`
	DataBytesPerObj  float64            `json:"data_bytes_per_object,omitempty"`
	TotalBytesPerObj float64            `json:"total_bytes_per_object"`
	LSM              *embedded.LSMStats `json:"lsm,omitempty"`
	GCBacklog        *int               `json:"gc_backlog,omitempty"`
	// GCCollected: records the collector removed since the run began.
	GCCollected *int64 `json:"gc_collected,omitempty"`
	// DeadRangeCompactions: compactions the store's scans asked for so
	// far because they stepped over many deleted keys (driver mode).
	DeadRangeCompactions *int64 `json:"dead_range_compactions,omitempty"`
}

// ScaleRound is one fill round and the phases after it.
type ScaleRound struct {
	Target     int64              `json:"target"`
	Objects    uint64             `json:"objects"` // the bucket's count after the fill
	Shards     int                `json:"shards"`
	FillStart  float64            `json:"fill_start_sec"`
	FillSec    float64            `json:"fill_sec"`
	FillPerSec float64            `json:"fill_puts_per_sec"`
	FillPut    ScaleOp            `json:"fill_put"`
	RWLD       map[string]ScaleOp `json:"rwld"`
	RWLDPerSec float64            `json:"rwld_ops_per_sec"`
	List       ScaleList          `json:"list"`
	RSSBytes   uint64             `json:"rss_bytes"`
	HugeBytes  uint64             `json:"rss_huge_bytes,omitempty"` // of RSSBytes, on transparent huge pages
	FileBytes  uint64             `json:"rss_file_bytes,omitempty"` // of RSSBytes, mapped file pages (the embedded store's tables with mmap-reads: page cache)
	Disk       ScaleDisk          `json:"disk"`
	Complete   bool               `json:"complete"` // the fill reached Target and the RWLD ran in full
}

// ScaleReshard is one reshard seen during the run.
type ScaleReshard struct {
	FromShards int     `json:"from_shards"`
	ToShards   int     `json:"to_shards"`
	StartSec   float64 `json:"start_sec"`
	EndSec     float64 `json:"end_sec"` // 0 while running
	Objects    uint64  `json:"objects_at_start"`
	Copied     uint64  `json:"copied,omitempty"`
	CopyPerSec float64 `json:"copy_entries_per_sec,omitempty"`
	CopyLoaded bool    `json:"copy_loaded,omitempty"` // a bulk load (reshard-copy-load)
	// A loaded copy's chunks; log records replayed during the copy
	// (between chunks, or by source for an op copy), skipped between
	// chunks (the copy read their keys after them), and replayed after
	// the copy, before the close.
	LoadChunks int `json:"load_chunks,omitempty"`
	MidRounds  int `json:"mid_chunk_replay_rounds,omitempty"`
	// A loaded copy's loop, seconds: waiting for the pace, reading source
	// pages, in mid-chunk replay rounds, committing chunks (the rest:
	// merging and staging).
	LoadPaceWaitSec float64 `json:"load_pace_wait_sec,omitempty"`
	LoadReadSec     float64 `json:"load_read_sec,omitempty"`
	LoadMidSec      float64 `json:"load_mid_rounds_sec,omitempty"`
	LoadCommitSec   float64 `json:"load_commits_sec,omitempty"`
	EarlyReplayed   uint64  `json:"early_replayed,omitempty"`
	ReplaySkipped   uint64  `json:"replay_skipped,omitempty"`
	// Released: records chunk commits released (logged for keys a chunk
	// held while it was staged); MaxReady: the most records of loaded keys
	// a round left for later ones (the released ones are applied at the
	// pace they were logged).
	Released uint64  `json:"released,omitempty"`
	MaxReady int     `json:"max_ready,omitempty"`
	Replayed uint64  `json:"replayed,omitempty"`
	BlockMs  float64 `json:"block_ms,omitempty"`
	// Tail: log records replayed while writers were blocked; the block's
	// parts: closing the sources, replaying the tail, the instance write.
	Tail          uint64  `json:"tail_records,omitempty"`
	BlockCloseMs  float64 `json:"block_close_ms,omitempty"`
	BlockTailMs   float64 `json:"block_tail_ms,omitempty"`
	BlockSwitchMs float64 `json:"block_switch_ms,omitempty"`
	// PredictedObjects: the objects the target was sized for (the engine's
	// Sizing; the objects at the trigger under RGW's rule).
	PredictedObjects uint64 `json:"predicted_objects,omitempty"`
	// Capacity: the entries the target holds before the next trigger.
	Capacity uint64 `json:"capacity,omitempty"`
	// WorstWindowRatio: the lowest fill rate of a 10 s window overlapping
	// the reshard over the median rate of the 10 s windows within the 60
	// fill seconds before it (0: no full window in a fill phase).
	// WorstWindowRatio1s is the same over the median 1 s rate: an earlier
	// reference that compares a 10 s mean with a per-second median, which
	// sits above the mean when LSM flushes make the seconds bimodal.
	WorstWindowRatio   float64 `json:"worst_window_ratio,omitempty"`
	WorstWindowRatio1s float64 `json:"worst_window_ratio_vs_median_second,omitempty"`
	Windows            int     `json:"windows"`
}

// ScaleAging is the aging phase.
type ScaleAging struct {
	Seconds float64            `json:"seconds"`
	Ops     map[string]ScaleOp `json:"ops"`
	// PerMinute: completed operations in each minute; FirstPerSec and
	// LastPerSec the rates of the first and last 5 minutes (fifths when
	// shorter than 25 minutes).
	PerMinute   []int64     `json:"ops_per_minute"`
	FirstPerSec float64     `json:"first_ops_per_sec"`
	LastPerSec  float64     `json:"last_ops_per_sec"`
	Disk        []ScaleDisk `json:"disk_per_minute"`
	Objects     uint64      `json:"objects_at_end"`
	RSSBytes    []uint64    `json:"rss_per_minute"`
	// Resumed runs: the store's GC records counted by a walk of every
	// shard before the aging and after it (the clients stopped).
	GCRecordsStart *int `json:"gc_records_start,omitempty"`
	GCRecordsEnd   *int `json:"gc_records_end,omitempty"`
}

// ScaleResume describes the kept store a resumed run opened.
type ScaleResume struct {
	Dir     string `json:"dir"`
	Objects uint64 `json:"objects"`
	Shards  int    `json:"shards"`
	// The live key range found by probing: scaleKey(i), del ≤ i < put.
	DelNext uint64  `json:"del_next"`
	PutNext uint64  `json:"put_next"`
	Probes  int     `json:"probes"`
	OpenSec float64 `json:"open_sec"`
	// One RWLD phase (--resume-rwld, as after a round) and the list pages timed
	// after it, on the bucket as it was opened.
	RWLD       map[string]ScaleOp `json:"rwld,omitempty"`
	RWLDPerSec float64            `json:"rwld_ops_per_sec,omitempty"`
	// WarmupPerSec: the ops/s of the --resume-warmup phase before it.
	WarmupPerSec float64    `json:"warmup_ops_per_sec,omitempty"`
	List         *ScaleList `json:"list,omitempty"`
	Disk         *ScaleDisk `json:"disk,omitempty"`
}

// ScaleWalk is the full listing and the stats call after the rounds.
type ScaleWalk struct {
	Keys int64 `json:"keys"`
	// Expected: keys the run wrote and did not delete (nothing is in
	// flight during the walk); Keys must equal it.
	Expected   int64   `json:"expected_keys"`
	Pages      int     `json:"pages"`
	Seconds    float64 `json:"seconds"`
	KeysPerSec float64 `json:"keys_per_sec"`
	StatsMs    float64 `json:"bucket_stats_ms"`
	Complete   bool    `json:"complete"`
}

// ScaleResult is the report.
type ScaleResult struct {
	Mode       string `json:"mode"` // driver or http
	Command    string `json:"command,omitempty"`
	StartedAt  string `json:"started_at"`
	UpdatedAt  string `json:"updated_at"`
	Done       bool   `json:"done"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Config     struct {
		Clients         int     `json:"clients"`
		Size            int     `json:"size"`
		RWLDSec         float64 `json:"rwld_sec"`
		AgingSec        float64 `json:"aging_sec"`
		PreShards       int     `json:"pre_shards"`
		InitialShards   int     `json:"initial_shards"`
		MaxObjsPerShard int     `json:"max_objs_per_shard,omitempty"`
		CopyRateLimit   int     `json:"copy_rate_limit,omitempty"`
		Adaptive        bool    `json:"copy_rate_adaptive,omitempty"`
		TriggerSizing   bool    `json:"reshard_trigger_sizing,omitempty"`
		NoIndexView     bool    `json:"no_index_view,omitempty"`
		InlineMax       int64   `json:"inline_max"` // driver mode: bodies kept in their index entry up to this size
		CopyLoad        bool    `json:"copy_load,omitempty"`
		Allocator       string  `json:"allocator,omitempty"`       // driver mode: the C allocator (jemalloc or system)
		MallocConf      string  `json:"malloc_conf,omitempty"`     // driver mode: jemalloc's MALLOC_CONF (huge pages)
		THPMode         string  `json:"thp_mode,omitempty"`        // the kernel's transparent huge page mode
		GOGC            int     `json:"gogc,omitempty"`            // driver mode: the collector's setting (cairn serve's default unless GOGC is set)
		GoMemoryLimit   int64   `json:"go_memory_limit,omitempty"` // driver mode: the Go runtime's soft memory limit (cairn serve's default unless set)
		MemTableSize    int64   `json:"memtable_size,omitempty"`   // driver mode: the embedded store's memtable size
		MmapReads       *bool   `json:"mmap_reads,omitempty"`      // driver mode: table reads copy from a mapping (absent in reports before stop 50: pread)
		Targets         []int64 `json:"targets"`
	} `json:"config"`

	// The numbers issue 24 asks a script to check.
	Objects                 uint64  `json:"objects"`
	Reshards                int     `json:"reshards"`
	ReshardWorstWindowRatio float64 `json:"reshard_worst_window_ratio"`
	RWLDRatioFinalVs1M      float64 `json:"rwld_ratio_final_vs_1m"`
	ListPageRatioFinalVs1M  float64 `json:"list_page_ratio_final_vs_1m"`
	AgedRatio               float64 `json:"aged_ratio"`
	MaxRSSBytes             uint64  `json:"max_rss_bytes"`
	// MaxRSSAnonBytes is the largest RSS without mapped file pages (VmRSS
	// minus RssFile, sampled each second): the process's own memory, which
	// cache-size, the memtables and go-memory-limit bound. The file pages
	// are the page cache's tables, mapped with mmap-reads.
	MaxRSSAnonBytes uint64 `json:"max_rss_anon_bytes,omitempty"`
	// OutsideWorstWindowRatio is the same 10 s ratio over fill windows
	// that touch no reshard: the machine's own noise floor.
	OutsideWorstWindowRatio float64 `json:"outside_worst_window_ratio"`
	// The two ratios against the median second of the minute before (the
	// reference of earlier reports, kept for comparison).
	ReshardWorstWindowRatio1s float64 `json:"reshard_worst_window_ratio_vs_median_second"`
	OutsideWorstWindowRatio1s float64 `json:"outside_worst_window_ratio_vs_median_second"`

	Rounds      []ScaleRound   `json:"rounds"`
	ReshardList []ScaleReshard `json:"reshard_events"`
	Aging       *ScaleAging    `json:"aging,omitempty"`
	Walk        *ScaleWalk     `json:"walk,omitempty"`
	Resumed     *ScaleResume   `json:"resumed,omitempty"`
	// Driver mode: the ListObjectVersions walk, the final manual reshard,
	// the per-second LSM and GC series and the fill's noise attribution.
	WalkVersions *ScaleVersionsWalk `json:"walk_versions,omitempty"`
	FinalReshard *ScaleFinalReshard `json:"final_reshard,omitempty"`
	LSMPerSec    *ScaleLSMSeries    `json:"lsm_per_sec,omitempty"`
	FillNoise    *ScaleNoise        `json:"fill_noise,omitempty"`
	FillPerSec   []int32            `json:"fill_puts_per_sec"`  // each second of the run: fill PUTs completed
	PhasePerSec  string             `json:"phase_per_sec"`      // each second's phase: f fill, r rwld, l list, a aging, - other
	ShardsPerSec []int              `json:"shards_per_sec_rle"` // run-length pairs (seconds, shards)
	RSSPerSec    []int32            `json:"rss_mib_per_sec"`    // each second: the process's (driver) or the gateway's (HTTP) RSS, MiB
	Note         string             `json:"note,omitempty"`
}

// scaleTarget is what the workload drives: the driver or a gateway.
type scaleTarget interface {
	put(ctx context.Context, key string, body []byte) error
	// get and head report false for a missing key.
	get(ctx context.Context, key string, buf []byte) (bool, error)
	head(ctx context.Context, key string) (bool, error)
	del(ctx context.Context, key string) error
	// list reads one page: after startAfter or from token. It returns
	// the keys read and the next page's token ("" when done).
	list(ctx context.Context, prefix, startAfter, token string, max int) (int, string, error)
	stats(ctx context.Context) (shards int, objects uint64, resharding bool, err error)
	rss() uint64
	maxRSS() uint64
	hugeRSS() uint64
	fileRSS() uint64
	disk(objects uint64) ScaleDisk
	close()
}

// scaleKey is object i's key: a bijective mix of i, so keys of any count
// spread evenly over the key space and every listing position is alike.
func scaleKey(i uint64) string {
	z := i + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return fmt.Sprintf("o/%016x", z)
}

// Phases of the timeline.
const (
	phOther = '-'
	phFill  = 'f'
	phRWLD  = 'r'
	phList  = 'l'
	phAging = 'a'
)

type scaleRun struct {
	cfg   ScaleConfig
	t     scaleTarget
	res   *ScaleResult
	start time.Time
	body  []byte

	putNext atomic.Uint64 // next key index to PUT
	delNext atomic.Uint64 // next key index to DELETE (oldest first)

	phase     atomic.Int32
	fillCount atomic.Int64
	opCount   atomic.Int64

	pubMu      sync.Mutex // one report write at a time
	mu         sync.Mutex // guards res's timeline and reshard events
	curShards  int
	resharding bool
	lastPoll   float64 // run second of the previous stats poll
	maxRSS     uint64
	maxAnonRSS uint64 // VmRSS minus RssFile, each second

	doneResults chan reshard.Result
	lsm         *lsmSampler // driver mode
	// The manual final reshard: while manual is set, watch opens no event
	// for it; results starting at or after finalStart are not dynamic ones.
	manual     atomic.Bool
	finalStart time.Time
}

// RunScale runs the workload. The report is returned (and written to
// cfg.Out) even when the run stops early on ctx or MaxDuration.
func RunScale(ctx context.Context, cfg ScaleConfig) (*ScaleResult, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ProfileDir != "" {
		// Now, not after the first round's fill.
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return nil, fmt.Errorf("bench scale: profile dir: %w", err)
		}
	}
	r := &scaleRun{cfg: cfg, start: time.Now(), body: pattern(cfg.Size, 11), doneResults: make(chan reshard.Result, 64)}
	res := &ScaleResult{Mode: "driver", Command: cfg.Command, StartedAt: r.start.UTC().Format(time.RFC3339), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	res.Config.Clients, res.Config.Size, res.Config.RWLDSec, res.Config.AgingSec = cfg.Clients, cfg.Size, cfg.RWLD.Seconds(), cfg.Aging.Seconds()
	res.Config.PreShards, res.Config.InitialShards, res.Config.Targets = cfg.PreShards, cfg.InitialShards, cfg.Targets
	res.Config.THPMode = thpMode()
	r.res = res
	var err error
	if cfg.Endpoint != "" {
		res.Mode = "http"
		r.t, err = newScaleHTTP(ctx, cfg)
	} else {
		res.Config.MaxObjsPerShard, res.Config.CopyRateLimit, res.Config.Adaptive = cfg.MaxObjsPerShard, cfg.CopyRateLimit, cfg.CopyRateAdaptive
		res.Config.TriggerSizing, res.Config.NoIndexView, res.Config.CopyLoad = cfg.TriggerSizing, cfg.NoIndexView, cfg.CopyLoad
		res.Config.Allocator, res.Config.GOGC, res.Config.GoMemoryLimit = cfg.Allocator, cfg.GOGC, cfg.GoMemoryLimit
		res.Config.MemTableSize = cmp.Or(cfg.MemTableSize, int64(embedded.DefaultMemTableSize))
		res.Config.MallocConf = cfg.MallocConf
		mmap := !cfg.NoMmap
		res.Config.MmapReads = &mmap
		res.Config.InlineMax = max(cfg.InlineMax, 0)
		r.t, err = newScaleDriver(ctx, cfg, r.doneResults)
	}
	if err != nil {
		return nil, err
	}
	defer r.t.close()
	if a, ok := r.t.(scaleAdmin); ok {
		r.lsm = newLSMSampler(a)
		res.LSMPerSec = &ScaleLSMSeries{}
	}
	if cfg.MaxDuration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.MaxDuration)
		defer cancel()
	}
	// The shard count before the fill: a sized reshard can finish
	// between two polls early on, and watch counts it only against a
	// known starting count.
	if shards, _, _, err := r.t.stats(ctx); err == nil {
		r.curShards, r.lastPoll = shards, r.sec()
		if res.Mode == "http" {
			res.Config.InitialShards = shards // the gateway's, not ours
		}
	}
	bg, stopBG := context.WithCancel(context.Background())
	var bgWG sync.WaitGroup
	bgWG.Add(2)
	go func() { defer bgWG.Done(); r.tick(bg) }()
	go func() { defer bgWG.Done(); r.watch(bg) }()
	defer func() { stopBG(); bgWG.Wait() }()

	rctx, rcancel := ctx, context.CancelFunc(func() {})
	if cfg.FillFor > 0 {
		rctx, rcancel = context.WithTimeout(ctx, cfg.FillFor)
	}
	var runErr error
	if cfg.Resume != "" {
		runErr = r.resume(rctx)
	} else {
		runErr = r.rounds(rctx)
	}
	if rctx.Err() != nil && ctx.Err() == nil && errors.Is(runErr, rctx.Err()) {
		r.logf("fill time (%v) is up: %s", cfg.FillFor, "the rounds stop here")
		res.Note = fmt.Sprintf("rounds stopped after --fill-for %v", cfg.FillFor)
		runErr = nil
	}
	rcancel()
	if runErr == nil && cfg.Walk && ctx.Err() == nil {
		runErr = r.walk(ctx)
	}
	if a, ok := r.t.(scaleAdmin); ok && runErr == nil && cfg.VersionsWalk && ctx.Err() == nil {
		runErr = r.walkVersions(ctx, a)
	}
	if a, ok := r.t.(scaleAdmin); ok && runErr == nil && cfg.FinalReshard > 0 && ctx.Err() == nil {
		runErr = r.finalReshard(ctx, a, cfg.FinalReshard)
	}
	if runErr == nil && cfg.Aging > 0 && ctx.Err() == nil {
		runErr = r.age(ctx)
	}
	if ctx.Err() != nil && runErr != nil && errors.Is(runErr, ctx.Err()) {
		runErr = nil // cut short: report what was reached
	}
	res.Done = runErr == nil && ctx.Err() == nil
	if runErr != nil {
		res.Note = "stopped by error: " + runErr.Error()
	} else if !res.Done {
		res.Note = "cut short (interrupted or max duration) after what the rounds show"
	}
	if err := r.publish(); err != nil && runErr == nil {
		runErr = err
	}
	return res, runErr
}

func (r *scaleRun) logf(format string, args ...any) {
	fmt.Fprintf(r.cfg.Log, "%7.1fs "+format+"\n", append([]any{time.Since(r.start).Seconds()}, args...)...)
}

func (r *scaleRun) sec() float64 { return time.Since(r.start).Seconds() }

// tick records each second's fill count, phase and shard count, and RSS.
func (r *scaleRun) tick(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n := r.fillCount.Swap(0)
		ph := byte(r.phase.Load())
		if ph == 0 {
			ph = phOther
		}
		rss, file := r.t.rss(), r.t.fileRSS()
		r.mu.Lock()
		if r.lsm != nil { // beside the fill count, under the same lock
			r.lsm.sample(r.res.LSMPerSec)
		}
		r.res.FillPerSec = append(r.res.FillPerSec, int32(n))
		r.res.PhasePerSec += string(ph)
		s := r.res.ShardsPerSec
		if k := len(s); k >= 2 && s[k-1] == r.curShards {
			s[k-2]++
		} else {
			s = append(s, 1, r.curShards)
		}
		r.res.ShardsPerSec = s
		r.res.RSSPerSec = append(r.res.RSSPerSec, int32(rss>>20))
		r.maxRSS = max(r.maxRSS, rss, r.t.maxRSS())
		if rss > file {
			r.maxAnonRSS = max(r.maxAnonRSS, rss-file)
		}
		n60 := len(r.res.FillPerSec)%60 == 0
		r.mu.Unlock()
		if n60 { // progress inside long rounds (reshard events, timeline)
			if err := r.publish(); err != nil {
				r.logf("write report: %v", err)
			}
		}
	}
}

// watch polls the bucket's shard count and reshard state, recording each
// reshard's start and end (and, in driver mode, the engine's own figures).
func (r *scaleRun) watch(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case res := <-r.doneResults:
			r.reshardDone(res)
			continue
		case <-t.C:
		}
		manual := r.manual.Load() // read before the poll: see scaleRun.manual
		shards, objs, busy, err := r.t.stats(ctx)
		if err != nil {
			continue
		}
		busy = busy && !manual
		now := r.sec()
		r.mu.Lock()
		evs := r.res.ReshardList
		open := len(evs) > 0 && evs[len(evs)-1].EndSec == 0
		seen := false // driver mode: the engine already reported this one
		for _, e := range evs {
			seen = seen || (e.EndSec > 0 && e.FromShards == shards)
		}
		if busy && !open && !seen && r.curShards != 0 {
			r.res.ReshardList = append(evs, ScaleReshard{FromShards: shards, StartSec: now, Objects: objs})
			r.logf("reshard of %d shards started at %d objects", shards, objs)
		}
		if !busy && open && shards != evs[len(evs)-1].FromShards {
			e := &evs[len(evs)-1]
			if r.cfg.Endpoint != "" { // driver mode closes events from the engine's result
				e.EndSec, e.ToShards = now, shards
				r.logf("reshard %d → %d done", e.FromShards, shards)
			}
		}
		if !busy && !open && r.cfg.Endpoint != "" && r.curShards != 0 && shards != r.curShards {
			// A reshard began and ended between two polls: known to
			// within the poll interval.
			r.res.ReshardList = append(evs, ScaleReshard{FromShards: r.curShards, ToShards: shards, StartSec: r.lastPoll, EndSec: now, Objects: objs})
			r.logf("reshard %d → %d done between two polls", r.curShards, shards)
		}
		r.curShards, r.lastPoll = shards, now
		r.resharding = busy
		r.mu.Unlock()
	}
}

// reshardDone records the engine's result (driver mode): exact times.
func (r *scaleRun) reshardDone(res reshard.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.finalStart.IsZero() && !res.Start.Before(r.finalStart) {
		return // the final manual reshard reports itself
	}
	start := res.Start.Sub(r.start).Seconds()
	ev := ScaleReshard{FromShards: res.From.NumShards, ToShards: res.To.NumShards, StartSec: start, EndSec: start + res.Total.Seconds(),
		Copied: res.Copied, CopyLoaded: res.CopyLoaded, LoadChunks: res.LoadChunks, MidRounds: res.MidChunkRounds, EarlyReplayed: res.EarlyReplayed,
		ReplaySkipped: res.ReplaySkipped, Released: res.Released, MaxReady: res.MaxReady, Replayed: res.Replayed, BlockMs: float64(res.Block.Microseconds()) / 1000, Tail: res.Tail,
		BlockCloseMs: float64(res.BlockClose.Microseconds()) / 1000, BlockTailMs: float64(res.BlockTail.Microseconds()) / 1000,
		BlockSwitchMs:   float64(res.BlockSwitch.Microseconds()) / 1000,
		LoadPaceWaitSec: res.LoadPaceWait.Seconds(), LoadReadSec: res.LoadRead.Seconds(),
		LoadMidSec: res.LoadMidRounds.Seconds(), LoadCommitSec: res.LoadCommits.Seconds()}
	if res.Sizing != nil {
		ev.PredictedObjects, ev.Capacity = res.Sizing.Predicted, res.Sizing.Capacity
	}
	if res.CopyTime > 0 {
		ev.CopyPerSec = float64(res.Copied) / res.CopyTime.Seconds()
	}
	evs := r.res.ReshardList
	if n := len(evs); n > 0 && evs[n-1].EndSec == 0 && evs[n-1].FromShards == ev.FromShards {
		ev.Objects = evs[n-1].Objects
		evs[n-1] = ev
	} else {
		r.res.ReshardList = append(evs, ev)
	}
	r.logf("reshard %d → %d: %.1f s, copied %d (%.0f/s), block %.1f ms (close %.1f, tail of %d records %.1f, switch %.1f), sized for %d objects, room for %d",
		ev.FromShards, ev.ToShards, ev.EndSec-ev.StartSec, ev.Copied, ev.CopyPerSec, ev.BlockMs, ev.BlockCloseMs, ev.Tail, ev.BlockTailMs, ev.BlockSwitchMs, ev.PredictedObjects, ev.Capacity)
}

// latRec collects one phase's latencies per op type, as histograms: the
// 30-minute aging kept ~40M samples as durations, ~300 MB of this
// process's live heap (5x that in RSS at GOGC 400), which the reports had
// counted as the store's memory growth (docs/bench/scale.md, stop 40).
type latRec struct {
	mu   sync.Mutex
	lats map[string]*latHist
	miss map[string]int64
}

func newLatRec() *latRec {
	return &latRec{lats: map[string]*latHist{}, miss: map[string]int64{}}
}

func (l *latRec) add(op string, d time.Duration, miss bool, local map[string]*latHist, lmiss map[string]int64) {
	h := local[op]
	if h == nil {
		h = &latHist{}
		local[op] = h
	}
	h.add(d)
	if miss {
		lmiss[op]++
	}
}

func (l *latRec) merge(local map[string]*latHist, lmiss map[string]int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, v := range local {
		h := l.lats[k]
		if h == nil {
			h = &latHist{}
			l.lats[k] = h
		}
		h.merge(v)
	}
	for k, v := range lmiss {
		l.miss[k] += v
	}
}

func (l *latRec) summary(elapsed time.Duration) (map[string]ScaleOp, float64) {
	out := map[string]ScaleOp{}
	var total int64
	for op, h := range l.lats {
		ms := func(us float64) float64 { return math.Round(us) / 1000 }
		out[op] = ScaleOp{Ops: h.n, Misses: l.miss[op], OpsPerSec: float64(h.n) / elapsed.Seconds(),
			P50Ms: ms(h.quantile(0.50)), P99Ms: ms(h.quantile(0.99)), MaxMs: ms(float64(h.max.Microseconds()))}
		total += h.n
	}
	return out, float64(total) / elapsed.Seconds()
}

// latHist counts latencies in latSub buckets per power of two of
// microseconds: a quantile is within half a bucket (~2 %) of the
// sample's, in a fixed 5 KB whatever the number of ops.
type latHist struct {
	n   int64
	max time.Duration
	b   [latBuckets]int64
}

const (
	latSub     = 16
	latBuckets = 41 * latSub // up to 2^41 µs
)

// latBucket is the bucket of d: [2^e (1 + f/latSub), 2^e (1 + (f+1)/latSub)) µs.
func latBucket(d time.Duration) int {
	us := uint64(max(d.Microseconds(), 1))
	e := bits.Len64(us) - 1
	var f uint64
	if e >= 4 {
		f = (us >> (e - 4)) & (latSub - 1)
	} else {
		f = (us << (4 - e)) & (latSub - 1)
	}
	return min(e*latSub+int(f), latBuckets-1)
}

// latLower is the lower bound of bucket i in µs.
func latLower(i int) float64 {
	return math.Ldexp(1+float64(i%latSub)/latSub, i/latSub)
}

func (h *latHist) add(d time.Duration) {
	h.n++
	h.max = max(h.max, d)
	h.b[latBucket(d)]++
}

func (h *latHist) merge(o *latHist) {
	h.n += o.n
	h.max = max(h.max, o.max)
	for i, c := range o.b {
		h.b[i] += c
	}
}

// quantile is the p quantile in µs (the sample of rank p·(n−1), as
// summarise takes it): its bucket's middle, at most the largest sample.
func (h *latHist) quantile(p float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := int64(p * float64(h.n-1))
	var cum int64
	for i, c := range h.b {
		if cum += c; cum > rank {
			return min((latLower(i)+latLower(i+1))/2, float64(h.max.Microseconds()))
		}
	}
	return float64(h.max.Microseconds())
}

// fill PUTs new keys until the bucket holds target objects.
func (r *scaleRun) fill(ctx context.Context, target int64) (ScaleOp, time.Duration, error) {
	r.phase.Store(phFill)
	defer r.phase.Store(phOther)
	// Keys below delNext are gone: the live count is putNext - delNext.
	end := uint64(target) + r.delNext.Load()
	rec := newLatRec()
	errs := make([]error, r.cfg.Clients)
	var wg sync.WaitGroup
	// An op once issued runs to its end: the key counters must say what
	// the bucket holds (the walk checks it), so ending a phase or the run
	// only stops new ops.
	opCtx := context.WithoutCancel(ctx)
	// The whole fill's CPU profile: a reshard beside it shows as
	// task=reshard, the fill's own ops as op=fill.
	stop, err := r.startProfile(fmt.Sprintf("fill-%d.pprof", target))
	if err != nil {
		return ScaleOp{}, 0, err
	}
	defer stop()
	labels := r.opLabels()["fill"] // nil without profiling
	t0 := time.Now()
	for c := 0; c < r.cfg.Clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			local, lm := map[string]*latHist{}, map[string]int64{}
			defer func() { rec.merge(local, lm) }()
			if labels != nil {
				pprof.SetGoroutineLabels(labels)
			}
			for ctx.Err() == nil {
				i := r.putNext.Add(1) - 1
				if i >= end {
					r.putNext.Add(^uint64(0)) // give the index back (it was not written)
					return
				}
				s := time.Now()
				if err := r.t.put(opCtx, scaleKey(i), r.body); err != nil {
					errs[c] = fmt.Errorf("fill put %d: %w", i, err)
					return
				}
				rec.add("put", time.Since(s), false, local, lm)
				r.fillCount.Add(1)
			}
		}(c)
	}
	wg.Wait()
	el := time.Since(t0)
	ops, _ := rec.summary(el)
	return ops["put"], el, errors.Join(errs...)
}

// mixed runs a closed-loop mix for d; pick chooses each op from a random
// number in [0, 100).
func (r *scaleRun) mixed(ctx context.Context, d time.Duration, ph byte, pick func(p int) string) (map[string]ScaleOp, float64, time.Duration, *latRec, error) {
	r.phase.Store(int32(ph))
	defer r.phase.Store(phOther)
	opCtx := context.WithoutCancel(ctx) // see fill
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	rec := newLatRec()
	errs := make([]error, r.cfg.Clients)
	var wg sync.WaitGroup
	t0 := time.Now()
	for c := 0; c < r.cfg.Clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), uint64(t0.UnixNano())))
			buf := make([]byte, 64<<10)
			local, lm := map[string]*latHist{}, map[string]int64{}
			defer func() { rec.merge(local, lm) }()
			labels := r.opLabels()
			defer pprof.SetGoroutineLabels(context.Background())
			for ctx.Err() == nil {
				op := pick(rng.IntN(100))
				if labels != nil {
					pprof.SetGoroutineLabels(labels[op])
				}
				s := time.Now()
				miss, err := r.one(opCtx, op, rng, buf)
				if err != nil {
					errs[c] = fmt.Errorf("%s: %w", op, err)
					cancel()
					return
				}
				rec.add(op, time.Since(s), miss, local, lm)
				r.opCount.Add(1)
			}
		}(c)
	}
	wg.Wait()
	el := time.Since(t0)
	ops, rate := rec.summary(el)
	return ops, rate, el, rec, errors.Join(errs...)
}

// opLabels returns a labelled context per op name when profiling (nil
// otherwise): set per op, it costs a pointer store, not an allocation.
func (r *scaleRun) opLabels() map[string]context.Context {
	if r.cfg.ProfileDir == "" {
		return nil
	}
	m := map[string]context.Context{}
	for _, op := range []string{"fill", "get", "head", "put", "overwrite", "delete", "list"} {
		m[op] = pprof.WithLabels(context.Background(), pprof.Labels("op", op))
	}
	return m
}

// startProfile starts a CPU profile into ProfileDir/name (a no-op without
// ProfileDir); the returned func stops it.
func (r *scaleRun) startProfile(name string) (func(), error) {
	if r.cfg.ProfileDir == "" {
		return func() {}, nil
	}
	f, err := os.Create(filepath.Join(r.cfg.ProfileDir, name))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// randLive picks a key index that is (most likely) live.
func (r *scaleRun) randLive(rng *rand.Rand) uint64 {
	lo, hi := r.delNext.Load(), r.putNext.Load()
	if hi <= lo {
		return lo
	}
	return lo + rng.Uint64N(hi-lo)
}

// one runs op once. miss reports a GET/HEAD of a key deleted meanwhile.
func (r *scaleRun) one(ctx context.Context, op string, rng *rand.Rand, buf []byte) (bool, error) {
	switch op {
	case "get":
		ok, err := r.t.get(ctx, scaleKey(r.randLive(rng)), buf)
		return !ok, err
	case "head":
		ok, err := r.t.head(ctx, scaleKey(r.randLive(rng)))
		return !ok, err
	case "put": // a new key
		i := r.putNext.Add(1) - 1
		return false, r.t.put(ctx, scaleKey(i), r.body)
	case "overwrite":
		return false, r.t.put(ctx, scaleKey(r.randLive(rng)), r.body)
	case "delete": // the oldest key
		i := r.delNext.Add(1) - 1
		if i >= r.putNext.Load() {
			r.delNext.Add(^uint64(0))
			return true, nil
		}
		return false, r.t.del(ctx, scaleKey(i))
	case "list":
		_, _, err := r.t.list(ctx, "", scaleKey(r.randLive(rng)), "", 1000)
		return false, err
	}
	return false, fmt.Errorf("unknown op %q", op)
}

// rwld runs one RWLD phase of length d, profiled into profile when
// ProfileDir is set.
func (r *scaleRun) rwld(ctx context.Context, d time.Duration, profile string) (map[string]ScaleOp, float64, error) {
	stopProf, err := r.startProfile(profile)
	if err != nil {
		return nil, 0, err
	}
	ops, rate, _, _, err := r.mixed(ctx, d, phRWLD, rwldPick)
	stopProf()
	return ops, rate, err
}

// rwldPick: 70 % GET, 20 % PUT, 5 % LIST, 5 % DELETE (the seed's mix).
func rwldPick(p int) string {
	switch {
	case p < 70:
		return "get"
	case p < 90:
		return "put"
	case p < 95:
		return "list"
	}
	return "delete"
}

// agingPick: 45 % GET, 35 % PUT (six in seven overwrite a live key, one
// in seven writes a new key, so the count holds against the deletes),
// 15 % HEAD, 5 % DELETE.
func agingPick(p int) string {
	switch {
	case p < 45:
		return "get"
	case p < 75:
		return "overwrite"
	case p < 80:
		return "put"
	case p < 95:
		return "head"
	}
	return "delete"
}

// listTimes times pages of 1000: from the start, under the middle prefix
// and after a continuation token from mid-bucket; each the median of
// ListRepeats tries.
func (r *scaleRun) listTimes(ctx context.Context) (ScaleList, error) {
	r.phase.Store(phList)
	defer r.phase.Store(phOther)
	med := func(f func(i int) error) (float64, error) {
		var v []float64
		for i := 0; i < r.cfg.ListRepeats; i++ {
			s := time.Now()
			if err := f(i); err != nil {
				return 0, err
			}
			v = append(v, float64(time.Since(s).Microseconds())/1000)
		}
		sort.Float64s(v)
		return v[len(v)/2], nil
	}
	var out ScaleList
	var err error
	if out.StartMs, err = med(func(int) error { _, _, err := r.t.list(ctx, "", "", "", 1000); return err }); err != nil {
		return out, err
	}
	if out.PrefixMs, err = med(func(int) error { _, _, err := r.t.list(ctx, "o/8", "", "", 1000); return err }); err != nil {
		return out, err
	}
	// Tokens from one-key pages that start at different mid-bucket keys
	// (so a small bucket has a token too).
	var tokens []string
	for i := 0; i < r.cfg.ListRepeats; i++ {
		_, tok, err := r.t.list(ctx, "", fmt.Sprintf("o/%x", 4+i), "", 1)
		if err != nil {
			return out, err
		}
		tokens = append(tokens, tok)
	}
	out.ContinuationMs, err = med(func(i int) error {
		if tokens[i] == "" {
			return nil
		}
		_, _, err := r.t.list(ctx, "", "", tokens[i], 1000)
		return err
	})
	return out, err
}

func (r *scaleRun) rounds(ctx context.Context) error {
	if r.cfg.PreShards > 0 {
		r.logf("bucket pre-sharded to %d shards", r.cfg.PreShards)
	}
	for _, target := range r.cfg.Targets {
		rd := ScaleRound{Target: target, FillStart: r.sec()}
		put, el, err := r.fill(ctx, target)
		rd.FillPut, rd.FillSec = put, el.Seconds()
		if el > 0 {
			rd.FillPerSec = float64(put.Ops) / el.Seconds()
		}
		filled := err == nil && ctx.Err() == nil
		if err != nil && ctx.Err() == nil {
			return err
		}
		shards, objs, _, serr := r.t.stats(context.WithoutCancel(ctx))
		if serr == nil {
			rd.Shards, rd.Objects = shards, objs
		}
		r.logf("round %d: filled to %d objects (%d shards) at %.0f PUT/s, p50 %.2f p99 %.2f ms", target, objs, shards, rd.FillPerSec, put.P50Ms, put.P99Ms)
		if !filled {
			r.addRound(rd)
			return ctx.Err()
		}
		ops, rate, err := r.rwld(ctx, r.cfg.RWLD, fmt.Sprintf("rwld-%d.pprof", target))
		if err != nil && ctx.Err() == nil {
			return err
		}
		rd.RWLD, rd.RWLDPerSec = ops, rate
		r.logf("round %d: RWLD %.0f ops/s: %s", target, rate, fmtOps(ops))
		if ctx.Err() != nil {
			r.addRound(rd)
			return ctx.Err()
		}
		if rd.List, err = r.listTimes(ctx); err != nil {
			if ctx.Err() == nil {
				return err
			}
		}
		_, objs, _, _ = r.t.stats(context.WithoutCancel(ctx))
		rd.RSSBytes, rd.HugeBytes, rd.FileBytes = r.t.rss(), r.t.hugeRSS(), r.t.fileRSS()
		rd.Disk = r.t.disk(objs)
		rd.Complete = ctx.Err() == nil
		r.logf("round %d: list start %.1f / prefix %.1f / token %.1f ms; RSS %d MiB; disk %.0f B/object (index %.0f, data %.0f)",
			target, rd.List.StartMs, rd.List.PrefixMs, rd.List.ContinuationMs, rd.RSSBytes>>20, rd.Disk.TotalBytesPerObj, rd.Disk.IndexBytesPerObj, rd.Disk.DataBytesPerObj)
		r.addRound(rd)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

func fmtOps(ops map[string]ScaleOp) string {
	var names []string
	for k := range ops {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		o := ops[k]
		fmt.Fprintf(&b, "%s %.0f/s p50 %.2f p99 %.2f; ", k, o.OpsPerSec, o.P50Ms, o.P99Ms)
	}
	return b.String()
}

func (r *scaleRun) addRound(rd ScaleRound) {
	r.mu.Lock()
	r.res.Rounds = append(r.res.Rounds, rd)
	r.mu.Unlock()
	if err := r.publish(); err != nil {
		r.logf("write report: %v", err)
	}
}

// walk lists the whole bucket, page by page, and times a stats call.
func (r *scaleRun) walk(ctx context.Context) error {
	w, err := r.walkKeys(ctx, "walk")
	if w != nil {
		r.mu.Lock()
		r.res.Walk = w
		r.mu.Unlock()
		if err := r.publish(); err != nil {
			r.logf("write report: %v", err)
		}
	}
	return err
}

// walkKeys is one ListObjectsV2 walk of the bucket and a timed stats call.
func (r *scaleRun) walkKeys(ctx context.Context, label string) (*ScaleWalk, error) {
	r.phase.Store(phList)
	defer r.phase.Store(phOther)
	w := &ScaleWalk{Expected: int64(r.putNext.Load() - r.delNext.Load())}
	t0 := time.Now()
	if _, _, _, err := r.t.stats(ctx); err != nil {
		return nil, err
	}
	w.StatsMs = float64(time.Since(t0).Microseconds()) / 1000
	t0 = time.Now()
	token := ""
	for ctx.Err() == nil {
		n, next, err := r.t.list(ctx, "", "", token, 1000)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return w, err
		}
		w.Keys += int64(n)
		w.Pages++
		if next == "" {
			w.Complete = true
			break
		}
		token = next
		if w.Pages%1000 == 0 {
			r.logf("%s: %d keys in %.0f s", label, w.Keys, time.Since(t0).Seconds())
		}
	}
	w.Seconds = time.Since(t0).Seconds()
	w.KeysPerSec = float64(w.Keys) / w.Seconds
	r.logf("%s: %d keys (%d expected) in %d pages, %.1f s (%.0f keys/s); bucket stats %.1f ms", label, w.Keys, w.Expected, w.Pages, w.Seconds, w.KeysPerSec, w.StatsMs)
	return w, ctx.Err()
}

// resume finds the live key range of a kept store's bucket: the run
// deleted keys oldest first and wrote new ones at the top, so the live
// indexes are one range [del, put) (up to the few ops in flight when the
// run that wrote it stopped). Index objects/2 is inside it as long as
// fewer keys were deleted than are live; two binary searches find its ends.
func (r *scaleRun) resume(ctx context.Context) error {
	t0 := time.Now()
	shards, objs, _, err := r.t.stats(ctx)
	if err != nil {
		return err
	}
	probes := 0
	live := func(i uint64) (bool, error) {
		probes++
		return r.t.head(ctx, scaleKey(i))
	}
	mid := objs / 2
	if ok, err := live(mid); err != nil || !ok {
		return fmt.Errorf("bench scale: resume: key %d of %d objects is not live (err %v): not a bucket this bench filled", mid, objs, err)
	}
	// First live index in [0, mid], first absent one in (mid, 2·objs+1].
	lo, hi := uint64(0), mid
	for lo < hi {
		m := lo + (hi-lo)/2
		ok, err := live(m)
		if err != nil {
			return err
		}
		if ok {
			hi = m
		} else {
			lo = m + 1
		}
	}
	del := lo
	lo, hi = mid+1, 2*objs+1
	for lo < hi {
		m := lo + (hi-lo)/2
		ok, err := live(m)
		if err != nil {
			return err
		}
		if ok {
			lo = m + 1
		} else {
			hi = m
		}
	}
	r.delNext.Store(del)
	r.putNext.Store(lo)
	rs := &ScaleResume{Dir: r.cfg.Resume, Objects: objs, Shards: shards, DelNext: del, PutNext: lo, Probes: probes, OpenSec: time.Since(t0).Seconds()}
	r.mu.Lock()
	r.res.Resumed = rs
	r.curShards = shards
	r.mu.Unlock()
	r.logf("resumed %s: %d objects in %d shards, live keys [%d, %d) (%d probes)", rs.Dir, objs, shards, del, lo, probes)
	if err := r.publish(); err != nil {
		return err
	}
	if r.cfg.ResumeRWLD <= 0 {
		return nil
	}
	if r.cfg.ResumeWarmup > 0 {
		_, wrate, _, _, err := r.mixed(ctx, r.cfg.ResumeWarmup, phRWLD, rwldPick)
		if err != nil {
			return err
		}
		r.logf("resumed: warm-up RWLD %.0f ops/s", wrate)
		r.mu.Lock()
		rs.WarmupPerSec = wrate
		r.mu.Unlock()
	}
	ops, rate, err := r.rwld(ctx, r.cfg.ResumeRWLD, fmt.Sprintf("rwld-resumed-%d.pprof", objs))
	if err != nil {
		return err
	}
	r.logf("resumed: RWLD %.0f ops/s: %s", rate, fmtOps(ops))
	list, err := r.listTimes(ctx)
	if err != nil {
		return err
	}
	_, objs, _, _ = r.t.stats(ctx)
	disk := r.t.disk(objs)
	r.logf("resumed: list start %.2f / prefix %.2f / token %.2f ms", list.StartMs, list.PrefixMs, list.ContinuationMs)
	r.mu.Lock()
	rs.RWLD, rs.RWLDPerSec, rs.List, rs.Disk = ops, rate, &list, &disk
	r.mu.Unlock()
	return r.publish()
}

// gcRecords counts the store's GC records (driver mode; nil otherwise).
func (r *scaleRun) gcRecords(ctx context.Context) *int {
	s, ok := r.t.(*scaleDriver)
	if !ok {
		return nil
	}
	t0 := time.Now()
	n, err := s.d.GCRecords(ctx)
	if err != nil {
		r.logf("count GC records: %v", err)
		return nil
	}
	r.logf("GC records: %d (counted in %.1f s)", n, time.Since(t0).Seconds())
	return &n
}

// age runs the aging mix for cfg.Aging, minute by minute.
func (r *scaleRun) age(ctx context.Context) error {
	a := &ScaleAging{Ops: map[string]ScaleOp{}}
	if r.cfg.Resume != "" {
		a.GCRecordsStart = r.gcRecords(ctx)
	}
	all := newLatRec()
	var total time.Duration
	r.logf("aging for %v", r.cfg.Aging)
	for total < r.cfg.Aging && ctx.Err() == nil {
		d := min(time.Minute, r.cfg.Aging-total)
		before := r.opCount.Load()
		_, rate, el, rec, err := r.mixed(ctx, d, phAging, agingPick)
		if err != nil && ctx.Err() == nil {
			return err
		}
		total += el
		a.PerMinute = append(a.PerMinute, r.opCount.Load()-before)
		all.merge(rec.lats, rec.miss)
		_, objs, _, _ := r.t.stats(context.WithoutCancel(ctx))
		a.Disk = append(a.Disk, r.t.disk(objs))
		a.RSSBytes = append(a.RSSBytes, r.t.rss())
		a.Objects = objs
		r.logf("aging minute %d: %.0f ops/s, %d objects, disk %.0f B/object", len(a.PerMinute), rate, objs, a.Disk[len(a.Disk)-1].TotalBytesPerObj)
		a.Seconds = total.Seconds()
		a.Ops, _ = all.summary(total)
		a.FirstPerSec, a.LastPerSec = agedRates(a.PerMinute)
		r.mu.Lock()
		r.res.Aging = a
		r.mu.Unlock()
		if err := r.publish(); err != nil {
			r.logf("write report: %v", err)
		}
	}
	if r.cfg.Resume != "" && ctx.Err() == nil {
		a.GCRecordsEnd = r.gcRecords(ctx)
		if err := r.publish(); err != nil {
			r.logf("write report: %v", err)
		}
	}
	return ctx.Err()
}

// agedRates: the mean per-second rates of the first and last 5 minutes
// (a fifth each when shorter than 25 minutes).
func agedRates(perMin []int64) (float64, float64) {
	n := len(perMin)
	if n == 0 {
		return 0, 0
	}
	k := 5
	if n < 25 {
		k = max(1, n/5)
	}
	var f, l int64
	for i := 0; i < k; i++ {
		f += perMin[i]
		l += perMin[n-1-i]
	}
	return float64(f) / float64(k*60), float64(l) / float64(k*60)
}

// publish computes the top-level numbers and writes the report.
func (r *scaleRun) publish() error {
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	r.mu.Lock()
	res := r.res
	res.UpdatedAt = time.Now().UTC().Format(time.RFC3339)
	res.MaxRSSBytes = max(r.maxRSS, r.t.maxRSS())
	res.MaxRSSAnonBytes = r.maxAnonRSS
	if n := len(res.Rounds); n > 0 {
		res.Objects = res.Rounds[n-1].Objects
	} else if res.Resumed != nil {
		res.Objects = res.Resumed.Objects
	}
	if res.Aging != nil && res.Aging.Objects > 0 {
		res.Objects = res.Aging.Objects
	}
	res.Reshards = 0
	for _, e := range res.ReshardList {
		if e.EndSec > 0 {
			res.Reshards++
		}
	}
	Reanalyze(res)
	res.AgedRatio = 0
	if a := res.Aging; a != nil && a.FirstPerSec > 0 {
		res.AgedRatio = a.LastPerSec / a.FirstPerSec
	}
	b, err := json.MarshalIndent(res, "", " ")
	r.mu.Unlock()
	if err != nil || r.cfg.Out == "" {
		return err
	}
	tmp := r.cfg.Out + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, r.cfg.Out)
}

// roundRatios compares the last complete round with the one at 1M objects
// (the first complete round with a target of at least 1M; 0 when the run
// did not get past it).
func roundRatios(rounds []ScaleRound) (rwld, list float64) {
	var base, last *ScaleRound
	for i := range rounds {
		rd := &rounds[i]
		if !rd.Complete {
			continue
		}
		if base == nil && rd.Target >= 1_000_000 {
			base = rd
		}
		last = rd
	}
	if base == nil || last == nil || base == last {
		return 0, 0
	}
	if base.RWLDPerSec > 0 {
		rwld = last.RWLDPerSec / base.RWLDPerSec
	}
	pairs := [][2]float64{{last.List.StartMs, base.List.StartMs}, {last.List.PrefixMs, base.List.PrefixMs}, {last.List.ContinuationMs, base.List.ContinuationMs}}
	for _, p := range pairs {
		if p[1] > 0 {
			list = max(list, p[0]/p[1])
		}
	}
	return rwld, list
}

// reshardWindows computes each reshard's worst 10 s fill window against
// the median 10 s window of the 60 fill seconds before it (like against
// like: the fill's seconds swing with LSM flushes, so a per-second median
// overstates the rate a 10 s window can hold), and the same over windows
// touching no reshard (the noise floor); both also against the median
// second, the reference earlier reports used. Only seconds of the fill
// phase count, stitched together across rounds; a second whose phase
// changed partway (the first and last of a fill) is left out.
func reshardWindows(res *ScaleResult) {
	type sec struct {
		wall int
		n    float64
	}
	var fs []sec
	ph := res.PhasePerSec
	for i, n := range res.FillPerSec {
		if i >= len(ph) || ph[i] != phFill {
			continue
		}
		if i == 0 || ph[i-1] != phFill || i+1 >= len(ph) || ph[i+1] != phFill {
			continue
		}
		fs = append(fs, sec{i, float64(n)})
	}
	const win, ref = 10, 60
	for i := range res.ReshardList {
		ev := &res.ReshardList[i]
		ev.WorstWindowRatio, ev.WorstWindowRatio1s, ev.Windows = 0, 0, 0
	}
	// winSum[k]: fill PUTs in seconds [k, k+win).
	winSum := make([]float64, max(len(fs)-win+1, 0))
	for k := range winSum {
		for x := k; x < k+win; x++ {
			winSum[k] += fs[x].n
		}
	}
	worst, outside := [2]float64{math.Inf(1), math.Inf(1)}, [2]float64{math.Inf(1), math.Inf(1)}
	secs := make([]float64, 0, ref)
	wins := make([]float64, 0, ref)
	for j := ref; j+win <= len(fs); j++ {
		// A window of fill seconds [j, j+win) (wall second s covers [s, s+1)
		// counted at the tick ending it: the tick at index i covers (i, i+1]).
		secs, wins = secs[:0], wins[:0]
		for k := j - ref; k < j; k++ {
			secs = append(secs, fs[k].n)
		}
		for k := j - ref; k+win <= j; k++ {
			wins = append(wins, winSum[k]/win)
		}
		sort.Float64s(secs)
		sort.Float64s(wins)
		mSec, mWin := secs[len(secs)/2], wins[len(wins)/2]
		if mSec <= 0 || mWin <= 0 {
			continue
		}
		rate := winSum[j] / win
		r := [2]float64{rate / mWin, rate / mSec}
		lo, hi := float64(fs[j].wall), float64(fs[j+win-1].wall+1)
		touched := false
		for e := range res.ReshardList {
			ev := &res.ReshardList[e]
			end := ev.EndSec
			if end == 0 {
				end = math.Inf(1)
			}
			if lo < end && hi > ev.StartSec {
				touched = true
				if ev.Windows == 0 || r[0] < ev.WorstWindowRatio {
					ev.WorstWindowRatio = r[0]
				}
				if ev.Windows == 0 || r[1] < ev.WorstWindowRatio1s {
					ev.WorstWindowRatio1s = r[1]
				}
				ev.Windows++
			}
		}
		dst := &outside
		if touched {
			dst = &worst
		}
		dst[0], dst[1] = min(dst[0], r[0]), min(dst[1], r[1])
	}
	fin := func(v float64) float64 {
		if math.IsInf(v, 1) {
			return 0
		}
		return v
	}
	res.ReshardWorstWindowRatio, res.ReshardWorstWindowRatio1s = fin(worst[0]), fin(worst[1])
	res.OutsideWorstWindowRatio, res.OutsideWorstWindowRatio1s = fin(outside[0]), fin(outside[1])
}

// Reanalyze recomputes a report's derived figures (reshard windows, round
// ratios) from its per-second and per-round data, so reports of earlier
// runs can be read with the current analysis.
func Reanalyze(res *ScaleResult) {
	reshardWindows(res)
	res.FillNoise = fillNoise(res)
	res.RWLDRatioFinalVs1M, res.ListPageRatioFinalVs1M = roundRatios(res.Rounds)
}

// procRSS reads VmRSS and VmHWM of pid (0: this process) in bytes.
func procRSS(pid int) (rss, hwm uint64) {
	rss, hwm, _ = procRSSFile(pid)
	return rss, hwm
}

// procRSSFile is procRSS with RssFile, the mapped file pages of VmRSS.
func procRSSFile(pid int) (rss, hwm, file uint64) {
	p := "/proc/self/status"
	if pid > 0 {
		p = "/proc/" + strconv.Itoa(pid) + "/status"
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = n << 10
		case "VmHWM:":
			hwm = n << 10
		case "RssFile:":
			file = n << 10
		}
	}
	return rss, hwm, file
}

// procHugeRSS reads AnonHugePages of pid (0: this process) in bytes: how
// much of its memory the kernel backs with transparent huge pages.
func procHugeRSS(pid int) uint64 {
	p := "/proc/self/smaps_rollup"
	if pid > 0 {
		p = "/proc/" + strconv.Itoa(pid) + "/smaps_rollup"
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "AnonHugePages:" {
			n, _ := strconv.ParseUint(f[1], 10, 64)
			return n << 10
		}
	}
	return 0
}

// thpMode is the kernel's transparent huge page mode (always, madvise or
// never; "" if unknown).
func thpMode() string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return ""
	}
	if _, rest, ok := strings.Cut(string(b), "["); ok {
		if m, _, ok := strings.Cut(rest, "]"); ok {
			return m
		}
	}
	return ""
}

// dirBytes is the disk space of every file under dir (allocated blocks).
func dirBytes(dir string) uint64 {
	var total uint64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			total += fileBlocks(fi)
		}
		return nil
	})
	return total
}

// scaleDriver drives the driver in this process.
type scaleDriver struct {
	dir    string
	keep   bool
	st     *embedded.Store
	d      *driver.Driver
	m      *reshard.Manager
	bucket string
}

func newScaleDriver(ctx context.Context, cfg ScaleConfig, done chan<- reshard.Result) (*scaleDriver, error) {
	dir := cfg.Resume
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp(cfg.Dir, "cairn-bench-scale-"); err != nil {
			return nil, err
		}
	} else if _, err := os.Stat(filepath.Join(dir, "db")); err != nil {
		return nil, fmt.Errorf("bench scale: resume: no store in %s: %w", dir, err)
	}
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: dir, Classes: reg, CacheSize: cfg.CacheSize, CompactionConcurrency: cfg.CompactionConcurrency, NoIngestSplit: cfg.NoIngestSplit, MaxOpenFiles: cfg.MaxOpenFiles, MemTableSize: uint64(cfg.MemTableSize), DisableMmap: cfg.NoMmap})
	if err != nil {
		if cfg.Resume == "" {
			os.RemoveAll(dir)
		}
		return nil, err
	}
	s := &scaleDriver{dir: dir, keep: cfg.Keep || cfg.Resume != "", st: st, bucket: cfg.Bucket}
	if s.d, err = driver.New(ctx, driver.Options{Store: st, DefaultShards: cfg.InitialShards, NoIndexView: cfg.NoIndexView, InlineMax: cfg.InlineMax}); err != nil {
		s.close()
		return nil, err
	}
	shards := cfg.InitialShards
	if cfg.PreShards > 0 {
		shards = cfg.PreShards
	}
	if cfg.Resume != "" {
		if _, err := s.d.BucketStats(ctx, cfg.Bucket); err != nil {
			s.close()
			return nil, fmt.Errorf("bench scale: resume: bucket %s: %w", cfg.Bucket, err)
		}
	} else if err := s.d.CreateBucket(ctx, "bench", cfg.Bucket, "", shards); err != nil {
		s.close()
		return nil, err
	}
	limit := cfg.CopyRateLimit
	if limit < 0 {
		limit = 0
	}
	s.m, err = reshard.New(ctx, reshard.Config{
		Driver: s.d, Store: st, Enabled: true, MaxObjsPerShard: cfg.MaxObjsPerShard, Interval: cfg.CheckInterval,
		CopyRateLimit: limit, CopyRateAdaptive: cfg.CopyRateAdaptive, TriggerSizing: cfg.TriggerSizing, CopyLoad: cfg.CopyLoad,
		RebaseEvery: cfg.RebaseEvery,
		OnDone: func(r reshard.Result) {
			select {
			case done <- r:
			default:
			}
		},
	})
	if err != nil {
		s.close()
		return nil, err
	}
	s.m.Start()
	return s, nil
}

func (s *scaleDriver) put(ctx context.Context, key string, body []byte) error {
	_, err := s.d.PutObject(ctx, driver.PutObjectInput{Bucket: s.bucket, Key: key, Body: bytes.NewReader(body), Size: int64(len(body))})
	return err
}

func (s *scaleDriver) get(ctx context.Context, key string, buf []byte) (bool, error) {
	_, rc, err := s.d.GetObject(ctx, s.bucket, key, nil)
	if errors.Is(err, driver.ErrNoSuchKey) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, err = io.CopyBuffer(io.Discard, rc, buf)
	rc.Close()
	return true, err
}

func (s *scaleDriver) head(ctx context.Context, key string) (bool, error) {
	_, err := s.d.HeadObject(ctx, s.bucket, key)
	if errors.Is(err, driver.ErrNoSuchKey) {
		return false, nil
	}
	return err == nil, err
}

func (s *scaleDriver) del(ctx context.Context, key string) error {
	return s.d.DeleteObject(ctx, s.bucket, key)
}

func (s *scaleDriver) list(ctx context.Context, prefix, startAfter, token string, max int) (int, string, error) {
	if token != "" {
		startAfter = token // the driver's marker is what a V2 token encodes
	}
	lr, err := s.d.ListObjects(ctx, driver.ListObjectsInput{Bucket: s.bucket, Prefix: prefix, StartAfter: startAfter, MaxKeys: max})
	if err != nil {
		return 0, "", err
	}
	next := ""
	if lr.IsTruncated {
		next = lr.NextMarker
	}
	return len(lr.Objects), next, nil
}

func (s *scaleDriver) stats(ctx context.Context) (int, uint64, bool, error) {
	bs, err := s.d.BucketStats(ctx, s.bucket)
	return bs.NumShards, bs.NumObjects, bs.ReshardState == "in-progress", err
}

func (s *scaleDriver) rss() uint64     { r, _ := procRSS(0); return r }
func (s *scaleDriver) maxRSS() uint64  { _, h := procRSS(0); return h }
func (s *scaleDriver) hugeRSS() uint64 { return procHugeRSS(0) }
func (s *scaleDriver) fileRSS() uint64 { _, _, f := procRSSFile(0); return f }

func (s *scaleDriver) disk(objects uint64) ScaleDisk {
	out := ScaleDisk{TotalBytes: dirBytes(s.dir)}
	out.IndexBytes, _ = s.st.PoolDiskUsage(driver.PoolIndex)
	out.DataBytes, _ = s.st.PoolDiskUsage(driver.PoolData)
	lsm := s.st.LSMStats()
	out.LSM = &lsm
	gc := s.d.GCBacklog()
	out.GCBacklog = &gc
	col := s.d.GCCollected()
	out.GCCollected = &col
	dead, _ := s.st.DeadRangeCompactions()
	out.DeadRangeCompactions = &dead
	if objects > 0 {
		o := float64(objects)
		out.IndexBytesPerObj, out.DataBytesPerObj, out.TotalBytesPerObj = float64(out.IndexBytes)/o, float64(out.DataBytes)/o, float64(out.TotalBytes)/o
	}
	return out
}

func (s *scaleDriver) close() {
	if s.m != nil {
		s.m.Close()
	}
	if s.d != nil {
		s.d.Close()
	}
	s.st.Close()
	if !s.keep {
		os.RemoveAll(s.dir)
	}
}

// scaleHTTP drives a gateway over S3 with SigV4.
type scaleHTTP struct {
	c   *s3Client
	cfg ScaleConfig
}

func newScaleHTTP(ctx context.Context, cfg ScaleConfig) (*scaleHTTP, error) {
	c := newS3Client(S3Config{Endpoint: cfg.Endpoint, AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey, Region: cfg.Region,
		Bucket: cfg.Bucket, Concurrency: cfg.Clients, Size: int64(max(cfg.Size, 1))})
	c.body = pattern(cfg.Size, 11)
	s := &scaleHTTP{c: c, cfg: cfg}
	if err := s.createBucket(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *scaleHTTP) createBucket(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.c.base+"/"+s.cfg.Bucket, nil)
	if err != nil {
		return err
	}
	if s.cfg.PreShards > 0 {
		req.Header.Set("x-cairn-bucket-index-shards", strconv.Itoa(s.cfg.PreShards))
	}
	_, err = s.send(req, nil)
	var se *s3Error
	if errors.As(err, &se) && se.Code == "BucketAlreadyOwnedByYou" {
		return errors.New("bench scale: bucket exists; the run needs an empty bucket (pick --bucket)")
	}
	return err
}

// send signs and sends req; the body (if keep) is returned.
func (s *scaleHTTP) send(req *http.Request, keep *bytes.Buffer) (int, error) {
	req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	if err := s.c.signer.SignHTTP(req.Context(), s.c.creds, req, emptySHA256, "s3", s.cfg.Region, time.Now()); err != nil {
		return 0, err
	}
	resp, err := s.c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return resp.StatusCode, &s3Error{Status: resp.StatusCode, Code: s3ErrorCode(b)}
	}
	if keep != nil {
		_, err = io.Copy(keep, resp.Body)
	} else {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	return resp.StatusCode, err
}

func (s *scaleHTTP) put(ctx context.Context, key string, body []byte) error {
	_, err := s.c.do(ctx, http.MethodPut, key, body, nil)
	return err
}

func notFound(err error) bool {
	var se *s3Error
	return errors.As(err, &se) && se.Status == http.StatusNotFound
}

func (s *scaleHTTP) get(ctx context.Context, key string, buf []byte) (bool, error) {
	_, err := s.c.do(ctx, http.MethodGet, key, nil, buf)
	if notFound(err) {
		return false, nil
	}
	return err == nil, err
}

func (s *scaleHTTP) head(ctx context.Context, key string) (bool, error) {
	_, err := s.c.do(ctx, http.MethodHead, key, nil, nil)
	if notFound(err) {
		return false, nil
	}
	return err == nil, err
}

func (s *scaleHTTP) del(ctx context.Context, key string) error {
	_, err := s.c.do(ctx, http.MethodDelete, key, nil, nil)
	return err
}

func (s *scaleHTTP) list(ctx context.Context, prefix, startAfter, token string, max int) (int, string, error) {
	q := url.Values{"list-type": {"2"}, "max-keys": {strconv.Itoa(max)}}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	if startAfter != "" {
		q.Set("start-after", startAfter)
	}
	if token != "" {
		q.Set("continuation-token", token)
	}
	var keep bytes.Buffer
	buf := make([]byte, 32<<10)
	if _, err := s.c.doQuery(ctx, http.MethodGet, "", strings.ReplaceAll(q.Encode(), "+", "%20"), nil, buf, &keep); err != nil {
		return 0, "", err
	}
	var v struct {
		KeyCount              int
		IsTruncated           bool
		NextContinuationToken string
	}
	if err := xml.Unmarshal(keep.Bytes(), &v); err != nil {
		return 0, "", err
	}
	if !v.IsTruncated {
		v.NextContinuationToken = ""
	}
	return v.KeyCount, v.NextContinuationToken, nil
}

func (s *scaleHTTP) stats(ctx context.Context) (int, uint64, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.c.base+"/admin/bucket?stats&bucket="+url.QueryEscape(s.cfg.Bucket), nil)
	if err != nil {
		return 0, 0, false, err
	}
	var keep bytes.Buffer
	if _, err := s.send(req, &keep); err != nil {
		return 0, 0, false, err
	}
	var bs driver.BucketStats
	if err := json.Unmarshal(keep.Bytes(), &bs); err != nil {
		return 0, 0, false, fmt.Errorf("admin bucket stats: %w", err)
	}
	return bs.NumShards, bs.NumObjects, bs.ReshardState == "in-progress", nil
}

func (s *scaleHTTP) rss() uint64 {
	if s.cfg.GatewayPID == 0 {
		return 0
	}
	r, _ := procRSS(s.cfg.GatewayPID)
	return r
}

func (s *scaleHTTP) hugeRSS() uint64 {
	if s.cfg.GatewayPID == 0 {
		return 0
	}
	return procHugeRSS(s.cfg.GatewayPID)
}

func (s *scaleHTTP) fileRSS() uint64 {
	if s.cfg.GatewayPID == 0 {
		return 0
	}
	_, _, f := procRSSFile(s.cfg.GatewayPID)
	return f
}

func (s *scaleHTTP) maxRSS() uint64 {
	if s.cfg.GatewayPID == 0 {
		return 0
	}
	_, h := procRSS(s.cfg.GatewayPID)
	return h
}

func (s *scaleHTTP) disk(objects uint64) ScaleDisk {
	if s.cfg.GatewayDir == "" {
		return ScaleDisk{}
	}
	out := ScaleDisk{TotalBytes: dirBytes(s.cfg.GatewayDir)}
	if objects > 0 {
		out.TotalBytesPerObj = float64(out.TotalBytes) / float64(objects)
	}
	return out
}

func (s *scaleHTTP) close() {}
