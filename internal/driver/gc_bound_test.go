package driver_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
)

// The collector's queue in memory is bounded: a backlog larger than
// GCQueueMax waits in the shards' GC records and is collected in passes
// (the 30M scale run's aging queued 2.5M manifests, all in memory).
func TestGCQueueBounded(t *testing.T) {
	ctx := context.Background()
	const max, n = 40, 200
	for _, background := range []bool{false, true} {
		t.Run(fmt.Sprintf("background=%v", background), func(t *testing.T) {
			st := newMemStore(t)
			defer st.Close()
			wait := time.Hour // collected only by GCProcess
			if background {
				wait = -1 // due at once: the collector's own loop takes it all
			}
			d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 3, GCMinWait: wait, GCQueueMax: max})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := d.CreateBucket(ctx, "u", "bkt", "", 0); err != nil {
				t.Fatal(err)
			}
			body := bytes.Repeat([]byte("x"), 8<<10)
			for i := 0; i < n; i++ {
				key := fmt.Sprintf("k%04d", i)
				if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: key, Body: bytes.NewReader(body), Size: int64(len(body))}); err != nil {
					t.Fatal(err)
				}
				if err := d.DeleteObject(ctx, "bkt", key); err != nil {
					t.Fatal(err)
				}
				if q := driver.GCQueued(d); q > max {
					t.Fatalf("after %d deletes the collector holds %d manifests, bound %d", i+1, q, max)
				}
			}
			if !background {
				if b := d.GCBacklog(); b != n {
					t.Fatalf("backlog %d, want %d (queued and spilled)", b, n)
				}
				if l, err := d.GCList(ctx, true); err != nil || len(l) != n {
					t.Fatalf("gc list: %d records (%v), want %d", len(l), err, n)
				}
				if got, err := d.GCProcess(ctx, true); err != nil || got != n {
					t.Fatalf("gc process collected %d (%v), want %d in several passes", got, err, n)
				}
			} else {
				deadline := time.Now().Add(2 * time.Minute)
				for d.GCBacklog() > 0 {
					if time.Now().After(deadline) {
						t.Fatalf("collector left a backlog of %d", d.GCBacklog())
					}
					if q := driver.GCQueued(d); q > max {
						t.Fatalf("collector holds %d manifests, bound %d", q, max)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			if l, err := d.GCList(ctx, true); err != nil || len(l) != 0 {
				t.Fatalf("%d GC records left (%v)", len(l), err)
			}
			if d.GCBacklog() != 0 {
				t.Fatalf("backlog %d after collection", d.GCBacklog())
			}
		})
	}
}
