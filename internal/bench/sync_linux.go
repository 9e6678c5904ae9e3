package bench

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// openDirectSync opens path for O_DIRECT|O_DSYNC writes (dd
// oflag=direct,dsync): the disk's own synced bandwidth, without page-cache
// copies. ok is false where the filesystem refuses O_DIRECT (tmpfs).
func openDirectSync(path string) (*os.File, bool) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|syscall.O_DIRECT|syscall.O_DSYNC, 0o600)
	if err != nil {
		return nil, false
	}
	return f, true
}

// alignedBuf returns n bytes aligned to 4096, as O_DIRECT needs.
func alignedBuf(n int) []byte {
	b := make([]byte, n+4096)
	off := int(uintptr(unsafe.Pointer(&b[0])) & 4095)
	if off != 0 {
		off = 4096 - off
	}
	return b[off : off+n : off+n]
}

// fileBlocks is the disk space a file takes (allocated blocks, as du).
func fileBlocks(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Blocks) * 512
	}
	return uint64(fi.Size())
}

// deviceOf is the major and minor number of the device holding path.
func deviceOf(path string) (major, minor uint64, ok bool) {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil {
		return 0, 0, false
	}
	return uint64(unix.Major(uint64(st.Dev))), uint64(unix.Minor(uint64(st.Dev))), true
}
