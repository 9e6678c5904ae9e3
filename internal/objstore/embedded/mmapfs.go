package embedded

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// mmapFS serves reads of pebble's tables from a read-only shared mapping of
// the file instead of a pread per block: a block cache miss then costs a
// copy from the page cache, not a system call (half a 4 KiB read's CPU here;
// at 30M objects a GET misses the block cache about once). Tables are
// immutable once pebble opens them for reading, so the mapping never sees
// the file change size; a fault on a page the kernel cannot read fails
// that read (SetPanicOnFault), as a pread's EIO would. Everything else
// (WAL, manifest, blobs, writes) goes to the wrapped FS. The mapped pages
// are the page cache's: they count in the process's RSS as file pages
// (RssFile), which the kernel reclaims like any cached file data.
type mmapFS struct {
	vfs.FS
}

// Unwrap is the wrapped FS (vfs.Root finds the disk below).
func (fs mmapFS) Unwrap() vfs.FS { return fs.FS }

// Open maps a table opened for reading; any failure to map falls back to
// the plain file (reads by pread), as does an empty or oversized table.
func (fs mmapFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	fd := f.Fd()
	if fd == vfs.InvalidFd {
		return f, nil
	}
	st, err := f.Stat()
	if err != nil || st.Size() <= 0 || st.Size() > 1<<40 {
		return f, nil
	}
	m, err := unix.Mmap(int(fd), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return f, nil
	}
	// The fadvise pebble asks for applies to reads through the descriptor;
	// a fault in the mapping follows the mapping's advice. Random: a miss
	// reads the page it needs, not the 128 KiB around it (pread of a block
	// read the block); sequential (a compaction's reopen): read ahead.
	for _, o := range opts {
		switch o {
		case vfs.RandomReadsOption:
			_ = unix.Madvise(m, unix.MADV_RANDOM)
		case vfs.SequentialReadsOption:
			_ = unix.Madvise(m, unix.MADV_SEQUENTIAL)
		}
	}
	return &mmapFile{File: f, m: m}, nil
}

// mmapFile is a table's file with ReadAt served from its mapping. Pebble
// closes a table's file only after its last reader is done (the file cache
// counts references), so Close can unmap.
type mmapFile struct {
	vfs.File
	m []byte
}

var errNegativeOffset = errors.New("embedded: negative read offset")

func (f *mmapFile) ReadAt(p []byte, off int64) (n int, err error) {
	if off < 0 {
		return 0, errNegativeOffset
	}
	if off >= int64(len(f.m)) {
		return 0, io.EOF
	}
	// A page the kernel cannot read (a disk error, a file cut short under
	// the store) faults: recovered, it fails this read as pread would
	// have, instead of stopping the process.
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			n, err = 0, fmt.Errorf("embedded: read of a mapped table at offset %d: %v", off, r)
		}
	}()
	n = copy(p, f.m[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *mmapFile) Close() error {
	err := unix.Munmap(f.m)
	f.m = nil
	return errors.Join(err, f.File.Close())
}
