package s3api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/prometheus/client_golang/prometheus"
)

// benchPolicy20 is the 20-statement policy of scripts/bench/authz.py: every
// statement applies to the request and fails on its conditions.
func benchPolicy20(bucket string) string {
	var sts []string
	for i := 0; i < 19; i++ {
		sts = append(sts, fmt.Sprintf(`{"Sid":"Team%[1]d","Effect":"Allow","Principal":"*","Action":["s3:GetObject","s3:PutObject","s3:ListBucket"],
		 "Resource":["arn:aws:s3:::%[2]s","arn:aws:s3:::%[2]s/*"],
		 "Condition":{"IpAddress":{"aws:SourceIp":["10.%[1]d.0.0/16"]},"StringLike":{"aws:Referer":["https://team%[1]d.example.com/*"]},
		  "Bool":{"aws:SecureTransport":"true"},"NumericLessThanEquals":{"s3:max-keys":"1000"}}}`, i, bucket))
	}
	sts = append(sts, fmt.Sprintf(`{"Sid":"OnlyLocal","Effect":"Deny","Principal":"*","Action":"s3:*",
	 "Resource":["arn:aws:s3:::%[1]s","arn:aws:s3:::%[1]s/*"],"Condition":{"NotIpAddress":{"aws:SourceIp":["127.0.0.0/8","::1/128"]}}}`, bucket))
	return `{"Version":"2012-10-17","Statement":[` + strings.Join(sts, ",") + `]}`
}

// BenchmarkAuthorize measures the decision point per request: the bucket's
// cached access state, the condition context and Evaluate.
func BenchmarkAuthorize(b *testing.B) {
	for _, withPolicy := range []bool{false, true} {
		b.Run(fmt.Sprintf("policy=%v", withPolicy), func(b *testing.B) {
			be := newFakeBackend()
			ctx := context.Background()
			be.CreateUser(ctx, driver.User{ID: "alice", Keys: []driver.Key{{User: "alice", AccessKey: aliceKey, SecretKey: "alicesecret"}}})
			be.CreateBucket(ctx, "alice", "bk", "", 0)
			if withPolicy {
				be.UpdateBucketAccess(ctx, "bk", func(_ driver.Instance, a *driver.BucketAccess) error {
					a.Policy = benchPolicy20("bk")
					return nil
				})
			}
			// The fake parses per call; the driver caches per instance version.
			ba, err := be.BucketAuth(ctx, "bk")
			if err != nil || (withPolicy && ba.Policy == nil) {
				b.Fatal(err)
			}
			s, err := New(Config{Backend: cachedAuth{be, ba}, Auth: testAuth{}, Logger: slog.New(slog.DiscardHandler), Registerer: prometheus.NewRegistry()})
			if err != nil {
				b.Fatal(err)
			}
			r := httptest.NewRequest("GET", "/bk/some/key", nil)
			r.RemoteAddr = "127.0.0.1:5555"
			rc := &reqCtx{bucket: "bk", key: "some/key", op: "GetObject", ident: Identity{User: driver.User{ID: "alice"}}}
			b.ReportAllocs()
			for b.Loop() {
				rc.objACLChecked = false
				if err := s.authorize(r, rc, authz.S3GetObject); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cachedAuth returns one parsed BucketAuth, as the driver's cache does.
type cachedAuth struct {
	*fakeBackend
	ba *driver.BucketAuth
}

func (c cachedAuth) BucketAuth(ctx context.Context, name string) (*driver.BucketAuth, error) {
	return c.ba, nil
}
