package embedded

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/interp"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

var _ objstore.OmapLoader = (*ioctx)(nil)

// loadSeq names load files apart within one process; the load directory
// is emptied at every Open, so names need not survive a restart.
var loadSeq atomic.Uint64

// NewOmapLoad implements objstore.OmapLoader: one sorted table per object,
// written under <dir>/load and ingested into the LSM at Commit. An
// ingested table whose keys overlap nothing below goes to the lowest
// level: written once, never compacted, where the same pairs through
// Operate would pass the WAL, the memtable and every level's compaction.
func (c *ioctx) NewOmapLoad(ctx context.Context) (objstore.OmapLoad, error) {
	if c.nsErr != nil {
		return nil, c.nsErr
	}
	if err := c.s.checkOpen(); err != nil {
		return nil, err
	}
	return &omapLoad{c: c, id: loadSeq.Add(1), files: map[string]*loadFile{}, guards: map[string][]objstore.Step{}}, ctx.Err()
}

type omapLoad struct {
	c      *ioctx
	id     uint64
	files  map[string]*loadFile
	guards map[string][]objstore.Step
	done   bool
}

type loadFile struct {
	path string
	fh   *heldFile
	w    *sstable.Writer
	last []byte // the last key written (full store key)
	base int    // len of the object's omap part prefix
}

// Add implements objstore.OmapLoad.
func (l *omapLoad) Add(oid, key string, value []byte) error {
	if l.done {
		return objstore.Errorf(objstore.ErrInvalid, "omap load: already committed or aborted")
	}
	f := l.files[oid]
	if f == nil {
		if err := objstore.ValidateObjectName(oid); err != nil {
			return err
		}
		var err error
		if f, err = l.create(oid); err != nil {
			return err
		}
		l.files[oid] = f
	}
	if err := objstore.ValidateOmapKey(key); err != nil {
		return err
	}
	k := append(f.last[:f.base:f.base], key...)
	if len(f.last) > f.base && bytes.Compare(k, f.last) <= 0 {
		return objstore.Errorf(objstore.ErrInvalid, "omap load: key %q of %q after %q", key, oid, f.last[f.base:])
	}
	if err := f.w.Set(k, value); err != nil {
		return fmt.Errorf("embedded: omap load: %w", err)
	}
	f.last = k
	return nil
}

// Guard implements objstore.OmapLoad.
func (l *omapLoad) Guard(oid string, guard *objstore.ReadOp) error {
	if err := objstore.ValidateObjectName(oid); err != nil {
		return err
	}
	for _, s := range guard.Steps {
		switch s.(type) {
		case *objstore.AssertExists, *objstore.AssertVersion, *objstore.CmpXattr, *objstore.OmapCmp:
		default:
			return objstore.Errorf(objstore.ErrInvalid, "omap load: guard step %T", s)
		}
	}
	l.guards[oid] = append(l.guards[oid], guard.Steps...)
	return nil
}

func (l *omapLoad) create(oid string) (*loadFile, error) {
	s := l.c.s
	path := s.opts.FS.PathJoin(s.loadDir, strconv.FormatUint(l.id, 10)+"-"+strconv.Itoa(len(l.files))+".sst")
	fh, err := s.opts.FS.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("embedded: omap load: %w", err)
	}
	// Written back as it goes (sync_file_range, as pebble does for its own
	// tables), so that no large dirty backlog lands on a WAL sync.
	held := &heldFile{File: vfs.NewSyncingFile(fh, vfs.SyncingFileOptions{BytesPerSync: 512 << 10})}
	wo := loadWriterOptions(s.po.MakeWriterOptions(len(s.po.Levels)-1, s.db.FormatMajorVersion().MaxTableFormat()))
	prefix := objPrefix(l.c.pool.id, l.c.ns, oid)
	last := append(append(make([]byte, 0, len(prefix)+64), prefix...), partOmap)
	return &loadFile{path: path, fh: held, w: sstable.NewWriter(objstorageprovider.NewFileWritable(held), wo), last: last, base: len(last)}, nil
}

// heldFile is a load table's file, left open and unsynced when its writer
// finishes: Commit syncs a chunk's tables together (syncTables). One after
// another, each table's fsync waited for its own data, inode and device
// flush (487 at a 487-shard reshard's chunk commit, 310-375 ms on this
// disk beside a fill, 110-170 ms 32 at a time; docs/bench/scale.md).
type heldFile struct {
	vfs.File
	closed bool
}

func (f *heldFile) Sync() error  { return nil } // syncTables
func (f *heldFile) Close() error { return nil } // syncTables or release

// release closes the file once.
func (f *heldFile) release() error {
	if f.closed {
		return nil
	}
	f.closed = true
	return f.File.Close()
}

// maxTableSyncs bounds the concurrent fsyncs of a commit.
const maxTableSyncs = 32

// syncTables makes finished load tables durable, up to maxTableSyncs at a
// time, and closes them.
func syncTables(files []*loadFile) error {
	work := make(chan *loadFile)
	errs := make(chan error, len(files))
	var wg sync.WaitGroup
	for range min(len(files), maxTableSyncs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				err := f.fh.File.Sync()
				if cerr := f.fh.release(); err == nil {
					err = cerr
				}
				errs <- err
			}
		}()
	}
	for _, f := range files {
		work <- f
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// loadWriterOptions trims what an open table writer holds, since a load
// keeps one open per object it fills (a reshard: every target shard, up
// to max-shards) until its chunk commits: at the store's options a writer
// held ~200 KiB before its first block was out, three quarters of it
// fixed (TestOmapLoadWriterMemory). A loaded table holds each key once, so
// it has no older values for value blocks (their writer takes a 32 KiB
// buffer); its index is small, so one level of it, not partitions copied
// into a 16-block arena each; its filter is leanBloom's.
func loadWriterOptions(wo sstable.WriterOptions) sstable.WriterOptions {
	wo.DisableValueBlocks = true
	wo.IndexBlockSize = max(wo.IndexBlockSize, loadIndexBlockSize)
	if bits, ok := wo.FilterPolicy.(bloom.FilterPolicy); ok {
		wo.FilterPolicy = leanBloom(bits)
	}
	return wo
}

// loadIndexBlockSize: a table of 2,048 index entries of ~300 bytes (a
// reshard chunk's share per target) has ~160 data blocks, an index of
// ~10 KiB.
const loadIndexBlockSize = 64 << 10

// Commit implements objstore.OmapLoad: the tables are finished and
// synced (together: syncTables), then ingested in one step under every
// object's lock, after checking that each object exists and keeps no view
// (a view member's omap writes must reach its view, which an ingest would
// bypass).
func (l *omapLoad) Commit(ctx context.Context) error {
	if l.done {
		return objstore.Errorf(objstore.ErrInvalid, "omap load: already committed or aborted")
	}
	defer l.Abort()
	oids := make([]string, 0, len(l.files))
	var paths []string
	finished := make([]*loadFile, 0, len(l.files))
	for oid, f := range l.files {
		oids = append(oids, oid)
		err := f.w.Close()
		f.w = nil
		if err != nil {
			return fmt.Errorf("embedded: omap load: %w", err)
		}
		if len(f.last) == f.base { // an empty table has no bounds to ingest
			f.fh.release()
			continue
		}
		finished = append(finished, f)
		paths = append(paths, f.path)
	}
	if err := syncTables(finished); err != nil {
		return fmt.Errorf("embedded: omap load: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for oid := range l.guards {
		if l.files[oid] == nil {
			oids = append(oids, oid)
		}
	}
	if len(paths) == 0 && len(l.guards) == 0 {
		return nil
	}
	c, s := l.c, l.c.s
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := c.rlockPool(); err != nil {
		return err
	}
	defer c.pool.mu.RUnlock()
	slices.Sort(oids) // one lock order for every load
	var entries []*objEntry
	defer func() {
		for _, e := range entries {
			e.rw.Unlock()
			s.locks.release(e)
		}
	}()
	for _, oid := range oids {
		e := s.locks.acquire(c.lockKey(oid))
		e.rw.Lock()
		entries = append(entries, e)
		t := &txn{s: s, r: s.db, entry: e, now: s.opts.Now(),
			prefix: objPrefix(c.pool.id, c.ns, oid), mkey: metaKey(c.pool.id, c.ns, oid)}
		if err := t.load(); err != nil {
			return err
		}
		if !t.exists {
			return objstore.Errorf(objstore.ErrNotFound, "omap load: object %q", oid)
		}
		if err := interp.RunRead(t, l.guards[oid]); err != nil {
			return err
		}
		if t.cur.view != "" {
			return objstore.Errorf(objstore.ErrInvalid, "omap load: %q is a member of view %q", oid, t.cur.view)
		}
		// Writes the object had in flight are synced first, so that the
		// ingest (durable when it returns) is never ahead of them.
		if err := e.newest().wait(); err != nil {
			return err
		}
	}
	if len(paths) == 0 {
		return nil
	}
	st, err := s.db.IngestWithStats(ctx, paths)
	if err != nil {
		return fmt.Errorf("embedded: omap load: ingest: %w", err)
	}
	s.loadTables.Add(uint64(len(paths)))
	s.loadMemOverlaps.Add(uint64(st.MemtableOverlappingFiles))
	for _, e := range entries {
		e.dropCache() // class state cached from the omap before the load
	}
	s.loads.Add(1)
	return nil
}

// Abort implements objstore.OmapLoad.
func (l *omapLoad) Abort() {
	if l.done {
		return
	}
	l.done = true
	for _, f := range l.files {
		if f.w != nil {
			f.w.Close()
		}
		f.fh.release()
		l.c.s.opts.FS.Remove(f.path) // gone already once ingested
	}
}
