//go:build !linux || !cgo

package embedded

// startMallocTrim: only glibc's allocator needs it (mtrim_glibc.go).
func startMallocTrim() {}
