//go:build rados

package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestCephDataManagement: two gateways on one Ceph cluster. Tags written
// through one are read through the other, object lock refuses a held
// version's deletion, and both gateways run lifecycle workers over one
// registry: the rule is applied (each expired version's event delivered
// once) whichever gateway holds the bucket's shard.
func TestCephDataManagement(t *testing.T) {
	conf, _ := cephCluster(t)
	rv := newReceiver(t)
	gws := startRadosGateways(t, conf, 2, "--lc-debug-interval", "3s", "--lc-max-objs", "2", "--notif-scan-interval", "1s")
	c0, c1 := sdkClient(gws[0], gws[0].AccessKey, gws[0].SecretKey), sdkClient(gws[1], gws[1].AccessKey, gws[1].SecretKey)
	ctx := context.Background()
	awsCLI(t, gws[0], "s3api", "create-bucket", "--bucket", "cdm")
	awsCLI(t, gws[0], "s3api", "put-bucket-versioning", "--bucket", "cdm", "--versioning-configuration", "Status=Enabled")
	lifecycleTopic(t, gws[0], rv, "cdm")
	sdkPut(t, c0, "cdm", "logs/a", "1")
	sdkPut(t, c0, "cdm", "logs/a", "2")
	sdkPut(t, c0, "cdm", "keep/a", "k")
	if _, err := c0.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("cdm"), Key: aws.String("keep/a"),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("t"), Value: aws.String("1")}}}}); err != nil {
		t.Fatal(err)
	}
	tg, err := c1.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String("cdm"), Key: aws.String("keep/a")})
	if err != nil || len(tg.TagSet) != 1 || aws.ToString(tg.TagSet[0].Value) != "1" {
		t.Fatalf("tags through the other gateway: %+v %v", tg, err)
	}

	awsCLI(t, gws[1], "s3api", "create-bucket", "--bucket", "cdl", "--object-lock-enabled-for-bucket")
	held, err := c1.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cdl"), Key: aws.String("k"),
		Body: strings.NewReader("held"), ObjectLockLegalHoldStatus: types.ObjectLockLegalHoldStatusOn})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c0.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("cdl"), Key: aws.String("k"), VersionId: held.VersionId})
	if apiCode(err) != "AccessDenied" {
		t.Fatalf("delete of a held version: %v", err)
	}

	awsCLI(t, gws[1], "s3api", "put-bucket-lifecycle-configuration", "--bucket", "cdm", "--lifecycle-configuration",
		`{"Rules": [{"ID": "logs", "Status": "Enabled", "Filter": {"Prefix": "logs/"}, "Expiration": {"Days": 1}, "NoncurrentVersionExpiration": {"NoncurrentDays": 1}}]}`)
	want := "keep/a:V"
	deadline := time.Now().Add(3 * time.Minute)
	for strings.Join(versionsOf(t, c1, "cdm"), " ") != want {
		if time.Now().After(deadline) {
			t.Fatalf("versions of cdm: %v", versionsOf(t, c1, "cdm"))
		}
		time.Sleep(500 * time.Millisecond)
	}
	// logs/a: current → marker (Current), 2 noncurrent (NonCurrent), the
	// lone marker (DeleteMarker).
	deadline = time.Now().Add(time.Minute)
	for len(rv.snapshot()) < 5 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	waitPasses(t, gws[0], "cdm", 1)
	got := map[string]int{}
	for _, r := range rv.snapshot() {
		got[r["eventName"].(string)]++
	}
	if got["ObjectLifecycle:Expiration:Current"] != 1 || got["ObjectLifecycle:Expiration:NonCurrent"] != 2 ||
		got["ObjectLifecycle:Expiration:DeleteMarker"] != 1 || got["ObjectTagging:Put"] != 1 || len(got) != 4 {
		t.Fatalf("events: %v", got)
	}
	out, err := gws[1].Admin("lc", "status", "--bucket", "cdm")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lc status: %s", out)
}
