//go:build !linux

package embedded

import "os"

// Elsewhere blobs always go through the page cache.
const openDirectFlag = 0

func fdatasync(f *os.File) error { return f.Sync() }
