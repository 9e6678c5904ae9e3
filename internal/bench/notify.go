package bench

// The notify workload: the cost of persistent bucket notifications on the
// S3 write path, measured end to end the way RGW's published table was
// (4 KiB PUT 9,044/s without notifications, 3,192/s with one queue shard,
// 6,057/s with 11): a real gateway, a real HTTP endpoint consuming every
// event, and the s3 workload's load generator (RunS3) as the client.
//
// Layout. One gateway process (`cairn serve`, or in-process with
// InProcess for CPU profiles) on a fresh data directory. The shard count
// of a topic is read from --notif-shards when the topic is created and
// then fixed, so the gateway is started once with --notif-shards 1 to
// create topic "bench1", restarted with --notif-shards 11 to create
// "bench11", and every cell then runs on that second process. Each cell
// has its own bucket: no configuration (mode none), or one
// TopicConfiguration on bench1 or bench11 for the cell's event type only
// (s3:ObjectCreated:* for PUT, s3:ObjectRemoved:* for DELETE, so a DELETE
// cell's prefill makes no events). Cells of one (op, size) run back to
// back in the three modes, so the ratio compares neighbours in time.
//
// The endpoint is an HTTP server in this process on 127.0.0.1 that
// decodes each POSTed record, acks 200 and records, per bucket, the
// count and the delivery lag (receive time − the record's eventTime,
// which the gateway stamps at commit, just before the PUT's reply).
// While a cell runs, and until its queue is drained, the topic's queue
// depth is sampled every second through the admin API (the data of
// `cairn admin topic stats`). After the matrix a 60 s 11-shard 4 KiB PUT
// run shows whether delivery keeps up (queue depth bounded).
//
// Everything shares the machine: client, gateway and receiver.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/server"
)

// Notification modes of a cell.
const (
	NotifyNone     = "none"
	NotifyShards1  = "shards=1"
	NotifyShards11 = "shards=11"
)

// NotifyConfig configures the notify workload.
type NotifyConfig struct {
	// Bin is the cairn binary started as the gateway. Default the running
	// executable.
	Bin string
	// InProcess runs the gateway inside this process (server.Run) instead
	// of a child process, so CPUProfile covers gateway, client and
	// receiver.
	InProcess bool
	// CPUProfile, if set, receives a CPU profile of this process over the
	// measured phases (use with InProcess).
	CPUProfile string
	// MutexProfile and BlockProfile, if set, receive this process's
	// mutex-contention and blocking profiles over the run (with
	// InProcess: where gateway goroutines wait).
	MutexProfile, BlockProfile string
	// GatewayProfileDir, if set, receives a CPU profile of the gateway
	// process over each cell's load phase (<tag>-<op>-<size>-<mode>.pprof,
	// taken through the gateway's pprof-listen), so cells' profiles
	// compare frame by frame (not with InProcess).
	GatewayProfileDir string
	// DataDir is the parent of the temporary data directory (picks the
	// disk). Default the system temp dir.
	DataDir string
	// Keep keeps the data directory and gateway log.
	Keep bool
	// Concurrency is the client's closed-loop workers. Default 32.
	Concurrency int
	// Sizes, Ops and Modes select the matrix. Defaults 4 KiB and 4 MiB;
	// put and delete; none, shards=1, shards=11.
	Sizes []int64
	Ops   []string
	Modes []string
	// Duration is the measured phase for objects up to 64 KiB, and
	// LargeDuration for larger ones. Defaults 20 s and 8 s.
	Duration, LargeDuration time.Duration
	// SoakDuration is the 11-shard 4 KiB PUT run that shows delivery
	// keeping up; 0 = default 60 s, negative = skip.
	SoakDuration time.Duration
	// Rounds repeats the matrix (mode order reversed every other round).
	// Default 1.
	Rounds int
	// MaxPrefillBytes bounds a DELETE cell's prefill. Default 2 GiB.
	MaxPrefillBytes int64
	// Settle, when positive, makes each cell wait after its load and
	// drain, up to Settle, until the embedded store has no compaction
	// debt and no flush or compaction running, and counts that time's
	// gateway CPU in the cell: a fast cell otherwise leaves compactions
	// to the next one (docs/bench/notify-issue25.md, round 6). The
	// memtable is not flushed: what a cell leaves in it is flushed later.
	Settle time.Duration
	// DrainTimeout bounds the wait for a topic's queue to empty after a
	// cell. Default 2 min.
	DrainTimeout time.Duration
	// ScanInterval is the gateway's --notif-scan-interval. Default 1 s.
	ScanInterval time.Duration
	// CommitLinger is the gateway's --notif-commit-linger (deferred queue
	// commits; 0 leaves the flag out: commit before the reply).
	CommitLinger time.Duration
	// PushPipeline is the gateway's --notif-push-pipeline (0: not passed,
	// the gateway's default).
	PushPipeline int
	// WakeBatch and MaxWakeGap are the gateway's --notif-wake-batch and
	// --notif-max-wake-gap (0: not passed).
	WakeBatch  int
	MaxWakeGap time.Duration
	// Command is recorded in the result.
	Command string
	Out     io.Writer
	// EndpointKind is where the persistent topics push (notify_brokers.go):
	// "http" (default: the in-process receiver), "kafka" (KafkaBrokers) or
	// "amqp" (AMQPURL, publishing to the topic exchange AMQPExchange,
	// default cairn-bench). The bench consumes the events back from the
	// broker.
	EndpointKind string
	// Receiver is the HTTP receiver's server (ReceiverRaw, the default, or
	// ReceiverNetHTTP); notify_receiver.go.
	Receiver     string
	KafkaBrokers []string
	AMQPURL      string
	AMQPExchange string
}

// EnsureDefaults fills in zero fields.
func (c *NotifyConfig) EnsureDefaults() *NotifyConfig {
	if c.Bin == "" && !c.InProcess {
		c.Bin, _ = os.Executable()
	}
	if c.Concurrency == 0 {
		c.Concurrency = 32
	}
	if len(c.Sizes) == 0 {
		c.Sizes = []int64{4 << 10, 4 << 20}
	}
	if len(c.Ops) == 0 {
		c.Ops = []string{S3Put, S3Delete}
	}
	if len(c.Modes) == 0 {
		c.Modes = []string{NotifyNone, NotifyShards1, NotifyShards11}
	}
	if c.Duration == 0 {
		c.Duration = 20 * time.Second
	}
	if c.LargeDuration == 0 {
		c.LargeDuration = 8 * time.Second
	}
	if c.SoakDuration == 0 {
		c.SoakDuration = 60 * time.Second
	}
	if c.Rounds == 0 {
		c.Rounds = 1
	}
	if c.MaxPrefillBytes == 0 {
		c.MaxPrefillBytes = 2 << 30
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 2 * time.Minute
	}
	if c.ScanInterval == 0 {
		c.ScanInterval = time.Second
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	c.ensureEndpointDefaults()
	return c
}

// Validate reports every problem at once.
func (c *NotifyConfig) Validate() error {
	var errs []error
	if c.InProcess && c.GatewayProfileDir != "" {
		errs = append(errs, errors.New("--gateway-profile-dir profiles a gateway process: not with --in-process (use --cpuprofile)"))
	}
	if !c.InProcess && c.Bin == "" {
		errs = append(errs, errors.New("no cairn binary (--cairn-bin)"))
	}
	for _, op := range c.Ops {
		if op != S3Put && op != S3Delete {
			errs = append(errs, fmt.Errorf("op %q: want put or delete", op))
		}
	}
	for _, m := range c.Modes {
		if notifyShards(m) < 0 {
			errs = append(errs, fmt.Errorf("mode %q: want none, shards=1 or shards=11", m))
		}
	}
	for _, s := range c.Sizes {
		if s <= 0 || s > 1<<30 {
			errs = append(errs, fmt.Errorf("size %d outside 1..1GiB", s))
		}
	}
	if c.Concurrency < 1 || c.Concurrency > 4096 {
		errs = append(errs, fmt.Errorf("concurrency %d outside 1..4096", c.Concurrency))
	}
	if c.Duration <= 0 || c.LargeDuration <= 0 || c.DrainTimeout <= 0 || c.ScanInterval <= 0 {
		errs = append(errs, errors.New("durations must be positive"))
	}
	if c.Rounds < 1 || c.Rounds > 20 {
		errs = append(errs, fmt.Errorf("rounds %d outside 1..20", c.Rounds))
	}
	errs = append(errs, c.endpointProblems()...)
	return errors.Join(errs...)
}

func notifyShards(mode string) int {
	switch mode {
	case NotifyNone:
		return 0
	case NotifyShards1:
		return 1
	case NotifyShards11:
		return 11
	}
	return -1
}

// NotifyLag is delivery lag (receive time − eventTime) in milliseconds.
type NotifyLag struct {
	Events int64   `json:"events"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// NotifyDepth is one sample of the topic's queue (summed over shards).
type NotifyDepth struct {
	T            float64 `json:"t"` // seconds since the cell's load started
	Entries      uint64  `json:"entries"`
	Bytes        uint64  `json:"bytes"`
	Reservations uint64  `json:"reservations"`
	Delivered    int64   `json:"delivered"` // events received so far for the cell
	Loading      bool    `json:"loading"`   // the client was still running
}

// NotifyCell is one measured (mode, op, size).
type NotifyCell struct {
	Round  int    `json:"round"`
	Mode   string `json:"mode"`
	Shards int    `json:"shards"`
	Op     string `json:"op"`
	Size   int64  `json:"size"`
	Bucket string `json:"bucket"`
	Topic  string `json:"topic,omitempty"`
	Soak   bool   `json:"soak,omitempty"`
	// S3 is the client's result (rate, latency, errors).
	S3 *S3Result `json:"s3"`
	// Ratio is this cell's rate over the none cell of the same round, op
	// and size.
	Ratio float64 `json:"ratio_to_none,omitempty"`
	// Delivered events for the cell's bucket (after the drain), and their
	// lag.
	Lag NotifyLag `json:"lag"`
	// DrainSeconds is how long after the load the topic's queue took to
	// empty; Drained false when DrainTimeout passed first.
	DrainSeconds float64       `json:"drain_seconds,omitempty"`
	Drained      bool          `json:"drained,omitempty"`
	MaxDepth     uint64        `json:"max_depth"`
	Depth        []NotifyDepth `json:"depth,omitempty"`
	// DepthSlope is the least-squares slope of the queue depth over the
	// second half of the load (entries/s; ~0 when delivery keeps up).
	DepthSlope float64 `json:"depth_slope_per_sec,omitempty"`
	// CPU seconds over the load phase: gateway process (child mode only)
	// and this process (client + receiver; + gateway in-process); and the
	// gateway's CPU per acknowledged request.
	GatewayCPU  float64 `json:"gateway_cpu_seconds,omitempty"`
	BenchCPU    float64 `json:"bench_cpu_seconds"`
	GatewayUsOp float64 `json:"gateway_cpu_us_per_op,omitempty"`
	BenchUsOp   float64 `json:"bench_cpu_us_per_op,omitempty"`
	// OtherCPU is CPU seconds the rest of the machine used during the load
	// (all CPUs busy minus gateway and bench): other jobs sharing the
	// machine. LoadAvg is the 1-minute load average at the end of the load.
	OtherCPU float64 `json:"other_cpu_seconds"`
	LoadAvg  float64 `json:"loadavg_1m"`
	// GatewayUsEvent is the gateway's CPU per delivered event: this cell's
	// CPU per op minus the none cell's of the same round, op and size
	// (reserve, commit, intent, listing, push, removal). BenchUsEvent is
	// the same difference for this process: the receiver's CPU per event.
	GatewayUsEvent float64 `json:"gateway_cpu_us_per_event,omitempty"`
	BenchUsEvent   float64 `json:"bench_cpu_us_per_event,omitempty"`
	PushesOK       float64 `json:"pushes_ok,omitempty"`     // cairn_notify_delivery_pushes_ok_total delta
	PushesFailed   float64 `json:"pushes_failed,omitempty"` // cairn_notify_delivery_pushes_failed_total delta
	// Store ops behind the events (deltas of the gateway's counters over
	// load and drain): group commits and the events they carried;
	// delivery's lists, removals, and lists carrying removals.
	CommitOps     float64 `json:"commit_ops,omitempty"`
	CommitEvents  float64 `json:"commit_events,omitempty"`
	ListOps       float64 `json:"list_ops,omitempty"`
	RemoveOps     float64 `json:"remove_ops,omitempty"`
	ListRemoveOps float64 `json:"list_remove_ops,omitempty"`
	PushExchanges float64 `json:"push_exchanges,omitempty"` // cairn_notify_delivery_push_exchanges_total delta
	// ReserveOps: reservations that took a store op on the PUT's path
	// (the shard's pool of ready reservations was empty).
	ReserveOps float64 `json:"reserve_ops,omitempty"`
	// Store: what the embedded store wrote over load and drain (nil with
	// another backend).
	Store *NotifyStoreWrites `json:"store,omitempty"`
	// SettleSeconds: how long the cell waited for compactions (--settle);
	// Settled: whether they finished within --settle.
	SettleSeconds float64 `json:"settle_seconds,omitempty"`
	Settled       bool    `json:"settled,omitempty"`
}

// NotifyStoreWrites are deltas of the embedded store's cairn_store_*
// counters over a cell: bytes to the WAL, flushed and compacted sstables.
type NotifyStoreWrites struct {
	WALBytes       float64 `json:"wal_bytes"`
	FlushedBytes   float64 `json:"flushed_bytes"`
	CompactedBytes float64 `json:"compacted_bytes"`
	SyncedCommits  float64 `json:"synced_commits"`
	WALSyncs       float64 `json:"wal_syncs"`
	// Compaction debt (pebble's estimate) at the start and the end: a
	// cell that ends with more debt left work to the next one.
	DebtBytesBefore float64 `json:"compaction_debt_bytes_before"`
	DebtBytesAfter  float64 `json:"compaction_debt_bytes_after"`
}

// NotifyGoal is one goal of the issue and whether the run met it.
type NotifyGoal struct {
	Name   string  `json:"name"`
	Want   string  `json:"want"`
	Got    float64 `json:"got"`
	Met    bool    `json:"met"`
	Detail string  `json:"detail,omitempty"`
}

// NotifyMachine records where the run happened.
type NotifyMachine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model,omitempty"`
	Kernel    string `json:"kernel,omitempty"`
	GoVersion string `json:"go_version"`
	MemTotal  string `json:"mem_total,omitempty"`
	Note      string `json:"note"`
}

// NotifyResult is the workload's outcome.
type NotifyResult struct {
	Command     string         `json:"command,omitempty"`
	Started     time.Time      `json:"started"`
	Machine     NotifyMachine  `json:"machine"`
	Concurrency int            `json:"concurrency"`
	InProcess   bool           `json:"in_process"`
	Layout      string         `json:"layout"`
	Cells       []*NotifyCell  `json:"cells"`
	Soak        *NotifyCell    `json:"soak,omitempty"`
	Summary     []NotifySumRow `json:"summary"`
	Goals       []NotifyGoal   `json:"goals"`

	// EndpointKind is the topics' endpoint (http, kafka, amqp; empty in
	// results from before the field: http) and Endpoint describes it.
	EndpointKind string `json:"endpoint_kind,omitempty"`
	Endpoint     string `json:"endpoint,omitempty"`
	// KafkaBatches: records per batch as the gateway produced them, per
	// topic (kafka kind).
	KafkaBatches []NotifyBatches `json:"kafka_batches,omitempty"`
}

// NotifySumRow is the median over rounds of one (op, size, mode).
type NotifySumRow struct {
	Op        string  `json:"op"`
	Size      int64   `json:"size"`
	Mode      string  `json:"mode"`
	OpsPerSec float64 `json:"ops_per_sec"`
	Ratio     float64 `json:"ratio_to_none"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	LagP50Ms  float64 `json:"lag_p50_ms"`
	LagP99Ms  float64 `json:"lag_p99_ms"`
	LagMaxMs  float64 `json:"lag_max_ms"`
	MaxDepth  uint64  `json:"max_depth"`
	Errors    int64   `json:"errors"`
	GwUsOp    float64 `json:"gateway_cpu_us_per_op,omitempty"`
	// Medians of the cells' per-event CPU (NotifyCell.GatewayUsEvent).
	GwUsEvent    float64 `json:"gateway_cpu_us_per_event,omitempty"`
	BenchUsEvent float64 `json:"bench_cpu_us_per_event,omitempty"`
}

// NotifyMain runs the notify workload from command-line arguments (the
// flags are parsed here so cmd/cairn only binds the name) and prints the
// result as one JSON line last.
func NotifyMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cairn bench notify", flag.ContinueOnError)
	var cfg NotifyConfig
	fs.StringVar(&cfg.Bin, "cairn-bin", "", "cairn binary to start as the gateway (default this executable)")
	fs.BoolVar(&cfg.InProcess, "in-process", false, "run the gateway inside this process (for --cpuprofile)")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of this process over the measured phases")
	fs.StringVar(&cfg.MutexProfile, "mutexprofile", "", "write a mutex contention profile of this process")
	fs.StringVar(&cfg.BlockProfile, "blockprofile", "", "write a blocking profile of this process")
	fs.StringVar(&cfg.GatewayProfileDir, "gateway-profile-dir", "", "write a CPU profile of the gateway process over each cell's load phase into this directory")
	fs.StringVar(&cfg.DataDir, "data-dir", "", "parent directory for the gateway's temporary data dir (picks the disk)")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the data dir and gateway log")
	fs.DurationVar(&cfg.Settle, "settle", 0, "after each cell, wait up to this long for the store's compactions to finish, counting their CPU in the cell (0: do not wait)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 32, "closed-loop client workers")
	fs.StringVar(&cfg.EndpointKind, "endpoint-kind", NotifyEndpointHTTP, "endpoint of the persistent topics: http (in-process receiver), kafka (--kafka-brokers) or amqp (--amqp-url)")
	fs.StringVar(&cfg.Receiver, "receiver", ReceiverRaw, "with --endpoint-kind http: the receiver's server, raw (a minimal HTTP/1.1 loop, the default) or net/http")
	kafkaBrokers := fs.String("kafka-brokers", "", "with --endpoint-kind kafka: running brokers, host:port[,host:port...]")
	fs.StringVar(&cfg.AMQPURL, "amqp-url", "", "with --endpoint-kind amqp: a running broker, amqp://[user:password@]host:port[/vhost]")
	fs.StringVar(&cfg.AMQPExchange, "amqp-exchange", DefaultNotifyAMQPExchange, "with --endpoint-kind amqp: the topic exchange (declared durable if missing)")
	sizes := fs.String("sizes", "4KiB,4MiB", "object sizes")
	ops := fs.String("ops", "put,delete", "operations: put, delete")
	modes := fs.String("modes", "none,shards=1,shards=11", "notification modes")
	fs.DurationVar(&cfg.Duration, "duration", 20*time.Second, "measured phase per cell for objects up to 64 KiB")
	fs.DurationVar(&cfg.LargeDuration, "large-duration", 8*time.Second, "measured phase per cell for larger objects")
	fs.DurationVar(&cfg.SoakDuration, "soak", 60*time.Second, "11-shard 4 KiB PUT run showing delivery keeps up (negative: skip)")
	fs.IntVar(&cfg.Rounds, "rounds", 1, "repeat the matrix; the summary takes medians")
	fs.DurationVar(&cfg.ScanInterval, "notif-scan-interval", time.Second, "gateway --notif-scan-interval")
	fs.IntVar(&cfg.PushPipeline, "notif-push-pipeline", 0, "gateway --notif-push-pipeline (0: not passed)")
	fs.IntVar(&cfg.WakeBatch, "notif-wake-batch", 0, "gateway --notif-wake-batch (0: not passed)")
	fs.DurationVar(&cfg.MaxWakeGap, "notif-max-wake-gap", 0, "gateway --notif-max-wake-gap (0: not passed)")
	fs.DurationVar(&cfg.CommitLinger, "notif-commit-linger", 50*time.Millisecond, "gateway --notif-commit-linger (0: not passed; commit before the reply)")
	jsonOut := fs.String("json", "", "also write the JSON result (indented) to this file")
	mdOut := fs.String("md", "", "write the tables into this markdown file (between its notify:begin/end markers)")
	render := fs.String("render", "", "do not run: re-render --md from this saved JSON result")
	if _, err := parseNotifyFlags(fs, args); err != nil {
		return err
	}
	if *render != "" {
		if *mdOut == "" {
			return errors.New("--render needs --md")
		}
		return renderNotify(*render, *mdOut)
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := config.ParseSize(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("--sizes: %w", err)
		}
		cfg.Sizes = append(cfg.Sizes, n)
	}
	for _, s := range strings.Split(*ops, ",") {
		cfg.Ops = append(cfg.Ops, strings.TrimSpace(s))
	}
	for _, s := range strings.Split(*modes, ",") {
		cfg.Modes = append(cfg.Modes, strings.TrimSpace(s))
	}
	if *kafkaBrokers != "" {
		for _, s := range strings.Split(*kafkaBrokers, ",") {
			cfg.KafkaBrokers = append(cfg.KafkaBrokers, strings.TrimSpace(s))
		}
	}
	cfg.Command = "cairn bench notify " + strings.Join(args, " ")
	cfg.Out = out
	res, err := RunNotify(ctx, cfg)
	if res != nil {
		b, merr := json.Marshal(res)
		if merr != nil {
			return merr
		}
		if *jsonOut != "" {
			var ind bytes.Buffer
			_ = json.Indent(&ind, b, "", " ")
			ind.WriteByte('\n')
			if werr := os.WriteFile(*jsonOut, ind.Bytes(), 0o644); werr != nil && err == nil {
				err = werr
			}
		}
		if *mdOut != "" {
			if werr := writeNotifyMD(*mdOut, res); werr != nil && err == nil {
				err = werr
			}
		}
		fmt.Fprintf(out, "%s\n", b)
	}
	return err
}

func parseNotifyFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stdout, "usage: %s [flags]\n\nflags:\n", fs.Name())
			fs.SetOutput(os.Stdout)
			fs.PrintDefaults()
			return nil, err
		}
		return nil, &UsageError{err}
	}
	if len(fs.Args()) > 0 {
		return nil, &UsageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	return nil, nil
}

// UsageError is a command line that does not parse; the CLI prints it as
// one line with a hint to --help.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// RunNotify runs the matrix and the soak run.
func RunNotify(ctx context.Context, cfg NotifyConfig) (*NotifyResult, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	out := cfg.Out
	res := &NotifyResult{
		Command: cfg.Command, Started: time.Now().UTC(), Machine: machineFacts(), Concurrency: cfg.Concurrency,
		InProcess: cfg.InProcess,
		Layout: "one gateway on a fresh data dir: started with --notif-shards 1 to create topic bench1, restarted with " +
			"--notif-shards 11 to create bench11 (shard count is fixed per topic at creation); all cells run on the " +
			"second process, one bucket per cell; cells of one (op, size) run back to back in each mode",
	}
	dir, err := os.MkdirTemp(cfg.DataDir, "cairn-bench-notify-")
	if err != nil {
		return nil, err
	}
	if cfg.Keep {
		fmt.Fprintf(out, "data dir (kept): %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}

	rv, err := startReceiver(cfg.Receiver)
	if err != nil {
		return nil, err
	}
	defer rv.close()
	t1, t11 := notifyTopicNames(cfg.EndpointKind, res.Started)
	brk, err := startBrokerConsumer(ctx, &cfg, rv, []string{t1, t11})
	if err != nil {
		return nil, err
	}
	res.EndpointKind, res.Endpoint = cfg.EndpointKind, rv.describe()
	if brk != nil {
		defer brk.close()
		res.Endpoint = brk.describe()
		res.Machine.Note = strings.Replace(res.Machine.Note, " and the HTTP receiver", ", the bench's consumer and (if local) the broker", 1)
	}
	fmt.Fprintf(out, "endpoint: %s %s\n", cfg.EndpointKind, res.Endpoint)

	ak, sk := "notifybench", fmt.Sprintf("s%016x", time.Now().UnixNano())
	gcfg := gwConfig{bin: cfg.Bin, inProcess: cfg.InProcess, dir: dir, ak: ak, sk: sk, scan: cfg.ScanInterval, linger: cfg.CommitLinger, pipeline: cfg.PushPipeline,
		wakeBatch: cfg.WakeBatch, maxWakeGap: cfg.MaxWakeGap, pprof: cfg.GatewayProfileDir != ""}
	if cfg.GatewayProfileDir != "" {
		if err := os.MkdirAll(cfg.GatewayProfileDir, 0o755); err != nil {
			return nil, err
		}
	}

	// Topic bench1 on a gateway with --notif-shards 1, then bench11.
	topics := map[string]string{} // mode → topic name
	needs := map[int]bool{}
	for _, m := range cfg.Modes {
		if n := notifyShards(m); n > 0 {
			needs[n] = true
		}
	}
	gcfg.extra = notifyGatewayExtra(&cfg)
	if needs[1] {
		gw, err := startGateway(ctx, gcfg, 1, out)
		if err != nil {
			return nil, err
		}
		err = gw.createTopic(ctx, t1, topicAttrs(rv, brk))
		gw.stop()
		if err != nil {
			return nil, err
		}
		topics[NotifyShards1] = t1
	}
	gw, err := startGateway(ctx, gcfg, 11, out)
	if err != nil {
		return nil, err
	}
	defer gw.stop()
	if needs[11] {
		if err := gw.createTopic(ctx, t11, topicAttrs(rv, brk)); err != nil {
			return nil, err
		}
		topics[NotifyShards11] = t11
	}
	for mode, t := range topics {
		st, err := gw.topicStats(ctx, t)
		if err != nil {
			return nil, err
		}
		if st.Shards != notifyShards(mode) {
			return nil, fmt.Errorf("topic %s has %d shards, want %d", t, st.Shards, notifyShards(mode))
		}
	}

	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}

	if cfg.MutexProfile != "" {
		runtime.SetMutexProfileFraction(5)
		defer writeProfile("mutex", cfg.MutexProfile, out)
	}
	if cfg.BlockProfile != "" {
		runtime.SetBlockProfileRate(int(100 * time.Microsecond))
		defer writeProfile("block", cfg.BlockProfile, out)
	}

	b := &notifyBench{brk: brk, cfg: cfg, gw: gw, rv: rv, topics: topics, ak: ak, sk: sk}
	for round := 1; round <= cfg.Rounds; round++ {
		for _, size := range cfg.Sizes {
			for _, op := range cfg.Ops {
				modes := append([]string(nil), cfg.Modes...)
				if round%2 == 0 {
					for i, j := 0, len(modes)-1; i < j; i, j = i+1, j-1 {
						modes[i], modes[j] = modes[j], modes[i]
					}
				}
				for _, mode := range modes {
					c, err := b.cell(ctx, round, mode, op, size, b.duration(size), false)
					if c != nil {
						res.Cells = append(res.Cells, c)
					}
					if err != nil {
						res.finish()
						return res, err
					}
				}
			}
		}
	}
	if cfg.SoakDuration > 0 && topics[NotifyShards11] != "" {
		c, err := b.cell(ctx, 0, NotifyShards11, S3Put, 4<<10, cfg.SoakDuration, true)
		res.Soak = c
		if err != nil {
			res.finish()
			return res, err
		}
	}
	res.finish()
	if brk != nil {
		res.KafkaBatches = brk.batches()
	}
	for _, b := range res.KafkaBatches {
		fmt.Fprintf(out, "kafka topic %s: %d records in %d batches (%.1f per batch)\n", b.Topic, b.Records, b.Batches, b.RecordsPerBatch)
	}
	for _, r := range res.Summary {
		fmt.Fprintf(out, "summary %-6s %-5s %-9s %8.0f ops/s  ratio %.2f  p50 %6.2f ms  p99 %7.2f ms  lag p50 %7.1f p99 %7.1f max %7.1f ms  max depth %d  gateway µs/op %.0f µs/event %.0f  receiver µs/event %.0f\n",
			r.Op, sizeString(r.Size), r.Mode, r.OpsPerSec, r.Ratio, r.P50Ms, r.P99Ms, r.LagP50Ms, r.LagP99Ms, r.LagMaxMs, r.MaxDepth,
			r.GwUsOp, r.GwUsEvent, r.BenchUsEvent)
	}
	for _, g := range res.Goals {
		fmt.Fprintf(out, "goal %s: want %s, got %.3f: met=%v %s\n", g.Name, g.Want, g.Got, g.Met, g.Detail)
	}
	return res, nil
}

func writeProfile(name, path string, out io.Writer) {
	f, err := os.Create(path)
	if err == nil {
		err = errors.Join(pprof.Lookup(name).WriteTo(f, 0), f.Close())
	}
	if err != nil {
		fmt.Fprintf(out, "%s profile: %v\n", name, err)
	}
}

type notifyBench struct {
	brk    brokerConsumer // nil: the HTTP receiver rv
	cfg    NotifyConfig
	gw     *notifyGateway
	rv     *receiver
	topics map[string]string
	ak, sk string
	// putRate remembers PUT rates (by round/mode/size) to size DELETE
	// prefills.
	putRate map[string]float64
}

func (b *notifyBench) duration(size int64) time.Duration {
	if size > 64<<10 {
		return b.cfg.LargeDuration
	}
	return b.cfg.Duration
}

func (b *notifyBench) cell(ctx context.Context, round int, mode, op string, size int64, d time.Duration, soak bool) (*NotifyCell, error) {
	out := b.cfg.Out
	c := &NotifyCell{Round: round, Mode: mode, Shards: notifyShards(mode), Op: op, Size: size, Topic: b.topics[mode], Soak: soak}
	tag := fmt.Sprintf("r%d", round)
	if soak {
		tag = "soak"
	}
	c.Bucket = strings.ToLower(fmt.Sprintf("nb-%s-%s-%s-%s", tag, op, sizeString(size), strings.ReplaceAll(mode, "=", "")))
	if err := b.gw.createBucket(ctx, c.Bucket); err != nil {
		return nil, err
	}
	if c.Topic != "" {
		ev := "s3:ObjectCreated:*"
		if op == S3Delete {
			ev = "s3:ObjectRemoved:*"
		}
		if err := b.gw.putNotification(ctx, c.Bucket, c.Topic, ev); err != nil {
			return nil, err
		}
	}
	objects := 1000
	if op == S3Delete {
		rate := b.putRate[fmt.Sprintf("%d/%s/%d", round, mode, size)]
		if rate == 0 {
			rate = 2000
		}
		objects = int(rate * d.Seconds() * 1.5)
		objects = max(objects, 1000)
		objects = min(objects, int(b.cfg.MaxPrefillBytes/size), 300000)
		objects = max(objects, 16)
	}
	scfg := S3Config{
		Endpoint: b.gw.url, AccessKey: b.ak, SecretKey: b.sk, Bucket: c.Bucket, Op: op,
		Concurrency: b.cfg.Concurrency, Size: size, Duration: d, Objects: objects, Out: out,
	}
	fmt.Fprintf(out, "cell %s %s %s %s: %s, bucket %s\n", tag, op, sizeString(size), mode, d, c.Bucket)

	// Sample the queue while the load runs (and during the drain).
	var mu sync.Mutex
	var loadStart time.Time
	loading := true
	sctx, stopSampling := context.WithCancel(ctx)
	var swg sync.WaitGroup
	sample := func() {
		if c.Topic == "" {
			return
		}
		st, err := b.gw.topicStats(sctx, c.Topic)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if loadStart.IsZero() {
			return // prefill
		}
		c.Depth = append(c.Depth, NotifyDepth{
			T: math.Round(time.Since(loadStart).Seconds()*100) / 100, Entries: st.Entries, Bytes: st.Bytes,
			Reservations: st.Reservations, Delivered: b.rv.count(c.Bucket), Loading: loading,
		})
		c.MaxDepth = max(c.MaxDepth, st.Entries)
	}
	// The load starts after the prefill, inside RunS3, which reports the
	// prefill's end on Out: startWriter marks the start there.
	var cpu0g, cpu0b, cpu0m float64
	var n0 notifyCounters
	profDone := make(chan error, 1)
	profiling := false
	markStart := func() {
		mu.Lock()
		loadStart = time.Now()
		mu.Unlock()
		if b.cfg.GatewayProfileDir != "" && b.gw.pprofURL != "" {
			profiling = true
			path := fmt.Sprintf("%s/%s-%s-%s-%s.pprof", b.cfg.GatewayProfileDir, tag, op, sizeString(size), strings.ReplaceAll(mode, "=", ""))
			go func() { profDone <- b.gw.cpuProfile(ctx, path, d) }()
		}
		cpu0g, cpu0b, cpu0m = b.gw.cpuSeconds(), selfCPUSeconds(), machineBusySeconds()
		n0 = b.gw.counters(ctx)
	}
	startWatch := &startWriter{w: out, prefix: "prefill:", fn: markStart}
	scfg.Out = startWatch
	if op != S3Delete {
		markStart()
		startWatch.done = true
	}
	swg.Add(1)
	go func() {
		defer swg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
				sample()
			}
		}
	}()
	r, err := RunS3(ctx, scfg)
	loadEnd := time.Now()
	cpu1g, cpu1b, cpu1m := b.gw.cpuSeconds(), selfCPUSeconds(), machineBusySeconds()
	if profiling {
		if perr := <-profDone; perr != nil {
			fmt.Fprintf(out, "  gateway profile: %v\n", perr)
		}
	}
	c.LoadAvg = loadAvg()
	mu.Lock()
	loading = false
	mu.Unlock()
	c.S3 = r
	if err != nil {
		stopSampling()
		swg.Wait()
		return c, fmt.Errorf("cell %s %s %s: %w", op, sizeString(size), mode, err)
	}
	if op == S3Put {
		if b.putRate == nil {
			b.putRate = map[string]float64{}
		}
		b.putRate[fmt.Sprintf("%d/%s/%d", round, mode, size)] = r.OpsPerSec
	}
	c.BenchCPU = cpu1b - cpu0b
	c.OtherCPU = math.Round((cpu1m-cpu0m-(cpu1b-cpu0b)-(cpu1g-cpu0g))*100) / 100
	if r.Ops > 0 {
		c.BenchUsOp = math.Round(c.BenchCPU / float64(r.Ops) * 1e6)
	}
	if !b.gw.inProcess {
		c.GatewayCPU, c.BenchCPU = cpu1g-cpu0g, cpu1b-cpu0b
		if r.Ops > 0 {
			c.GatewayUsOp = math.Round(c.GatewayCPU / float64(r.Ops) * 1e6)
		}
	}

	// Drain: wait for the queue to empty (entries are removed only after
	// the endpoint acknowledged them).
	if c.Topic != "" {
		deadline := time.Now().Add(b.cfg.DrainTimeout)
		for {
			st, err := b.gw.topicStats(ctx, c.Topic)
			if err == nil && st.Entries == 0 {
				c.Drained = true
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		c.DrainSeconds = math.Round(time.Since(loadEnd).Seconds()*100) / 100
		if c.Drained && b.brk != nil {
			// The broker has every event; wait until the consumer does.
			sctx, cancel := context.WithTimeout(ctx, b.cfg.DrainTimeout)
			err := b.brk.sync(sctx)
			cancel()
			if err != nil {
				stopSampling()
				swg.Wait()
				return c, fmt.Errorf("cell %s %s %s: %w", op, sizeString(size), mode, err)
			}
		}
		// Let the last removals' acks land in the receiver.
		time.Sleep(200 * time.Millisecond)
		n1 := b.gw.counters(ctx)
		c.PushesOK, c.PushesFailed = n1.ok-n0.ok, n1.failed-n0.failed
		c.ListOps, c.RemoveOps, c.ListRemoveOps = n1.listOps-n0.listOps, n1.removeOps-n0.removeOps, n1.listRemoveOps-n0.listRemoveOps
		c.PushExchanges = n1.pushExchanges - n0.pushExchanges
		c.CommitOps, c.CommitEvents = n1.commitOps-n0.commitOps, n1.commitEvents-n0.commitEvents
		c.ReserveOps = n1.reserveOps - n0.reserveOps
	}
	if b.cfg.Settle > 0 {
		c.SettleSeconds, c.Settled = b.gw.settle(ctx, b.cfg.Settle)
		if !b.gw.inProcess {
			c.GatewayCPU = b.gw.cpuSeconds() - cpu0g
			if r.Ops > 0 {
				c.GatewayUsOp = math.Round(c.GatewayCPU / float64(r.Ops) * 1e6)
			}
		}
		fmt.Fprintf(out, "  settled %v after %.1fs\n", c.Settled, c.SettleSeconds)
	}
	if s1 := b.gw.counters(ctx); s1.walBytes > 0 {
		c.Store = &NotifyStoreWrites{WALBytes: s1.walBytes - n0.walBytes, FlushedBytes: s1.flushedBytes - n0.flushedBytes,
			CompactedBytes: s1.compactedBytes - n0.compactedBytes, SyncedCommits: s1.syncedCommits - n0.syncedCommits, WALSyncs: s1.walSyncs - n0.walSyncs,
			DebtBytesBefore: n0.debtBytes, DebtBytesAfter: s1.debtBytes}
		if r.Ops > 0 {
			fmt.Fprintf(out, "  store writes per op: WAL %.0f B, flushed %.0f B, compacted %.0f B; %.3f synced commits, %.3f WAL syncs; compaction debt %.0f -> %.0f MB\n",
				c.Store.WALBytes/float64(r.Ops), c.Store.FlushedBytes/float64(r.Ops), c.Store.CompactedBytes/float64(r.Ops),
				c.Store.SyncedCommits/float64(r.Ops), c.Store.WALSyncs/float64(r.Ops), c.Store.DebtBytesBefore/1e6, c.Store.DebtBytesAfter/1e6)
		}
	}
	stopSampling()
	swg.Wait()
	c.DepthSlope = depthSlope(c.Depth)
	c.Lag = b.rv.lag(c.Bucket)
	if c.Topic != "" {
		fmt.Fprintf(out, "  store ops: %.0f commits for %.0f events, %.0f reserves; %.0f lists, %.0f removals, %.0f lists with removals; %.0f push exchanges\n",
			c.CommitOps, c.CommitEvents, c.ReserveOps, c.ListOps, c.RemoveOps, c.ListRemoveOps, c.PushExchanges)
		fmt.Fprintf(out, "  delivered %d events (pushes ok %.0f failed %.0f), lag p50 %.1f p99 %.1f max %.1f ms, max depth %d, slope %.1f/s, drained %v in %.1fs, CPU/op: gateway %.0f µs, client+receiver %.0f µs; other jobs %.1f CPU-s, load %.1f\n",
			c.Lag.Events, c.PushesOK, c.PushesFailed, c.Lag.P50Ms, c.Lag.P99Ms, c.Lag.MaxMs, c.MaxDepth, c.DepthSlope, c.Drained, c.DrainSeconds, c.GatewayUsOp, c.BenchUsOp, c.OtherCPU, c.LoadAvg)
		if !c.Drained {
			return c, fmt.Errorf("cell %s %s %s: queue of %s not drained within %s", op, sizeString(size), mode, c.Topic, b.cfg.DrainTimeout)
		}
	} else {
		fmt.Fprintf(out, "  CPU/op: gateway %.0f µs, client %.0f µs; other jobs %.1f CPU-s, load %.1f\n", c.GatewayUsOp, c.BenchUsOp, c.OtherCPU, c.LoadAvg)
	}
	return c, nil
}

// depthSlope fits entries over time to a line over the second half of the
// samples taken while loading.
func depthSlope(ds []NotifyDepth) float64 {
	var xs, ys []float64
	for _, d := range ds {
		if d.Loading {
			xs, ys = append(xs, d.T), append(ys, float64(d.Entries))
		}
	}
	if len(xs) < 4 {
		return 0
	}
	xs, ys = xs[len(xs)/2:], ys[len(ys)/2:]
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	if den == 0 {
		return 0
	}
	return math.Round(num/den*10) / 10
}

// startWriter passes writes through and calls fn once when a line starting
// with prefix is written (RunS3 reports the end of its prefill that way).
type startWriter struct {
	w      io.Writer
	prefix string
	fn     func()
	done   bool
}

func (s *startWriter) Write(p []byte) (int, error) {
	if !s.done && bytes.HasPrefix(p, []byte(s.prefix)) {
		s.done = true
		s.fn()
	}
	return s.w.Write(p)
}

func (res *NotifyResult) finish() {
	// Ratios to the none cell of the same round, op and size.
	none := map[string]*NotifyCell{}
	key := func(c *NotifyCell) string { return fmt.Sprintf("%d/%s/%d", c.Round, c.Op, c.Size) }
	for _, c := range res.Cells {
		if c.Mode == NotifyNone && c.S3 != nil {
			none[key(c)] = c
		}
	}
	for _, c := range res.Cells {
		n := none[key(c)]
		if n == nil || c.S3 == nil || n.S3.OpsPerSec <= 0 {
			continue
		}
		c.Ratio = math.Round(c.S3.OpsPerSec/n.S3.OpsPerSec*1000) / 1000
		if c.Mode != NotifyNone && c.GatewayUsOp > 0 && n.GatewayUsOp > 0 {
			c.GatewayUsEvent = c.GatewayUsOp - n.GatewayUsOp
			c.BenchUsEvent = c.BenchUsOp - n.BenchUsOp
		}
	}
	type group struct{ cells []*NotifyCell }
	groups := map[string]*group{}
	var order []string
	for _, c := range res.Cells {
		if c.S3 == nil {
			continue
		}
		k := fmt.Sprintf("%s|%d|%s", c.Op, c.Size, c.Mode)
		if groups[k] == nil {
			groups[k] = &group{}
			order = append(order, k)
		}
		groups[k].cells = append(groups[k].cells, c)
	}
	res.Summary = nil
	for _, k := range order {
		cs := groups[k].cells
		med := func(f func(*NotifyCell) float64) float64 {
			v := make([]float64, len(cs))
			for i, c := range cs {
				v[i] = f(c)
			}
			sort.Float64s(v)
			if len(v)%2 == 1 {
				return v[len(v)/2]
			}
			return (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		row := NotifySumRow{Op: cs[0].Op, Size: cs[0].Size, Mode: cs[0].Mode}
		row.OpsPerSec = math.Round(med(func(c *NotifyCell) float64 { return c.S3.OpsPerSec }))
		row.Ratio = med(func(c *NotifyCell) float64 { return c.Ratio })
		row.P50Ms = med(func(c *NotifyCell) float64 { return c.S3.P50Ms })
		row.P99Ms = med(func(c *NotifyCell) float64 { return c.S3.P99Ms })
		row.LagP50Ms = med(func(c *NotifyCell) float64 { return c.Lag.P50Ms })
		row.LagP99Ms = med(func(c *NotifyCell) float64 { return c.Lag.P99Ms })
		row.LagMaxMs = med(func(c *NotifyCell) float64 { return c.Lag.MaxMs })
		row.GwUsOp = math.Round(med(func(c *NotifyCell) float64 { return c.GatewayUsOp }))
		row.GwUsEvent = math.Round(med(func(c *NotifyCell) float64 { return c.GatewayUsEvent }))
		row.BenchUsEvent = math.Round(med(func(c *NotifyCell) float64 { return c.BenchUsEvent }))
		for _, c := range cs {
			row.MaxDepth = max(row.MaxDepth, c.MaxDepth)
			row.Errors += c.S3.Errors
		}
		res.Summary = append(res.Summary, row)
	}
	res.Goals = nil
	for _, g := range []struct {
		mode string
		want float64
	}{{NotifyShards11, 0.90}, {NotifyShards1, 0.80}} {
		for _, r := range res.Summary {
			if r.Op == S3Put && r.Size == 4<<10 && r.Mode == g.mode {
				res.Goals = append(res.Goals, NotifyGoal{
					Name: "4KiB PUT " + g.mode + " / none", Want: fmt.Sprintf(">= %.2f", g.want), Got: r.Ratio, Met: r.Ratio >= g.want,
				})
			}
		}
	}
	// Issue 25: gateway CPU per delivered event (4 KiB PUT), and what
	// sharding may add to it.
	perEvent := map[string]float64{}
	for _, g := range []struct {
		mode string
		want float64
	}{{NotifyShards11, 40}, {NotifyShards1, 30}} {
		for _, r := range res.Summary {
			if r.Op == S3Put && r.Size == 4<<10 && r.Mode == g.mode && r.GwUsEvent != 0 {
				perEvent[g.mode] = r.GwUsEvent
				res.Goals = append(res.Goals, NotifyGoal{
					Name: "gateway µs CPU per event, 4KiB PUT " + g.mode, Want: fmt.Sprintf("<= %.0f", g.want),
					Got: r.GwUsEvent, Met: r.GwUsEvent <= g.want,
				})
			}
		}
	}
	if e1, e11 := perEvent[NotifyShards1], perEvent[NotifyShards11]; e1 > 0 && e11 != 0 {
		x := math.Round(e11/e1*100) / 100
		res.Goals = append(res.Goals, NotifyGoal{
			Name: "gateway CPU per event, shards=11 / shards=1", Want: "<= 1.10", Got: x, Met: x <= 1.10,
		})
	}
	if s := res.Soak; s != nil && s.S3 != nil {
		// Keeps up: the queue empties within 5 s of the end of the load and
		// its depth does not grow over the second half (slope below 1% of
		// the PUT rate).
		limit := 0.01 * s.S3.OpsPerSec
		met := s.Drained && s.DrainSeconds <= 5 && s.DepthSlope <= limit
		res.Goals = append(res.Goals, NotifyGoal{
			Name: fmt.Sprintf("delivery keeps up (%s 4KiB PUT, %.0fs)", s.Mode, s.S3.Seconds),
			Want: fmt.Sprintf("depth slope over the 2nd half <= %.1f entries/s (1%% of the PUT rate) and drained within 5 s", limit),
			Got:  s.DepthSlope, Met: met,
			Detail: fmt.Sprintf("max depth %d, drained %v in %.1fs, %d events delivered for %d acknowledged PUTs",
				s.MaxDepth, s.Drained, s.DrainSeconds, s.Lag.Events, s.S3.Ops),
		})
	}
}

// notifyGateway is the gateway under test: a child process or in-process.
type notifyGateway struct {
	url       string
	inProcess bool
	cmd       *exec.Cmd
	logf      *os.File
	cancel    context.CancelFunc
	done      chan error
	hc        *http.Client
	signer    *v4.Signer
	creds     aws.Credentials
	pprofURL  string // the gateway's /debug/pprof/ base, if served
}

type gwConfig struct {
	extra     []string // more gateway flags
	bin       string
	inProcess bool
	dir       string
	ak, sk    string
	scan      time.Duration
	linger    time.Duration
	pipeline  int
	// wakeBatch, maxWakeGap: --notif-wake-batch, --notif-max-wake-gap (0: not passed)
	wakeBatch  int
	maxWakeGap time.Duration
	pprof      bool // serve pprof (--pprof-listen) for per-cell profiles
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func startGateway(ctx context.Context, gc gwConfig, shards int, out io.Writer) (*notifyGateway, error) {
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"--data-dir", gc.dir + "/data", "--listen", addr, "--notif-shards", strconv.Itoa(shards),
		"--notif-scan-interval", gc.scan.String(), "--log-level", "warn",
		// No orphan scan: its first run starts a minute after start-up and
		// walks every data object at 1,000/s, landing in whichever cells
		// it overlaps (3-12 µs per PUT in stop 38's profiles,
		// notify-issue25.md round 10).
		"--orphan-scan-interval", "0"}
	args = append(args, gc.extra...)
	if gc.linger > 0 {
		args = append(args, "--notif-commit-linger", gc.linger.String())
	}
	if gc.pipeline > 0 {
		args = append(args, "--notif-push-pipeline", strconv.Itoa(gc.pipeline))
	}
	if gc.wakeBatch > 0 {
		args = append(args, "--notif-wake-batch", strconv.Itoa(gc.wakeBatch))
	}
	if gc.maxWakeGap > 0 {
		args = append(args, "--notif-max-wake-gap", gc.maxWakeGap.String())
	}
	var pprofAddr string
	if gc.pprof {
		if pprofAddr, err = freePort(); err != nil {
			return nil, err
		}
		args = append(args, "--pprof-listen", pprofAddr)
	}
	g := &notifyGateway{
		url: "http://" + addr, inProcess: gc.inProcess, done: make(chan error, 1),
		hc:     &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}},
		signer: v4.NewSigner(), creds: aws.Credentials{AccessKeyID: gc.ak, SecretAccessKey: gc.sk},
	}
	if pprofAddr != "" {
		g.pprofURL = "http://" + pprofAddr + "/debug/pprof/"
	}
	env := map[string]string{"CAIRN_ACCESS_KEY": gc.ak, "CAIRN_SECRET_KEY": gc.sk}
	if gc.inProcess {
		cfg, err := config.Load(args, func(k string) string { return env[k] })
		if err != nil {
			return nil, err
		}
		lf, err := os.OpenFile(gc.dir+"/gateway.log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		g.logf = lf
		gctx, cancel := context.WithCancel(context.Background())
		g.cancel = cancel
		log := slog.New(slog.NewTextHandler(lf, &slog.HandlerOptions{Level: slog.LevelWarn}))
		go pprof.Do(gctx, pprof.Labels("role", "gateway"), func(gctx context.Context) {
			g.done <- server.Run(gctx, cfg, log, func(k string) string { return env[k] })
		})
	} else {
		lf, err := os.OpenFile(gc.dir+"/gateway.log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		g.logf = lf
		cmd := exec.Command(gc.bin, append([]string{"serve"}, args...)...)
		cmd.Env = append(os.Environ(), "CAIRN_ACCESS_KEY="+gc.ak, "CAIRN_SECRET_KEY="+gc.sk)
		cmd.Stdout, cmd.Stderr = lf, lf
		if err := cmd.Start(); err != nil {
			lf.Close()
			return nil, err
		}
		g.cmd = cmd
		go func() { g.done <- cmd.Wait() }()
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := g.hc.Get(g.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		select {
		case err := <-g.done:
			g.done <- err
			g.stop()
			return nil, fmt.Errorf("gateway exited during startup: %v (log %s/gateway.log)", err, gc.dir)
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			g.stop()
			return nil, fmt.Errorf("gateway did not become ready (log %s/gateway.log)", gc.dir)
		}
		time.Sleep(100 * time.Millisecond)
	}
	pid := os.Getpid()
	if g.cmd != nil {
		pid = g.cmd.Process.Pid
	}
	fmt.Fprintf(out, "gateway %s (pid %d, --notif-shards %d, in-process %v)\n", g.url, pid, shards, gc.inProcess)
	return g, nil
}

// cpuProfile writes a CPU profile of the gateway process over the next d
// (rounded up to whole seconds, the profile endpoint's unit) to path.
func (g *notifyGateway) cpuProfile(ctx context.Context, path string, d time.Duration) error {
	secs := int((d + time.Second - 1) / time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%sprofile?seconds=%d", g.pprofURL, secs), nil)
	if err != nil {
		return err
	}
	// Not g.hc: its 60 s timeout would cut a soak's profile.
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	return errors.Join(err, f.Close())
}

// stop ends the gateway: SIGTERM (or context cancel), then SIGKILL after
// 30 s. Only the process this bench started is signalled.
func (g *notifyGateway) stop() {
	if g.cancel != nil {
		g.cancel()
	} else if g.cmd != nil && g.cmd.Process != nil {
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-g.done:
	case <-time.After(30 * time.Second):
		if g.cmd != nil && g.cmd.Process != nil {
			_ = g.cmd.Process.Kill()
			<-g.done
		}
	}
	if g.logf != nil {
		g.logf.Close()
	}
	g.hc.CloseIdleConnections()
}

// call sends one SigV4-signed request (service s3, region us-east-1).
func (g *notifyGateway) call(ctx context.Context, method, path string, q url.Values, ctype string, body []byte) ([]byte, error) {
	u := g.url + path
	if len(q) > 0 {
		u += "?" + strings.TrimSuffix(strings.ReplaceAll(q.Encode(), "=&", "&"), "=")
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	sum := sha256.Sum256(body)
	ph := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", ph)
	if err := g.signer.SignHTTP(ctx, g.creds, req, ph, "s3", "us-east-1", time.Now()); err != nil {
		return nil, err
	}
	resp, err := g.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return b, fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	return b, nil
}

// createTopic creates a topic with attrs (Attributes.entry.N.key/value).
func (g *notifyGateway) createTopic(ctx context.Context, name string, attrs url.Values) error {
	form := url.Values{"Action": {"CreateTopic"}, "Name": {name}}
	for k, v := range attrs {
		form[k] = v
	}
	_, err := g.call(ctx, http.MethodPost, "/", nil, "application/x-www-form-urlencoded", []byte(form.Encode()))
	if err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	return nil
}

func (g *notifyGateway) createBucket(ctx context.Context, bucket string) error {
	_, err := g.call(ctx, http.MethodPut, "/"+bucket, nil, "", nil)
	return err
}

func (g *notifyGateway) putNotification(ctx context.Context, bucket, topicName, event string) error {
	x := fmt.Sprintf(`<NotificationConfiguration><TopicConfiguration><Id>bench</Id><Topic>arn:aws:sns:default::%s</Topic><Event>%s</Event></TopicConfiguration></NotificationConfiguration>`, topicName, event)
	_, err := g.call(ctx, http.MethodPut, "/"+bucket, url.Values{"notification": {""}}, "application/xml", []byte(x))
	return err
}

type topicStatsJSON struct {
	Shards       int    `json:"shards"`
	Entries      uint64 `json:"entries"`
	Bytes        uint64 `json:"size"`
	Reservations uint64 `json:"reservations"`
}

// topicStats is `cairn admin topic stats --topic T` (GET
// /admin/topic?stats&topic=T).
func (g *notifyGateway) topicStats(ctx context.Context, name string) (topicStatsJSON, error) {
	var st topicStatsJSON
	b, err := g.call(ctx, http.MethodGet, "/admin/topic", url.Values{"stats": {""}, "topic": {name}}, "", nil)
	if err != nil {
		return st, err
	}
	err = json.Unmarshal(b, &st)
	return st, err
}

// notifyCounters are the gateway's delivery and commit counters
// (/metrics), summed over labels.
type notifyCounters struct {
	ok, failed                        float64
	listOps, removeOps, listRemoveOps float64 // cairn_notify_delivery_shard_ops_total by op
	pushExchanges                     float64 // cairn_notify_delivery_push_exchanges_total
	commitOps, commitEvents           float64 // cairn_notify_queue_commit_{ops,events}_total
	reserveOps                        float64 // cairn_notify_queue_reserve_ops_total
	// cairn_store_*: the embedded store's writes.
	walBytes, flushedBytes, compactedBytes, syncedCommits, walSyncs float64
	debtBytes, bgJobs                                               float64 // gauges
}

// counters reads notifyCounters from the gateway's /metrics (zero when
// unreadable).
func (g *notifyGateway) counters(ctx context.Context) notifyCounters {
	var n notifyCounters
	body, err := g.call(ctx, http.MethodGet, "/metrics", nil, "", nil)
	if err != nil {
		return n
	}
	metrics := []struct {
		prefix string
		dst    *float64
	}{
		{"cairn_notify_delivery_pushes_ok_total", &n.ok},
		{"cairn_notify_delivery_pushes_failed_total", &n.failed},
		{`cairn_notify_delivery_shard_ops_total{op="list"}`, &n.listOps},
		{`cairn_notify_delivery_shard_ops_total{op="remove"}`, &n.removeOps},
		{`cairn_notify_delivery_shard_ops_total{op="list_remove"}`, &n.listRemoveOps},
		{"cairn_notify_delivery_push_exchanges_total", &n.pushExchanges},
		{"cairn_notify_queue_commit_ops_total", &n.commitOps},
		{"cairn_notify_queue_commit_events_total", &n.commitEvents},
		{"cairn_notify_queue_reserve_ops_total", &n.reserveOps},
		{"cairn_store_wal_bytes_total", &n.walBytes},
		{"cairn_store_flushed_bytes_total", &n.flushedBytes},
		{"cairn_store_compacted_bytes_total", &n.compactedBytes},
		{"cairn_store_synced_commits_total", &n.syncedCommits},
		{"cairn_store_wal_syncs_total", &n.walSyncs},
		{"cairn_store_compaction_debt_bytes", &n.debtBytes},
		{"cairn_store_background_jobs", &n.bgJobs},
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var dst *float64
		for _, m := range metrics {
			if strings.HasPrefix(line, m.prefix) {
				dst = m.dst
				break
			}
		}
		if dst == nil {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				*dst += v
			}
		}
	}
	return n
}

// settle waits, up to max, until the store runs no flush or compaction
// in two polls in a row with no compaction debt, or in ten (2 s) with
// some: pebble may estimate a debt too small to schedule a compaction
// for, and waited for it until max. It returns the wait and whether
// either happened (false at once without the embedded store's counters).
func (g *notifyGateway) settle(ctx context.Context, max time.Duration) (float64, bool) {
	t0 := time.Now()
	quiet := 0
	for ctx.Err() == nil {
		n := g.counters(ctx)
		if n.walBytes == 0 {
			return 0, false
		}
		if n.bgJobs == 0 {
			if quiet++; quiet == 2 && n.debtBytes == 0 || quiet == 10 {
				return time.Since(t0).Seconds(), true
			}
		} else {
			quiet = 0
		}
		if time.Since(t0) >= max {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return time.Since(t0).Seconds(), false
}

// cpuSeconds is the child gateway's user+system CPU time (0 in-process or
// where /proc is missing).
func (g *notifyGateway) cpuSeconds() float64 {
	if g.cmd == nil || g.cmd.Process == nil {
		return 0
	}
	return procCPUSeconds(strconv.Itoa(g.cmd.Process.Pid))
}

func selfCPUSeconds() float64 { return procCPUSeconds("self") }

// procCPUSeconds reads utime+stime from /proc/<pid>/stat (USER_HZ 100).
func procCPUSeconds(pid string) float64 {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14, stime 15.
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100
}

// machineBusySeconds is the CPU time all CPUs spent not idle (from
// /proc/stat; 0 where it is missing).
func machineBusySeconds() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0
	}
	var busy float64
	for i, v := range f[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is already in user
			continue
		}
		busy += n
	}
	return busy / 100
}

func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func machineFacts() NotifyMachine {
	m := NotifyMachine{
		CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		Note: "client (cairn bench), gateway (cairn serve) and the HTTP receiver share these CPUs",
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		if _, v, ok := strings.Cut(line, ":"); ok {
			m.MemTotal = strings.TrimSpace(v)
		}
	}
	return m
}
