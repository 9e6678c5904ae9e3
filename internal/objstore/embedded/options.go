package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configure Open. The zero value of every field but Dir has a
// documented default, filled in by EnsureDefaults.
type Options struct {
	// Dir is the data directory. Required.
	Dir string
	// FS is the filesystem; nil means the real disk. vfs.NewMem() gives an
	// in-memory store for tests.
	FS vfs.FS
	// Classes holds the object class methods ExecStep may call; nil means
	// none (every Exec fails with ErrNotSupported).
	Classes *objstore.Registry
	// Logger receives backend and pebble messages; nil discards them.
	Logger *slog.Logger
	// Now is the clock for mtimes and MethodContext.Now; default time.Now.
	Now func() time.Time
	// BlobThreshold is the WriteFull size from which data goes to a blob
	// file outside the LSM instead of inline chunks. Default 1 MiB; a
	// negative value disables blobs.
	BlobThreshold int
	// DisableDirectIO makes blob files go through the page cache even on a
	// filesystem that accepts O_DIRECT (for comparison benchmarks).
	DisableDirectIO bool
	// DisableMmap makes table reads that miss the block cache pread the
	// file instead of copying from a mapping of it (mmapFS; comparison
	// benchmarks).
	DisableMmap bool
	// CacheSize is pebble's block cache size in bytes. Default (0): an
	// eighth of physical memory, at least 64 MiB and at most 2 GiB. The
	// cache fills lazily, so a large one costs memory only as it is used.
	// Too small a cache makes every index lookup of a new key read bloom
	// filter and index blocks from the files again (docs/bench/README.md).
	CacheSize int64
	// MaxOpenFiles bounds the sstables pebble keeps open (its file cache;
	// a read of a table not open opens it, reading its footer and index).
	// Default (0): DefaultMaxOpenFiles(). pebble's own 1,000 held a sixth of
	// the 30M run's ~6,000 tables, so random reads kept reopening them.
	MaxOpenFiles int
	// MemTableSize is pebble's memtable size in bytes. Default 64 MiB.
	MemTableSize uint64
	// TargetFileSize, when positive, is the sstable size pebble aims at
	// on every level. Default (0): pebble's, 2 MiB at L0 doubling per
	// level. Benchmarks shrink it so a small store has as many tables
	// per key range as a large one (a seek's cost depends on it).
	TargetFileSize int64
	// MaxCachedObjects bounds how many idle objects keep class cache
	// entries (MethodContext.SetCached). Default 65536.
	MaxCachedObjects int
	// ValueSeparation is the value size from which pebble keeps a value
	// (in practice: an inline object's data chunk) in a blob file beside
	// the sstables, so compactions move a short handle instead of the
	// bytes (docs/design/embedded.md, "Value separation"). Default (0):
	// DefaultValueSeparation; negative: off, every value in sstables.
	// Either way the directory stays readable by builds with the other
	// setting: pebble reads separated values whatever its policy.
	ValueSeparation int
	// CompactionConcurrency is the most compactions pebble runs at once;
	// it runs one and adds more only when L0 or its compaction debt grows.
	// Default (0): 1, pebble's default.
	CompactionConcurrency int
	// NoIngestSplit keeps pebble from splitting a table of a level into
	// two virtual ones so that an omap load's table can slot in between
	// (A/B runs). With the split, a load's table goes to the lowest level
	// whose data it does not overlap; without it, a table whose bounds
	// span the loaded range (common: a reshard's targets sit between
	// other objects' keys) pushes the load up, often to L0.
	NoIngestSplit bool
	// CheckFresh makes a WriteOp with Fresh read the object's meta anyway
	// and fail with ErrExists when the object exists (tests: it proves a
	// caller's names are new). Off, a fresh op skips that read.
	CheckFresh bool
}

// Defaults.
const (
	DefaultBlobThreshold    = 1 << 20
	MinCacheSize            = 64 << 20
	MaxDefaultCacheSize     = 2 << 30
	DefaultMemTableSize     = 64 << 20
	DefaultMaxCachedObjects = 1 << 16
	// DefaultValueSeparation keeps bucket-index entries, metas and
	// notification records (< 1 KiB) in sstables and separates data
	// chunks of 1 KiB and more.
	DefaultValueSeparation = 1 << 10
	// MinValueSeparation: smaller values cost more as handles than they save.
	MinValueSeparation = 64
)

// DefaultMaxOpenFiles is half the process's open file limit (the rest
// is for blobs, sockets, the WAL), between pebble's 1,000 and 16,384; 1,000
// when the limit is unknown. An open table costs a descriptor and its
// reader (a few KiB); its index and filter blocks live in the block cache.
func DefaultMaxOpenFiles() int {
	return min(16384, max(1000, fileLimit()/2))
}

// EnsureDefaults fills in zero fields and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BlobThreshold == 0 {
		o.BlobThreshold = DefaultBlobThreshold
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize()
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = DefaultMemTableSize
	}
	if o.MaxOpenFiles == 0 {
		o.MaxOpenFiles = DefaultMaxOpenFiles()
	}
	if o.MaxCachedObjects == 0 {
		o.MaxCachedObjects = DefaultMaxCachedObjects
	}
	if o.ValueSeparation == 0 {
		o.ValueSeparation = DefaultValueSeparation
	}
	if o.CompactionConcurrency == 0 {
		o.CompactionConcurrency = 1
	}
	return o
}

// Validate reports every problem with o at once.
func (o *Options) Validate() error {
	var errs []error
	if o.Dir == "" {
		errs = append(errs, errors.New("embedded: Options.Dir is required"))
	}
	if o.CacheSize < 0 {
		errs = append(errs, fmt.Errorf("embedded: CacheSize %d is negative", o.CacheSize))
	}
	if o.MemTableSize != 0 && (o.MemTableSize < 1<<20 || o.MemTableSize >= 4<<30) {
		errs = append(errs, fmt.Errorf("embedded: MemTableSize %d outside 1 MiB to 4 GiB", o.MemTableSize))
	}
	if o.TargetFileSize < 0 {
		errs = append(errs, fmt.Errorf("embedded: TargetFileSize %d is negative", o.TargetFileSize))
	}
	if o.MaxOpenFiles < 0 {
		errs = append(errs, fmt.Errorf("embedded: MaxOpenFiles %d is negative", o.MaxOpenFiles))
	}
	if o.MaxCachedObjects < 0 {
		errs = append(errs, fmt.Errorf("embedded: MaxCachedObjects %d is negative", o.MaxCachedObjects))
	}
	if o.ValueSeparation > 0 && o.ValueSeparation < MinValueSeparation {
		errs = append(errs, fmt.Errorf("embedded: ValueSeparation %d below %d bytes (negative: off)", o.ValueSeparation, MinValueSeparation))
	}
	if o.CompactionConcurrency < 0 {
		errs = append(errs, fmt.Errorf("embedded: CompactionConcurrency %d is negative", o.CompactionConcurrency))
	}
	return errors.Join(errs...)
}

// DefaultCacheSize is the block cache size used when Options.CacheSize is 0:
// an eighth of physical memory, clamped to [64 MiB, 2 GiB] (64 MiB when the
// memory size is unknown).
func DefaultCacheSize() int64 {
	return min(max(physicalMemory()/8, MinCacheSize), MaxDefaultCacheSize)
}
