package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestAdminReshard drives /admin/reshard of a running gateway through
// `cairn admin`: bad input, a reshard, status and cancel with nothing to do.
func TestAdminReshard(t *testing.T) {
	g := StartGateway(t, "--bucket-index-shards", "2")
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("rsadmin")}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		key := fmt.Sprintf("k%02d", i)
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("rsadmin"), Key: aws.String(key), Body: strings.NewReader(key)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range [][]string{
		{"bucket", "reshard", "--bucket", "rsadmin", "--num-shards", "many"},
		{"bucket", "reshard", "--bucket", "rsadmin", "--num-shards", "0"},
		{"bucket", "reshard", "--bucket", "nosuchbucket", "--num-shards", "5"},
	} {
		if out, err := g.Admin(bad...); err == nil {
			t.Fatalf("%v accepted: %s", bad, out)
		}
	}
	out, err := g.Admin("bucket", "reshard", "--bucket", "rsadmin", "--num-shards", "5")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		From int `json:"from_shards"`
		To   int `json:"to_shards"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.From != 2 || res.To != 5 {
		t.Fatalf("reshard result %s (%v)", out, err)
	}
	stats, err := g.Admin("bucket", "stats", "--bucket", "rsadmin")
	if err != nil || !strings.Contains(stats, `"num_shards": 5`) || !strings.Contains(stats, `"num_objects": 50`) {
		t.Fatalf("stats after reshard: %v %s", err, stats)
	}
	t.Logf("bucket stats after the reshard: %s", strings.Join(strings.Fields(stats), " "))
	if out, err := g.Admin("reshard", "list"); err != nil {
		t.Fatalf("reshard list: %v %s", err, out)
	}
	if out, err := g.Admin("reshard", "cancel", "--bucket", "nosuchbucket"); err == nil {
		t.Fatalf("cancel of a missing bucket accepted: %s", out)
	}
	// Every object is still listed after the reshard.
	l, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("rsadmin")})
	if err != nil || len(l.Contents) != 50 {
		t.Fatalf("list after reshard: %v %d", err, len(l.Contents))
	}
}
