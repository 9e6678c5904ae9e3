package reshard_test

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/reshard"
)

// op is one completed PUT or DELETE in the history, stamped with a logical
// clock read before it started and after it returned.
type op struct {
	start, end int64
	put        bool
	size       int
}

type listing struct {
	start, end int64
	keys       map[string]bool
}

// TestModelConcurrentReshards runs writers, deleters and listers against
// repeated reshards and checks the history against a map model: every
// listing is sorted without duplicates (checked while paging), holds every
// key whose last PUT completed before the listing started with no DELETE
// overlapping it, and no key deleted (or never written) before it started
// unless a PUT overlaps it; final listing and stats are exact. Listings
// read the bucket's ordered view, and in "merge" every shard (as on RADOS).
func TestModelConcurrentReshards(t *testing.T) {
	for _, c := range []struct {
		name       string
		view, load bool
	}{{"view", true, false}, {"merge", false, false}, {"view-load", true, true}} {
		t.Run(c.name, func(t *testing.T) { testModelConcurrentReshards(t, c.view, c.load) })
	}
}

func testModelConcurrentReshards(t *testing.T, view, load bool) {
	e := newEnvView(t, view)
	e.bucket("bkt", 3)
	ctx := context.Background()
	var clock atomic.Int64
	const writers, keysPer = 4, 150
	hist := make([]map[string][]op, writers)
	var listings []listing
	var lmu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		hist[w] = map[string][]op{}
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("w%d/%04d", w, rng.Intn(keysPer))
				o := op{start: clock.Add(1), put: rng.Intn(10) < 7, size: rng.Intn(20)}
				var err error
				if o.put {
					err = e.put("bkt", k, o.size)
				} else {
					err = e.d.DeleteObject(ctx, "bkt", k)
				}
				o.end = clock.Add(1)
				if err != nil {
					t.Errorf("%v %s: %v", o.put, k, err)
					return
				}
				hist[w][k] = append(hist[w][k], o)
			}
		}(w)
	}
	for l := 0; l < 2; l++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				li := listing{start: clock.Add(1), keys: map[string]bool{}}
				keys, err := e.list("bkt", 83)
				li.end = clock.Add(1)
				if err != nil {
					t.Errorf("list: %v", err)
					return
				}
				for _, k := range keys {
					li.keys[k] = true
				}
				lmu.Lock()
				listings = append(listings, li)
				lmu.Unlock()
			}
		}()
	}
	m, err := reshard.New(ctx, reshard.Config{Driver: e.d, Store: e.st, CopyBatch: 16, TailRecords: 8, CopyLoad: load, LoadChunk: 50, MidReplayEvery: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	var blocks []time.Duration
	chunks, multi, mids := 0, 0, 0
	var released uint64
	maxReady := 0
	for _, n := range []int{7, 2, 11, 5, 13, 1, 3} {
		res, err := m.Reshard(ctx, "bkt", n)
		if err != nil {
			t.Fatalf("reshard to %d: %v", n, err)
		}
		blocks = append(blocks, res.Block)
		chunks += res.LoadChunks
		mids += res.MidChunkRounds
		released += res.Released
		maxReady = max(maxReady, res.MaxReady)
		if res.LoadChunks > 1 {
			multi++
		}
		time.Sleep(30 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	// Check every listing against every key's history.
	nops := 0
	checked := 0
	for w := range hist {
		for k, ops := range hist[w] {
			nops += len(ops)
			for _, li := range listings {
				present, sure := expected(ops, li)
				if !sure {
					continue
				}
				checked++
				if li.keys[k] != present {
					t.Fatalf("listing [%d,%d]: key %s present=%v, history says %v: %+v", li.start, li.end, k, li.keys[k], present, ops)
				}
			}
		}
	}
	md := model{}
	for w := range hist {
		for k, ops := range hist[w] {
			if last := ops[len(ops)-1]; last.put {
				md[k] = last.size
			}
		}
	}
	e.verify("bkt", md)
	t.Logf("%d ops, %d listings, %d key checks, switch blocks %v, %d load chunks, %d replay rounds between them, %d records released by commits, at most %d left waiting by a round", nops, len(listings), checked, blocks, chunks, mids, released, maxReady)
	if load && mids == 0 {
		t.Fatal("no range replay round ran while a chunk was staged")
	}
	// The checks above held with records of loaded keys applied rounds
	// after they were read (rangeReplay.take).
	if load && (released == 0 || maxReady == 0) {
		t.Fatalf("%d records released by commits, at most %d left for a later round: the spread replay was not exercised", released, maxReady)
	}
	if load && multi < 5 {
		t.Fatalf("only %d of 7 loaded copies had more than one chunk", multi)
	}
	if len(listings) < 5 || nops < 500 {
		t.Fatalf("too little concurrency to mean anything: %d listings, %d ops", len(listings), nops)
	}
}

// expected says whether the key must (or must not) be in the listing;
// sure is false when an op on the key overlaps the listing.
func expected(ops []op, li listing) (present, sure bool) {
	for _, o := range ops {
		if o.end < li.start {
			present = o.put
			continue
		}
		if o.start < li.end {
			return false, false
		}
	}
	return present, true
}
