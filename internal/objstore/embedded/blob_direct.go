package embedded

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Blob data goes to disk with O_DIRECT where the filesystem allows it:
// measured on this project's VM (docs/bench/README.md), a 4 MiB buffered
// write + fdatasync runs at ~240 MB/s because the page-cache copy and
// writeback dominate, while the same write with O_DIRECT + fdatasync runs
// at ~2 GB/s. Blobs are written once and read rarely right after, so
// bypassing the page cache costs little.

const (
	directAlign = 4096
	directChunk = 1 << 20
)

var directBufs = sync.Pool{New: func() any {
	b := alignedBuf(directChunk)
	return &b
}}

// alignedBuf returns n bytes whose start is aligned to directAlign.
func alignedBuf(n int) []byte {
	b := make([]byte, n+directAlign)
	off := int(uintptr(unsafe.Pointer(&b[0])) & (directAlign - 1))
	if off != 0 {
		off = directAlign - off
	}
	return b[off : off+n : off+n]
}

// directIO reports whether blob writes should try O_DIRECT: only on the
// real disk, and only while no attempt was refused (tmpfs refuses it).
func (s *Store) directIO() bool {
	return !s.opts.DisableDirectIO && s.opts.FS == vfs.Default && openDirectFlag != 0 && !s.noDirect.Load()
}

// writeBlobDirect writes data to a new file at path with O_DIRECT, zero-
// padding the last block and truncating back to the real size, then
// fdatasyncs it (which also makes the size durable). ok is false when the
// filesystem refused O_DIRECT; the caller then writes through the page
// cache.
func (s *Store) writeBlobDirect(path string, data []byte) (ok bool, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|openDirectFlag, 0o600)
	if errors.Is(err, syscall.EINVAL) {
		s.noDirect.Store(true)
		s.log.Info("embedded: filesystem refuses O_DIRECT; blobs go through the page cache", "dir", s.blobDir)
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("embedded: create blob: %w", err)
	}
	// Go allocates large slices page-aligned, so the caller's buffer can
	// usually go to the disk as it is, in one write; only a misaligned
	// buffer or the last partial block goes through an aligned copy.
	off := 0
	if aligned := len(data) &^ (directAlign - 1); aligned > 0 && uintptr(unsafe.Pointer(&data[0]))&(directAlign-1) == 0 {
		_, err = f.Write(data[:aligned])
		off = aligned
	}
	if off < len(data) && err == nil {
		bp := directBufs.Get().(*[]byte)
		defer directBufs.Put(bp)
		buf := *bp
		for ; off < len(data) && err == nil; off += directChunk {
			n := copy(buf, data[off:])
			w := (n + directAlign - 1) &^ (directAlign - 1)
			clear(buf[n:w])
			_, err = f.Write(buf[:w])
		}
	}
	if err == nil && len(data)%directAlign != 0 {
		err = f.Truncate(int64(len(data)))
	}
	if err == nil {
		err = fdatasync(f)
	}
	err = errors.Join(err, f.Close())
	if err != nil {
		os.Remove(path)
		return true, fmt.Errorf("embedded: write blob: %w", err)
	}
	return true, nil
}
