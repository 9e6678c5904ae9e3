package accesslog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Namespace is bucket logging's namespace in the log pool.
const Namespace = "bucket-logging"

// Xattrs of a pending log object.
const (
	xattrState = "state" // "open" | "sealed"
	xattrMeta  = "meta"  // pendingMeta JSON, set at creation
	xattrKey   = "key"   // the delivered object's key, set when sealed
)

var (
	stateOpen   = []byte("open")
	stateSealed = []byte("sealed")
)

// Defaults (RGW: rgw_bucket_logging_obj_roll_time is 300 s).
const (
	DefaultRollTime      = 300 * time.Second
	DefaultFlushInterval = time.Second
	// maxBuffered bounds a bucket's buffered standard records; past it
	// the request that filled it writes them.
	maxBuffered = 1 << 20
	// maxLogObject rolls a pending object early (RGW: 128 MiB).
	maxLogObject = 128 << 20
)

// Options configure a Logger.
type Options struct {
	Driver *driver.Driver
	IO     objstore.IOContext // the log pool; the Logger uses Namespace in it
	BootID string             // unique per gateway process
	Region string             // partitioned keys' [SourceRegion]
	// RollTime is the roll time of configurations without ObjectRollTime.
	// Default DefaultRollTime.
	RollTime time.Duration
	// FlushInterval is how often buffered standard records are appended
	// to their pending object and rolls are due-checked. Default 1 s.
	FlushInterval time.Duration
	// SweepInterval is how often every pending object (also other
	// gateways' and dead processes') is checked for a due roll. Default
	// 30 s.
	SweepInterval time.Duration
	Now           func() time.Time
	Logger        *slog.Logger
}

// pendingMeta is where a pending object goes, fixed when it is created:
// a configuration change starts a new object, the old one is delivered
// where its records were meant to go.
type pendingMeta struct {
	SourceBucket string    `json:"source_bucket"`
	SourceID     string    `json:"source_id"`
	SourceOwner  string    `json:"source_owner"` // account id, or the owner's user id
	Region       string    `json:"region"`
	Target       string    `json:"target_bucket"`
	Prefix       string    `json:"target_prefix,omitempty"`
	KeyFormat    string    `json:"key_format"`
	DateSource   string    `json:"date_source,omitempty"`
	RollTime     int       `json:"roll_time"`
	Created      time.Time `json:"created"`
}

func (m *pendingMeta) sig() string {
	return m.Target + "\x00" + m.Prefix + "\x00" + m.KeyFormat + "\x00" + m.DateSource + "\x00" + fmt.Sprint(m.RollTime)
}

// bucketLog is this gateway's state for one source bucket.
type bucketLog struct {
	mu      sync.Mutex
	name    string // current pending object; "" none
	meta    pendingMeta
	size    int64
	buf     []byte // standard records not yet appended
	nbuf    int    // records in buf
	bufMeta pendingMeta
	wmu     sync.Mutex // one buffer write at a time, in order

	// Journal group commit: records arriving while one append is in
	// flight are written together by the next one.
	jmu   sync.Mutex
	jq    []*jwrite
	jbusy bool
}

type jwrite struct {
	data []byte
	res  chan error // the batch's result, or errLead: write the next batch
}

var errLead = errors.New("accesslog: lead the next journal batch")

// journal appends data (synced) as part of a batch: the first caller
// writes its record with every record queued meanwhile, then hands the
// next batch to the first caller that queued behind it. Each caller
// returns once its own record is durable (or failed).
func (l *Logger) journal(ctx context.Context, bl *bucketLog, meta pendingMeta, data []byte) error {
	w := &jwrite{data: data, res: make(chan error, 1)}
	bl.jmu.Lock()
	bl.jq = append(bl.jq, w)
	if bl.jbusy {
		bl.jmu.Unlock()
		if err := <-w.res; err != errLead {
			return err
		}
		bl.jmu.Lock()
	}
	bl.jbusy = true
	batch := bl.jq
	bl.jq = nil
	bl.jmu.Unlock()
	buf := data
	if len(batch) > 1 {
		buf = nil
		for _, b := range batch {
			buf = append(buf, b.data...)
		}
	}
	err := l.append(ctx, bl, meta, buf, false)
	bl.jmu.Lock()
	if len(bl.jq) > 0 {
		bl.jq[0].res <- errLead
	} else {
		bl.jbusy = false
	}
	bl.jmu.Unlock()
	for _, b := range batch {
		if b != w {
			b.res <- err
		}
	}
	return err
}

// Logger delivers bucket logging records. Safe for concurrent use.
type Logger struct {
	opts Options
	d    *driver.Driver
	io   objstore.IOContext
	log  *slog.Logger

	// Lock order: mu, then a bucketLog's mu; dmu, seq, entry and
	// accounts are leaves.
	mu       sync.Mutex
	buckets  map[string]*bucketLog // by source bucket id
	seq      atomic.Uint64
	entry    atomic.Uint64
	accounts sync.Map // owner uid -> partitioned keys' account id
	dmu      sync.Mutex
	detached []string // pending objects replaced before their roll time

	rmu  sync.Mutex // one roll pass at a time
	stop chan struct{}
	done chan struct{}

	// zenc packs standard records (each second's, of a bucket) before
	// they are appended; zdec unpacks them at delivery. Both are safe
	// for concurrent EncodeAll/DecodeAll.
	zenc *zstd.Encoder
	zdec *zstd.Decoder
}

// New returns a Logger; Start runs its flusher.
func New(opts Options) (*Logger, error) {
	if opts.Driver == nil || opts.IO == nil || opts.BootID == "" {
		return nil, errors.New("accesslog: Driver, IO and BootID are required")
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.SweepInterval <= 0 {
		opts.SweepInterval = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.RollTime < time.Second {
		opts.RollTime = DefaultRollTime
	}
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	zenc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	zdec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(2*maxLogObject))
	if err != nil {
		return nil, err
	}
	return &Logger{
		opts: opts, d: opts.Driver, io: opts.IO.WithNamespace(Namespace), log: opts.Logger,
		buckets: map[string]*bucketLog{}, zenc: zenc, zdec: zdec,
	}, nil
}

// Start runs the flusher: buffered records every FlushInterval, due
// rolls, and a sweep of every pending object every SweepInterval.
func (l *Logger) Start() {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(l.opts.FlushInterval)
		defer t.Stop()
		lastSweep := time.Time{}
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
			}
			ctx := context.Background()
			l.flushBuffers(ctx)
			sweep := time.Since(lastSweep) >= l.opts.SweepInterval
			if sweep {
				lastSweep = time.Now()
			}
			if err := l.rollDue(ctx, sweep, ""); err != nil {
				l.log.Warn("bucket logging: roll failed", "err", err)
			}
		}
	}()
}

// Close stops the flusher, appends buffered records and delivers this
// gateway's pending objects (shutdown flush).
func (l *Logger) Close(ctx context.Context) error {
	if l.stop != nil {
		close(l.stop)
		<-l.done
		l.stop = nil
	}
	l.flushBuffers(ctx)
	var errs []error
	for _, name := range append(l.takeDetached(), l.detachAll("")...) {
		if _, err := l.roll(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DeferSyncs returns ctx for a journaled operation's own writes: on the
// store of the log pool they are applied without waiting for a sync, and
// the journal record's synced write (Log, which must follow before the
// operation is acknowledged) makes them durable with it. One sync per
// journaled write, as without logging (two with a persistent
// notification: its queue commit is synced, so that no event goes out
// before its write is durable).
func (l *Logger) DeferSyncs(ctx context.Context) context.Context {
	return objstore.WithDeferredSync(ctx, l.io)
}

// Enabled returns the source bucket's logging configuration and instance
// (from the driver's instance cache), or nil when logging is off or the
// bucket does not exist.
func (l *Logger) Enabled(ctx context.Context, bucket string) (*driver.BucketLogging, driver.Instance) {
	if bucket == "" {
		return nil, driver.Instance{}
	}
	cfg, inst, err := l.d.GetBucketLogging(ctx, bucket)
	if err != nil {
		return nil, driver.Instance{}
	}
	return cfg, inst
}

// Journaled reports whether op (a Cairn operation name) is one RGW's
// journal mode records.
func Journaled(op string) bool { return journalOps[op] }

var journalOps = map[string]bool{
	"PutObject": true, "CopyObject": true, "DeleteObject": true, "DeleteObjects": true,
	"CompleteMultipartUpload": true, "PutObjectAcl": true, "PutObjectLegalHold": true,
	"PutObjectRetention": true, "PutObjectTagging": true, "DeleteObjectTagging": true,
}

// Log records rs for the source bucket inst under cfg. Standard records
// are buffered and appended within FlushInterval; journal records are
// appended (together) and synced before Log returns, and an error means
// none is stored. Records the filter excludes are dropped.
//
// A journal record's synced write is its operation's commit point: when
// ctx defers syncs (objstore.WithDeferredSync), the operation's own
// writes were applied unsynced before it, and the record's sync makes
// them durable too (the embedded store has one ordered WAL; RADOS writes
// are durable when acknowledged). With nothing to write, Log then syncs
// the store itself.
func (l *Logger) Log(ctx context.Context, inst driver.Instance, cfg *driver.BucketLogging, rs ...*Record) error {
	meta := l.metaFor(inst, cfg)
	bl := l.bucket(inst.ID)
	if cfg.Type == driver.LoggingJournal {
		var lines []byte
		for _, r := range rs {
			if matchFilter(cfg.Filter, r.Key) {
				lines = AppendJournal(lines, r)
			}
		}
		deferred := objstore.DeferredSync(ctx)
		ctx = objstore.WithDeferredSync(ctx, nil)
		if len(lines) == 0 {
			if deferred != nil {
				return objstore.Sync(ctx, deferred)
			}
			return nil
		}
		return l.journal(ctx, bl, meta, lines)
	}
	bl.mu.Lock()
	if len(bl.buf) > 0 && bl.bufMeta.sig() != meta.sig() {
		// A configuration change: records before it go where they were meant to.
		bl.mu.Unlock()
		l.flushBucket(ctx, bl)
		bl.mu.Lock()
	}
	bl.bufMeta = meta
	for _, r := range rs {
		bl.buf = AppendStandard(bl.buf, r)
		bl.nbuf++
	}
	full := len(bl.buf) >= maxBuffered || (cfg.BatchSize > 0 && bl.nbuf >= cfg.BatchSize)
	bl.mu.Unlock()
	if full {
		l.flushBucket(ctx, bl)
	}
	return nil
}

func (l *Logger) metaFor(inst driver.Instance, cfg *driver.BucketLogging) pendingMeta {
	roll := cfg.RollTime
	if roll <= 0 {
		roll = int(l.opts.RollTime / time.Second)
	}
	return pendingMeta{
		SourceBucket: inst.Name, SourceID: inst.ID, SourceOwner: inst.Owner, Region: l.opts.Region,
		Target: cfg.TargetBucket, Prefix: cfg.TargetPrefix, KeyFormat: cfg.KeyFormat, DateSource: cfg.DateSource,
		RollTime: roll,
	}
}

// ownerAccount is the partitioned key's [SourceAccountId]: the owner's
// IAM account, or the owner's user id (each user is its own account).
func (l *Logger) ownerAccount(uid string) string {
	if a, ok := l.accounts.Load(uid); ok {
		return a.(string)
	}
	acct := uid
	u, err := l.d.GetUser(context.Background(), uid)
	if err == nil && u.Account != "" {
		acct = u.Account
	}
	if err == nil {
		l.accounts.Store(uid, acct) // a user never changes account
	}
	return acct
}

func (l *Logger) bucket(id string) *bucketLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	bl := l.buckets[id]
	if bl == nil {
		bl = &bucketLog{}
		l.buckets[id] = bl
	}
	return bl
}

// flushBuffers appends every bucket's buffered standard records.
func (l *Logger) flushBuffers(ctx context.Context) {
	l.mu.Lock()
	bls := make([]*bucketLog, 0, len(l.buckets))
	for _, bl := range l.buckets {
		bls = append(bls, bl)
	}
	l.mu.Unlock()
	for _, bl := range bls {
		l.flushBucket(ctx, bl)
	}
}

func (l *Logger) flushBucket(ctx context.Context, bl *bucketLog) {
	bl.wmu.Lock()
	defer bl.wmu.Unlock()
	bl.mu.Lock()
	buf, meta := bl.buf, bl.bufMeta
	bl.buf, bl.nbuf = nil, 0
	bl.mu.Unlock()
	if len(buf) == 0 {
		return
	}
	if err := l.append(ctx, bl, meta, buf, true); err != nil {
		// Standard records are best effort (AWS's and RGW's): say so.
		l.log.Warn("bucket logging: records dropped", "bucket", meta.SourceBucket, "bytes", len(buf), "err", err)
	}
}

// append adds data to the bucket's current pending object, opening a
// new one when there is none, it was sealed by a roll (anyone's), or the
// configuration changed. The write is synced. With pack the entry holds
// the records compressed (docs/format/accesslog.md): standard records
// would otherwise go through the store at full size twice (here and in
// the delivered object), about 15 % more bytes than the 4 KiB PUTs they
// log. Journal records, written on the request's path, are not packed.
func (l *Logger) append(ctx context.Context, bl *bucketLog, meta pendingMeta, data []byte, pack bool) error {
	meta.SourceOwner = l.ownerAccount(meta.SourceOwner)
	raw := int64(len(data)) // what the delivered object grows by
	if pack {
		data = l.zenc.EncodeAll(data, append(make([]byte, 0, len(data)/4+64), packedEntry))
	}
	for attempt := 0; attempt < 8; attempt++ {
		bl.mu.Lock()
		name := bl.name
		if name != "" && (bl.meta.sig() != meta.sig() || bl.size+raw > maxLogObject) {
			l.detach(name) // delivered by the next roll pass
			name, bl.name = "", ""
		}
		var created bool
		if name == "" {
			name = l.newName(meta.SourceID)
			meta.Created = l.opts.Now().UTC()
			bl.name, bl.meta, bl.size, created = name, meta, 0, true
		}
		bl.size += raw
		bl.mu.Unlock()

		op := objstore.NewWriteOp()
		if created {
			mj, _ := json.Marshal(meta)
			op.Create(true)
			op.SetXattr(xattrState, stateOpen)
			op.SetXattr(xattrMeta, mj)
		} else {
			op.CmpXattr(xattrState, objstore.CmpEQ, stateOpen)
		}
		// One omap entry per append: a small key-value write, where an
		// append to the data would rewrite the object's last data chunk.
		op.SetOmap(objstore.KV{Key: l.nextEntry(), Value: data})
		err := l.io.Operate(ctx, name, op)
		if err == nil {
			return nil
		}
		if !errors.Is(err, objstore.ErrCanceled) && !errors.Is(err, objstore.ErrNotFound) && !errors.Is(err, objstore.ErrExists) {
			return err
		}
		// Sealed (or delivered) by a roll: open a new object.
		bl.mu.Lock()
		if bl.name == name {
			bl.name = ""
		}
		bl.mu.Unlock()
	}
	return errors.New("accesslog: pending log object kept changing")
}

// packedEntry starts an omap entry whose records are a zstd frame; a
// record line never starts with a NUL (fields replace control bytes).
const packedEntry = 0

// unpack appends the records of omap entry v to data.
func (l *Logger) unpack(data, v []byte) ([]byte, error) {
	if len(v) > 0 && v[0] == packedEntry {
		return l.zdec.DecodeAll(v[1:], data)
	}
	return append(data, v...), nil
}

// nextEntry is the next omap key of this process's appends: ordered,
// unique within each of its pending objects.
func (l *Logger) nextEntry() string {
	return fmt.Sprintf("%016x", l.entry.Add(1))
}

func (l *Logger) detach(name string) {
	l.dmu.Lock()
	l.detached = append(l.detached, name)
	l.dmu.Unlock()
}

func (l *Logger) takeDetached() []string {
	l.dmu.Lock()
	defer l.dmu.Unlock()
	d := l.detached
	l.detached = nil
	return d
}

func (l *Logger) newName(sourceID string) string {
	return fmt.Sprintf("%s/%s.%08d", sourceID, l.opts.BootID, l.seq.Add(1))
}

// detachAll takes this gateway's current pending objects (of one source
// bucket id, or all when "") off their buckets: the next record opens a
// new one; the detached ones are to be rolled.
func (l *Logger) detachAll(sourceID string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var names []string
	for id, bl := range l.buckets {
		if sourceID != "" && id != sourceID {
			continue
		}
		bl.mu.Lock()
		if bl.name != "" {
			names = append(names, bl.name)
			bl.name = ""
		}
		bl.mu.Unlock()
	}
	return names
}

// rollDue delivers pending objects whose roll time has passed: this
// gateway's at once, and with sweep every object in the namespace
// (other gateways', dead processes') once it is one roll time overdue,
// or sealed. prefix limits the sweep to one source bucket id.
func (l *Logger) rollDue(ctx context.Context, sweep bool, prefix string) error {
	l.rmu.Lock()
	defer l.rmu.Unlock()
	now := l.opts.Now()
	var due []string
	mine := map[string]bool{}
	due = l.takeDetached()
	l.mu.Lock()
	for _, bl := range l.buckets {
		bl.mu.Lock()
		if bl.name != "" {
			mine[bl.name] = true
			if now.Sub(bl.meta.Created) >= time.Duration(bl.meta.RollTime)*time.Second {
				due = append(due, bl.name)
				delete(mine, bl.name)
				bl.name = ""
			}
		}
		bl.mu.Unlock()
	}
	l.mu.Unlock()
	var errs []error
	for _, name := range due {
		if _, err := l.roll(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	if !sweep {
		return errors.Join(errs...)
	}
	names, err := l.list(ctx, prefix)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, name := range names {
		if mine[name] {
			continue
		}
		st, meta, err := l.readState(ctx, name)
		if err != nil {
			continue // delivered meanwhile
		}
		overdue := now.Sub(meta.Created) >= 2*time.Duration(meta.RollTime)*time.Second
		if bytes.Equal(st, stateSealed) || overdue {
			if _, err := l.roll(ctx, name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// list returns the pending objects whose names begin with prefix.
func (l *Logger) list(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	marker := prefix
	for {
		oids, more, err := l.io.ListObjects(ctx, marker, 1000)
		if err != nil {
			return nil, err
		}
		for _, o := range oids {
			if !strings.HasPrefix(o, prefix) {
				return out, nil
			}
			out = append(out, o)
		}
		if !more || len(oids) == 0 {
			return out, nil
		}
		marker = oids[len(oids)-1]
	}
}

func (l *Logger) readState(ctx context.Context, name string) ([]byte, pendingMeta, error) {
	op := objstore.NewReadOp()
	st := op.GetXattr(xattrState)
	mt := op.GetXattr(xattrMeta)
	if err := l.io.OperateRead(ctx, name, op); err != nil {
		return nil, pendingMeta{}, err
	}
	var m pendingMeta
	if err := json.Unmarshal(mt.Value, &m); err != nil {
		return nil, m, fmt.Errorf("accesslog: %s: bad meta: %w", name, err)
	}
	return st.Value, m, nil
}

// roll seals a pending object (if still open), writes its records as an
// object in the target bucket and removes it. It is idempotent: the key
// is fixed when sealing, so a roll that crashed, or one racing another
// gateway's, writes the same object with the same content. It returns
// the delivered key ("" when the object was empty or already gone).
func (l *Logger) roll(ctx context.Context, name string) (string, error) {
	st, meta, err := l.readState(ctx, name)
	if errors.Is(err, objstore.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if bytes.Equal(st, stateOpen) {
		key := l.objectKey(meta, name)
		op := objstore.NewWriteOp()
		op.CmpXattr(xattrState, objstore.CmpEQ, stateOpen)
		op.SetXattr(xattrState, stateSealed)
		op.SetXattr(xattrKey, []byte(key))
		err := l.io.Operate(ctx, name, op)
		if errors.Is(err, objstore.ErrNotFound) {
			return "", nil
		}
		if err != nil && !errors.Is(err, objstore.ErrCanceled) {
			return "", err
		}
	}
	var key string
	var data []byte
	for after := ""; ; {
		rop := objstore.NewReadOp()
		kx := rop.GetXattr(xattrKey)
		vals := rop.GetOmapValues(after, "", 1000)
		if err := l.io.OperateRead(ctx, name, rop); err != nil {
			if errors.Is(err, objstore.ErrNotFound) {
				return "", nil
			}
			return "", err
		}
		key = string(kx.Value)
		for _, kv := range vals.Pairs {
			if data, err = l.unpack(data, kv.Value); err != nil {
				return "", fmt.Errorf("accesslog: %s entry %s: %w", name, kv.Key, err)
			}
			after = kv.Key
		}
		if !vals.More {
			break
		}
	}
	if len(data) > 0 {
		_, err := l.d.PutObject(ctx, driver.PutObjectInput{
			Bucket: meta.Target, Key: key, Body: bytes.NewReader(data), Size: int64(len(data)),
			Meta: driver.ObjectMeta{ContentType: "text/plain"},
		})
		if err != nil {
			return "", fmt.Errorf("accesslog: deliver %s to %s/%s: %w", name, meta.Target, key, err)
		}
	} else {
		key = ""
	}
	dop := objstore.NewWriteOp()
	dop.CmpXattr(xattrState, objstore.CmpEQ, stateSealed)
	dop.Remove()
	if err := l.io.Operate(ctx, name, dop); err != nil && !errors.Is(err, objstore.ErrNotFound) && !errors.Is(err, objstore.ErrCanceled) {
		return key, err
	}
	return key, nil
}

// objectKey is the delivered key AWS documents:
// [TargetPrefix]YYYY-mm-DD-HH-MM-SS-UniqueString, or partitioned
// [TargetPrefix][SourceAccountId]/[SourceRegion]/[SourceBucket]/YYYY/MM/DD/YYYY-MM-DD-hh-mm-ss-UniqueString.
// The unique string is derived from the pending object's name, so
// every roll of one pending object picks the same key.
func (l *Logger) objectKey(m pendingMeta, name string) string {
	t := m.Created
	if m.KeyFormat == driver.KeyFormatPartitioned && m.DateSource == "DeliveryTime" {
		t = l.opts.Now()
	}
	t = t.UTC()
	h := sha256.Sum256([]byte(name))
	uniq := strings.ToUpper(hex.EncodeToString(h[:8]))
	stamp := t.Format("2006-01-02-15-04-05") + "-" + uniq
	if m.KeyFormat == driver.KeyFormatPartitioned {
		return m.Prefix + m.SourceOwner + "/" + m.Region + "/" + m.SourceBucket + "/" + t.Format("2006/01/02") + "/" + stamp
	}
	return m.Prefix + stamp
}

// Flush writes the pending records of a source bucket at once (radosgw-
// admin bucket logging flush): this gateway's buffered records, then
// every pending object of the bucket, also other gateways' (sealing
// makes that safe). It returns the keys written in the target bucket.
func (l *Logger) Flush(ctx context.Context, bucket string) ([]string, error) {
	inst, err := l.d.Instance(ctx, bucket)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	bl := l.buckets[inst.ID]
	l.mu.Unlock()
	if bl != nil {
		l.flushBucket(ctx, bl)
	}
	l.detachAll(inst.ID)
	l.rmu.Lock()
	defer l.rmu.Unlock()
	names, err := l.list(ctx, inst.ID+"/")
	if err != nil {
		return nil, err
	}
	keys := []string{}
	var errs []error
	for _, name := range names {
		k, err := l.roll(ctx, name)
		if err != nil {
			errs = append(errs, err)
		}
		if k != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys, errors.Join(errs...)
}
