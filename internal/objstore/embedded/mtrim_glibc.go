//go:build linux && cgo

package embedded

/*
#include <features.h>
#ifdef __GLIBC__
#include <malloc.h>
static int cairn_malloc_trim(void) { return malloc_trim(0); }
static void cairn_arena_max(int n) { mallopt(M_ARENA_MAX, n); }
#else
static int cairn_malloc_trim(void) { return 0; }
static void cairn_arena_max(int n) { (void)n; }
#endif
*/
import "C"

import (
	"runtime"
	"sync"
	"time"
)

// Pebble keeps its block cache and memtables in C memory (calloc). glibc
// gives each thread that allocates an arena of its own (up to 8 per core)
// and returns a freed chunk to the system only from an arena's top, so a
// cache that churns blocks for hours leaves every arena's holes resident:
// the scale run measured the process at 4 GiB anonymous memory with a
// 2 GiB cache, in sixty-odd 64 MiB arenas, and growing with the object
// count. Fewer arenas and a periodic malloc_trim (which returns the free
// pages inside arenas as well) bound RSS by the cache's size.

// trimInterval is how often the process's free C memory goes back.
const trimInterval = 30 * time.Second

var trimOnce sync.Once

// startMallocTrim caps glibc's arenas and starts the process-wide trimmer
// (once: every store in the process shares it).
func startMallocTrim() {
	trimOnce.Do(func() {
		C.cairn_arena_max(C.int(max(4, 2*runtime.NumCPU())))
		go func() {
			for range time.Tick(trimInterval) {
				C.cairn_malloc_trim()
			}
		}()
	})
}
