//go:build linux && cgo

// mchurn measures what a C allocation costs when a large heap of
// block-sized chunks churns, as pebble's block cache does at scale
// (docs/bench/scale.md, "Stop 34"): it fills -heap bytes with blocks of
// 2-8 KiB from calloc, then frees and reallocates random blocks from
// -workers threads and reports the mean wall time of a calloc. Run it
// with LD_PRELOAD=libjemalloc.so.2 to compare allocators.
//
//	go run ./scripts/bench/mchurn -heap 5368709120 -trim 5s
package main

/*
#include <stdlib.h>
#include <features.h>
#ifdef __GLIBC__
#include <malloc.h>
static void arena_max(int n) { mallopt(M_ARENA_MAX, n); }
static void trim(void) { malloc_trim(0); }
#else
static void arena_max(int n) { (void)n; }
static void trim(void) {}
#endif
*/
import "C"

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
	"unsafe"
)

func main() {
	heap := flag.Int64("heap", 2<<30, "bytes held")
	dur := flag.Duration("d", 20*time.Second, "churn time")
	trimEvery := flag.Duration("trim", 30*time.Second, "malloc_trim interval (0: none)")
	arenas := flag.Int("arenas", 4, "M_ARENA_MAX (0: default)")
	nw := flag.Int("workers", 2, "allocating threads")
	flag.Parse()
	if *arenas > 0 {
		C.arena_max(C.int(*arenas))
	}
	workers := *nw
	n := int(*heap / 5120)
	per := n / workers
	blocks := make([][]unsafe.Pointer, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		blocks[w] = make([]unsafe.Pointer, per)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := range blocks[w] {
				blocks[w][i] = C.calloc(C.size_t(2048+rand.IntN(6144)), 1)
			}
		}(w)
	}
	wg.Wait()
	if *trimEvery > 0 {
		go func() {
			for range time.Tick(*trimEvery) {
				C.trim()
			}
		}()
	}
	ops := make([]int64, workers)
	ns := make([]int64, workers)
	stop := time.Now().Add(*dur)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for time.Now().Before(stop) {
				for k := 0; k < 1000; k++ {
					i := r.IntN(per)
					C.free(blocks[w][i])
					t := time.Now()
					p := C.calloc(C.size_t(2048+r.IntN(6144)), 1)
					ns[w] += int64(time.Since(t))
					*(*byte)(p) = 1
					blocks[w][i] = p
					ops[w]++
				}
			}
		}(w)
	}
	wg.Wait()
	var o, t int64
	for w := range ops {
		o += ops[w]
		t += ns[w]
	}
	fmt.Printf("heap %d MiB trim %v arenas %d: %d callocs, %.0f ns each\n", *heap>>20, *trimEvery, *arenas, o, float64(t)/float64(o))
}
