package embedded

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// TestLeanBloomMatchesPebble: the loaded tables' filter writer produces
// pebble's bloom filter byte for byte (empty, tiny, repeated keys, bytes
// that sign-extend, past pebble's 16,384-hash blocks), and its readers
// find every key.
func TestLeanBloomMatchesPebble(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, bits := range []int{1, 5, 10, 16, 50} {
		for _, n := range []int{0, 1, 2, 3, 100, 2048, 20000} {
			keys := make([][]byte, n)
			for i := range keys {
				if i > 0 && r.IntN(10) == 0 {
					keys[i] = keys[i-1] // consecutive repeats are skipped
					continue
				}
				k := make([]byte, r.IntN(70))
				for j := range k {
					k[j] = byte(r.Uint32()) // high bytes too: the tail sign-extends
				}
				keys[i] = k
			}
			ref := bloom.FilterPolicy(bits).NewWriter(pebble.TableFilter)
			lean := leanBloom(bits).NewWriter(pebble.TableFilter)
			for round := 0; round < 2; round++ { // a writer is reused after Finish
				for _, k := range keys {
					ref.AddKey(k)
					lean.AddKey(k)
				}
				want := ref.Finish([]byte("prefix"))
				got := lean.Finish([]byte("prefix"))
				if !bytes.Equal(got, want) {
					t.Fatalf("bits %d, %d keys, round %d: filters differ (%d and %d bytes)", bits, n, round, len(got), len(want))
				}
				for _, k := range keys {
					if !leanBloom(bits).MayContain(pebble.TableFilter, got[len("prefix"):], k) {
						t.Fatalf("bits %d, %d keys: key %x not found", bits, n, k)
					}
				}
			}
		}
	}
}
