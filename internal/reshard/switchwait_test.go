package reshard_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/reshard"
)

// A switch that holds writers longer than the driver once retried (50
// tries, ~2.5 s: the 30M scale run's 101 → 211 switch outlasted it and a
// PUT failed with "index shard is closed"): the writer waits it out and
// its object lands in the new layout.
func TestWriterWaitsOutLongSwitch(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.bucket("bkt", 3)
	md := fill(e, "bkt", 100)
	held, release := make(chan struct{}), make(chan struct{})
	m, err := reshard.New(ctx, reshard.Config{
		Driver: e.d, Store: e.st, CopyBatch: 64, LeaseDuration: time.Minute,
		Failpoints: &reshard.Failpoints{Hit: func(_, p string) bool {
			if p == "after-close" {
				close(held)
				<-release
			}
			return false
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := m.Reshard(ctx, "bkt", 7); done <- err }()
	<-held
	w0 := e.d.StaleWaits()
	put := make(chan error, 1)
	go func() { put <- e.put("bkt", "during-switch", 5) }()
	// Past the old budget, counted in retries (not time).
	for e.d.StaleWaits()-w0 < 60 {
		select {
		case err := <-put:
			close(release)
			t.Fatalf("PUT returned while the sources were closed: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	close(release)
	if err := <-put; err != nil {
		t.Fatalf("PUT behind the switch: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("reshard: %v", err)
	}
	md["during-switch"] = 5
	keys, err := e.list("bkt", 37)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(md) {
		t.Fatalf("listed %d keys, want %d", len(keys), len(md))
	}
	for _, k := range keys {
		if _, ok := md[k]; !ok {
			t.Fatalf("unexpected key %q", k)
		}
	}
	if st, err := e.d.BucketStats(ctx, "bkt"); err != nil || st.NumShards != 7 {
		t.Fatalf("after the reshard: %+v, %v", st, err)
	}
}
