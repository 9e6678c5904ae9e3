package service

import (
	"context"
	"errors"
	"fmt"
	"github.com/cairn-s3/cairn/internal/kms/secret"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/config"
	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/push"
	"github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Pool and namespaces of the records this package stores.
const (
	PoolMeta        = "default.rgw.meta"
	NSTopics        = "topics"
	NSNotifications = "notifications"
)

// Errors. Client errors from validation are *topic.Error or *config.Error.
var (
	ErrTopicNotFound      = errors.New("topic not found")
	ErrNoSuchNotification = errors.New("no such notification configuration")
	ErrNotOwner           = errors.New("the topic belongs to another user")
)

// Pusher delivers one message to a non-persistent topic's endpoint during
// the request. The server wires an adapter over internal/notify/endpoint;
// the default (HTTPPusher) handles http(s) endpoints only.
type Pusher interface {
	Push(ctx context.Context, t *topic.Topic, rec *event.Record) error
}

// Options configure a Service.
type Options struct {
	Store objstore.Store
	// NumShards is the shard count of topics created from now on
	// (notif-shards). Default 11. Existing topics keep theirs.
	NumShards int
	// Queue configures the queues: capacity (notif-queue-size), reservation
	// TTL, expiry interval, pool.
	Queue queue.Options
	// CacheTTL bounds how long a gateway may act on a bucket's
	// configuration or a topic changed through another gateway. Changes
	// through this Service invalidate at once. Default 5 s.
	CacheTTL time.Duration
	// Zonegroup appears in ARNs and as awsRegion. Default "default".
	Zonegroup string
	// EventSource is the records' eventSource (notif-event-source);
	// default event.DefaultSource, RGW's "ceph:s3".
	EventSource string
	// ConfigMode is the PutBucketNotification dialect
	// (notification-config-mode): config.ModeAWS (default) replaces,
	// config.ModeRGW merges by Id.
	ConfigMode config.Mode
	// Pusher for non-persistent topics; default NewHTTPPusher().
	Pusher Pusher
	// FailureLog reports failed synchronous pushes, rate-limited per
	// endpoint; nil makes one on Logger.
	FailureLog *push.FailureLog
	// PushTimeout bounds a synchronous push. Default 5 s.
	PushTimeout time.Duration
	// DeferCommits lets a write whose link intent holds its events answer
	// before the queue commit, which then runs batched per shard
	// (queue.Reservation.CommitDeferred; Queue.DeferLinger). Off: the
	// commit happens before the reply, as without intents.
	DeferCommits bool
	Logger       *slog.Logger
	Now          func() time.Time
	// Secrets seals topic endpoint credentials at rest; nil stores them
	// in clear (topics sealed earlier then fail to load).
	Secrets *secret.Sealer
}

func (o *Options) ensureDefaults() {
	if o.NumShards <= 0 {
		o.NumShards = 11
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = 5 * time.Second
	}
	if o.ConfigMode == "" {
		o.ConfigMode = config.ModeAWS
	}
	if o.EventSource == "" {
		o.EventSource = event.DefaultSource
	}
	if o.Zonegroup == "" {
		o.Zonegroup = topic.DefaultZonegroup
	}
	if o.PushTimeout <= 0 {
		o.PushTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.FailureLog == nil {
		o.FailureLog = push.NewFailureLog(o.Logger, 0)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Queue.Logger == nil {
		o.Queue.Logger = o.Logger
	}
	if o.Queue.Now == nil {
		o.Queue.Now = o.Now
	}
	if o.Pusher == nil {
		o.Pusher = NewHTTPPusher()
	}
}

// Counters are the service's event counts (exported as metrics by the
// server).
type Counters struct {
	Committed    atomic.Uint64 // persistent records committed
	SlowDowns    atomic.Uint64 // requests refused: shard full
	PushOK       atomic.Uint64 // non-persistent pushes acknowledged
	PushFailed   atomic.Uint64 // non-persistent pushes failed (request still succeeded)
	Dropped      atomic.Uint64 // records for topics deleted meanwhile
	CommitFailed atomic.Uint64 // commits that failed after retries (request failed)
	Recovered    atomic.Uint64 // records committed from link intents at start-up (or found committed)
}

// Service stores topics and bucket notification configurations and
// implements driver.Notifier. Safe for concurrent use.
type Service struct {
	opts   Options
	log    *slog.Logger
	topics objstore.IOContext
	confs  objstore.IOContext
	queues *queue.Queues
	clock  *event.Clock
	// Counters are live; read them with Load.
	Counters Counters

	tmu sync.Mutex // serialises topic mutations in this gateway

	cmu      sync.Mutex
	cfgCache map[string]cfgEntry   // bucket id → configuration
	topCache map[string]topicEntry // queue name → topic

	// arnQueue caches topicForARN's parse: topic ARN → queue name ("":
	// unparsable), a pure function of the ARN; cleared past maxARNs.
	arnQueue sync.Map
	arnCount atomic.Int64

	owner atomic.Pointer[ownerID] // SetOwner

	stop context.CancelFunc
	wg   sync.WaitGroup
}

type cfgEntry struct {
	cfg *config.Configuration // nil: none
	exp time.Time
}

type topicEntry struct {
	t   *topic.Topic // nil: does not exist
	exp time.Time
}

// New opens the service, creating the pools it needs. It starts nothing;
// call Start for the reservation expiry job.
func New(ctx context.Context, opts Options) (*Service, error) {
	opts.ensureDefaults()
	if opts.Store == nil {
		return nil, errors.New("service: Options.Store is required")
	}
	if err := opts.Store.CreatePool(ctx, PoolMeta); err != nil && !errors.Is(err, objstore.ErrExists) {
		return nil, fmt.Errorf("service: create pool %s: %w", PoolMeta, err)
	}
	meta, err := opts.Store.IOContext(ctx, PoolMeta)
	if err != nil {
		return nil, err
	}
	q, err := queue.Open(ctx, opts.Store, opts.Queue)
	if err != nil {
		return nil, err
	}
	return &Service{
		opts: opts, log: opts.Logger,
		topics: meta.WithNamespace(NSTopics), confs: meta.WithNamespace(NSNotifications),
		queues: q, clock: event.NewClock(opts.Now),
		cfgCache: map[string]cfgEntry{}, topCache: map[string]topicEntry{},
	}, nil
}

// Queues exposes the queue layer (delivery manager, admin).
func (s *Service) Queues() *queue.Queues { return s.queues }

// Start runs the reservation expiry job (every Queue.ExpiryInterval,
// reservations older than Queue.ReservationTTL) until Close.
func (s *Service) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.queues.RunExpiry(ctx)
	}()
}

// Close stops the expiry job and returns this gateway's pooled queue
// reservations. In-flight requests must have finished.
func (s *Service) Close(ctx context.Context) error {
	if s.stop != nil {
		s.stop()
		s.wg.Wait()
	}
	_ = s.queues.FlushDeferred(ctx)
	s.queues.ReleasePool(ctx)
	return nil
}

// FlushDeferred runs the deferred commits handed over so far and waits
// for them (Options.DeferCommits), or for ctx.
func (s *Service) FlushDeferred(ctx context.Context) error { return s.queues.FlushDeferred(ctx) }

// ARN returns the ARN of topic name in this zonegroup (empty tenant).
func (s *Service) ARN(name string) topic.ARN {
	return topic.ARN{Zonegroup: s.opts.Zonegroup, Name: name}
}
