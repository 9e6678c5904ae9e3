package delivery

import (
	"container/heap"
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/push"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// topicState is what a worker knows about its topic; replaced as a whole
// when the topic changes.
type topicState struct {
	t     *topic.Topic
	pol   policy
	epKey string
}

// item is one listed entry held in memory until it is removed.
type item struct {
	e       queue.Entry
	key     string
	rec     *event.Record // decoded on first use (record); nil with decErr
	decErr  error
	dirty   bool   // retry state changed and not yet persisted
	dropped string // expiry reason when removed without delivery
	flight  bool
	removed bool
	gone    bool // its removal is durable
}

// keyQ holds one ordering key's entries in queue order. Only items[0] (the
// head) is ever pushed, and only one push of it at a time: that is the
// per-key order guarantee.
type keyQ struct {
	key    string
	items  []*item
	queued bool      // in ready or waiting
	due    time.Time // head's next attempt while in waiting
	idx    int       // heap index
}

type result struct {
	it  *item
	err error
}

// worker delivers one owned shard. Its state is confined to its goroutine
// (run); push goroutines talk to it only through results.
type worker struct {
	m     *Manager
	shard Shard
	label string // metric and log label of the topic
	lease *lease
	state atomic.Pointer[topicState]

	// stop ends dispatching (graceful: in-flight pushes finish, acks are
	// flushed, the lease is released). lose cancels pushes too and skips
	// the flush: the lease is gone or the gateway "crashed".
	stopCtx    context.Context
	stop       context.CancelFunc
	pushCtx    context.Context
	cancelPush context.CancelFunc
	lost       atomic.Bool
	abandoned  atomic.Bool
	watchdog   *time.Timer
	// validUntil (Unix ns) is the local horizon of the hold: the last
	// successful lock or renew was sent at least leaseHorizon before it.
	validUntil atomic.Int64
	done       chan struct{}
	err        error // why run ended; read after done

	results  chan result
	poke     chan struct{} // local commits (Manager.wake); capacity 1
	poked    bool          // a commit arrived since the last list
	pushes   sync.WaitGroup
	keys     map[string]*keyQ
	ready    []*keyQ
	waiting  waitHeap
	held     int
	inflight int
	marker   queue.Marker
	drained  bool
	lastList time.Time
	gap      time.Duration // current wake gap (Config.MaxWakeGap)
	idle     time.Duration // current poll interval (Config.MaxPollInterval)
	lastErr  time.Time
	removes  []*item
	// unflushed holds keys whose finished head's removal is not durable
	// yet; their next entry waits for the flush (see dispatch).
	unflushed map[string]bool
	updates   []*item
	pendSince time.Time
	// listed holds, in marker order, the listed items whose removal is
	// not durable yet (from listedHead on): its head bounds what the
	// queue can still hold below the list cursor. statsAfter publishes
	// that bound for the manager's stats (queue.GetStatsAfter).
	listed     []*item
	listedHead int
	listedGone int          // gone items in listed[listedHead:]
	tracked    atomic.Int64 // len(listed) - listedHead, for tests
	statsAfter atomic.Pointer[queue.Marker]

	ep        push.Endpoint
	epFor     *topicState
	epRetryAt time.Time
	epFails   uint32
}

// newWorker starts the watchdog from sent, the time the lock op that
// granted l was sent.
func newWorker(m *Manager, sh Shard, l *lease, st *topicState, sent time.Time) *worker {
	w := &worker{m: m, shard: sh, label: topicLabel(sh), lease: l, done: make(chan struct{}),
		results: make(chan result, m.cfg.ShardWindow+1), keys: map[string]*keyQ{},
		poke:      make(chan struct{}, 1),
		unflushed: map[string]bool{}}
	w.state.Store(st)
	w.gap = m.cfg.WakeGap
	w.idle = m.cfg.PollInterval
	w.stopCtx, w.stop = context.WithCancel(context.Background())
	w.pushCtx, w.cancelPush = context.WithCancel(context.Background())
	w.validUntil.Store(sent.Add(m.leaseHorizon()).UnixNano())
	w.watchdog = time.AfterFunc(time.Until(sent.Add(m.leaseHorizon())), func() {
		m.cfg.Logger.Warn("notification shard lease not renewed in time; stopping delivery",
			"shard", sh.OID)
		w.lose()
	})
	return w
}

// topicLabel names the topic in metrics and logs: "name", or
// "tenant/name" for a tenant's topic.
func topicLabel(sh Shard) string {
	tenant, name := sh.TopicName()
	if tenant == "" {
		return name
	}
	return tenant + "/" + name
}

// renewed moves the lease watchdog: the hold is good until horizon after
// the renew request was sent.
func (w *worker) renewed(sent time.Time) {
	until := sent.Add(w.m.leaseHorizon())
	w.validUntil.Store(until.UnixNano())
	w.watchdog.Reset(time.Until(until))
}

// owns reports whether the worker delivers its shard at now: it was not
// told to stop (a release or a loss starts with that, before the unlock is
// sent) and its hold is within the local horizon, even if the watchdog has
// not run yet (a stalled process). So two gateways' Owned never list one
// shard at the same instant: another gateway can lock it only after the
// unlock, or after the store's expiry, which is later than the horizon.
func (w *worker) owns(now time.Time) bool {
	return w.stopCtx.Err() == nil && now.UnixNano() < w.validUntil.Load()
}

// lose ends the worker at once without touching the shard again.
func (w *worker) lose() {
	if w.lost.CompareAndSwap(false, true) {
		w.cancelPush()
		w.stop()
	}
}

func (w *worker) run() {
	defer close(w.done)
	defer w.watchdog.Stop()
	err := w.loop()
	// Wait for pushes in flight: graceful stops collect their acks; lost
	// leases cancelled them already. Either way no goroutine outlives us.
	w.pushes.Wait()
	for len(w.results) > 0 {
		w.handle(<-w.results)
	}
	defer func() { w.m.met.held(-int64(w.held)) }()
	if err == nil && !w.lost.Load() && !w.abandoned.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), w.m.cfg.PushTimeout)
		err = w.flush(ctx)
		if err == nil {
			err = w.lease.release(ctx)
		}
		cancel()
		if err == nil && w.m.cfg.afterRelease != nil {
			w.m.cfg.afterRelease(w.shard)
		}
	}
	if err == nil && w.lost.Load() && !w.abandoned.Load() {
		err = errLeaseLost
	}
	w.err = err
}

func (w *worker) loop() error {
	cfg := &w.m.cfg
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		// Acknowledged removals first, before pushing more: an entry the
		// endpoint has but the queue still holds is what a crash delivers
		// again, so that window is one op plus at most AckLinger, not a
		// timer. They wait for the shard's other pushes in flight (one
		// op for a list's worth of answers), and ride the list op when
		// one is due (fill). (After a failed op, wait a poll interval.)
		if len(w.removes) > 0 && time.Since(w.lastErr) >= cfg.PollInterval && w.acksDue() && !w.listDue() {
			if err := w.flush(w.stopCtx); err != nil {
				if fatal(err) {
					return err
				}
				if w.stopCtx.Err() != nil {
					return nil
				}
				w.transient("commit", err)
			}
		}
		if err := w.fill(); err != nil {
			if fatal(err) {
				return err
			}
			w.transient("list", err)
		}
		if err := w.dispatch(); err != nil {
			if w.stopCtx.Err() != nil {
				return nil
			}
			if fatal(err) {
				return err
			}
			w.transient("commit", err)
		}
		if w.flushDue() {
			if err := w.flush(w.stopCtx); err != nil {
				if fatal(err) {
					return err
				}
				if w.stopCtx.Err() != nil {
					return nil
				}
				w.transient("commit", err)
			}
		}
		timer.Reset(w.nextWake(cfg))
		select {
		case <-w.stopCtx.Done():
			return nil
		case r := <-w.results:
			w.handle(r)
			for len(w.results) > 0 {
				w.handle(<-w.results)
			}
		case <-w.poke:
			w.poked = true
		case <-timer.C:
		}
	}
}

func fatal(err error) bool { return errors.Is(err, errLeaseLost) || errors.Is(err, errShardGone) }

func (w *worker) transient(what string, err error) {
	w.lastErr = time.Now()
	w.m.cfg.Logger.Warn("notification shard "+what+" failed; will retry", "shard", w.shard.OID, "err", err)
}

func (w *worker) nextWake(cfg *Config) time.Duration {
	d := cfg.PollInterval // an idle shard wakes and finds no list due (listDue)
	if len(w.removes)+len(w.updates) > 0 {
		d = min(d, w.removeDelay()-time.Since(w.pendSince))
	}
	if len(w.waiting) > 0 {
		d = min(d, max(w.waiting[0].due.Sub(w.m.cfg.Now()), time.Millisecond))
	}
	if len(w.removes) > 0 {
		d = min(d, cfg.AckLinger-time.Since(w.pendSince))
	}
	if w.poked && w.drained && w.held < cfg.ShardWindow && time.Since(w.lastErr) >= cfg.PollInterval {
		d = min(d, w.gap-time.Since(w.lastList))
	}
	if !w.drained && w.held < cfg.ShardWindow && time.Since(w.lastErr) > cfg.PollInterval {
		d = 0
	}
	return max(d, 0)
}

// acksDue reports whether the acknowledged removals should go out now:
// no other push of the shard is in flight, the batch is full, or the
// oldest waited AckLinger.
func (w *worker) acksDue() bool {
	cfg := &w.m.cfg
	return w.inflight == 0 || len(w.removes) >= cfg.RemoveBatch || time.Since(w.pendSince) >= cfg.AckLinger
}

// listDue reports whether fill would list now.
func (w *worker) listDue() bool {
	cfg := &w.m.cfg
	if cfg.ShardWindow-w.held <= 0 || time.Since(w.lastErr) < cfg.PollInterval {
		return false
	}
	since := time.Since(w.lastList)
	return !w.drained || since >= w.idle || (w.poked && since >= w.gap)
}

// fill lists more entries while the window has room. Pending removals
// ride in the same op (removeAndList).
func (w *worker) fill() error {
	cfg := &w.m.cfg
	if !w.listDue() {
		return nil
	}
	room := cfg.ShardWindow - w.held
	since := time.Since(w.lastList)
	woken := w.poked && w.drained
	w.poked = false // commits from now on poke again
	ctx, cancel := context.WithTimeout(w.stopCtx, cfg.PushTimeout)
	defer cancel()
	var res queue.ListResult
	var err error
	var rmItems []*item
	if len(w.removes) > 0 {
		rmItems = w.removes[:min(len(w.removes), cfg.RemoveBatch)]
		rm := make([]queue.Marker, len(rmItems))
		for i, it := range rmItems {
			rm[i] = it.e.Marker
		}
		res, err = w.lease.removeAndList(ctx, rm, w.marker, min(room, queue.MaxListMax))
		w.m.met.opsListRemove.Inc()
	} else {
		res, err = w.lease.list(ctx, w.marker, min(room, queue.MaxListMax))
		w.m.met.opsList.Inc()
	}
	w.lastList = time.Now()
	if err != nil {
		return err
	}
	if len(rmItems) > 0 {
		w.removed(rmItems)
		w.removes = w.removes[len(rmItems):]
		for _, it := range rmItems {
			delete(w.unflushed, it.key)
		}
		for _, it := range w.removes {
			w.unflushed[it.key] = true
		}
		if len(w.removes)+len(w.updates) > 0 {
			w.pendSince = time.Now()
		} else {
			w.removes = nil
		}
	}
	if woken {
		w.adaptGap(since, len(res.Entries))
	}
	for _, e := range res.Entries {
		w.add(e)
	}
	w.marker = res.Next
	w.publishStatsAfter()
	w.drained = !res.Truncated
	w.adaptIdle(woken, len(res.Entries))
	return nil
}

// adaptGap moves the wake gap after a woken list that came since after the
// previous one and returned n entries (Config.MaxWakeGap).
func (w *worker) adaptGap(since time.Duration, n int) {
	cfg := &w.m.cfg
	switch {
	case since > 2*w.gap+cfg.WakeGap:
		w.gap = cfg.WakeGap // a quiet spell: the next lone event goes out fast
	case n >= cfg.WakeBatch:
		w.gap = max(w.gap/2, cfg.WakeGap)
	default:
		w.gap = min(w.gap*3/2, cfg.MaxWakeGap)
	}
}

// adaptIdle moves the poll interval after a list that returned n entries
// (Config.MaxPollInterval): a poll that found nothing doubles it, anything
// else resets it.
func (w *worker) adaptIdle(woken bool, n int) {
	cfg := &w.m.cfg
	if woken || n > 0 || !w.drained {
		w.idle = cfg.PollInterval
		return
	}
	w.idle = min(2*w.idle, cfg.MaxPollInterval)
}

func (w *worker) add(e queue.Entry) {
	it := &item{e: e}
	w.listed = append(w.listed, it)
	// Only the key is decoded here (the record is read in place); the
	// pushed body wraps the stored data (push.StoredMessage), and the
	// Record is decoded only where it is needed (record).
	key, err := event.OrderingKey(e.Data)
	if err != nil {
		// Give it a key of its own so it blocks nothing; dispatch drops it.
		it.decErr, it.key = err, "\x00undecodable/"+e.Marker
	} else {
		it.key = key
	}
	w.held++
	w.m.met.held(1)
	kq := w.keys[it.key]
	if kq == nil {
		kq = &keyQ{key: it.key}
		w.keys[it.key] = kq
	}
	kq.items = append(kq.items, it)
	if len(kq.items) == 1 {
		w.schedule(kq, w.m.cfg.Now())
	}
}

// record decodes the item's stored record once, when something needs more
// than its key (CloudEvents attributes, a drop's event id); nil if the
// data does not decode.
func (it *item) record() *event.Record {
	if it.rec == nil && it.decErr == nil {
		if rec, err := event.Unmarshal(it.e.Data); err == nil {
			it.rec = rec
		}
	}
	return it.rec
}

// schedule queues kq's head for dispatch: now if due, else in waiting.
func (w *worker) schedule(kq *keyQ, now time.Time) {
	if len(kq.items) == 0 {
		delete(w.keys, kq.key)
		return
	}
	head := kq.items[0]
	if kq.queued || head.flight {
		return
	}
	kq.queued = true
	if head.e.NextAttempt.After(now) {
		kq.due = head.e.NextAttempt
		heap.Push(&w.waiting, kq)
		return
	}
	w.ready = append(w.ready, kq)
}

// pop removes kq's head after it was acknowledged or dropped, queues its
// removal and schedules the next entry of the key.
func (w *worker) pop(kq *keyQ, now time.Time) {
	it := kq.items[0]
	kq.items[0] = nil
	kq.items = kq.items[1:]
	it.removed = true
	w.held--
	w.m.met.held(-1)
	w.queueCommit(it, false)
	w.schedule(kq, now)
}

// queueCommit queues it's removal (or, with update, its new retry state)
// for the next flush.
func (w *worker) queueCommit(it *item, update bool) {
	if len(w.removes)+len(w.updates) == 0 {
		w.pendSince = time.Now()
	}
	if update {
		w.updates = append(w.updates, it)
	} else {
		w.removes = append(w.removes, it)
		w.unflushed[it.key] = true
	}
}

// drop removes kq's head without delivery: expired or undeliverable.
func (w *worker) drop(kq *keyQ, reason string, now time.Time, cause error) {
	it := kq.items[0]
	it.dropped = reason
	args := []any{"topic", w.label, "shard", w.shard.OID, "marker", it.e.Marker, "key", it.key,
		"reason", reason, "retries", it.e.Retries, "age", now.Sub(it.e.Committed)}
	if rec := it.record(); rec != nil {
		args = append(args, "event_id", rec.EventID)
	}
	if cause != nil {
		args = append(args, "err", cause)
	}
	w.m.cfg.Logger.Warn("notification event dropped without delivery", args...)
	w.pop(kq, now)
}

// dispatch pushes every due head the in-flight bounds allow. It blocks on
// the endpoint's and the global slots (acks keep arriving into the
// buffered results meanwhile), taking a batch's worth at once.
func (w *worker) dispatch() error {
	st := w.state.Load()
	now := w.m.cfg.Now()
	cfg := &w.m.cfg
	b := &batch{w: w}
	// credit: slots taken (endpoint and global) for pushes not started
	// yet; what is left when dispatch ends goes back.
	var sem *slots
	credit := 0
	defer func() {
		if credit > 0 {
			sem.release(credit)
			w.m.global.release(credit)
		}
	}()
	for len(w.waiting) > 0 && !w.waiting[0].due.After(now) {
		kq := heap.Pop(&w.waiting).(*keyQ)
		w.ready = append(w.ready, kq)
	}
	for len(w.ready) > 0 {
		kq := w.ready[0]
		it := kq.items[0]
		if it.decErr != nil {
			w.unready()
			w.drop(kq, reasonCorrupt, now, it.decErr)
			continue
		}
		if reason := st.pol.expired(now, it.e.Committed, it.e.Retries); reason != "" {
			w.unready()
			w.drop(kq, reason, now, nil)
			continue
		}
		if it.dirty || w.unflushed[it.key] {
			// The retry count must be durable before the next attempt, so
			// a crash cannot reset it (max_retries would never trigger).
			// And a key's next event is pushed only once its predecessor's
			// removal is durable: after a crash or a lost lease at most one
			// event per key (the one in flight) is delivered again, and an
			// owner that lost its lease finds out before it pushes further.
			// Removals of other keys ride along in the same op.
			if err := w.flush(w.stopCtx); err != nil {
				// Push nothing more: the lease may be gone.
				b.abandon(now)
				return err
			}
		}
		if !w.endpoint(st, now) {
			return b.send()
		}
		var rec *event.Record
		if st.t.Settings.CloudEvents {
			rec = it.record()
		}
		msg := push.StoredMessage(st.t.Name, it.key, rec, it.e.Data, st.t.Settings.CloudEvents)
		bt, batching := w.ep.(push.Batcher)
		batching = batching && cfg.PushBatch > 1
		if credit == 0 {
			// Send what is gathered (its slots are used up), then take
			// the slots of the next batch in one go.
			b.send()
			want := 1
			if batching {
				want = min(cfg.PushBatch, len(w.ready))
			}
			sem = w.m.endpointSem(st.epKey)
			if credit = w.acquire(sem, want); credit == 0 {
				return w.stopCtx.Err()
			}
		}
		credit--
		w.unready()
		it.flight = true
		w.inflight++
		if batching {
			b.add(bt, sem, it, msg)
			if len(b.items) >= cfg.PushBatch {
				b.send()
			}
			continue
		}
		w.pushes.Add(1)
		go w.push(w.ep, sem, it, msg)
	}
	return b.send()
}

// batch gathers the heads one dispatch pipelines to a batching endpoint
// (distinct keys: one head per key is ever in flight).
type batch struct {
	w     *worker
	bt    push.Batcher
	sem   *slots
	items []*item
	msgs  []push.Message
}

func (b *batch) add(bt push.Batcher, sem *slots, it *item, msg push.Message) {
	b.bt, b.sem = bt, sem
	b.items = append(b.items, it)
	b.msgs = append(b.msgs, msg)
}

// abandon puts the gathered heads back unsent and frees their slots.
func (b *batch) abandon(now time.Time) {
	w := b.w
	for _, it := range b.items {
		w.m.global.release(1)
		b.sem.release(1)
		it.flight = false
		w.inflight--
		if kq := w.keys[it.key]; kq != nil {
			w.schedule(kq, now)
		}
	}
	b.items, b.msgs = nil, nil
}

// send starts the gathered pushes. Always nil (it ends dispatch's returns).
func (b *batch) send() error {
	if len(b.items) == 0 {
		return nil
	}
	b.w.pushes.Add(1)
	go b.w.pushBatch(b.bt, b.sem, b.items, b.msgs)
	b.items, b.msgs = nil, nil
	return nil
}

func (w *worker) unready() {
	w.ready[0].queued = false
	w.ready[0] = nil
	w.ready = w.ready[1:]
}

// endpoint makes sure w.ep is the endpoint for st, creating it when needed.
// A factory failure does not consume entries' retries: the endpoint was
// never tried. It is retried with backoff.
func (w *worker) endpoint(st *topicState, now time.Time) bool {
	if w.ep != nil && w.epFor == st {
		return true
	}
	if now.Before(w.epRetryAt) {
		return false
	}
	ctx, cancel := context.WithTimeout(w.stopCtx, w.m.cfg.PushTimeout)
	ep, err := w.m.cfg.Endpoints.Endpoint(ctx, st.t)
	cancel()
	if err != nil {
		w.epFails++
		w.epRetryAt = now.Add(st.pol.backoff(w.epFails))
		w.m.cfg.Logger.Warn("notification endpoint unavailable", "topic", w.label, "err", err,
			"retry_in", w.epRetryAt.Sub(now))
		return false
	}
	w.ep, w.epFor, w.epFails = ep, st, 0
	return true
}

// acquire takes n endpoint slots and as many global ones (endpoint first,
// so waiting cannot deadlock), n cut to both bounds. It returns how many,
// 0 when the worker stops first.
func (w *worker) acquire(sem *slots, n int) int {
	n = max(min(n, w.m.global.size), 1)
	done := w.stopCtx.Done()
	got := sem.acquire(done, n)
	if got == 0 {
		return 0
	}
	if w.m.global.acquire(done, got) == 0 {
		sem.release(got)
		return 0
	}
	return got
}

// pushBatch sends items (one endpoint and one global slot each) in one
// exchange and hands each outcome to the loop as soon as it is known, as
// push does.
func (w *worker) pushBatch(bt push.Batcher, sem *slots, items []*item, msgs []push.Message) {
	defer w.pushes.Done()
	w.m.met.exchanges.Inc()
	for range items {
		w.m.met.pushStart()
	}
	ctx, cancel := context.WithTimeout(w.pushCtx, w.m.cfg.PushTimeout)
	defer cancel()
	bt.PushBatch(ctx, msgs, func(i int, err error) {
		w.m.met.pushEnd()
		w.m.global.release(1)
		sem.release(1)
		w.results <- result{it: items[i], err: err}
	})
}

func (w *worker) push(ep push.Endpoint, sem *slots, it *item, msg push.Message) {
	defer w.pushes.Done()
	w.m.met.exchanges.Inc()
	w.m.met.pushStart()
	ctx, cancel := context.WithTimeout(w.pushCtx, w.m.cfg.PushTimeout)
	err := ep.Push(ctx, msg)
	cancel()
	w.m.met.pushEnd()
	w.m.global.release(1)
	sem.release(1)
	// Never blocks: results holds ShardWindow and at most one push per
	// held entry is in flight.
	w.results <- result{it: it, err: err}
}

func (w *worker) handle(r result) {
	it := r.it
	it.flight = false
	w.inflight--
	kq := w.keys[it.key]
	now := w.m.cfg.Now()
	met := w.m.met
	topicName := w.label
	if r.err == nil {
		met.ok.WithLabelValues(topicName).Inc()
		met.nOK.Add(1)
		met.latency.WithLabelValues(topicName).Observe(now.Sub(it.e.Committed).Seconds())
		if w.m.flog.AnyFailing() {
			w.m.flog.OK(endpointKey(w.state.Load().t), now)
		}
		w.pop(kq, now)
		return
	}
	if w.pushCtx.Err() != nil {
		// Cancelled because we stop: not the endpoint's fault. The entry
		// stays queued for the next owner, with its state unchanged.
		return
	}
	st := w.state.Load()
	if errors.Is(r.err, push.ErrQueuedBehind) {
		// A pipelined push that waited behind one that timed out: that
		// one is charged, this one goes again as it is.
		w.schedule(kq, now)
		return
	}
	if errors.Is(r.err, push.ErrClosed) {
		// The factory closed the endpoint under us (say the topic
		// changed): not the entry's failure. Fetch the endpoint again.
		w.ep, w.epRetryAt = nil, now.Add(st.pol.initial)
		w.m.cfg.Logger.Warn("notification endpoint closed; reopening", "topic", w.label)
		w.schedule(kq, now)
		return
	}
	retryable := w.m.cfg.Retryable(r.err)
	w.m.flog.Failed(endpointKey(st.t), topicName, r.err, retryable, now)
	met.failed.WithLabelValues(topicName, strconv.FormatBool(retryable)).Inc()
	met.nFailed.Add(1)
	if !retryable {
		w.drop(kq, reasonPermanent, now, r.err)
		return
	}
	it.e.Retries++
	if reason := st.pol.expired(now, it.e.Committed, it.e.Retries); reason != "" {
		w.drop(kq, reason, now, r.err)
		return
	}
	it.e.NextAttempt = now.Add(st.pol.backoff(it.e.Retries))
	if !it.dirty {
		it.dirty = true
		w.queueCommit(it, true)
	}
	w.m.cfg.Logger.Debug("notification push failed; will retry", "topic", topicName, "key", it.key,
		"retries", it.e.Retries, "next", it.e.NextAttempt, "err", r.err)
	w.schedule(kq, now)
}

// removeDelay is how long retry-state updates wait to share an op.
// Removals do not wait (see loop): acknowledgements that arrive while
// one removal op runs share the next, so batches grow with the rate.
// (Waiting one wake gap, up to 200 ms, for removals multiplied the events
// a crash delivers again.)
func (w *worker) removeDelay() time.Duration { return w.m.cfg.RemoveInterval }

func (w *worker) flushDue() bool {
	n := len(w.removes) + len(w.updates)
	return n > 0 && (len(w.removes) >= w.m.cfg.RemoveBatch || time.Since(w.pendSince) >= w.removeDelay())
}

// flush persists queued removals and retry states in fenced ops.
func (w *worker) flush(ctx context.Context) error {
	const maxUpdates = 1000 // keeps an op under objstore.MaxOpSteps
	for len(w.removes)+len(w.updates) > 0 {
		rmItems := w.removes[:min(len(w.removes), w.m.cfg.RemoveBatch)]
		rm := make([]queue.Marker, len(rmItems))
		for i, it := range rmItems {
			rm[i] = it.e.Marker
		}
		var ups []update
		var done []*item
		for _, it := range w.updates {
			if len(ups) == maxUpdates {
				break
			}
			done = append(done, it)
			if !it.removed {
				ups = append(ups, update{marker: it.e.Marker, retries: it.e.Retries, next: it.e.NextAttempt})
			}
		}
		cctx, cancel := context.WithTimeout(ctx, w.m.cfg.PushTimeout)
		err := w.lease.commit(cctx, rm, ups)
		w.m.met.opsRemove.Inc()
		if err != nil && errors.Is(err, objstore.ErrNotFound) && len(ups) > 0 {
			// An updated entry vanished (purged by an admin): keep the
			// removals, forget the updates.
			err = w.lease.commit(cctx, rm, nil)
		}
		cancel()
		if errors.Is(err, objstore.ErrNotFound) {
			err = errShardGone
		}
		if err != nil {
			return err
		}
		w.removed(rmItems)
		for _, it := range done {
			it.dirty = false
		}
		w.removes = w.removes[len(rmItems):]
		w.updates = w.updates[len(done):]
		w.pendSince = time.Now()
	}
	w.removes, w.updates = nil, nil
	clear(w.unflushed)
	return nil
}

// removed counts the expiries among items whose removal is now durable:
// so a lease lost before the removal does not count them twice (the next
// owner expires them again).
func (w *worker) removed(items []*item) {
	for _, it := range items {
		it.gone = true
		w.listedGone++
		if it.dropped != "" {
			w.m.met.expired.WithLabelValues(w.label, it.dropped).Inc()
			w.m.met.nExpired.Add(1)
		}
	}
	for w.listedHead < len(w.listed) && w.listed[w.listedHead].gone {
		w.listed[w.listedHead] = nil
		w.listedHead++
		w.listedGone--
	}
	switch live := len(w.listed) - w.listedHead - w.listedGone; {
	case w.listedGone > 64 && w.listedGone > live:
		// A head that stays (an event retried for long) must not keep
		// every later, delivered item: keep only the live ones.
		n := 0
		for _, it := range w.listed[w.listedHead:] {
			if !it.gone {
				w.listed[n] = it
				n++
			}
		}
		clear(w.listed[n:])
		w.listed, w.listedHead, w.listedGone = w.listed[:n], 0, 0
	case w.listedHead > 64 && w.listedHead > len(w.listed)/2:
		n := copy(w.listed, w.listed[w.listedHead:])
		clear(w.listed[n:])
		w.listed, w.listedHead = w.listed[:n], 0
	}
	w.tracked.Store(int64(len(w.listed) - w.listedHead))
	w.publishStatsAfter()
}

// publishStatsAfter publishes the marker up to which this owner knows every
// entry of its shard is gone: before its oldest listed entry not durably
// removed, else its list cursor (everything up to it was listed and is
// gone). Only the owner removes entries, and commits append past the
// cursor, so the bound holds until the owner changes.
func (w *worker) publishStatsAfter() {
	after := w.marker
	if w.listedHead < len(w.listed) {
		var err error
		if after, err = queue.MarkerBefore(w.listed[w.listedHead].e.Marker); err != nil {
			after = ""
		}
	}
	if p := w.statsAfter.Load(); p == nil || *p != after {
		w.statsAfter.Store(&after)
	}
}

// waitHeap orders keys waiting for a retry by due time.
type waitHeap []*keyQ

func (h waitHeap) Len() int           { return len(h) }
func (h waitHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h waitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].idx = i; h[j].idx = j }
func (h *waitHeap) Push(x any)        { kq := x.(*keyQ); kq.idx = len(*h); *h = append(*h, kq) }
func (h *waitHeap) Pop() any {
	old := *h
	kq := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return kq
}
