package driver_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
)

// A stop during a large GC collection ends it after the round in progress
// (a gateway's shutdown waited minutes for a backlog of deletes at the end
// of the scale run's aging); the records not collected stay and the next
// driver on the store collects them.
func TestGCStopEndsCollection(t *testing.T) {
	ctx := context.Background()
	st := newMemStore(t)
	defer st.Close()
	var d *driver.Driver
	var err error
	stopped := false
	d, err = driver.New(ctx, driver.Options{Store: st, DefaultShards: 3, GCMinWait: time.Hour,
		Failpoint: func(p string) {
			if p == "gc-after-remove" && !stopped {
				stopped = true
				d.Close() // the gateway shuts down during the first round
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CreateBucket(ctx, "u", "bkt", "", 0); err != nil {
		t.Fatal(err)
	}
	const n = 1300 // over two rounds
	body := bytes.Repeat([]byte("x"), 8<<10)
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("k%04d", i)
		if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: key, Body: bytes.NewReader(body), Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		if err := d.DeleteObject(ctx, "bkt", key); err != nil {
			t.Fatal(err)
		}
	}
	if l, err := d.GCList(ctx, true); err != nil || len(l) != n {
		t.Fatalf("GC records before: %d (%v), want %d", len(l), err, n)
	}
	got, err := d.GCProcess(ctx, true)
	if err != nil || !stopped || got == 0 || got >= n {
		t.Fatalf("collection during a stop took %d of %d records (%v, stopped %v): want one round", got, n, err, stopped)
	}
	d2, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 3, GCMinWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if l, err := d2.GCList(ctx, true); err != nil || len(l) != n-got {
		t.Fatalf("GC records after the stop: %d (%v), want the %d not collected", len(l), err, n-got)
	}
	if rest, err := d2.GCProcess(ctx, true); err != nil || rest != n-got {
		t.Fatalf("the next driver collected %d (%v), want %d", rest, err, n-got)
	}
	if l, _ := d2.GCList(ctx, true); len(l) != 0 {
		t.Fatalf("%d GC records left", len(l))
	}
}
