//go:build !linux

package bench

import "os"

func fdatasync(f *os.File) error { return f.Sync() }

func openDirectSync(string) (*os.File, bool) { return nil, false }

func alignedBuf(n int) []byte { return make([]byte, n) }

func fileBlocks(fi os.FileInfo) uint64 { return uint64(fi.Size()) }

func deviceOf(string) (major, minor uint64, ok bool) { return 0, 0, false }
