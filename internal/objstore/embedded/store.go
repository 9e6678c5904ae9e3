package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

var (
	_ objstore.Store     = (*Store)(nil)
	_ objstore.IOContext = (*ioctx)(nil)
)

// Store is the embedded backend. Create it with Open.
type Store struct {
	opts    Options
	db      *pebble.DB
	lock    io.Closer
	blobDir string
	loadDir string          // omap loads' tables before their ingest (emptied at Open)
	po      *pebble.Options // as opened: an omap load writes tables like the LSM's own
	loads   atomic.Uint64   // omap loads committed
	// loadTables: tables loads ingested; loadMemOverlaps: those that
	// overlapped a memtable's keys (they land in L0 when it flushes).
	loadTables, loadMemOverlaps atomic.Uint64
	locks                       *lockTable
	log                         *slog.Logger

	// Versions and blob ids are epoch<<40 | counter: the epoch is bumped and
	// synced at every Open, so both strictly increase across restarts.
	epoch   uint64
	counter atomic.Uint64

	poolsMu sync.RWMutex // guards pools and nextPool
	pools   map[string]*pool

	inflightMu sync.Mutex
	inflight   map[*ticket]struct{} // applied or applying, not yet synced

	closed atomic.Bool
	// noDirect is set once the filesystem refused an O_DIRECT blob write.
	noDirect atomic.Bool

	// Write stalls (pebble stopped writes: memtables or L0 full).
	stalls, stallNanos atomic.Int64
	stallSince         atomic.Int64
	// Flushes and compactions begun and finished (the EventListener's
	// counts, read by LSMCounters).
	flushBegun, flushDone, compBegun, compDone atomic.Int64
	// Bytes of blob files written by blob file rewrites (pebble's level
	// metrics leave them out).
	blobRewritten atomic.Uint64
	// Synced commits and where they waited (pebble's BatchCommitStats,
	// summed in nanoseconds; read by LSMCounters).
	commits                                              atomic.Int64
	commitNanos, semNanos, walQueueNanos, stallWaitNanos atomic.Int64
	syncWaitNanos                                        atomic.Int64

	// pointGets counts the ops' pebble point reads (txn.get).
	pointGets atomic.Uint64

	// Compactions of ranges scans found full of dead keys (deadrange.go),
	// and the background work Close cancels and waits for.
	deadLast            atomic.Int64
	deadRunning         atomic.Bool
	deadAsked, deadDone atomic.Int64
	bgMu                sync.Mutex // orders bg.Add before Close's bg.Wait
	bgCtx               context.Context
	bgStop              context.CancelFunc
	bg                  sync.WaitGroup
}

// WriteStalls reports how often and for how long pebble stopped writes
// since Open because flushes or compactions fell behind.
func (s *Store) WriteStalls() (count int64, total time.Duration) {
	return s.stalls.Load(), time.Duration(s.stallNanos.Load())
}

type pool struct {
	name string
	id   uint64
	// mu is held shared while an op applies, exclusively by DeletePool, so
	// that no write lands after the pool's range deletion.
	mu      sync.RWMutex
	deleted bool
}

var syncOpts = pebble.Sync

// Open opens (creating if needed) the store in opts.Dir.
func Open(opts Options) (*Store, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	startMallocTrim()
	fs := opts.FS
	// The store holds users' secret keys in clear: owner-only directories
	// make every file below unreachable to others whatever its own mode
	// (pebble creates files 0666 minus the umask; `cairn serve` sets 077).
	if err := fs.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded: create data directory: %w", err)
	}
	lock, err := fs.Lock(fs.PathJoin(opts.Dir, "LOCK"))
	if err != nil {
		return nil, lockError(opts.Dir, err)
	}
	s := &Store{
		opts:     opts,
		lock:     lock,
		blobDir:  fs.PathJoin(opts.Dir, "blobs"),
		loadDir:  fs.PathJoin(opts.Dir, "load"),
		locks:    newLockTable(opts.MaxCachedObjects),
		log:      opts.Logger,
		pools:    map[string]*pool{},
		inflight: map[*ticket]struct{}{},
	}
	s.bgCtx, s.bgStop = context.WithCancel(context.Background())
	if err := s.open(); err != nil {
		if s.db != nil {
			s.db.Close()
		}
		lock.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) open() error {
	fs := s.opts.FS
	if err := fs.MkdirAll(s.blobDir, 0o700); err != nil {
		return fmt.Errorf("embedded: create blob directory: %w", err)
	}
	// Tables of loads a crash interrupted were never ingested.
	if err := fs.RemoveAll(s.loadDir); err != nil {
		return fmt.Errorf("embedded: empty load directory: %w", err)
	}
	if err := fs.MkdirAll(s.loadDir, 0o700); err != nil {
		return fmt.Errorf("embedded: create load directory: %w", err)
	}
	// Made here, not by pebble (which would use 0755).
	if err := fs.MkdirAll(fs.PathJoin(s.opts.Dir, "db"), 0o700); err != nil {
		return fmt.Errorf("embedded: create db directory: %w", err)
	}
	cache := pebble.NewCache(s.opts.CacheSize)
	defer cache.Unref()
	pfs := fs
	if fs == vfs.Default && !s.opts.DisableMmap {
		pfs = mmapFS{fs}
	}
	po := &pebble.Options{
		FS:                 pfs,
		Cache:              cache,
		MemTableSize:       s.opts.MemTableSize,
		MaxOpenFiles:       s.opts.MaxOpenFiles,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebbleLogger{s.log},
		EventListener: &pebble.EventListener{
			WriteStallBegin: func(pebble.WriteStallBeginInfo) {
				s.stalls.Add(1)
				s.stallSince.Store(time.Now().UnixNano())
			},
			WriteStallEnd: func() {
				if t := s.stallSince.Swap(0); t != 0 {
					s.stallNanos.Add(time.Now().UnixNano() - t)
				}
			},
			FlushBegin:      func(pebble.FlushInfo) { s.flushBegun.Add(1) },
			FlushEnd:        func(pebble.FlushInfo) { s.flushDone.Add(1) },
			CompactionBegin: func(pebble.CompactionInfo) { s.compBegun.Add(1) },
			CompactionEnd:   func(pebble.CompactionInfo) { s.compDone.Add(1) },
			BlobFileRewriteEnd: func(i pebble.BlobFileRewriteInfo) {
				if i.Done && i.Err == nil {
					s.blobRewritten.Add(i.Output.Size)
				}
			},
		},
	}
	if n := s.opts.TargetFileSize; n > 0 {
		for i := range po.TargetFileSizes {
			po.TargetFileSizes[i] = n
		}
	}
	tuneReads(po)
	separateValues(po, s.opts.ValueSeparation)
	if !s.opts.NoIngestSplit {
		po.Experimental.IngestSplit = func() bool { return true }
	}
	if n := s.opts.CompactionConcurrency; n > 1 {
		po.CompactionConcurrencyRange = func() (int, int) { return 1, n }
	}
	po.EnsureDefaults()
	s.po = po
	db, err := pebble.Open(fs.PathJoin(s.opts.Dir, "db"), po)
	if err != nil {
		return fmt.Errorf("embedded: open pebble: %w", err)
	}
	s.db = db

	if v, ok, err := s.getSys(sysFormat); err != nil {
		return err
	} else if ok && (len(v) != 8 || binary.BigEndian.Uint64(v) < 1 || binary.BigEndian.Uint64(v) > formatVersion) {
		return fmt.Errorf("embedded: data directory format %x, this build reads 1 to %d", v, formatVersion)
	}
	v, ok, err := s.getSys(sysEpoch)
	if err != nil {
		return err
	}
	if ok {
		s.epoch = binary.BigEndian.Uint64(v)
	}
	s.epoch++
	if s.epoch >= 1<<23 {
		return errors.New("embedded: boot epoch exhausted")
	}
	b := db.NewBatch()
	b.Set(sysEpoch, u64(nil, s.epoch), nil)
	b.Set(sysFormat, u64(nil, formatVersion), nil)
	if err := db.Apply(b, syncOpts); err != nil {
		return fmt.Errorf("embedded: record boot epoch: %w", err)
	}
	// Make the directory entries themselves durable (a fresh data
	// directory could otherwise vanish in a crash with its synced WAL).
	if err := syncDirs(fs, s.opts.Dir, fs.PathDir(s.opts.Dir)); err != nil {
		return fmt.Errorf("embedded: sync data directory: %w", err)
	}
	if err := s.loadPools(); err != nil {
		return err
	}
	return s.collectBlobs()
}

func syncDirs(fs vfs.FS, dirs ...string) error {
	for _, d := range dirs {
		f, err := fs.OpenDir(d)
		if err != nil {
			return err
		}
		if err := errors.Join(f.Sync(), f.Close()); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) getSys(k []byte) ([]byte, bool, error) {
	v, c, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer c.Close()
	return append([]byte(nil), v...), true, nil
}

func (s *Store) loadPools() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kPool}, UpperBound: []byte{kPool + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		name := string(it.Key()[1:])
		s.pools[name] = &pool{name: name, id: binary.BigEndian.Uint64(it.Value())}
	}
	return it.Error()
}

// nextID returns a fresh version or blob id.
func (s *Store) nextID() uint64 {
	c := s.counter.Add(1)
	if c >= 1<<40 {
		panic("embedded: version counter exhausted; restart the store")
	}
	return s.epoch<<40 | c
}

// Close flushes the memtable and releases the data directory.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.bgMu.Lock() // a noteDead past its closed check has added to bg
	s.bgMu.Unlock()
	s.bgStop()
	s.bg.Wait()
	err := s.db.Flush()
	err = errors.Join(err, s.db.Close(), s.lock.Close())
	return err
}

func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return objstore.Errorf(objstore.ErrInvalid, "embedded: store is closed")
	}
	return nil
}

// CreatePool: rados_pool_create.
func (s *Store) CreatePool(ctx context.Context, name string) error {
	if err := objstore.ValidatePoolName(name); err != nil {
		return err
	}
	if err := s.checkOpen(); err != nil {
		return err
	}
	s.poolsMu.Lock()
	defer s.poolsMu.Unlock()
	if _, ok := s.pools[name]; ok {
		return objstore.Errorf(objstore.ErrExists, "pool %q", name)
	}
	var id uint64 = 1
	if v, ok, err := s.getSys(sysNextPool); err != nil {
		return err
	} else if ok {
		id = binary.BigEndian.Uint64(v)
	}
	b := s.db.NewBatch()
	defer b.Close()
	b.Set(poolKey(name), u64(nil, id), nil)
	b.Set(sysNextPool, u64(nil, id+1), nil)
	if err := s.db.Apply(b, syncOpts); err != nil {
		return fmt.Errorf("embedded: create pool %q: %w", name, err)
	}
	s.pools[name] = &pool{name: name, id: id}
	return nil
}

// DeletePool: rados_pool_delete. Objects go by range deletion; their blob
// files are removed after the deletion is durable.
func (s *Store) DeletePool(ctx context.Context, name string) error {
	if err := objstore.ValidatePoolName(name); err != nil {
		return err
	}
	if err := s.checkOpen(); err != nil {
		return err
	}
	s.poolsMu.Lock()
	defer s.poolsMu.Unlock()
	p := s.pools[name]
	if p == nil {
		return objstore.Errorf(objstore.ErrNotFound, "pool %q", name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// Wait for syncs of writes already applied, so blob deletion below
	// cannot race a pending commit's cleanup.
	s.waitInflight(nil)

	b := s.db.NewBatch()
	defer b.Close()
	mlo, mhi := poolSpan(kMeta, p.id)
	blobs, err := s.poolBlobs(mlo, mhi)
	if err != nil {
		return err
	}
	for _, id := range blobs {
		b.Delete(blobRefKey(id), nil)
	}
	olo, ohi := poolSpan(kObj, p.id)
	b.DeleteRange(mlo, mhi, nil)
	b.DeleteRange(olo, ohi, nil)
	vlo, vhi := poolSpan(kView, p.id)
	b.DeleteRange(vlo, vhi, nil)
	b.Delete(poolKey(name), nil)
	if err := s.db.Apply(b, syncOpts); err != nil {
		return fmt.Errorf("embedded: delete pool %q: %w", name, err)
	}
	p.deleted = true
	delete(s.pools, name)
	for _, id := range blobs {
		s.removeBlob(id)
	}
	s.locks.dropPrefix(string(u64(nil, p.id)))
	return nil
}

func (s *Store) poolBlobs(lo, hi []byte) ([]uint64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var ids []uint64
	for it.First(); it.Valid(); it.Next() {
		m, err := decodeMeta(it.Value())
		if err != nil {
			return nil, err
		}
		if m.blob != 0 {
			ids = append(ids, m.blob)
		}
	}
	return ids, it.Error()
}

// ListPools: rados_pool_list.
func (s *Store) ListPools(ctx context.Context) ([]string, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	s.poolsMu.RLock()
	defer s.poolsMu.RUnlock()
	out := make([]string, 0, len(s.pools))
	for n := range s.pools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// IOContext: rados_ioctx_create.
func (s *Store) IOContext(ctx context.Context, name string) (objstore.IOContext, error) {
	if err := objstore.ValidatePoolName(name); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	s.poolsMu.RLock()
	p := s.pools[name]
	s.poolsMu.RUnlock()
	if p == nil {
		return nil, objstore.Errorf(objstore.ErrNotFound, "pool %q", name)
	}
	return &ioctx{s: s, pool: p}, nil
}

// registerInflight must precede the apply, so that any reader that can see
// the batch also finds its ticket.
func (s *Store) registerInflight(t *ticket) {
	s.inflightMu.Lock()
	s.inflight[t] = struct{}{}
	s.inflightMu.Unlock()
}

func (s *Store) finishInflight(t *ticket, err error) {
	t.err = err
	s.inflightMu.Lock()
	delete(s.inflight, t)
	s.inflightMu.Unlock()
	close(t.done)
}

// waitInflight waits for every write registered so far to be synced; with
// a views range, only for those that set or removed view keys in [lo, hi).
func (s *Store) waitInflight(views *keySpan) error {
	s.inflightMu.Lock()
	ts := make([]*ticket, 0, len(s.inflight))
	for t := range s.inflight {
		if views == nil || t.views.meets(views.lo, views.hi) {
			ts = append(ts, t)
		}
	}
	s.inflightMu.Unlock()
	var err error
	for _, t := range ts {
		if e := t.wait(); e != nil {
			err = e
		}
	}
	return err
}

type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "component", "pebble")
	panic("pebble: " + msg)
}

// lockError says why the data directory's LOCK could not be taken: only a
// lock conflict means another process; a read-only file system or missing
// permission must not send the operator looking for one.
func lockError(dir string, err error) error {
	switch {
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("embedded: data directory %s is on a read-only file system (%w)", dir, err)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("embedded: data directory %s is read-only for this user: no permission to write %s (%w)", dir, "LOCK", err)
	}
	return fmt.Errorf("embedded: data directory %s held by another process (%v)", dir, err)
}
