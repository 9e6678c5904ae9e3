package driver_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"runtime"
	"testing"

	"github.com/cairn-s3/cairn/internal/driver"
)

// A small PUT must not take a stripe-sized buffer: with one 4 MiB buffer
// per in-flight PUT, 32 clients of 64-byte objects held 128 MiB, most of
// the heap of the scale benchmark (issue 24).
func TestSmallPutMemory(t *testing.T) {
	d, _ := newDriver(t)
	ctx := context.Background()
	if err := d.CreateBucket(ctx, "alice", "bkt", "", 0); err != nil {
		t.Fatal(err)
	}
	put(t, d, "bkt", "warm", []byte("warm")) // first-use allocations
	var worst uint64
	for i := 0; i < 3; i++ {
		runtime.GC()
		runtime.GC() // a second cycle empties sync.Pools
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		put(t, d, "bkt", "k", bytes.Repeat([]byte{'x'}, 64))
		runtime.ReadMemStats(&b)
		worst = max(worst, b.TotalAlloc-a.TotalAlloc)
	}
	if worst >= 1<<20 {
		t.Fatalf("a 64-byte PUT allocated %d bytes", worst)
	}
}

// Bodies around the small buffer and the stripe size read back whole.
func TestPutBodyBoundaries(t *testing.T) {
	d, _ := newDriver(t)
	ctx := context.Background()
	if err := d.CreateBucket(ctx, "alice", "bkt", "", 0); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 64<<10 - 1, 64 << 10, 64<<10 + 1, driver.StripeSize, driver.StripeSize + 1, 2*driver.StripeSize + 64<<10} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i * 7)
		}
		// Unknown size and a reader that returns short reads.
		oi, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: "k", Body: io.MultiReader(bytes.NewReader(body[:n/3]), bytes.NewReader(body[n/3:])), Size: -1})
		if err != nil {
			t.Fatalf("put %d: %v", n, err)
		}
		sum := md5.Sum(body)
		if oi.Size != int64(n) || oi.ETag != hex.EncodeToString(sum[:]) {
			t.Fatalf("put %d: size %d etag %s", n, oi.Size, oi.ETag)
		}
		_, rc, err := d.GetObject(ctx, "bkt", "k", nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("get %d: %d bytes, %v", n, len(got), err)
		}
	}
}
