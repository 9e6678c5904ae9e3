package driver

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Visible implies notified: the link intent.
//
// A write with a persistent notification links its version first and
// commits the event after (the commit's sync also covers the deferred
// link). A crash between the two used to leave a visible version whose
// event never came. Now the link op also stores the reservation's intent
// (IntentReservation.Intent) on the index shard, atomically with the
// version (bucketindex.VersionCond.Intent). After the commit the intent is
// removed, in the background and batched (intentRemover). RecoverIntents,
// run at start-up before serving, hands every intent it finds to the
// notifier (IntentRecoverer), which commits the event unless its own
// commit had happened. docs/design/delivery.md has the whole protocol.

// IntentReservation is a Reservation whose event must follow the version
// even across a crash. Intent returns the JSON to store with the link (nil:
// none needed), one valid compact JSON value: the driver embeds it in
// the intent record as is. It is called once, before the link, with what is known of
// the version then (no version id).
type IntentReservation interface {
	Reservation
	Intent(ctx context.Context, obj ObjectInfo) []byte
}

// IntentRecoverer is a Notifier that resolves intents found after a crash.
// obj is the linked version when found (the version may have been
// replaced or deleted since: found=false, and obj then has only the
// bucket, the key and, on a suspended bucket, the null version id),
// current whether it is still the key's current version. done=true means the intent is resolved (the event
// is committed, was already, or has nowhere to go) and may be removed;
// false with a nil error means the intent is not this gateway's to resolve.
type IntentRecoverer interface {
	RecoverIntent(ctx context.Context, data []byte, obj ObjectInfo, found, current bool) (done bool, err error)
}

// linkIntent is the value stored under the entry's tag (docs/format/cls.md).
type linkIntent struct {
	Key string `json:"k"`
	// MTime orders a key's intents at recovery (link order), unix ns.
	MTime  int64           `json:"t,omitempty"`
	Notify json.RawMessage `json:"n"`
}

// encodeLinkIntent is json.Marshal(linkIntent{key, mtime, n}) for a
// compact n, the same bytes, written directly: Marshal re-scans a
// RawMessage to compact it, a few µs per notified write.
func encodeLinkIntent(key string, mtime int64, n []byte) []byte {
	kq, _ := json.Marshal(key) // a string always encodes
	b := make([]byte, 0, len(kq)+len(n)+36)
	b = append(b, `{"k":`...)
	b = append(b, kq...)
	if mtime != 0 {
		b = append(b, `,"t":`...)
		b = strconv.AppendInt(b, mtime, 10)
	}
	b = append(b, `,"n":`...)
	b = append(b, n...)
	return append(b, '}')
}

// definite reports whether a failed op is known not to have applied: the
// store refused it with an errno other than a timeout.
func definite(err error) bool {
	var en objstore.Errno
	return errors.As(err, &en) && !errors.Is(err, objstore.ErrTimedOut)
}

// intentRemover removes resolved intents, batched per shard, without a
// sync: an intent that outlives a crash is resolved again (the notifier
// then finds its reservation consumed: no second event).
type intentRemover struct {
	d       *Driver
	mu      sync.Mutex
	pending map[string][]string // shard oid -> tags
	n       int
	wake    chan struct{}
	stopCh  chan struct{}
	done    chan struct{}
}

// Each removal op costs about as much as a small write whatever it
// carries, so a longer gap means fewer, fuller ops: at 20 ms with 11 index
// shards the removals were ~25 µs of gateway CPU per event
// (docs/bench/notify.md). A crash leaves at most one gap of intents, which
// the next start resolves as already committed.
const (
	intentFlushEvery = 250 * time.Millisecond
	intentFlushBatch = 4096
)

func newIntentRemover(d *Driver) *intentRemover {
	r := &intentRemover{d: d, pending: map[string][]string{}, wake: make(chan struct{}, 1),
		stopCh: make(chan struct{}), done: make(chan struct{})}
	go r.run()
	return r
}

func (r *intentRemover) add(shard, tag string) {
	r.mu.Lock()
	r.pending[shard] = append(r.pending[shard], tag)
	r.n++
	full := r.n >= intentFlushBatch
	r.mu.Unlock()
	if full {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

func (r *intentRemover) run() {
	defer close(r.done)
	t := time.NewTicker(intentFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-r.stopCh:
			r.flush(context.Background())
			return
		case <-t.C:
		case <-r.wake:
		}
		r.flush(context.Background())
	}
}

func (r *intentRemover) flush(ctx context.Context) {
	r.mu.Lock()
	batch := r.pending
	r.pending, r.n = map[string][]string{}, 0
	r.mu.Unlock()
	for shard, tags := range batch {
		err := bucketindex.RemoveIntents(ctx, r.d.index, shard, tags...)
		if err != nil && !errors.Is(err, objstore.ErrNotFound) {
			// Harmless: the next start-up resolves them again.
			r.d.log.Warn("intent removal failed", "shard", shard, "count", len(tags), "err", err)
		}
	}
}

func (r *intentRemover) stop() {
	close(r.stopCh)
	<-r.done
}

// RecoverIntents resolves the link intents of every bucket (see above):
// run it at start-up, before serving. It returns how many intents were
// resolved and how many were left (not this gateway's, or failing).
func (d *Driver) RecoverIntents(ctx context.Context) (resolved, left int, err error) {
	rec, ok := d.opts.Notifier.(IntentRecoverer)
	if !ok {
		return 0, 0, nil
	}
	ids, err := listAll(ctx, d.meta.WithNamespace(nsInstances))
	if err != nil {
		return 0, 0, err
	}
	for _, id := range ids {
		inst, _, err := d.ReadInstance(ctx, id)
		if err != nil {
			continue
		}
		ix := d.indexFor(inst)
		for s := 0; s < inst.Layout.NumShards; s++ {
			intents, err := ix.Intents(ctx, s)
			if err != nil {
				continue // a retired or missing shard
			}
			// A key's events go out in link order (several of a key's
			// deferred commits may be pending at a crash).
			sort.SliceStable(intents, func(i, j int) bool { return intentTime(intents[i]) < intentTime(intents[j]) })
			var clear []string
			for _, in := range intents {
				done, err := d.recoverIntent(ctx, rec, inst, ix, in)
				if err != nil {
					d.log.Warn("notification intent not resolved; retried at the next start", "bucket", inst.Name, "tag", in.Tag, "err", err)
				}
				if done {
					clear = append(clear, in.Tag)
				} else {
					left++
				}
			}
			if len(clear) > 0 {
				resolved += len(clear)
				if err := bucketindex.RemoveIntents(ctx, d.index, intents[0].Shard, clear...); err != nil {
					d.log.Warn("intent removal failed", "shard", intents[0].Shard, "err", err)
				}
			}
		}
	}
	return resolved, left, nil
}

// recoverIntent finds the version the intent was linked with (by tag) and
// hands both to the notifier.
func (d *Driver) recoverIntent(ctx context.Context, rec IntentRecoverer, inst Instance, ix bucketindex.Index, in bucketindex.IntentRecord) (bool, error) {
	var li linkIntent
	if err := json.Unmarshal(in.Data, &li); err != nil {
		d.log.Warn("undecodable notification intent dropped", "bucket", inst.Name, "tag", in.Tag, "err", err)
		return true, nil
	}
	e, found, current, err := findTag(ctx, ix, li.Key, in.Tag)
	if err != nil {
		return false, err
	}
	// Not found: replaced or deleted since. The notifier may still owe
	// its event (a deferred commit after an answered PUT): it gets what
	// the intent and the bucket say.
	oi := ObjectInfo{Bucket: inst.Name, Key: li.Key}
	if inst.Versioning == VersioningSuspended {
		oi.VersionID = bucketindex.NullVersion
	}
	if found {
		oi = versionInfo(inst.Name, inst.Versioning, e)
	}
	return rec.RecoverIntent(ctx, li.Notify, oi, found, current)
}

// intentTime is the intent's link time (0 when unreadable or older).
func intentTime(in bucketindex.IntentRecord) int64 {
	var li struct {
		MTime int64 `json:"t"`
	}
	_ = json.Unmarshal(in.Data, &li)
	return li.MTime
}

// findTag looks for the version of key whose data has tag.
func findTag(ctx context.Context, ix bucketindex.Index, key, tag string) (bucketindex.Entry, bool, bool, error) {
	e, err := ix.Get(ctx, key)
	if err == nil && e.Tag == tag {
		return e, true, true, nil
	}
	if err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return e, false, false, err
	}
	var mark bucketindex.VersionMark
	for {
		vs, more, err := ix.ListVersions(ctx, mark, key, 1000)
		if err != nil {
			return bucketindex.Entry{}, false, false, err
		}
		for _, v := range vs {
			if v.Key != key {
				return bucketindex.Entry{}, false, false, nil
			}
			if v.Tag == tag && !v.Marker {
				return v.Entry, true, v.IsLatest, nil
			}
			mark = bucketindex.VersionMark{Key: v.Key, Seq: v.Seq}
		}
		if !more || len(vs) == 0 {
			return bucketindex.Entry{}, false, false, nil
		}
	}
}
