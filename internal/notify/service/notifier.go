package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/notify/config"
	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/push"
	"github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/objstore"
)

var _ driver.Notifier = (*Service)(nil)
var _ driver.Reservation = (*reservation)(nil)
var _ driver.DeferringReservation = (*reservation)(nil)

type target struct {
	tc  *config.TopicConfiguration
	t   *topic.Topic
	res *queue.Reservation // nil for non-persistent topics
	typ event.Type         // the record's type (event.SentAs)
}

// reservation is the room reserved for one S3 write's events.
type reservation struct {
	s       *Service
	ev      driver.PendingEvent
	typ     event.Type
	persist []target
	push    []target
	done    atomic.Bool
	synced  atomic.Bool // a queue commit succeeded (a synced store write)
	// eventIDs, set by Intent, are the records' ids per persist target.
	eventIDs []string
}

// Persistent implements driver.SyncingReservation: Commit writes to queue
// shards with a sync.
func (r *reservation) Persistent() bool { return len(r.persist) > 0 }

// Synced implements driver.SyncingReservation: after Commit, whether a
// queue commit succeeded (and so synced the store).
func (r *reservation) Synced() bool { return r.synced.Load() }

// Reserve implements driver.Notifier. It returns nil when no configuration
// of the bucket matches. A full shard gives an error wrapping
// driver.ErrSlowDown; nothing is then reserved anywhere.
func (s *Service) Reserve(ctx context.Context, ev driver.PendingEvent) (driver.Reservation, error) {
	cfg, err := s.cachedConfig(ctx, ev.Bucket)
	if err != nil {
		return nil, fmt.Errorf("notifications: read configuration of bucket %s: %w", ev.Bucket.Name, err)
	}
	if cfg == nil {
		return nil, nil
	}
	typ := event.Type("s3:" + ev.EventName)
	obj := config.Object{Key: ev.Key, Metadata: metaHeaders(ev.Meta.UserMeta), Tags: ev.Meta.Tags}
	type match struct {
		tc  *config.TopicConfiguration
		typ event.Type
	}
	var matches []match
	for _, st := range event.SentAs(typ) {
		for _, tc := range cfg.Match(st, obj) {
			matches = append(matches, match{tc, st})
		}
	}
	if len(matches) == 0 {
		return nil, nil
	}
	r := &reservation{s: s, ev: ev, typ: typ}
	for _, m := range matches {
		tc := m.tc
		t, err := s.topicForARN(ctx, tc.TopicARN)
		if err != nil {
			r.Abort(ctx)
			return nil, err
		}
		if t == nil {
			s.log.Debug("notification references a missing topic", "bucket", ev.Bucket.Name, "id", tc.ID, "topic", tc.TopicARN)
			continue
		}
		if !t.Persistent() {
			if t.Settings.PushEndpoint != "" {
				r.push = append(r.push, target{tc: tc, t: t, typ: m.typ})
			}
			continue
		}
		qr, err := s.reserveOn(ctx, t, ev, estimate(ev, tc, t, driver.RequestFrom(ctx), s.opts.Zonegroup+s.opts.EventSource))
		if errors.Is(err, objstore.ErrNoSpace) {
			r.Abort(ctx)
			s.Counters.SlowDowns.Add(1)
			return nil, fmt.Errorf("%w: the notification queue of topic %s is full (shard %d); retry later: %v",
				driver.ErrSlowDown, t.Name, queue.ShardIndex(ev.Bucket.Name, ev.Key, t.NumShards), err)
		}
		if errors.Is(err, queue.ErrQueueGone) {
			continue // the topic stopped being persistent or was deleted meanwhile
		}
		if err != nil {
			r.Abort(ctx)
			return nil, fmt.Errorf("notifications: reserve on topic %s: %w", t.Name, err)
		}
		r.persist = append(r.persist, target{tc: tc, t: t, res: qr, typ: m.typ})
	}
	if len(r.persist) == 0 && len(r.push) == 0 {
		return nil, nil
	}
	return r, nil
}

// reserveOn reserves on the key's shard of t. A missing shard of a topic
// that (re-read, uncached) is still persistent means an interrupted
// create or switch: the queue is re-created (idempotent) and the
// reservation retried once.
func (s *Service) reserveOn(ctx context.Context, t *topic.Topic, ev driver.PendingEvent, size uint64) (*queue.Reservation, error) {
	name := s.queueName(t)
	shard := queue.ShardIndex(ev.Bucket.Name, ev.Key, t.NumShards)
	qr, err := s.queues.Reserve(ctx, name, shard, size)
	if !errors.Is(err, queue.ErrQueueGone) {
		return qr, err
	}
	s.invalidateTopic(t)
	fresh, _, rerr := s.readTopic(ctx, name)
	if rerr != nil || !fresh.Persistent() || fresh.NumShards != t.NumShards {
		return nil, err
	}
	s.log.Warn("persistent topic without queue shards: re-creating them", "topic", t.Name)
	if cerr := s.queues.Create(ctx, name, t.NumShards); cerr != nil {
		return nil, cerr
	}
	return s.queues.Reserve(ctx, name, shard, size)
}

func (s *Service) topicForARN(ctx context.Context, arn string) (*topic.Topic, error) {
	q := s.queueForARN(arn)
	if q == "" {
		return nil, nil // validated at PUT time; an unparsable one never fires
	}
	return s.cachedTopic(ctx, q)
}

// maxARNs bounds arnQueue (one entry per topic ARN that configurations name).
const maxARNs = 4096

// queueForARN is the queue name of a topic ARN ("" if it does not parse),
// parsed once per ARN rather than on every notified write.
func (s *Service) queueForARN(arn string) string {
	if q, ok := s.arnQueue.Load(arn); ok {
		return q.(string)
	}
	q := ""
	if a, err := topic.ParseARN(arn); err == nil {
		q = queue.Name(a.Tenant, a.Name)
	}
	if s.arnCount.Add(1) > maxARNs {
		s.arnQueue.Clear()
		s.arnCount.Store(1)
	}
	s.arnQueue.Store(arn, q)
	return q
}

// metaHeaders turns the driver's user metadata (names without prefix) into
// the x-amz-meta-… names filters and records use.
func metaHeaders(um map[string]string) map[string]string {
	if len(um) == 0 {
		return nil
	}
	out := make(map[string]string, len(um))
	for k, v := range um {
		out["x-amz-meta-"+k] = v
	}
	return out
}

// Commit implements driver.Reservation: it commits one record per
// persistent configuration, durably, and pushes to non-persistent topics.
// No record becomes visible or is pushed before the write it reports is
// durable, also when ctx defers that write's sync to a later commit point
// (objstore.WithDeferredSync): queue commits are synced writes on the same
// store, and pushes without one wait for a sync.
// A record whose topic was deleted meanwhile is dropped (counted). An
// error means some record could not be made durable: the request must
// fail (the client retries the idempotent write).
func (r *reservation) Commit(ctx context.Context, obj driver.ObjectInfo) error {
	if !r.done.CompareAndSwap(false, true) {
		return errors.New("notifications: reservation already used")
	}
	base := r.record(ctx, obj)
	errs := make([]error, len(r.persist))
	commit := func(i int) {
		tg := r.persist[i]
		var id string
		if r.eventIDs != nil {
			id = r.eventIDs[i] // the id the intent holds
		}
		rec := forConfiguration(base, tg, id)
		// The queue copies the record into its op: the buffer is free
		// again once Commit returns.
		buf := event.GetBuffer()
		*buf = event.AppendJSON(*buf, rec)
		_, err := tg.res.Commit(ctx, *buf)
		event.PutBuffer(buf)
		errs[i] = r.committed(tg, err)
	}
	if len(r.persist) == 1 {
		commit(0)
	} else {
		var wg sync.WaitGroup
		for i := range r.persist {
			wg.Add(1)
			go func() { defer wg.Done(); commit(i) }()
		}
		wg.Wait()
	}
	if len(r.push) > 0 && !r.synced.Load() {
		// The write may still wait for a later commit point (ctx defers
		// its syncs): make it durable before any endpoint hears of it.
		if io := objstore.DeferredSync(ctx); io != nil {
			if err := objstore.Sync(context.WithoutCancel(objstore.WithDeferredSync(ctx, nil)), io); err != nil {
				return errors.Join(append(errs, fmt.Errorf("notifications: sync before push: %w", err))...)
			}
		}
	}
	r.pushAll(ctx, base)
	return errors.Join(errs...)
}

// pushAll pushes base to the non-persistent topics, during the request.
func (r *reservation) pushAll(ctx context.Context, base *event.Record) {
	s := r.s
	for _, tg := range r.push {
		rec := forConfiguration(base, tg, "")
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.PushTimeout)
		err := s.opts.Pusher.Push(pctx, tg.t, rec)
		cancel()
		// The request succeeds either way (RGW's behaviour for
		// non-persistent topics); failures are logged per endpoint,
		// rate-limited.
		if err != nil {
			s.Counters.PushFailed.Add(1)
			s.opts.FailureLog.Failed(tg.t.Settings.EndpointKey(), tg.t.Name, err, push.IsRetryable(err), s.opts.Now())
			continue
		}
		if s.opts.FailureLog.AnyFailing() {
			s.opts.FailureLog.OK(tg.t.Settings.EndpointKey(), s.opts.Now())
		}
		s.Counters.PushOK.Add(1)
	}
}

// Deferrable implements driver.DeferringReservation: the service defers
// commits (Options.DeferCommits) and every record has an intent (Intent
// was called and fixed the event ids).
func (r *reservation) Deferrable() bool {
	return r.s.opts.DeferCommits && len(r.persist) > 0 && r.eventIDs != nil
}

// CommitDeferred implements driver.DeferringReservation: the records are
// made now (event time, request values) and committed later, batched per
// shard; done gets the joined outcome once every target's commit ended.
// Pushes to non-persistent topics happen before it returns, as in Commit.
func (r *reservation) CommitDeferred(ctx context.Context, obj driver.ObjectInfo, done func(error)) {
	if !r.done.CompareAndSwap(false, true) {
		done(errors.New("notifications: reservation already used"))
		return
	}
	base := r.record(ctx, obj)
	errs := make([]error, len(r.persist))
	var left atomic.Int32
	left.Store(int32(len(r.persist)))
	for i, tg := range r.persist {
		rec := forConfiguration(base, tg, r.eventIDs[i]) // the id the intent holds
		// A pooled buffer, not AppendJSON(nil, …) (7 allocations as it
		// grows): the queue holds it until done, then it is free again.
		buf := event.GetBuffer()
		*buf = event.AppendJSON(*buf, rec)
		tg.res.CommitDeferred(*buf, func(_ string, err error) {
			event.PutBuffer(buf)
			errs[i] = r.committed(tg, err)
			if left.Add(-1) == 0 {
				done(errors.Join(errs...))
			}
		})
	}
	r.pushAll(ctx, base)
}

// committed counts one persistent record's commit outcome; the error is
// the request's (nil for a dropped record).
func (r *reservation) committed(tg target, err error) error {
	s := r.s
	switch {
	case err == nil:
		r.synced.Store(true)
		s.Counters.Committed.Add(1)
	case errors.Is(err, queue.ErrQueueGone):
		s.Counters.Dropped.Add(1)
		s.log.Warn("event dropped: its topic's queue was removed", "topic", tg.t.Name, "bucket", r.ev.Bucket.Name, "key", r.ev.Key)
	default:
		s.Counters.CommitFailed.Add(1)
		return fmt.Errorf("notifications: commit to topic %s: %w", tg.t.Name, err)
	}
	return nil
}

// forConfiguration is the record for one configuration, with its own
// eventId: receivers de-duplicate by eventId, and two configurations may
// feed one endpoint. id is the one a link intent holds; "" draws a new one.
func forConfiguration(base *event.Record, tg target, id string) *event.Record {
	rec := base.ForConfiguration(tg.tc.ID, tg.t.Settings.OpaqueData)
	if tg.typ != "" {
		rec.EventName = tg.typ.Name()
	}
	if id == "" {
		id = event.NewEventID()
	}
	rec.EventID = id
	// ForConfiguration turns empty lists into nil; records carry [] there.
	if rec.S3.Object.Metadata == nil {
		rec.S3.Object.Metadata = []event.KV{}
	}
	if rec.S3.Object.Tags == nil {
		rec.S3.Object.Tags = []event.KV{}
	}
	return rec
}

// Abort implements driver.Reservation; idempotent.
func (r *reservation) Abort(ctx context.Context) {
	if !r.done.CompareAndSwap(false, true) {
		return
	}
	for _, tg := range r.persist {
		tg.res.Abort(ctx)
	}
}

// baseEventID marks the configuration-less base record's id as unused.
const baseEventID = "-"

func (r *reservation) record(ctx context.Context, obj driver.ObjectInfo) *event.Record {
	s := r.s
	req := driver.RequestFrom(ctx)
	now := s.opts.Now()
	// Larger than the object's mtime and than every sequencer this gateway
	// issued: increases per key within a gateway, and across gateways as
	// far as their clocks agree (see docs/design/notifications.md).
	var after uint64
	if ns := obj.ModTime.UnixNano(); ns > 0 && !obj.ModTime.IsZero() {
		after = uint64(ns)
	}
	meta := obj.Meta.UserMeta
	tags := obj.Meta.Tags
	if len(meta) == 0 && len(tags) == 0 {
		meta, tags = r.ev.Meta.UserMeta, r.ev.Meta.Tags
	}
	tenant, bucket := driver.SplitBucket(r.ev.Bucket.Name)
	return event.New(event.Params{
		Type: r.typ, Time: now, Region: s.opts.Zonegroup, Source: s.opts.EventSource,
		User: req.Principal, SourceIP: req.SourceIP, RequestID: req.RequestID, HostID: req.HostID,
		Bucket: bucket, Tenant: tenant, BucketOwner: r.ev.Bucket.Owner, BucketID: r.ev.Bucket.ID,
		Key: r.ev.Key, Size: obj.Size, ETag: obj.ETag, VersionID: obj.VersionID,
		Sequencer: s.clock.NextAfter(after),
		Metadata:  metaHeaders(meta), Tags: tags,
		// Never sent: every record gets its own id (forConfiguration);
		// set, so New does not draw one (crypto/rand) for nothing.
		EventID: baseEventID,
	})
}

var baseRecordSize = func() int {
	rec := event.New(event.Params{Type: event.ObjectCreatedCompleteMultipartUpload, Size: math.MaxInt64, Sequencer: math.MaxUint64})
	rec = rec.ForConfiguration("", "")
	b, _ := event.Marshal(rec)
	return len(b)
}()

// estimate bounds the size of the record for ev from above, so the commit
// fits its reservation: JSON escapes at most 6 bytes per input byte, and
// the encoded key is ASCII of at most 3 bytes per input byte.
// region is the zonegroup and the eventSource together (both free text).
func estimate(ev driver.PendingEvent, tc *config.TopicConfiguration, t *topic.Topic, req driver.RequestMeta, region string) uint64 {
	n := baseRecordSize + 64
	n += 3 * len(ev.Key)
	free := 2*len(ev.Bucket.Name) + len(ev.Bucket.ID) + len(ev.Bucket.Owner) + len(req.Principal) +
		len(req.RequestID) + len(req.HostID) + len(req.SourceIP) + 2*len(region) + len(tc.ID) +
		len(t.Settings.OpaqueData) + 64 /* etag */
	for k, v := range ev.Meta.UserMeta {
		free += len("x-amz-meta-") + len(k) + len(v)
		n += len(`{"key":"","val":""},`)
	}
	for k, v := range ev.Meta.Tags {
		free += len(k) + len(v)
		n += len(`{"key":"","val":""},`)
	}
	return uint64(n + 6*free)
}
