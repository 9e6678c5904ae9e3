package reshard_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/cairn-s3/cairn/internal/reshard"
)

// A backlog longer than a replay round when the catch-up starts (writes
// of a long copy): every round is cut at the round's cap, and taking two
// equal cut rounds for the fixed point closed the sources with the rest
// to replay while writers waited (over a minute at 10M objects). The
// catch-up goes on until a round reads every log to its end.
func TestCatchUpDrainsBacklogBeforeClose(t *testing.T) {
	const burst, tail = 6000, 64
	ctx := context.Background()
	e := newEnv(t)
	e.bucket("bkt", 3)
	md := fill(e, "bkt", 100)
	m, err := reshard.New(ctx, reshard.Config{Driver: e.d, Store: e.st, CopyBatch: 16, TailRecords: tail,
		Failpoints: &reshard.Failpoints{Hit: func(_, p string) bool {
			if p == "after-copy" {
				// A round reads 16 pages of 16 records per source: 768.
				for i := 0; i < burst; i++ {
					k := fmt.Sprintf("burst/%05d", i)
					e.mustPut("bkt", k, 2)
					md[k] = 2
				}
			}
			return false
		}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Reshard(ctx, "bkt", 7)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rounds replayed %d; tail %d records, writers blocked %v", res.ReplayRounds, res.Replayed, res.Tail, res.Block)
	if res.Tail > tail {
		t.Errorf("the switch replayed %d records while writers waited, want at most %d (TailRecords): the catch-up closed with a backlog", res.Tail, tail)
	}
	keys, err := e.list("bkt", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(md) {
		t.Fatalf("listed %d keys, want %d", len(keys), len(md))
	}
}
