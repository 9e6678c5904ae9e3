// Package usage is RGW's usage log: per user (the bucket owner), bucket
// and hour, the operations of each category with bytes sent and received
// and how many succeeded. Requests are counted in memory and flushed
// periodically, never with a synced write per request.
//
// Storage (docs/format/usage.md): pool default.rgw.log, namespace "usage",
// one object per user; omap key "<hour epoch, 10 digits>/<bucket>/<gateway
// boot id>", value the JSON map category -> Counters, this boot's running
// totals for that hour and bucket. Each gateway writes only its own keys,
// so a flush needs no read and no guard; readers sum over gateways.
package usage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// Namespace is the usage log's namespace in the log pool.
const Namespace = "usage"

// Counters are one category's totals.
type Counters struct {
	BytesSent     int64 `json:"bytes_sent"`
	BytesReceived int64 `json:"bytes_received"`
	Ops           int64 `json:"ops"`
	SuccessfulOps int64 `json:"successful_ops"`
}

func (c *Counters) add(o Counters) {
	c.BytesSent += o.BytesSent
	c.BytesReceived += o.BytesReceived
	c.Ops += o.Ops
	c.SuccessfulOps += o.SuccessfulOps
}

// Options configure a Log.
type Options struct {
	IO     objstore.IOContext // the log pool; the Log uses Namespace in it
	BootID string             // names this gateway's keys; unique per process
	// FlushInterval is how often counts reach the store (RGW:
	// rgw_usage_log_tick_interval). Default 30 s.
	FlushInterval time.Duration
	Now           func() time.Time
	Logger        *slog.Logger
}

// Log aggregates usage in memory. Safe for concurrent use.
type Log struct {
	opts Options
	io   objstore.IOContext

	mu  sync.Mutex
	cur map[slot]*slotCounts

	fmu  sync.Mutex // one flush at a time
	stop chan struct{}
	done chan struct{}
}

type slot struct {
	user, bucket string
	hour         int64
}

type slotCounts struct {
	cats  map[string]Counters
	dirty bool
}

// New returns a Log; Start runs its flusher.
func New(opts Options) (*Log, error) {
	if opts.IO == nil || opts.BootID == "" {
		return nil, errors.New("usage: IO and BootID are required")
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Log{opts: opts, io: opts.IO.WithNamespace(Namespace), cur: map[slot]*slotCounts{}}, nil
}

// Record counts one request of category by user on bucket ("" for
// service requests).
func (l *Log) Record(user, bucket, category string, sent, received int64, ok bool) {
	if user == "" {
		user = "anonymous"
	}
	s := slot{user: user, bucket: bucket, hour: l.opts.Now().Unix() / 3600 * 3600}
	c := Counters{BytesSent: sent, BytesReceived: received, Ops: 1}
	if ok {
		c.SuccessfulOps = 1
	}
	l.mu.Lock()
	sc := l.cur[s]
	if sc == nil {
		sc = &slotCounts{cats: map[string]Counters{}}
		l.cur[s] = sc
	}
	t := sc.cats[category]
	t.add(c)
	sc.cats[category] = t
	sc.dirty = true
	l.mu.Unlock()
}

// Start flushes every FlushInterval until Close.
func (l *Log) Start() {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(l.opts.FlushInterval)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				if err := l.Flush(context.Background()); err != nil {
					l.opts.Logger.Warn("usage flush failed; retried at the next tick", "err", err)
				}
			}
		}
	}()
}

// Close stops the flusher and flushes what is left.
func (l *Log) Close(ctx context.Context) error {
	if l.stop != nil {
		close(l.stop)
		<-l.done
		l.stop = nil
	}
	return l.Flush(ctx)
}

func slotKey(hour int64, bucket, boot string) string {
	return fmt.Sprintf("%010d/%s/%s", hour, bucket, boot)
}

// Flush writes every changed slot (unsynced writes, then one sync), and
// forgets slots of past hours once written. What a kill -9 loses is what
// was counted since the last flush.
func (l *Log) Flush(ctx context.Context) error {
	l.fmu.Lock()
	defer l.fmu.Unlock()
	nowHour := l.opts.Now().Unix() / 3600 * 3600
	byUser := map[string][]objstore.KV{}
	var flushed []slot
	l.mu.Lock()
	for s, sc := range l.cur {
		if !sc.dirty {
			if s.hour < nowHour {
				delete(l.cur, s)
			}
			continue
		}
		v, _ := json.Marshal(sc.cats)
		byUser[s.user] = append(byUser[s.user], objstore.KV{Key: slotKey(s.hour, s.bucket, l.opts.BootID), Value: v})
		sc.dirty = false
		flushed = append(flushed, s)
	}
	l.mu.Unlock()
	var errs []error
	for user, kvs := range byUser {
		op := objstore.NewWriteOp().SetOmap(kvs...)
		op.DeferSync = true
		if err := l.io.Operate(ctx, user, op); err != nil {
			errs = append(errs, err)
			l.redirty(user, flushed)
		}
	}
	if len(byUser) > 0 {
		errs = append(errs, objstore.Sync(ctx, l.io))
	}
	return errors.Join(errs...)
}

func (l *Log) redirty(user string, flushed []slot) {
	l.mu.Lock()
	for _, s := range flushed {
		if sc := l.cur[s]; s.user == user && sc != nil {
			sc.dirty = true
		}
	}
	l.mu.Unlock()
}

// Query selects usage to show or trim: one user or all (UID ""), hours
// in [Start, End) (zero: unbounded).
type Query struct {
	UID        string
	Start, End time.Time
}

func (q Query) hourIn(h int64) bool {
	return (q.Start.IsZero() || h >= q.Start.Unix()/3600*3600) && (q.End.IsZero() || h < q.End.Unix())
}

// BucketEntry is one user's usage of one bucket in one hour.
type BucketEntry struct {
	Bucket     string          `json:"bucket"`
	Time       string          `json:"time"`
	Epoch      int64           `json:"epoch"`
	Owner      string          `json:"owner"`
	Categories []CategoryEntry `json:"categories"`
}

// CategoryEntry is one category's Counters.
type CategoryEntry struct {
	Category string `json:"category"`
	Counters
}

// UserEntries are one user's BucketEntry list.
type UserEntries struct {
	User    string        `json:"user"`
	Buckets []BucketEntry `json:"buckets"`
}

// UserSummary is one user's totals by category and overall.
type UserSummary struct {
	User       string          `json:"user"`
	Categories []CategoryEntry `json:"categories"`
	Total      Counters        `json:"total"`
}

// Report is radosgw-admin usage show's answer.
type Report struct {
	Entries []UserEntries `json:"entries,omitempty"`
	Summary []UserSummary `json:"summary,omitempty"`
}

// Show reads the stored usage matching q (this gateway's pending counts
// are flushed first, so a reader sees its own gateway exactly).
func (l *Log) Show(ctx context.Context, q Query) (Report, error) {
	if err := l.Flush(ctx); err != nil {
		return Report{}, err
	}
	users, err := l.users(ctx, q.UID)
	if err != nil {
		return Report{}, err
	}
	var rep Report
	for _, u := range users {
		ue := UserEntries{User: u}
		sum := map[string]Counters{}
		var cur *BucketEntry
		var curCats map[string]Counters
		finish := func() {
			if cur != nil {
				cur.Categories = sortedCats(curCats)
				ue.Buckets = append(ue.Buckets, *cur)
				cur = nil
			}
		}
		err := l.eachKey(ctx, u, func(k string, v []byte) error {
			hour, bucket, ok := parseKey(k)
			if !ok || !q.hourIn(hour) {
				return nil
			}
			var cats map[string]Counters
			if err := json.Unmarshal(v, &cats); err != nil {
				return fmt.Errorf("usage %s %s: %w", u, k, err)
			}
			if cur == nil || cur.Epoch != hour || cur.Bucket != bucket {
				finish()
				cur = &BucketEntry{Bucket: bucket, Epoch: hour, Owner: u,
					Time: time.Unix(hour, 0).UTC().Format("2006-01-02T15:04:05.000Z")}
				curCats = map[string]Counters{}
			}
			for name, c := range cats {
				t := curCats[name]
				t.add(c)
				curCats[name] = t
				s := sum[name]
				s.add(c)
				sum[name] = s
			}
			return nil
		})
		if err != nil {
			return Report{}, err
		}
		finish()
		if len(ue.Buckets) == 0 {
			continue
		}
		rep.Entries = append(rep.Entries, ue)
		us := UserSummary{User: u, Categories: sortedCats(sum)}
		for _, c := range sum {
			us.Total.add(c)
		}
		rep.Summary = append(rep.Summary, us)
	}
	return rep, nil
}

// Trim removes the stored usage matching q (radosgw-admin usage trim).
// Counts still in memory are flushed first, then trimmed with the rest.
func (l *Log) Trim(ctx context.Context, q Query) error {
	if err := l.Flush(ctx); err != nil {
		return err
	}
	// Forget in-memory slots in range too, or the next flush brings them back.
	l.mu.Lock()
	for s := range l.cur {
		if (q.UID == "" || s.user == q.UID) && q.hourIn(s.hour) {
			delete(l.cur, s)
		}
	}
	l.mu.Unlock()
	users, err := l.users(ctx, q.UID)
	if err != nil {
		return err
	}
	for _, u := range users {
		var keys []string
		if err := l.eachKey(ctx, u, func(k string, _ []byte) error {
			if hour, _, ok := parseKey(k); ok && q.hourIn(hour) {
				keys = append(keys, k)
			}
			return nil
		}); err != nil {
			return err
		}
		for len(keys) > 0 {
			n := min(len(keys), 1000)
			if err := l.io.Operate(ctx, u, objstore.NewWriteOp().RmOmapKeys(keys[:n]...)); err != nil && !errors.Is(err, objstore.ErrNotFound) {
				return err
			}
			keys = keys[n:]
		}
	}
	return nil
}

func (l *Log) users(ctx context.Context, uid string) ([]string, error) {
	if uid != "" {
		return []string{uid}, nil
	}
	var out []string
	marker := ""
	for {
		oids, more, err := l.io.ListObjects(ctx, marker, 1000)
		if err != nil {
			return nil, err
		}
		out = append(out, oids...)
		if !more || len(oids) == 0 {
			sort.Strings(out)
			return out, nil
		}
		marker = oids[len(oids)-1]
	}
}

func (l *Log) eachKey(ctx context.Context, user string, fn func(k string, v []byte) error) error {
	after := ""
	for {
		op := objstore.NewReadOp()
		vs := op.GetOmapValues(after, "", 1000)
		err := l.io.OperateRead(ctx, user, op)
		if errors.Is(err, objstore.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, kv := range vs.Pairs {
			if err := fn(kv.Key, kv.Value); err != nil {
				return err
			}
		}
		if !vs.More || len(vs.Pairs) == 0 {
			return nil
		}
		after = vs.Pairs[len(vs.Pairs)-1].Key
	}
}

func parseKey(k string) (hour int64, bucket string, ok bool) {
	h, rest, ok1 := strings.Cut(k, "/")
	i := strings.LastIndexByte(rest, '/')
	if !ok1 || i < 0 {
		return 0, "", false
	}
	n, err := strconv.ParseInt(h, 10, 64)
	return n, rest[:i], err == nil
}

func sortedCats(m map[string]Counters) []CategoryEntry {
	out := make([]CategoryEntry, 0, len(m))
	for name, c := range m {
		out = append(out, CategoryEntry{Category: name, Counters: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Category < out[j].Category })
	return out
}
