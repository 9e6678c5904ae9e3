package queue

import (
	"math/rand/v2"
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
	for step := range 2000 {
		if len(c.list()) > 0 && rng.IntN(2) == 0 {
			// consume a random open id of a random block
			bs := c.list()
			b := bs[rng.IntN(len(bs))]
			for id := b.first; id <= b.last(); id++ {
				if b.isOpen(id) {
					b.open &^= 1 << (id - b.first)
					delete(model, id)
					break
				}
			}
			c = c.with([]resBlock{b})
		} else {
			n := 1 + rng.IntN(blockMax)
			full := len(c.list()) >= resCacheMax
			c = c.with([]resBlock{newBlock(next, n, reservation{bytes: 10, entries: 1})})
			for i := range uint64(n) {
				model[next+i] = !full // a full cache takes no more blocks
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

func (c *blockCache) list() []resBlock {
	if c == nil {
		return nil
	}
	return c.blocks
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
		old := c.blocks[0]
		old.open &^= old.open & -old.open
		c = c.with([]resBlock{old, newBlock(next, 1, r)})
		next++
	}
}
