package queue

import (
	"math/rand/v2"
	"sort"
	"testing"
)

// blockCache against a plain map of open ids over random block adds and
// consumptions; every older value stays as it was (values are shared by
// ops and must be immutable).
func TestBlockCacheMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var c *blockCache
	model := map[uint64]bool{}
	type snap struct {
		c *blockCache
		m map[uint64]bool
	}
	var snaps []snap
	next := uint64(1)
	for step := range 4000 {
		live := c.list()
		if len(live) > 0 && (rng.IntN(2) == 0 || len(live) >= resCacheMax-8) {
			// consume one open id of a random block, or all of them
			b := live[rng.IntN(len(live))]
			all := rng.IntN(4) == 0
			for id := b.first; id <= b.last(); id++ {
				if b.isOpen(id) {
					b.open &^= 1 << (id - b.first)
					delete(model, id)
					if !all {
						break
					}
				}
			}
			c = c.with([]resBlock{b})
		} else {
			n := 1 + rng.IntN(blockMax)
			c = c.with([]resBlock{newBlock(next, n, reservation{bytes: 10, entries: 1})})
			for i := range uint64(n) {
				model[next+i] = true
			}
			next += uint64(n)
		}
		if step%50 == 0 {
			m := map[uint64]bool{}
			for k, v := range model {
				m[k] = v
			}
			snaps = append(snaps, snap{c, m})
		}
	}
	for si, s := range snaps {
		for id := uint64(0); id <= next; id++ {
			b, ok := s.c.find(id)
			if got := ok && b.isOpen(id); got != s.m[id] {
				t.Fatalf("snapshot %d, id %d: open %v, want %v", si, id, got, s.m[id])
			}
		}
	}
}

// list is the cache's open blocks.
func (c *blockCache) list() []resBlock {
	if c == nil {
		return nil
	}
	m := map[uint64]resBlock{}
	for _, b := range c.base {
		m[b.first] = b
	}
	for _, b := range c.ovl {
		m[b.first] = b
	}
	var out []resBlock
	for _, b := range m {
		if b.open != 0 {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].first < out[j].first })
	return out
}

// BenchmarkBlockCacheCommitRefill is one commit and one refill block on a
// cache of 8 blocks (-cpu 1).
func BenchmarkBlockCacheCommitRefill(b *testing.B) {
	var c *blockCache
	r := reservation{bytes: 4096, entries: 1}
	next := uint64(1)
	for range 8 {
		c = c.with([]resBlock{newBlock(next, blockMax, r)})
		next += blockMax
	}
	b.ReportAllocs()
	for b.Loop() {
		old := c.list()[0]
		old.open &^= old.open & -old.open
		c = c.with([]resBlock{old, newBlock(next, 1, r)})
		next++
	}
}
