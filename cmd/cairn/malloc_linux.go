package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/cairn-s3/cairn/internal/config"
)

// mallocEnv marks a process that preloadAllocator already re-executed
// (its value is the library), so it does not do it again.
const mallocEnv = "CAIRN_MALLOC_PRELOADED"

// jemallocPaths are where distributions install jemalloc's shared library.
var jemallocPaths = []string{
	"/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
	"/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
	"/usr/lib64/libjemalloc.so.2",
	"/usr/lib/libjemalloc.so.2",
}

// hugePagesConf has jemalloc madvise its memory (MADV_HUGEPAGE), so that
// the kernel backs it with 2 MiB pages in THP mode madvise as well as
// always. Random reads across a large block cache and memtable miss the
// TLB on 4 KiB pages: on a 30M-object bucket's index the RWLD mix ran
// 1.14x the ops with it, GET 43.7 -> 35.4 us of CPU (docs/bench/scale.md,
// "Stop 43").
const hugePagesConf = "thp:always,metadata_thp:always"

// preloadAllocator re-executes the process with jemalloc preloaded when
// cfg asks for it (malloc=auto finds it, malloc=jemalloc requires it).
// Pebble keeps its block cache and memtables in C memory, and glibc's
// calloc slows as that heap grows: in a 3M-object RWLD mix jemalloc ran
// 1.46x the ops (docs/bench/scale.md, "Stop 34"). Only the embedded
// backend: librados brings an allocator of its own. With cfg.HugePages
// and no MALLOC_CONF of the user's, jemalloc gets hugePagesConf. It
// returns only if it did not exec.
func preloadAllocator(cfg *config.Config) error {
	if cfg.Malloc == "system" || cfg.Backend != "embedded" || os.Getenv(mallocEnv) != "" {
		return nil
	}
	lib := ""
	for _, p := range jemallocPaths {
		if _, err := os.Stat(p); err == nil {
			lib = p
			break
		}
	}
	if lib == "" {
		if cfg.Malloc == "jemalloc" {
			return fmt.Errorf("malloc=jemalloc: libjemalloc.so.2 not found in %s (apt-get install libjemalloc2)", strings.Join(jemallocPaths, ", "))
		}
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil // stay on the system allocator
	}
	env := []string{mallocEnv + "=" + lib}
	pre := lib
	userConf := false
	for _, kv := range os.Environ() {
		if v, ok := strings.CutPrefix(kv, "LD_PRELOAD="); ok {
			if v != "" {
				pre = v + ":" + lib
			}
			continue
		}
		userConf = userConf || strings.HasPrefix(kv, "MALLOC_CONF=")
		env = append(env, kv)
	}
	env = append(env, "LD_PRELOAD="+pre)
	if cfg.HugePages && !userConf {
		env = append(env, "MALLOC_CONF="+hugePagesConf)
	}
	err = syscall.Exec(exe, os.Args, env)
	return fmt.Errorf("re-exec with %s preloaded: %w", lib, err)
}

// allocatorInUse names the C allocator mapped into this process.
func allocatorInUse() string {
	maps, err := os.ReadFile("/proc/self/maps")
	if err == nil && strings.Contains(string(maps), "libjemalloc") {
		return "jemalloc"
	}
	return "system"
}
