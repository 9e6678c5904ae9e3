//go:build rados

package tests

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestCephStorageClasses: two gateways on one cluster with STANDARD_IA as
// a RADOS pool of its own. A PUT with the class lands in that pool (seen
// with Ceph's rados tool), the other gateway reports it, and a lifecycle
// transition moves an object's stripes out of the default data pool into
// it while both gateways keep reading the same bytes.
func TestCephStorageClasses(t *testing.T) {
	conf, _ := cephCluster(t)
	gws := startRadosGateways(t, conf, 2, "--storage-classes", "STANDARD_IA", "--lc-debug-interval", "3s", "--lc-max-objs", "2")
	prefix := radosPrefixOf(t, gws[0])
	c0, c1 := sdkClient(gws[0], gws[0].AccessKey, gws[0].SecretKey), sdkClient(gws[1], gws[1].AccessKey, gws[1].SecretKey)
	ctx := context.Background()
	awsCLI(t, gws[0], "s3api", "create-bucket", "--bucket", "csc")
	if _, err := c0.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("csc"), Key: aws.String("ia"),
		Body: bytes.NewReader([]byte("infrequent")), StorageClass: types.StorageClassStandardIa}); err != nil {
		t.Fatal(err)
	}
	if got := headClass(t, c1, "csc", "ia"); got != types.StorageClassStandardIa {
		t.Fatalf("class through the other gateway: %q", got)
	}
	iaPool, dataPool := prefix+"default.rgw.standard_ia.data", prefix+"default.rgw.buckets.data"
	if n := len(radosNames(t, conf, iaPool)); n != 1 {
		t.Fatalf("%s holds %d objects, want 1", iaPool, n)
	}
	body := bytes.Repeat([]byte("move me "), 1<<20) // 8 MiB: two stripes
	if _, err := c0.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("csc"), Key: aws.String("t/obj"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	before := len(radosNames(t, conf, dataPool))
	awsCLI(t, gws[1], "s3api", "put-bucket-lifecycle-configuration", "--bucket", "csc", "--lifecycle-configuration",
		`{"Rules": [{"ID": "t", "Status": "Enabled", "Filter": {"Prefix": "t/"}, "Transitions": [{"Days": 1, "StorageClass": "STANDARD_IA"}]}]}`)
	deadline := time.Now().Add(3 * time.Minute)
	for headClass(t, c1, "csc", "t/obj") != types.StorageClassStandardIa {
		if time.Now().After(deadline) {
			t.Fatal("the transition did not happen")
		}
		time.Sleep(300 * time.Millisecond)
	}
	for _, c := range []*s3.Client{c0, c1} {
		o, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("csc"), Key: aws.String("t/obj")})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(o.Body)
		o.Body.Close()
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("moved object: %d bytes, %v", len(got), err)
		}
	}
	for len(radosNames(t, conf, iaPool)) != 3 || len(radosNames(t, conf, dataPool)) != before-2 {
		if time.Now().After(deadline) {
			t.Fatalf("pools after the move: %s %d objects, %s %d (was %d)", iaPool, len(radosNames(t, conf, iaPool)),
				dataPool, len(radosNames(t, conf, dataPool)), before)
		}
		time.Sleep(300 * time.Millisecond)
	}
}
