package driver_test

import (
	"bytes"
	"context"
	"strconv"
	"testing"

	"github.com/cairn-s3/cairn/internal/driver"
)

// BenchmarkPutQuota is the 4 KiB PUT path of the driver with the owner's
// user quota and the bucket's quota enabled vs none (in-memory store: the
// quota bookkeeping is what differs).
func BenchmarkPutQuota(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			d := newDriverOpts(b, driver.Options{QuotaStatsTTL: 5e9})
			if _, err := d.CreateUser(ctx, driver.User{ID: "u"}); err != nil {
				b.Fatal(err)
			}
			if err := d.CreateBucket(ctx, "u", "bench-b", "", 0); err != nil {
				b.Fatal(err)
			}
			if on {
				big := func(q *driver.Quota) { q.Enabled, q.MaxObjects, q.MaxSize = true, 1<<40, 1<<50 }
				if _, err := d.SetQuota(ctx, driver.QuotaScopeUser, "u", "", big); err != nil {
					b.Fatal(err)
				}
				if _, err := d.SetQuota(ctx, driver.QuotaScopeBucket, "u", "bench-b", big); err != nil {
					b.Fatal(err)
				}
			}
			body := make([]byte, 4096)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bench-b", Key: "k" + strconv.Itoa(i), Body: bytes.NewReader(body), Size: 4096})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
