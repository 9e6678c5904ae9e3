package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-s3/cairn/internal/bench"
	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/driver"
)

const benchUsage = `usage: cairn bench <workload> [flags]

workloads:
  append    one object: plain Append vs guarded (epoch-checked) log append
  objstore  omap set/get, small writes vs concurrency; 4 MiB WriteFull vs raw disk
  s3        S3 load generator: put/get/delete/mixed against any endpoint
  notify    PUT/DELETE rate without notifications vs persistent topics (1, 11 shards)
            pushing to an HTTP receiver, Kafka or RabbitMQ (--endpoint-kind)
  versioning  PUT on an Enabled vs unversioned bucket; ListObjectsV2 with many
            noncurrent versions and markers vs none; ListObjectVersions rate
  lifecycle a lifecycle pass over a filled bucket (half expiring): objects
            examined/s, and the 4 KiB PUT rate during the pass vs without it
  transition a lifecycle pass moving a filled bucket to another storage class:
            objects and MiB moved per second, 4 KiB PUT rate during it vs without
  quota     4 KiB PUT with user and bucket quotas enabled vs disabled (ABBA
            on one bucket), new keys and overwrites
  logging   4 KiB PUT with bucket logging off vs on, standard and journal mode
            (ABBA on one bucket); records found vs PUTs acknowledged

  scale     the RGW seed's scale test: one bucket filled in rounds (to 30M objects)
            through dynamic resharding, an RWLD mix and listing timings after
            each round, then aging; in process (driver) or against a gateway
  sse       encrypted vs plain on one gateway (ABBA): 4 MiB PUT/GET, 4 KiB PUT;
            in process: store bytes a 1 MiB range GET reads, KMS calls per op

Each prints progress lines and, last, one JSON object with the results.
Run 'cairn bench <workload> -h' for its flags.
`

// benchWorkloads maps a workload name to its runner. To add a workload
// (s3, notify, reshard, ...): write its Config/Run in internal/bench and add
// one entry here binding flags to the config.
var benchWorkloads = map[string]func(ctx context.Context, args []string, out io.Writer) error{
	"append":     benchAppend,
	"objstore":   benchObjstore,
	"s3":         benchS3,
	"notify":     bench.NotifyMain,
	"versioning": benchVersioning,
	"lifecycle":  benchLifecycle,
	"transition": benchTransition,
	"sse":        benchSSE,
	"quota":      benchQuota,
	"logging":    benchLogging,
	"scale":      benchScale,
}

func runBench(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, benchUsage)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(os.Stdout, benchUsage)
		return 0
	}
	run, ok := benchWorkloads[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "cairn bench: unknown workload %q\nRun 'cairn bench --help' for usage.\n", args[0])
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var ue *bench.UsageError
		if errors.As(err, &ue) {
			fmt.Fprintf(os.Stderr, "cairn bench %s: %v\nRun 'cairn bench %s --help' for usage.\n", args[0], err, args[0])
			return 2
		}
		fmt.Fprintf(os.Stderr, "cairn bench %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// printJSON writes v as the last output line.
func printJSON(out io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", b)
	return err
}

func benchAppend(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cairn bench append", flag.ContinueOnError)
	var cfg bench.AppendConfig
	clients := fs.String("clients", "1", "concurrent appenders; a comma-separated list (1,2,4,8,16,32) runs each")
	rounds := fs.Int("rounds", 1, "rounds over all client counts (several: the spread between rounds is reported)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "duration of each phase (plain, guarded)")
	fs.IntVar(&cfg.Size, "size", 4096, "bytes per append")
	fs.StringVar(&cfg.Dir, "data-dir", "", "parent directory for the temporary stores of the embedded backend (picks the disk; default the system temp dir)")
	backend := fs.String("backend", "embedded", "object layer backend: embedded (a fresh temporary store per mode) or rados (a Ceph cluster; binary built with -tags rados)")
	var ceph cephFlags
	ceph.bind(fs)
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	counts, err := intList(*clients)
	if err != nil {
		return fmt.Errorf("--clients: %w", err)
	}
	switch *backend {
	case "embedded":
	case "rados":
		open, counters, closeStore, err := ceph.open(ctx)
		if err != nil {
			return err
		}
		defer closeStore()
		cfg.Open, cfg.Counters = open, counters
	default:
		return &bench.UsageError{Err: fmt.Errorf("--backend %q: want embedded or rados", *backend)}
	}
	cfg.Out = out
	if len(counts) == 1 && *rounds == 1 {
		cfg.Clients = counts[0]
		res, err := bench.RunAppend(ctx, cfg)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "guarded/plain: %.2f\n", res.Ratio)
		return printJSON(out, res)
	}
	res, err := bench.RunAppendSweep(ctx, bench.AppendSweepConfig{Base: cfg, Clients: counts, Rounds: *rounds,
		Backend: *backend, Command: "cairn bench append " + strings.Join(args, " ")})
	if err != nil {
		return err
	}
	if res.GuardedOverPlain32 > 0 {
		fmt.Fprintf(out, "guarded/plain at 32 clients: %.2f\n", res.GuardedOverPlain32)
	}
	return printJSON(out, res)
}

func benchObjstore(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cairn bench objstore", flag.ContinueOnError)
	var cfg bench.ObjstoreConfig
	clients := fs.String("clients", "1,4,16,64", "concurrency levels for omap and small writes (comma-separated)")
	large := fs.String("large-clients", "1,4,8", "concurrency levels for 4 MiB WriteFull (comma-separated)")
	fs.DurationVar(&cfg.Duration, "duration", 3*time.Second, "duration of each point (4 MiB points and the raw write run twice as long)")
	fs.IntVar(&cfg.ValueSize, "value-size", 128, "omap value bytes")
	fs.IntVar(&cfg.SmallSize, "small-size", 4096, "small object bytes")
	fs.IntVar(&cfg.Objects, "objects", 16, "objects the omap clients spread over")
	fs.StringVar(&cfg.Dir, "data-dir", "", "parent directory for the temporary store and raw file (picks the disk)")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	var err error
	if cfg.Clients, err = intList(*clients); err != nil {
		return fmt.Errorf("--clients: %w", err)
	}
	if cfg.LargeClients, err = intList(*large); err != nil {
		return fmt.Errorf("--large-clients: %w", err)
	}
	cfg.Out = out
	res, err := bench.RunObjstore(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "best 4 MiB WriteFull / raw: %.2f\n", res.WriteFullRatio)
	return printJSON(out, res)
}

func benchS3(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cairn bench s3", flag.ContinueOnError)
	var cfg bench.S3Config
	gw := bindGateway(fs, &cfg.Endpoint, &cfg.AccessKey, &cfg.SecretKey, "S3 endpoint URL", "")
	fs.StringVar(&cfg.Region, "region", "us-east-1", "SigV4 signing region")
	fs.StringVar(&cfg.Bucket, "bucket", "cairn-bench", "bucket (created if missing)")
	fs.StringVar(&cfg.Op, "op", "put", "put, get, delete, mixed (45% GET, 35% PUT, 15% STAT, 5% DELETE) or overwrite (PUT over prefilled keys)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 16, "closed-loop workers")
	size := fs.String("size", "4KiB", "object size (4KiB, 4MiB, ...)")
	fs.DurationVar(&cfg.Duration, "duration", 20*time.Second, "measured phase length")
	fs.IntVar(&cfg.Objects, "objects", 1000, "objects written first for get/mixed/overwrite (read or overwritten) and delete (deleted)")
	fs.BoolVar(&cfg.SignPayload, "sign-payload", false, "sign the body's SHA-256 instead of UNSIGNED-PAYLOAD")
	fs.StringVar(&cfg.Checksum, "checksum", "", "add x-amz-checksum-<alg> to PUTs: crc32, crc32c or sha256")
	fs.StringVar(&cfg.SessionToken, "session-token", "", "session token of temporary credentials (STS), sent as x-amz-security-token")
	return runWorkload(ctx, gw, args, size, &cfg, func(n int64) { cfg.Size, cfg.Out = n, out }, bench.RunS3, out)
}

func benchVersioning(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cairn bench versioning", flag.ContinueOnError)
	var cfg bench.VersioningConfig
	gw := bindGateway(fs, &cfg.Endpoint, &cfg.AccessKey, &cfg.SecretKey, "S3 endpoint URL", "")
	fs.StringVar(&cfg.Prefix, "prefix", "", "bucket name prefix (default random)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 16, "closed-loop workers")
	size := fs.String("size", "4KiB", "PUT object size")
	fs.DurationVar(&cfg.PutDuration, "put-duration", 10*time.Second, "PUT phase length per side (ABBA halves)")
	fs.IntVar(&cfg.PutKeys, "put-keys", 1000, "keys the PUT phase overwrites at random")
	fs.IntVar(&cfg.LiveKeys, "live-keys", 5000, "live keys of the listed buckets (the versioned one holds twice as many keys, half under delete markers)")
	fs.IntVar(&cfg.Noncurrent, "noncurrent", 10, "noncurrent versions per key in the versioned listed bucket")
	fs.IntVar(&cfg.ListPage, "list-page", 1000, "max-keys per listing page")
	fs.DurationVar(&cfg.ListTime, "list-duration", 10*time.Second, "listing phase length per side")
	return runWorkload(ctx, gw, args, size, &cfg, func(n int64) { cfg.Size, cfg.Out = n, out }, bench.RunVersioning, out)
}

func benchQuota(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cairn bench quota", flag.ContinueOnError)
	var cfg bench.QuotaConfig
	gw := bindGateway(fs, &cfg.Endpoint, &cfg.AccessKey, &cfg.SecretKey, "S3 endpoint URL", "admin ")
	fs.StringVar(&cfg.UID, "uid", "admin", "user id of that admin (the bucket owner whose user quota is toggled)")
	fs.StringVar(&cfg.Prefix, "prefix", "", "bucket name prefix (default random)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 16, "closed-loop workers")
	size := fs.String("size", "4KiB", "PUT object size")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "time per side and key pattern (in 8 ABBA slices)")
	fs.IntVar(&cfg.OverwriteKeys, "overwrite-keys", 1000, "keys the overwrite pattern writes at random")
	return runWorkload(ctx, gw, args, size, &cfg, func(n int64) { cfg.Size, cfg.Out = n, out }, bench.RunQuota, out)
}

func benchLogging(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cairn bench logging", flag.ContinueOnError)
	var cfg bench.LoggingConfig
	gw := bindGateway(fs, &cfg.Endpoint, &cfg.AccessKey, &cfg.SecretKey, "S3 endpoint URL", "")
	fs.StringVar(&cfg.Prefix, "prefix", "", "bucket name prefix (default random)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 16, "closed-loop workers")
	size := fs.String("size", "4KiB", "PUT object size")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "time per side and mode (in 8 ABBA slices)")
	fs.IntVar(&cfg.GatewayPID, "gateway-pid", 0, "the gateway's pid: also report its CPU time per PUT (Linux /proc)")
	return runWorkload(ctx, gw, args, size, &cfg, func(n int64) { cfg.Size, cfg.Out = n, out }, bench.RunLogging, out)
}

func benchLifecycle(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cairn bench lifecycle", flag.ContinueOnError)
	var cfg bench.LifecycleConfig
	gw := bindGateway(fs, &cfg.Endpoint, &cfg.AccessKey, &cfg.SecretKey, "S3 endpoint URL (the gateway's lc-rate is what is measured)", "admin ")
	fs.StringVar(&cfg.Prefix, "prefix", "", "bucket name prefix (default random)")
	fs.IntVar(&cfg.Objects, "objects", 100000, "objects in the processed bucket (half expire)")
	fs.IntVar(&cfg.FillConcurrency, "fill-concurrency", 32, "workers filling the bucket")
	fs.IntVar(&cfg.Concurrency, "concurrency", 8, "foreground PUT workers")
	size := fs.String("size", "4KiB", "foreground PUT size")
	fs.DurationVar(&cfg.Duration, "duration", 20*time.Second, "length of each foreground phase")
	return runWorkload(ctx, gw, args, size, &cfg, func(n int64) { cfg.Size, cfg.Out = n, out }, bench.RunLifecycle, out)
}

func benchTransition(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cairn bench transition", flag.ContinueOnError)
	var cfg bench.LifecycleConfig
	gw := bindGateway(fs, &cfg.Endpoint, &cfg.AccessKey, &cfg.SecretKey, "S3 endpoint URL of a gateway configuring --class (its lc-rate paces the pass)", "admin ")
	fs.StringVar(&cfg.Prefix, "prefix", "", "bucket name prefix (default random)")
	fs.StringVar(&cfg.TransitionClass, "class", "STANDARD_IA", "storage class the objects move to")
	fs.IntVar(&cfg.GatewayPID, "gateway-pid", 0, "the gateway's pid: also report its CPU time per PUT and per moved object (Linux /proc)")
	fs.IntVar(&cfg.Objects, "objects", 20000, "objects in the processed bucket (all move)")
	objSize := fs.String("object-size", "64KiB", "size of each moved object")
	fs.IntVar(&cfg.FillConcurrency, "fill-concurrency", 32, "workers filling the bucket")
	fs.IntVar(&cfg.Concurrency, "concurrency", 8, "foreground PUT workers")
	size := fs.String("size", "4KiB", "foreground PUT size")
	fs.DurationVar(&cfg.Duration, "duration", 20*time.Second, "length of each foreground phase")
	n, err := gw.parse(args, "size", size)
	if err != nil {
		return err
	}
	osz, err := config.ParseSize(*objSize)
	if err != nil || osz <= 0 {
		return &bench.UsageError{Err: fmt.Errorf("--object-size %q: %v", *objSize, err)}
	}
	cfg.Size, cfg.ObjectSize, cfg.Out = n, osz, out
	res, err := bench.RunLifecycle(ctx, cfg)
	if err != nil {
		return err
	}
	return printJSON(out, res)
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// parseInterspersed parses flags that may come before, between or after
// positional arguments and returns the positionals in order.
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	_, err := parseFlagsAnywhere(fs, args)
	if err != nil {
		return err
	}
	if rest := fs.Args(); len(rest) > 0 {
		return &bench.UsageError{Err: fmt.Errorf("unexpected arguments %q", rest)}
	}
	return nil
}

// parseFlagsAnywhere is flag parsing that lets flags and positional
// arguments mix ("rados --pool p ls" and "rados ls --pool p"); "--" ends
// flags.
func parseFlagsAnywhere(fs *flag.FlagSet, args []string) ([]string, error) {
	quiet(fs)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(os.Stdout, "usage: %s [flags]\n\nflags:\n", fs.Name())
				printFlags(os.Stdout, fs)
				return nil, err
			}
			return nil, &bench.UsageError{Err: err}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		// flag stops at the first non-flag; a preceding "--" means the
		// rest is positional.
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	// Hand the positionals back through fs.Args as well.
	_ = fs.Parse(append([]string{"--"}, pos...))
	return pos, nil
}

// envKeys fills unset bench credentials from CAIRN_ACCESS_KEY and
// CAIRN_SECRET_KEY, as cairn admin does.
// gatewayFlags are the flags every workload against a running gateway
// shares; bindGateway binds them and parse finishes the command line.
// runWorkload parses args, gives the workload its --size and output, runs
// it and prints its result as JSON.
func runWorkload[C, R any](ctx context.Context, gw gatewayFlags, args []string, size *string, cfg *C, set func(size int64), run func(context.Context, C) (R, error), out io.Writer) error {
	n, err := gw.parse(args, "size", size)
	if err != nil {
		return err
	}
	set(n)
	res, err := run(ctx, *cfg)
	if err != nil {
		return err
	}
	return printJSON(out, res)
}

type gatewayFlags struct {
	fs     *flag.FlagSet
	ak, sk *string
}

// bindGateway binds --endpoint, --access-key and --secret-key (keyKind:
// "" or "admin "). The keys' environment defaults are applied after
// parsing so -h never prints a secret.
func bindGateway(fs *flag.FlagSet, endpoint, ak, sk *string, endpointHelp, keyKind string) gatewayFlags {
	fs.StringVar(endpoint, "endpoint", "http://127.0.0.1:7480", endpointHelp)
	fs.StringVar(ak, "access-key", "", keyKind+"access key (default $CAIRN_ACCESS_KEY)")
	fs.StringVar(sk, "secret-key", "", keyKind+"secret key (default $CAIRN_SECRET_KEY)")
	return gatewayFlags{fs: fs, ak: ak, sk: sk}
}

// parse parses args, takes missing keys from the environment and returns
// the size the flag named sizeFlag holds.
func (g gatewayFlags) parse(args []string, sizeFlag string, size *string) (int64, error) {
	if err := parseInterspersed(g.fs, args); err != nil {
		return 0, err
	}
	envKeys(g.ak, g.sk)
	n, err := config.ParseSize(*size)
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", sizeFlag, err)
	}
	return n, nil
}

func envKeys(ak, sk *string) {
	if *ak == "" {
		*ak = os.Getenv("CAIRN_ACCESS_KEY")
	}
	if *sk == "" {
		*sk = os.Getenv("CAIRN_SECRET_KEY")
	}
}

func benchSSE(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cairn bench sse", flag.ContinueOnError)
	var cfg bench.SSEConfig
	gw := bindGateway(fs, &cfg.Endpoint, &cfg.AccessKey, &cfg.SecretKey, "S3 endpoint URL (empty: only the in-process measurements)", "")
	fs.StringVar(&cfg.Prefix, "prefix", "", "bucket name prefix (default random)")
	fs.StringVar(&cfg.Algorithm, "algorithm", "AES256", "default encryption of the encrypted bucket: AES256 or aws:kms")
	fs.StringVar(&cfg.KMSKeyID, "kms-key-id", "", "KMS key of the aws:kms rule")
	fs.BoolVar(&cfg.BucketKey, "bucket-key", false, "BucketKeyEnabled on the encrypted bucket")
	fs.IntVar(&cfg.Concurrency, "concurrency", 8, "closed-loop workers")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "length of each phase per side (ABBA halves)")
	fs.IntVar(&cfg.Keys, "keys", 16, "4 MiB objects per bucket the GET phase reads")
	rng := fs.String("range-object", "1GiB", "size of the in-process object for the range measurement (0: skip)")
	fs.StringVar(&cfg.Dir, "dir", "", "parent directory of the in-process store (default the temp dir)")
	fs.IntVar(&cfg.GatewayPID, "gateway-pid", 0, "the gateway's pid: also report its CPU time per operation (Linux /proc)")
	n, err := gw.parse(args, "range-object", rng)
	if err != nil {
		return err
	}
	cfg.RangeObject = n
	if n == 0 {
		cfg.RangeObject = -1
	}
	cfg.Out = out
	res, err := bench.RunSSE(ctx, cfg)
	if err != nil {
		return err
	}
	return printJSON(out, res)
}

func benchScale(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cairn bench scale", flag.ContinueOnError)
	var cfg bench.ScaleConfig
	fs.StringVar(&cfg.Endpoint, "endpoint", "", "HTTP mode: a running gateway's URL (empty: driver mode, the store in this process)")
	fs.StringVar(&cfg.AccessKey, "access-key", "", "HTTP mode: an admin's access key (default $CAIRN_ACCESS_KEY)")
	fs.StringVar(&cfg.SecretKey, "secret-key", "", "HTTP mode: an admin's secret key (default $CAIRN_SECRET_KEY)")
	fs.IntVar(&cfg.GatewayPID, "gateway-pid", 0, "HTTP mode: the gateway's pid (its RSS is reported)")
	fs.StringVar(&cfg.GatewayDir, "gateway-dir", "", "HTTP mode: the gateway's data directory (its disk usage is reported)")
	fs.StringVar(&cfg.Dir, "data-dir", "", "driver mode: parent directory of the store (picks the disk)")
	fs.BoolVar(&cfg.Keep, "keep", false, "driver mode: keep the store's directory")
	fs.StringVar(&cfg.Bucket, "bucket", "bench-scale", "bucket (must not exist)")
	targets := fs.String("targets", "100k,200k,500k,1M,2M,5M,10M,20M,30M", "object count after each fill round (k and M suffixes)")
	fs.IntVar(&cfg.Clients, "clients", 32, "concurrent clients")
	fs.IntVar(&cfg.Size, "size", 64, "object size in bytes")
	fs.DurationVar(&cfg.RWLD, "rwld", 60*time.Second, "length of the 70/20/5/5 GET/PUT/LIST/DELETE phase after each round")
	fs.IntVar(&cfg.ListRepeats, "list-repeats", 5, "pages timed per listing kind (the median is reported)")
	fs.DurationVar(&cfg.Aging, "aging", 0, "length of the 45/35/15/5 GET/PUT/HEAD/DELETE aging phase after the last round (0: none)")
	fs.IntVar(&cfg.PreShards, "pre-shards", 0, "create the bucket with this many shards (the pre-sharded variant)")
	fs.IntVar(&cfg.InitialShards, "initial-shards", 11, "driver mode: shards of a bucket not pre-sharded (bucket-index-shards)")
	fs.IntVar(&cfg.MaxObjsPerShard, "max-objs-per-shard", 100000, "driver mode: dynamic reshard trigger")
	fs.DurationVar(&cfg.CheckInterval, "reshard-interval", 10*time.Second, "driver mode: dynamic reshard check interval")
	fs.IntVar(&cfg.CopyRateLimit, "reshard-copy-rate", 25000, "driver mode: reshard copy pace, entries/s (-1: unlimited)")
	fs.BoolVar(&cfg.CopyRateAdaptive, "reshard-copy-adaptive", true, "driver mode: pace the copy by foreground write latency (as cairn serve does by default)")
	fs.BoolVar(&cfg.CopyLoad, "copy-load", true, "driver mode: copy reshards as a bulk load of sorted tables, as cairn serve's reshard-copy-load (false: through write ops)")
	fs.Int64Var(&cfg.InlineMax, "inline-max", driver.DefaultInline, "driver mode: bodies of at most this many bytes are kept in their index entry (cairn serve's --inline-max; 0 = never)")
	fs.BoolVar(&cfg.NoIndexView, "no-index-view", false, "driver mode: list by merging every index shard, without the bucket's ordered view (A/B runs)")
	fs.BoolVar(&cfg.TriggerSizing, "reshard-trigger-sizing", false, "driver mode: size dynamic reshards for the objects at the trigger (RGW's rule), not for those expected when they end (A/B runs)")
	cache := fs.String("cache-size", "0", "driver mode: embedded block cache (0: automatic)")
	memtable := fs.String("memtable-size", "0", "driver mode: embedded store's memtable size (cairn serve's memtable-size; 0: its default)")
	mmapReads := fs.Bool("mmap-reads", true, "driver mode: the embedded store reads tables through a mapping (cairn serve's mmap-reads; false: pread, A/B runs)")
	fs.BoolVar(&cfg.NoIngestSplit, "no-ingest-split", false, "driver mode: embedded store without ingest-time table splits (A/B runs: bulk loads land higher in the LSM)")
	fs.IntVar(&cfg.MaxOpenFiles, "max-open-files", 0, "driver mode: sstables the embedded store keeps open (cairn serve's max-open-files; 0: its default)")
	fs.DurationVar(&cfg.RebaseEvery, "rebase-every", 0, "driver mode: how often the reshard governor also re-measures its latency base at its lowest pace besides on a change of phase (0: the default, only then; negative: never, A/B runs)")
	fs.IntVar(&cfg.CompactionConcurrency, "compaction-concurrency", 0, "driver mode: embedded store's most compactions at once (cairn serve's compaction-concurrency; 0: its default)")
	malloc := fs.String("malloc", "auto", "driver mode: C allocator, as cairn serve's malloc option (auto: jemalloc when installed, jemalloc, system)")
	hugePages := fs.Bool("huge-pages", true, "driver mode: jemalloc on transparent huge pages, as cairn serve's huge-pages option")
	memLimit := fs.String("go-memory-limit", "0", "driver mode: the Go runtime's soft memory limit, as cairn serve's go-memory-limit option (0: its default, or GOMEMLIMIT when set)")
	fs.DurationVar(&cfg.MaxDuration, "max-duration", 0, "stop after this long and report what was reached (0: no limit)")
	fs.BoolVar(&cfg.Walk, "walk", true, "after the rounds, time a full ListObjectsV2 walk of the bucket and a bucket stats call")
	fs.BoolVar(&cfg.VersionsWalk, "versions-walk", true, "driver mode: after the walk, a full ListObjectVersions walk (1000 per page) that must see every live key")
	fs.StringVar(&cfg.Resume, "resume", "", "driver mode: open the store a run kept (--keep; the cairn-bench-scale-* directory) instead of filling one: no rounds; the walks, final reshard and aging run on its bucket")
	fs.DurationVar(&cfg.ResumeRWLD, "resume-rwld", 0, "with --resume: first one RWLD phase this long and the list pages timed, as after a round (0: none)")
	fs.DurationVar(&cfg.ResumeWarmup, "resume-warmup", 0, "with --resume-rwld: an RWLD phase this long before it, reported only as warmup_ops_per_sec (fills the block cache a reopened store starts without)")
	fs.IntVar(&cfg.FinalReshard, "final-reshard", 0, "driver mode: after the walks, reshard the bucket to this many shards as `admin bucket reshard` does, timed, then walk it (0: none)")
	fs.DurationVar(&cfg.FillFor, "fill-for", 0, "end the rounds after this long and go on to aging (0: no limit)")
	fs.StringVar(&cfg.Out, "out", "", "JSON report path, rewritten after every round")
	fs.StringVar(&cfg.ProfileDir, "profile-dir", "", "write a CPU profile of each RWLD phase here (rwld-<objects>.pprof), ops labelled op=get|put|list|delete")
	pprofAddr := fs.String("pprof-listen", "", "serve net/http/pprof on this loopback address (e.g. 127.0.0.1:6061) to profile the run")
	reanalyze := fs.String("reanalyze", "", "run nothing: recompute the derived figures of this report with the current analysis and rewrite it (or write --out)")
	n, err := bindGatewayless(fs, args, cache)
	if err != nil {
		return err
	}
	cfg.NoMmap = !*mmapReads
	if cfg.MemTableSize, err = config.ParseSize(*memtable); err != nil || cfg.MemTableSize < 0 || (cfg.MemTableSize > 0 && cfg.MemTableSize < 1<<20) {
		return &bench.UsageError{Err: fmt.Errorf("--memtable-size %q: 0 or 1M to 4G", *memtable)}
	}
	if *reanalyze != "" {
		return reanalyzeScale(*reanalyze, cmp.Or(cfg.Out, *reanalyze), out)
	}
	if cfg.Endpoint == "" {
		// The store runs in this process: give it the allocator serve
		// would (re-executes this command; the flags were parsed once
		// already, so a bad one never gets here).
		switch *malloc {
		case "auto", "jemalloc", "system":
		default:
			return &bench.UsageError{Err: fmt.Errorf("--malloc %q: want auto, jemalloc or system", *malloc)}
		}
		if err := preloadAllocator(&config.Config{Malloc: *malloc, Backend: "embedded", HugePages: *hugePages}); err != nil {
			return err
		}
		cfg.Allocator = allocatorInUse()
		if cfg.Allocator == "jemalloc" {
			cfg.MallocConf = os.Getenv("MALLOC_CONF")
		}
		// The store runs in this process: collect as cairn serve does
		// (its gogc default, or GOGC when set).
		if cfg.GOGC = (&config.Config{}).GCPercent(os.Getenv("GOGC")); cfg.GOGC > 0 {
			debug.SetGCPercent(cfg.GOGC)
		} else { // the runtime applied GOGC (0 would collect continuously)
			cfg.GOGC = debug.SetGCPercent(-1)
			debug.SetGCPercent(cfg.GOGC)
		}
		lim, err := config.ParseSize(*memLimit)
		if err != nil {
			return fmt.Errorf("--go-memory-limit: %w", err)
		}
		if l := (&config.Config{GoMemoryLimit: lim}).MemoryLimit(os.Getenv("GOMEMLIMIT")); l > 0 {
			debug.SetMemoryLimit(l)
		}
		cfg.GoMemoryLimit = debug.SetMemoryLimit(-1)
	}
	if *pprofAddr != "" {
		if err := servePprof(*pprofAddr); err != nil {
			return err
		}
	}
	cfg.CacheSize = n
	versionsSet := false
	fs.Visit(func(f *flag.Flag) { versionsSet = versionsSet || f.Name == "versions-walk" })
	if cfg.Endpoint != "" && !versionsSet {
		cfg.VersionsWalk = false // a driver-mode default; asked for explicitly, Validate refuses it
	}
	envKeys(&cfg.AccessKey, &cfg.SecretKey)
	if cfg.Endpoint == "" {
		cfg.AccessKey, cfg.SecretKey = "", ""
	}
	for _, f := range strings.Split(*targets, ",") {
		v, err := countArg(strings.TrimSpace(f))
		if err != nil {
			return &bench.UsageError{Err: fmt.Errorf("--targets: %w", err)}
		}
		cfg.Targets = append(cfg.Targets, v)
	}
	cfg.Log, cfg.Command = out, "cairn bench scale "+strings.Join(args, " ")
	res, err := bench.RunScale(ctx, cfg)
	if res != nil {
		fmt.Fprintf(out, "objects %d, reshards %d, worst reshard window %.2f (outside %.2f), RWLD final/1M %.2f, list page final/1M %.2f, aged %.2f, max RSS %d MiB\n",
			res.Objects, res.Reshards, res.ReshardWorstWindowRatio, res.OutsideWorstWindowRatio, res.RWLDRatioFinalVs1M, res.ListPageRatioFinalVs1M, res.AgedRatio, res.MaxRSSBytes>>20)
		if w := res.WalkVersions; w != nil {
			fmt.Fprintf(out, "versions walk: %d live keys of %d expected, %.0f keys/s\n", w.LiveKeys, w.Expected, w.KeysPerSec)
		}
		if f := res.FinalReshard; f != nil {
			fmt.Fprintf(out, "final reshard %d → %d: %.1f s, copy %.0f entries/s, %d replay rounds, block %.1f ms\n", f.FromShards, f.ShardsAfter, f.Seconds, f.CopyPerSec, f.Rounds, f.BlockMs)
		}
		if nz := res.FillNoise; nz != nil && nz.Seconds > 0 {
			fmt.Fprintf(out, "fill noise over %d s: mean %.0f PUT/s, with/without flush %.0f/%.0f, compaction %.0f/%.0f, GC %.0f/%.0f; WAL sync %.0f µs mean, %.3f syncs/PUT\n",
				nz.Seconds, nz.MeanPerSec, nz.WithFlush.MeanWith, nz.WithFlush.MeanWithout, nz.WithCompaction.MeanWith, nz.WithCompaction.MeanWithout, nz.WithGC.MeanWith, nz.WithGC.MeanWithout, nz.WALSyncMeanUs, nz.WALSyncsPerPut)
		}
	}
	return err
}

// reanalyzeScale rewrites a scale report's derived figures.
func reanalyzeScale(in, outPath string, out io.Writer) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var res bench.ScaleResult
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	bench.Reanalyze(&res)
	b, err = json.MarshalIndent(&res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(outPath, append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: worst reshard window %.2f (outside %.2f; against the median second %.2f / %.2f), RWLD final/1M %.2f, list page final/1M %.2f\n",
		outPath, res.ReshardWorstWindowRatio, res.OutsideWorstWindowRatio, res.ReshardWorstWindowRatio1s, res.OutsideWorstWindowRatio1s, res.RWLDRatioFinalVs1M, res.ListPageRatioFinalVs1M)
	return nil
}

// servePprof serves the runtime profiles on a loopback address.
func servePprof(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return &bench.UsageError{Err: fmt.Errorf("--pprof-listen: %w", err)}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return &bench.UsageError{Err: fmt.Errorf("--pprof-listen %q: a loopback address only", addr)}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	go http.Serve(ln, mux) //nolint:errcheck // lives as long as the bench
	return nil
}

// bindGatewayless parses args and returns the size flag's value.
func bindGatewayless(fs *flag.FlagSet, args []string, size *string) (int64, error) {
	if err := parseInterspersed(fs, args); err != nil {
		return 0, err
	}
	n, err := config.ParseSize(*size)
	if err != nil {
		return 0, &bench.UsageError{Err: fmt.Errorf("--cache-size: %w", err)}
	}
	return n, nil
}

// countArg parses 100k, 2M or 30000000.
func countArg(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1000, s[:len(s)-1]
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		mult, s = 1_000_000, s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("count %q: want a positive number with an optional k or M", s)
	}
	return int64(v * float64(mult)), nil
}
