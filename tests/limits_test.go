package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// TestUserLimits: the shard count a user may ask for is capped (default
// max-dynamic-shards; admins may go higher through the admin API), and a
// user may own at most max-buckets buckets (per-user override from
// `cairn admin user create --max-buckets`), both as S3 errors.
func TestUserLimits(t *testing.T) {
	g := StartGateway(t, "--max-dynamic-shards", "50", "--max-buckets", "3")
	ctx := context.Background()
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	withShards := func(n int) func(*s3.Options) {
		return func(o *s3.Options) {
			o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue("x-cairn-bucket-index-shards", fmt.Sprint(n)))
		}
	}
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("wide")}, withShards(65521))
	if apiCode(err) != "InvalidArgument" || !strings.Contains(err.Error(), "between 1 and 50") {
		t.Fatalf("65521 shards: %v", err)
	}
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("fifty")}, withShards(50)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("fifty")}); err != nil {
		t.Fatal(err)
	}
	t.Logf("listing an empty 50-shard bucket: %v", time.Since(start))
	if out, err := g.Admin("bucket", "create", "--bucket", "admin-wide", "--uid", "admin", "--num-shards", "200"); err != nil || !strings.Contains(out, `"num_shards": 200`) && !strings.Contains(out, `"num_shards":200`) {
		t.Fatalf("admin pre-sharding above the user cap: %v %s", err, out)
	}
	// The admin now owns 2 buckets; max-buckets is 3.
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("third")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("fourth")})
	if apiCode(err) != "TooManyBuckets" || !strings.Contains(err.Error(), "400") {
		t.Fatalf("4th bucket: %v", err)
	}
	if _, err := g.Admin("user", "create", "--uid", "dave", "--access-key", "DAVEKEY0000000000000", "--secret", "davesecret0000000000", "--max-buckets", "1"); err != nil {
		t.Fatal(err)
	}
	if out, _ := g.Admin("user", "info", "--uid", "dave"); !strings.Contains(out, `"max_buckets"`) {
		t.Fatalf("user info lacks max_buckets: %s", out)
	}
	dc := sdkClient(g, "DAVEKEY0000000000000", "davesecret0000000000")
	if _, err := dc.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("dave1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := dc.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("dave2")}); apiCode(err) != "TooManyBuckets" {
		t.Fatalf("dave's 2nd bucket: %v", err)
	}
}
