package queue

import (
	"maps"
	"math/rand/v2"
	"testing"
)

// resCache against a plain map over random adds and removals, through
// several overlay compactions; every older value stays as it was (values
// are shared by ops and must be immutable).
func TestResCacheMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var c *resCache
	model := map[uint64]reservation{}
	type snap struct {
		c *resCache
		m map[uint64]reservation
	}
	var snaps []snap
	next := uint64(1)
	for step := range 2000 {
		if len(model) > 0 && rng.IntN(2) == 0 {
			// remove a random cached id
			var id uint64
			k := rng.IntN(len(model))
			for i := range model {
				if k == 0 {
					id = i
					break
				}
				k--
			}
			c = c.with(resChange{id: id, del: true}, -1)
			delete(model, id)
		} else {
			r := reservation{bytes: next * 10, entries: 1}
			c = c.with(resChange{id: next, r: r}, 1)
			model[next] = r
			next++
		}
		if c.n != len(model) {
			t.Fatalf("step %d: n = %d, want %d", step, c.n, len(model))
		}
		if step%50 == 0 {
			snaps = append(snaps, snap{c, maps.Clone(model)})
		}
	}
	for si, s := range snaps {
		for id := uint64(0); id <= next; id++ {
			r, ok := s.c.get(id)
			want, wok := s.m[id]
			if ok != wok || r != want {
				t.Fatalf("snapshot %d, id %d: %v %v, want %v %v", si, id, r, ok, want, wok)
			}
		}
	}
}

// BenchmarkResCacheCommitRefill is one commit and one refill on a cache of
// 256 reservations (-cpu 1).
func BenchmarkResCacheCommitRefill(b *testing.B) {
	var c *resCache
	for id := uint64(1); id <= 256; id++ {
		c = c.with(resChange{id: id, r: reservation{bytes: 4096, entries: 1}}, 1)
	}
	old, next := uint64(1), uint64(257)
	b.ReportAllocs()
	for b.Loop() {
		c = c.with(resChange{id: old, del: true}, -1)
		c = c.with(resChange{id: next, r: reservation{bytes: 4096, entries: 1}}, 1)
		old++
		next++
	}
}
