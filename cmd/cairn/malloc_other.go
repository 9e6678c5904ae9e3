//go:build !linux

package main

import (
	"errors"

	"github.com/cairn-s3/cairn/internal/config"
)

// preloadAllocator: preloading jemalloc is done on Linux only; malloc=auto
// and system keep the platform's allocator.
func preloadAllocator(cfg *config.Config) error {
	if cfg.Malloc == "jemalloc" {
		return errors.New("malloc=jemalloc is supported on Linux only")
	}
	return nil
}

func allocatorInUse() string { return "system" }
