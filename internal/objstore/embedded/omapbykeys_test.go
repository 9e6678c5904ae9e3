package embedded

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// GetOmapValuesByKeys returns exactly the asked keys that exist, sorted,
// whether they are consecutive (stepped over), sparse (sought), repeated,
// missing, or around deleted keys.
func TestOmapByKeysRandom(t *testing.T) {
	ctx := context.Background()
	s := openMem(t, testRegistry())
	if err := s.CreatePool(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	io, err := s.IOContext(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	model := map[string]string{}
	op := objstore.NewWriteOp()
	var kvs []objstore.KV
	for i := range 300 {
		k := fmt.Sprintf("e%04d", i*2) // odd numbers never exist
		model[k] = fmt.Sprint("v", i)
		kvs = append(kvs, objstore.KV{Key: k, Value: []byte(model[k])})
	}
	if err := io.Operate(ctx, "o", op.SetOmap(kvs...)); err != nil {
		t.Fatal(err)
	}
	var gone []string
	for k := range model {
		if rng.IntN(4) == 0 {
			gone = append(gone, k)
			delete(model, k)
		}
	}
	if err := io.Operate(ctx, "o", objstore.NewWriteOp().RmOmapKeys(gone...)); err != nil {
		t.Fatal(err)
	}
	for round := range 300 {
		var ask []string
		start, n := rng.IntN(620), 1+rng.IntN(40)
		for j := range n {
			i := start + j
			if round%3 == 1 {
				i = rng.IntN(640) // sparse
			}
			ask = append(ask, fmt.Sprintf("e%04d", i))
			if rng.IntN(10) == 0 {
				ask = append(ask, ask[rng.IntN(len(ask))]) // repeated
			}
		}
		rng.Shuffle(len(ask), func(i, j int) { ask[i], ask[j] = ask[j], ask[i] })
		var want []string
		for _, k := range slices.Compact(slices.Sorted(slices.Values(ask))) {
			if v, ok := model[k]; ok {
				want = append(want, k+"="+v)
			}
		}
		rop := objstore.NewReadOp()
		res := rop.GetOmapValuesByKeys(ask...)
		if err := io.OperateRead(ctx, "o", rop); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, kv := range res.Pairs {
			got = append(got, kv.Key+"="+string(kv.Value))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d, asked %v:\ngot  %v\nwant %v", round, ask, got, want)
		}
	}
}
