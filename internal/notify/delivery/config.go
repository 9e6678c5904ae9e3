package delivery

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/push"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults filled in by EnsureDefaults.
const (
	// DefaultLeaseDuration is RGW's queue lock duration.
	DefaultLeaseDuration  = 90 * time.Second
	DefaultScanInterval   = 30 * time.Second
	DefaultPollInterval   = 200 * time.Millisecond
	DefaultWakeGap        = 20 * time.Millisecond
	DefaultMaxWakeGap     = 200 * time.Millisecond
	DefaultWakeBatch      = 32
	DefaultMaxInFlight    = 1024
	DefaultMaxPerEndpoint = 256
	DefaultShardWindow    = 1024
	DefaultPushBatch      = 32
	DefaultRemoveBatch    = 256
	DefaultRemoveInterval = 50 * time.Millisecond
	DefaultAckLinger      = 5 * time.Millisecond
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = 5 * time.Minute
	DefaultPushTimeout    = 30 * time.Second
	DefaultMembersOID     = "delivery.members"
	// LockName is the cls lock every owner takes on a shard object.
	LockName = "cairn.notif.delivery"
	// registryPage is the page size used to walk the queue registry.
	registryPage = 500
)

// Config configures a Manager. Zero fields take the documented defaults
// (EnsureDefaults); Validate reports every problem at once.
type Config struct {
	// Owner identifies this gateway instance (its id in the membership
	// object and the Locker of its leases). Required, unique per live
	// gateway.
	Owner string
	// ReclaimOwnLeases says that Owner is stable across restarts and that
	// no other live manager ever uses it (the server ties it to an
	// exclusive lock on the gateway's data directory). A restarted gateway
	// then takes over the leases its dead incarnation still holds at once
	// (and frees those beyond its fair share) instead of waiting up to
	// LeaseDuration for them to lapse. Leases held under other owners are
	// never touched. Two live managers with the same Owner and this set
	// would keep breaking each other's leases: fencing still holds, but
	// pushes of one key could overlap.
	ReclaimOwnLeases bool
	// IO addresses the shard objects: pool default.rgw.log, namespace
	// "notif". Required.
	IO objstore.IOContext
	// MembersIO and MembersOID name the membership object gateways
	// heartbeat into. Defaults: IO and "delivery.members" (no leading
	// ':', so it never looks like a shard).
	MembersIO  objstore.IOContext
	MembersOID string

	Registry  Registry    // the queue registry (*queue.Queues); required
	Topics    TopicSource // required
	Endpoints Endpoints   // required

	// LeaseDuration is how long a shard lease lasts without renewal
	// (default 90 s). A crashed gateway's shards move after at most this.
	LeaseDuration time.Duration
	// RenewInterval is how often leases are renewed (default a third of
	// LeaseDuration; must be below it).
	RenewInterval time.Duration
	// ScanInterval is how often the registry is read, membership
	// heartbeated, shards rebalanced and queue stats refreshed (default
	// 30 s; at most LeaseDuration/2 so membership stays fresh).
	ScanInterval time.Duration
	// PollInterval is how often an owned shard that was fully listed is
	// listed again for new entries (default 200 ms).
	PollInterval time.Duration
	// MaxPollInterval: a poll that finds nothing doubles the shard's poll
	// interval up to MaxPollInterval (default 10 x PollInterval); a list
	// that finds entries, or a local commit's wake, goes back to
	// PollInterval. Idle polls were most of the list ops of a gateway
	// holding idle shards (docs/bench/notify-issue25.md); the price is up
	// to MaxPollInterval before a quiet shard sees an event committed
	// through another gateway (local commits wake it at once).
	MaxPollInterval time.Duration
	// WakeGap: a commit through this gateway wakes its shard's worker
	// (when the Registry offers OnCommit), which then lists the shard
	// again at most once per WakeGap (default 20 ms) instead of after
	// PollInterval. Each list is a read op on the shard: a shorter gap
	// buys latency with CPU. Negative disables waking.
	WakeGap time.Duration
	// MaxWakeGap and WakeBatch adapt the gap to the commit rate: while
	// commits keep arriving, a woken list that returns fewer than
	// WakeBatch entries grows the shard's gap (x1.5, up to MaxWakeGap) and
	// one that returns WakeBatch or more halves it (down to WakeGap); a
	// wake after a quiet spell starts again from WakeGap. Under a steady
	// stream each list and each removal op then carries about WakeBatch
	// events, not a few per WakeGap (the difference between 1 and 11
	// busy shards); delivery lag grows by at most MaxWakeGap. Defaults
	// 200 ms and 32; removals of a shard are flushed at most once per gap.
	MaxWakeGap time.Duration
	WakeBatch  int

	// MaxInFlightTotal bounds pushes in flight over all shards (default
	// 1024); MaxInFlightPerEndpoint bounds them per endpoint URL (default
	// 256). A pipelined batch takes its slots at once, first come first
	// served, so shards competing for a full endpoint still send full
	// batches.
	MaxInFlightTotal       int
	MaxInFlightPerEndpoint int
	// ShardWindow bounds the entries of one shard held in memory (listed,
	// not yet removed); default 1024.
	ShardWindow int
	// PushBatch bounds the pushes of one shard sent in one exchange to an
	// endpoint that batches (push.Batcher: HTTP pipelining, Kafka and AMQP
	// batches); default 32, 1 sends every event in its own exchange.
	PushBatch int
	// RemoveBatch bounds the markers of one removal op (default 256).
	// Acknowledged entries are removed at once, sharing an op only with
	// the acknowledgements that arrived meanwhile. RemoveInterval batches
	// the retry-state updates of failed pushes (default 50 ms).
	RemoveBatch    int
	RemoveInterval time.Duration
	// AckLinger is how long acknowledgements wait for the shard's other
	// pushes in flight before their removal op goes out (default 5 ms):
	// the pushes of one list usually answer together, so one op removes
	// them all instead of one op per answer. The removal also rides the
	// shard's next list op when one is due.
	AckLinger time.Duration

	// Global defaults for topics whose attribute is unset
	// (topic.UseGlobal): MaxRetries 0 = unlimited, TTL 0 = forever,
	// RetrySleep 0 = no topic cap (MaxBackoff applies).
	MaxRetries int
	TTL        time.Duration
	RetrySleep time.Duration
	// InitialBackoff is the first retry delay; it doubles per failed
	// attempt up to the topic's retry_sleep_duration, or MaxBackoff when
	// that is unset; each delay is jittered to [d/2, d]. Defaults 1 s, 5 min.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// PushTimeout bounds one push (default 30 s).
	PushTimeout time.Duration
	// Retryable classifies push errors; default push.IsRetryable
	// (unclassified errors are retryable: an event is only dropped when
	// the endpoint said so, or by TTL / max retries).
	Retryable func(error) bool
	// Logger; nil discards.
	Logger *slog.Logger
	// FailureLog reports push failures per endpoint, rate-limited; nil
	// makes one on Logger. The server shares one with synchronous pushes.
	FailureLog *push.FailureLog
	// Registerer receives the metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Now is the clock for entry ages, backoff schedules and membership
	// expiry; default time.Now. Lease expiry is the store's clock.
	Now func() time.Time

	// afterRelease, when set (tests), runs in a worker after its lease
	// was released and before the worker ends.
	afterRelease func(Shard)
}

// EnsureDefaults fills zero fields and returns c.
func (c *Config) EnsureDefaults() *Config {
	if c.MembersIO == nil {
		c.MembersIO = c.IO
	}
	if c.MembersOID == "" {
		c.MembersOID = DefaultMembersOID
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewInterval == 0 {
		c.RenewInterval = c.LeaseDuration / 3
	}
	if c.ScanInterval == 0 {
		c.ScanInterval = min(DefaultScanInterval, c.LeaseDuration/2)
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.MaxPollInterval == 0 {
		c.MaxPollInterval = 10 * c.PollInterval
	}
	if c.WakeGap == 0 {
		c.WakeGap = DefaultWakeGap
	}
	if c.MaxWakeGap == 0 {
		c.MaxWakeGap = DefaultMaxWakeGap
	}
	c.MaxWakeGap = max(c.MaxWakeGap, c.WakeGap)
	if c.WakeBatch == 0 {
		c.WakeBatch = DefaultWakeBatch
	}
	if c.MaxInFlightTotal == 0 {
		c.MaxInFlightTotal = DefaultMaxInFlight
	}
	if c.MaxInFlightPerEndpoint == 0 {
		c.MaxInFlightPerEndpoint = min(DefaultMaxPerEndpoint, c.MaxInFlightTotal)
	}
	if c.PushBatch == 0 {
		c.PushBatch = DefaultPushBatch
	}
	if c.ShardWindow == 0 {
		c.ShardWindow = DefaultShardWindow
	}
	if c.RemoveBatch == 0 {
		c.RemoveBatch = DefaultRemoveBatch
	}
	if c.AckLinger == 0 {
		c.AckLinger = DefaultAckLinger
	}
	if c.RemoveInterval == 0 {
		c.RemoveInterval = DefaultRemoveInterval
	}
	if c.InitialBackoff == 0 {
		c.InitialBackoff = DefaultInitialBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.PushTimeout == 0 {
		c.PushTimeout = DefaultPushTimeout
	}
	if c.Retryable == nil {
		c.Retryable = push.IsRetryable
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.FailureLog == nil {
		c.FailureLog = push.NewFailureLog(c.Logger, 0)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports every problem with c (after EnsureDefaults).
func (c *Config) Validate() error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf("delivery: "+f, a...)) }
	if c.Owner == "" {
		bad("Owner is required")
	}
	if c.IO == nil {
		bad("IO is required")
	}
	if c.Registry == nil {
		bad("Registry is required")
	}
	if c.Topics == nil {
		bad("Topics is required")
	}
	if c.Endpoints == nil {
		bad("Endpoints is required")
	}
	if c.LeaseDuration <= 0 {
		bad("LeaseDuration %v must be positive", c.LeaseDuration)
	}
	if c.RenewInterval <= 0 || c.RenewInterval >= c.LeaseDuration {
		bad("RenewInterval %v must be positive and below LeaseDuration %v", c.RenewInterval, c.LeaseDuration)
	}
	if c.ScanInterval <= 0 || c.ScanInterval > c.LeaseDuration/2 {
		bad("ScanInterval %v must be positive and at most half of LeaseDuration %v", c.ScanInterval, c.LeaseDuration)
	}
	if c.PollInterval <= 0 {
		bad("PollInterval %v must be positive", c.PollInterval)
	}
	if c.MaxPollInterval < c.PollInterval {
		bad("MaxPollInterval %v must be at least PollInterval %v", c.MaxPollInterval, c.PollInterval)
	}
	if c.MaxInFlightTotal < 1 {
		bad("MaxInFlightTotal %d must be at least 1", c.MaxInFlightTotal)
	}
	if c.MaxInFlightPerEndpoint < 1 {
		bad("MaxInFlightPerEndpoint %d must be at least 1", c.MaxInFlightPerEndpoint)
	}
	if c.PushBatch < 1 || c.PushBatch > 1024 {
		bad("PushBatch %d must be in [1, 1024]", c.PushBatch)
	}
	if c.ShardWindow < 1 || c.ShardWindow > 100_000 {
		bad("ShardWindow %d must be in [1, 100000]", c.ShardWindow)
	}
	if c.RemoveBatch < 1 || c.RemoveBatch > 2000 {
		bad("RemoveBatch %d must be in [1, 2000]", c.RemoveBatch)
	}
	if c.AckLinger <= 0 {
		bad("AckLinger %v must be positive", c.AckLinger)
	}
	if c.RemoveInterval <= 0 {
		bad("RemoveInterval %v must be positive", c.RemoveInterval)
	}
	if c.MaxRetries < 0 {
		bad("MaxRetries %d is negative", c.MaxRetries)
	}
	if c.TTL < 0 {
		bad("TTL %v is negative", c.TTL)
	}
	if c.RetrySleep < 0 {
		bad("RetrySleep %v is negative", c.RetrySleep)
	}
	if c.InitialBackoff <= 0 || c.MaxBackoff < c.InitialBackoff {
		bad("backoff: need 0 < InitialBackoff %v <= MaxBackoff %v", c.InitialBackoff, c.MaxBackoff)
	}
	if c.PushTimeout <= 0 {
		bad("PushTimeout %v must be positive", c.PushTimeout)
	}
	return errors.Join(errs...)
}
