package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Delivery starts at once and resumes at once. The scan interval is ten
// minutes and the lease thirty, so only the new-topic trigger can explain
// the first delivery, and only taking over the dead process's leases (same
// data directory, same gateway id) can explain delivery after kill -9.
func TestNotificationsStartAndResumeAtOnce(t *testing.T) {
	rv := newReceiver(t)
	g := StartGateway(t, "--notif-shards", "3", "--notif-scan-interval", "10m", "--notif-lease", "30m")
	awsCLI(t, g, "s3api", "create-bucket", "--bucket", "bk1")
	out := awsCLI(t, g, "sns", "create-topic", "--name=quick",
		`--attributes={"push-endpoint": "`+rv.srv.URL+`", "persistent": "true"}`)
	arn := jsonField(t, out, "TopicArn")
	awsCLI(t, g, "s3api", "put-bucket-notification-configuration", "--bucket", "bk1",
		`--notification-configuration={"TopicConfigurations": [{"Id": "n1", "TopicArn": "`+arn+`", "Events": []}]}`)

	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	put := func(key string) {
		t.Helper()
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bk1"), Key: aws.String(key), Body: strings.NewReader(key)}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(n int, what string) time.Duration {
		t.Helper()
		start := time.Now()
		deadline := start.Add(60 * time.Second)
		for len(rv.snapshot()) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d events after 60s (scan 10m, lease 30m)\n%s", what, len(rv.snapshot()), n, g.Log.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		return time.Since(start)
	}
	put("first")
	took := waitFor(1, "new topic")
	t.Logf("first event of a new topic delivered %v after the PUT", took.Round(time.Millisecond))

	// Events queue up while the endpoint is down; the gateway dies
	// holding every shard's lease and comes back on the same data dir.
	rv.setDown(true)
	for i := 0; i < 6; i++ {
		put(fmt.Sprintf("k%d", i))
	}
	g.Kill()
	g.Start()
	rv.setDown(false)
	took = waitFor(7, "after kill -9 and restart")
	t.Logf("delivery resumed %v after the restart (lease 30m)", took.Round(time.Millisecond))
	checkVisibleHaveEvents(t, c, rv, "bk1", false)
	if !strings.Contains(g.Log.String(), "taken over from an earlier incarnation") {
		t.Errorf("no lease taken over in the restarted gateway's log:\n%s", g.Log.String())
	}

	// A changed push-endpoint applies at once: the SNS request asks for a
	// scan, which hands the owned shards the new settings. The old
	// endpoint is down, so without the scan the event would keep being
	// retried there for ten minutes.
	rv.setDown(true)
	rv2 := newReceiver(t)
	// (--cli-input-json: aws CLI v1 fetches a parameter that looks like
	// a URL.)
	awsCLI(t, g, "sns", "set-topic-attributes", "--cli-input-json",
		`{"TopicArn": "`+arn+`", "AttributeName": "push-endpoint", "AttributeValue": "`+rv2.srv.URL+`"}`)
	put("moved")
	start := time.Now()
	for len(rv2.snapshot()) == 0 {
		if time.Since(start) > 60*time.Second {
			t.Fatalf("no event at the new push-endpoint after 60s (scan 10m)")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if key := field(rv2.snapshot()[0], "s3", "object", "key"); key != "moved" {
		t.Fatalf("new endpoint got %v, want the event of moved", key)
	}
	t.Logf("new push-endpoint in use %v after the change", time.Since(start).Round(time.Millisecond))
}
