package delivery

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/cls/queue"
	"github.com/cairn-s3/cairn/internal/notify/push"
	nq "github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Manager is one gateway's notification delivery: it owns a fair share of
// the queue shards through leases and delivers them. Create it with New,
// run it with Start, end it with Stop. Safe for concurrent use.
type Manager struct {
	cfg    Config
	met    *metrics
	global *slots // MaxInFlightTotal

	semMu sync.Mutex
	sems  map[string]*slots // per endpoint key

	mu       sync.Mutex
	workers  map[string]*worker // by shard OID
	known    map[string]bool    // shard OIDs the last scan listed
	swept    bool               // own holds of an earlier incarnation freed
	scans    int64
	lastLive int
	gauged   map[string]bool  // topics with queue gauges set
	flog     *push.FailureLog // push failures at warn, rate-limited per endpoint
	started  bool
	stopped  bool

	cancel context.CancelFunc
	loops  sync.WaitGroup
	rescan chan struct{}
}

// New validates cfg (after filling defaults) and returns a stopped Manager.
func New(cfg Config) (*Manager, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Manager{
		cfg:      cfg,
		met:      newMetrics(cfg.Registerer),
		flog:     cfg.FailureLog,
		global:   newSlots(cfg.MaxInFlightTotal),
		sems:     map[string]*slots{},
		workers:  map[string]*worker{},
		known:    map[string]bool{},
		lastLive: 1,
		gauged:   map[string]bool{},
		rescan:   make(chan struct{}, 1),
	}, nil
}

// Start launches the scan and renewal loops; the first scan runs at once.
// It returns immediately. Start may be called once.
func (m *Manager) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return errors.New("delivery: manager already started")
	}
	m.started = true
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	if cn, ok := m.cfg.Registry.(CommitNotifier); ok && m.cfg.WakeGap > 0 {
		cn.OnCommit(m.wake)
	}
	if sb, ok := m.cfg.Registry.(StatsBounder); ok {
		sb.SetStatsBound(m.statsBound)
	}
	m.loops.Add(2)
	go m.scanLoop(ctx)
	go m.renewLoop(ctx)
	return nil
}

// statsBound is the marker up to which every entry of shard oid is gone,
// as its worker here knows it ("" if this gateway does not own oid).
func (m *Manager) statsBound(oid string) queue.Marker {
	m.mu.Lock()
	w := m.workers[oid]
	m.mu.Unlock()
	if w == nil {
		return ""
	}
	if p := w.statsAfter.Load(); p != nil {
		return *p
	}
	return ""
}

// wake tells the worker of shard oid, if this gateway owns it, that
// entries were committed. A commit to a shard the last scan did not list
// (a topic created since, here or through another gateway) asks for a scan
// now, so a new topic's first event does not wait for ScanInterval. It
// never blocks (wakes and rescans coalesce).
func (m *Manager) wake(oid string) {
	m.mu.Lock()
	w := m.workers[oid]
	known := m.known[oid]
	m.mu.Unlock()
	switch {
	case w != nil:
		select {
		case w.poke <- struct{}{}:
		default:
		}
	case !known:
		m.Rescan()
	}
}

// Rescan asks for a scan now rather than at the next ScanInterval (call it
// after creating or deleting a persistent topic). It does not block.
func (m *Manager) Rescan() {
	select {
	case m.rescan <- struct{}{}:
	default:
	}
}

// Stop ends delivery gracefully: no new pushes start, pushes in flight
// finish (bounded by ctx and PushTimeout), acknowledged entries are
// removed, leases are released and this gateway leaves the membership, so
// the other gateways take its shards at their next scan. When ctx ends
// first, pushes are cancelled and their entries stay queued.
func (m *Manager) Stop(ctx context.Context) error {
	if !m.halt() {
		return nil
	}
	var errs []error
	ws := m.allWorkers()
	for _, w := range ws {
		w.stop()
	}
	for _, w := range ws {
		select {
		case <-w.done:
		case <-ctx.Done():
			w.lose()
			<-w.done
		}
		if w.err != nil && !errors.Is(w.err, errLeaseLost) && !errors.Is(w.err, errShardGone) {
			errs = append(errs, w.err)
		}
	}
	m.mu.Lock()
	m.workers = map[string]*worker{}
	m.mu.Unlock()
	m.met.owned.Set(0)
	lctx, cancel := context.WithTimeout(context.Background(), m.cfg.PushTimeout)
	defer cancel()
	if err := leave(lctx, m.cfg.MembersIO, m.cfg.MembersOID, m.cfg.Owner); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// halt stops the loops; false when already stopped.
func (m *Manager) halt() bool {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return false
	}
	m.stopped = true
	cancel := m.cancel
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	m.loops.Wait()
	return true
}

// abandon stops everything without touching the store again, as a
// gateway killed with -9 would: leases stay until they expire, acked
// entries not yet removed stay queued. For tests.
func (m *Manager) abandon() {
	if !m.halt() {
		return
	}
	for _, w := range m.allWorkers() {
		w.abandoned.Store(true)
		w.lose()
		<-w.done
	}
}

// Owned returns the shards this gateway delivers right now, sorted by OID.
// A shard being released (a rebalance, Stop) or whose lease may have
// lapsed is not listed, although its worker may still be finishing pushes
// in flight: the view never overlaps another gateway's.
func (m *Manager) Owned() []Shard {
	var out []Shard
	now := time.Now()
	for _, w := range m.allWorkers() {
		if w.owns(now) {
			out = append(out, w.shard)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].OID < out[j].OID })
	return out
}

// Stats returns the manager's counters.
func (m *Manager) Stats() Stats {
	return Stats{
		PushesOK: m.met.nOK.Load(), PushesFailed: m.met.nFailed.Load(), Expired: m.met.nExpired.Load(),
		LeasesLost: m.met.nLost.Load(), InFlight: m.met.nInflight.Load(), MaxInFlight: m.met.maxInflight.Load(),
		Held: m.met.nHeld.Load(), MaxHeld: m.met.maxHeld.Load(),
		Owned: len(m.Owned()), Scans: m.scanCount(),
	}
}

func (m *Manager) scanCount() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.scans
}

func (m *Manager) allWorkers() []*worker {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*worker, 0, len(m.workers))
	for _, w := range m.workers {
		out = append(out, w)
	}
	return out
}

// leaseHorizon is how long after sending a successful lock or renew this
// gateway trusts its hold: a tenth less than the lease, so that it stops
// pushing before the store lets another gateway take the shard.
func (m *Manager) leaseHorizon() time.Duration {
	return m.cfg.LeaseDuration - m.cfg.LeaseDuration/10
}

func (m *Manager) endpointSem(key string) *slots {
	m.semMu.Lock()
	defer m.semMu.Unlock()
	s := m.sems[key]
	if s == nil {
		s = newSlots(m.cfg.MaxInFlightPerEndpoint)
		m.sems[key] = s
	}
	return s
}

func (m *Manager) scanLoop(ctx context.Context) {
	defer m.loops.Done()
	t := time.NewTicker(m.cfg.ScanInterval)
	defer t.Stop()
	for {
		m.scan(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.rescan:
		}
	}
}

func (m *Manager) renewLoop(ctx context.Context) {
	defer m.loops.Done()
	t := time.NewTicker(m.cfg.RenewInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.renewAll(ctx)
	}
}

func (m *Manager) renewAll(ctx context.Context) {
	for _, w := range m.allWorkers() {
		if w.stopCtx.Err() != nil {
			continue // ending: a graceful stop unlocks, a lost lease is gone
		}
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, m.cfg.RenewInterval)
		err := w.lease.renew(rctx)
		cancel()
		switch {
		case err == nil:
			w.renewed(sent)
		case errors.Is(err, errLeaseLost):
			m.cfg.Logger.Warn("notification shard lease lost", "shard", w.shard.OID)
			w.lose()
		case ctx.Err() != nil:
			return
		default:
			// The watchdog ends the worker if renewals keep failing.
			m.cfg.Logger.Warn("notification shard lease renewal failed", "shard", w.shard.OID, "err", err)
		}
	}
}

// listShards walks the registry page by page and expands each queue into
// its shards.
func (m *Manager) listShards(ctx context.Context) ([]Shard, error) {
	var all []Shard
	marker := ""
	for {
		page, more, err := m.cfg.Registry.List(ctx, marker, registryPage)
		if err != nil {
			return nil, err
		}
		for _, in := range page {
			if in.Name <= marker {
				return nil, fmt.Errorf("delivery: queue registry went backwards at %q after %q", in.Name, marker)
			}
			for i := 0; i < in.Shards; i++ {
				all = append(all, Shard{Queue: in.Name, Index: i, OID: nq.ShardOID(in.Name, i)})
			}
			marker = in.Name
		}
		if !more || len(page) == 0 {
			return all, nil
		}
	}
}

// reap forgets workers that ended and reports why.
func (m *Manager) reap() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for oid, w := range m.workers {
		select {
		case <-w.done:
		default:
			continue
		}
		delete(m.workers, oid)
		switch {
		case w.err == nil:
		case errors.Is(w.err, errLeaseLost):
			m.met.lost.Inc()
			m.met.nLost.Add(1)
			m.cfg.Logger.Warn("notification shard delivery stopped: lease lost", "shard", oid)
		case errors.Is(w.err, errShardGone):
			m.cfg.Logger.Info("notification shard gone", "shard", oid)
		default:
			m.cfg.Logger.Error("notification shard delivery stopped", "shard", oid, "err", w.err)
		}
	}
}

// scan heartbeats, reads the registry, releases shards above this
// gateway's fair share, leases free shards below it, refreshes topic
// settings and queue metrics, and expires stale reservations.
func (m *Manager) scan(ctx context.Context) {
	log := m.cfg.Logger
	live, err := heartbeat(ctx, m.cfg.MembersIO, m.cfg.MembersOID, m.cfg.Owner, m.cfg.Now(), m.cfg.LeaseDuration)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		log.Warn("notification delivery heartbeat failed", "err", err)
		live = m.lastLive
	}
	m.lastLive = live
	m.reap()
	shards, err := m.listShards(ctx)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("notification queue registry unreadable", "err", err)
		}
		return
	}
	listed := make(map[string]Shard, len(shards))
	known := make(map[string]bool, len(shards))
	for _, s := range shards {
		listed[s.OID] = s
		known[s.OID] = true
	}
	m.mu.Lock()
	m.known = known
	m.scans++
	m.mu.Unlock()
	topics := map[string]*topic.Topic{}
	// lookup reports the topic, or whether it is known to be gone (false,
	// true) as opposed to unreadable right now (false, false).
	lookup := func(sh Shard) (t *topic.Topic, gone bool) {
		name := sh.Queue
		if t, ok := topics[name]; ok {
			return t, t == nil
		}
		tenant, tname := sh.TopicName()
		t, err := m.cfg.Topics.Topic(ctx, tenant, tname)
		if err != nil {
			if !errors.Is(err, ErrTopicNotFound) && !errors.Is(err, objstore.ErrNotFound) {
				if ctx.Err() == nil {
					log.Warn("notification topic unreadable", "queue", name, "err", err)
				}
				return nil, false // not cached: try again next time
			}
			t = nil
		}
		topics[name] = t
		return t, t == nil
	}

	// Refresh what we own; stop shards whose topic or registry entry went.
	var active []*worker
	for _, w := range m.allWorkers() {
		if w.stopCtx.Err() != nil {
			continue // winding down
		}
		_, inRegistry := listed[w.shard.OID]
		t, gone := lookup(w.shard)
		if !inRegistry || gone {
			log.Info("notification shard no longer listed; releasing", "shard", w.shard.OID)
			w.stop()
			continue
		}
		if t != nil {
			w.setTopic(m.topicState(t))
		}
		active = append(active, w)
	}

	target := (len(shards) + live - 1) / live
	sort.Slice(active, func(i, j int) bool { return active[i].shard.OID < active[j].shard.OID })
	for len(active) > target {
		w := active[len(active)-1]
		active = active[:len(active)-1]
		log.Info("notification shard above fair share; releasing", "shard", w.shard.OID, "target", target, "live", live)
		w.stop()
	}
	if len(active) < target && len(shards) > 0 {
		active = m.acquireUpTo(ctx, shards, target, active, lookup)
	}
	if m.cfg.ReclaimOwnLeases && !m.swept && ctx.Err() == nil {
		m.swept = m.freeOwn(ctx, shards)
	}
	m.met.owned.Set(float64(len(active)))
	m.refreshQueues(ctx, active)
}

// freeOwn breaks, once after a start, the holds an earlier incarnation of
// this gateway left on shards this one did not take (beyond its fair
// share), so the other gateways lease them at their next scan instead of
// after LeaseDuration. It reports whether it looked at every shard.
func (m *Manager) freeOwn(ctx context.Context, shards []Shard) bool {
	all := true
	for _, sh := range shards {
		m.mu.Lock()
		_, mine := m.workers[sh.OID]
		m.mu.Unlock()
		if mine {
			continue
		}
		broke, err := breakOwn(ctx, m.cfg.IO, sh.OID, m.cfg.Owner)
		if err != nil {
			if ctx.Err() == nil {
				m.cfg.Logger.Warn("notification shard: freeing an earlier incarnation's lease failed", "shard", sh.OID, "err", err)
			}
			all = false
			continue
		}
		if broke {
			m.cfg.Logger.Info("notification shard lease of an earlier incarnation freed", "shard", sh.OID, "owner", m.cfg.Owner)
		}
	}
	return all
}

// acquireUpTo leases free shards until this gateway holds target. It starts
// at an offset derived from the owner id so gateways do not all contend
// for the same shards first.
func (m *Manager) acquireUpTo(ctx context.Context, shards []Shard, target int, active []*worker,
	lookup func(Shard) (*topic.Topic, bool)) []*worker {
	h := fnv.New32a()
	h.Write([]byte(m.cfg.Owner))
	start := int(h.Sum32() % uint32(len(shards)))
	for i := 0; i < len(shards) && len(active) < target; i++ {
		if ctx.Err() != nil {
			break
		}
		sh := shards[(start+i)%len(shards)]
		m.mu.Lock()
		_, mine := m.workers[sh.OID]
		m.mu.Unlock()
		if mine {
			continue // owned, or still winding down after a release
		}
		t, _ := lookup(sh)
		if t == nil {
			continue
		}
		sent := time.Now()
		l, prev, err := acquire(ctx, m.cfg.IO, sh.OID, m.cfg.Owner, m.cfg.LeaseDuration, m.cfg.ReclaimOwnLeases)
		if err != nil {
			if !errors.Is(err, objstore.ErrBusy) && !errors.Is(err, objstore.ErrNotFound) && ctx.Err() == nil {
				m.cfg.Logger.Warn("notification shard lease failed", "shard", sh.OID, "err", err)
			}
			continue
		}
		m.mu.Lock()
		if m.stopped {
			m.mu.Unlock()
			_ = l.release(context.Background())
			break
		}
		w := newWorker(m, sh, l, m.topicState(t), sent)
		m.workers[sh.OID] = w
		m.mu.Unlock()
		if prev != "" {
			m.cfg.Logger.Info("notification shard lease taken over from an earlier incarnation", "shard", sh.OID, "owner", m.cfg.Owner)
		} else {
			m.cfg.Logger.Info("notification shard leased", "shard", sh.OID, "owner", m.cfg.Owner)
		}
		go w.run()
		active = append(active, w)
	}
	return active
}

func (m *Manager) topicState(t *topic.Topic) *topicState {
	return &topicState{t: t, pol: resolvePolicy(&m.cfg, t), epKey: endpointKey(t)}
}

// setTopic installs a changed topic definition; the worker recreates its
// endpoint when the settings differ.
func (w *worker) setTopic(st *topicState) {
	cur := w.state.Load()
	if cur != nil && cur.t.Settings == st.t.Settings {
		return
	}
	w.state.Store(st)
}

// endpointKey identifies an endpoint for the per-endpoint in-flight bound,
// without credentials.
func endpointKey(t *topic.Topic) string {
	u, err := t.Settings.Endpoint()
	if err != nil || u == nil {
		return "topic:" + t.Name
	}
	return u.Scheme + "://" + strings.Join(u.Addrs, ",") + u.Path
}

// refreshQueues sets the per-topic queue gauges from the owned shards'
// stats. (Stale reservations are expired by queue.Queues.RunExpiry.)
func (m *Manager) refreshQueues(ctx context.Context, active []*worker) {
	type agg struct {
		entries, bytes uint64
		oldest         time.Time
	}
	per := map[string]*agg{}
	for _, w := range active {
		// Past what the owner knows is removed: the removed entries'
		// deletions stay in the store until compaction, and stepping over
		// them each scan cost ~2 µs per event at 11 shards (round 10).
		var after queue.Marker
		if p := w.statsAfter.Load(); p != nil {
			after = *p
		}
		st, err := queue.GetStatsAfter(ctx, m.cfg.IO, w.shard.OID, after)
		if err != nil {
			continue
		}
		a := per[w.label]
		if a == nil {
			a = &agg{}
			per[w.label] = a
		}
		a.entries += st.Entries
		a.bytes += st.Bytes
		if !st.Oldest.IsZero() && (a.oldest.IsZero() || st.Oldest.Before(a.oldest)) {
			a.oldest = st.Oldest
		}
	}
	now := m.cfg.Now()
	for name, a := range per {
		m.met.entries.WithLabelValues(name).Set(float64(a.entries))
		m.met.bytes.WithLabelValues(name).Set(float64(a.bytes))
		age := 0.0
		if !a.oldest.IsZero() {
			age = max(now.Sub(a.oldest).Seconds(), 0)
		}
		m.met.oldest.WithLabelValues(name).Set(age)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.gauged {
		if per[name] == nil {
			m.met.entries.DeleteLabelValues(name)
			m.met.bytes.DeleteLabelValues(name)
			m.met.oldest.DeleteLabelValues(name)
			delete(m.gauged, name)
		}
	}
	for name := range per {
		m.gauged[name] = true
	}
}
