package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// receiver is a real HTTP endpoint on loopback collecting event records.
type receiver struct {
	mu      sync.Mutex
	records []map[string]any
	down    bool
	srv     *httptest.Server
}

func newReceiver(t *testing.T) *receiver {
	rv := &receiver{}
	rv.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rv.mu.Lock()
		defer rv.mu.Unlock()
		if rv.down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		var msg struct {
			Records []map[string]any `json:"Records"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &msg); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		rv.records = append(rv.records, msg.Records...)
	}))
	t.Cleanup(rv.srv.Close)
	return rv
}

func (rv *receiver) setDown(d bool) { rv.mu.Lock(); rv.down = d; rv.mu.Unlock() }

func (rv *receiver) snapshot() []map[string]any {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return append([]map[string]any(nil), rv.records...)
}

func field(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

func awsCLI(t *testing.T, g *Gateway, args ...string) string {
	t.Helper()
	requireTool(t, "aws", "--version")
	cmd := exec.Command("aws", append([]string{"--endpoint-url", g.Endpoint, "--region", "default"}, args...)...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+g.AccessKey, "AWS_SECRET_ACCESS_KEY="+g.SecretKey)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("aws %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestPersistentNotificationsEndToEnd uses the seed commands of DESIGN.md
// (aws sns create-topic, put-bucket-notification-configuration), writes
// through the S3 API while the endpoint is down, kills the gateway with
// SIGKILL, restarts it, brings the endpoint up, and expects exactly the
// acknowledged writes' events, in order per key.
func TestPersistentNotificationsEndToEnd(t *testing.T) {
	rv := newReceiver(t)
	rv.setDown(true)
	g := StartGateway(t, "--notif-shards", "3", "--notif-scan-interval", "1s", "--notif-lease", "3s")
	out := awsCLI(t, g, "sns", "create-topic", "--name=fishtopic",
		`--attributes={"push-endpoint": "`+rv.srv.URL+`", "persistent": "true", "OpaqueData": "opaque-1"}`)
	arn := jsonField(t, out, "TopicArn")
	if arn != "arn:aws:sns:default::fishtopic" {
		t.Fatalf("topic arn %q", arn)
	}
	awsCLI(t, g, "s3api", "create-bucket", "--bucket", "bk1")
	awsCLI(t, g, "s3api", "put-bucket-notification-configuration", "--bucket", "bk1",
		`--notification-configuration={"TopicConfigurations": [{"Id": "notif1", "TopicArn": "`+arn+`", "Events": []}]}`)
	got := awsCLI(t, g, "s3api", "get-bucket-notification-configuration", "--bucket", "bk1")
	if !strings.Contains(got, "notif1") || !strings.Contains(got, arn) {
		t.Fatalf("get notification config: %s", got)
	}
	// Unknown topic ARN: a clear error, nothing changes.
	cmd := exec.Command("aws", "--endpoint-url", g.Endpoint, "--region", "default", "s3api", "put-bucket-notification-configuration", "--bucket", "bk1",
		`--notification-configuration={"TopicConfigurations": [{"Id": "bad", "TopicArn": "arn:aws:sns:default::nope", "Events": []}]}`)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+g.AccessKey, "AWS_SECRET_ACCESS_KEY="+g.SecretKey)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("unknown topic accepted: %s", out)
	}

	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	type op struct{ key, name string }
	var mu sync.Mutex
	var acked []op
	stop := loadWorkers(4, func(w, i int) {
		key := fmt.Sprintf("k%d-%d", w, i%5)
		if i%4 == 3 {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bk1"), Key: aws.String(key)}); err == nil {
				mu.Lock()
				acked = append(acked, op{key, "ObjectRemoved:Delete"})
				mu.Unlock()
			}
			return
		}
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bk1"), Key: aws.String(key), Body: strings.NewReader(key)})
		if err == nil {
			mu.Lock()
			acked = append(acked, op{key, "ObjectCreated:Put"})
			mu.Unlock()
		}
	})
	// Kill once writes were acknowledged, with the workers still going (a
	// fixed sleep may see none on a loaded machine: nothing tested).
	for waitUntil := time.Now().Add(3 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 20 {
			break
		}
		if time.Now().After(waitUntil) {
			t.Fatalf("only %d writes acknowledged in 3 minutes", n)
		}
	}
	g.Kill()
	stop()
	g.Start()
	rv.setDown(false)

	// Deletes of a missing key produce no event, so count what must arrive:
	// every acknowledged PUT; deletes are checked by order only.
	wantPuts := map[string]int{}
	for _, o := range acked {
		if o.name == "ObjectCreated:Put" {
			wantPuts[o.key]++
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		recs := rv.snapshot()
		gotPuts := map[string]int{}
		for _, r := range recs {
			if r["eventName"] == "ObjectCreated:Put" {
				gotPuts[field(r, "s3", "object", "key").(string)]++
			}
		}
		missing := 0
		for k, n := range wantPuts {
			if gotPuts[k] < n {
				missing += n - gotPuts[k]
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d acknowledged PUT events never arrived (%d received)", missing, len(recs))
		}
		time.Sleep(200 * time.Millisecond)
	}
	recs := rv.snapshot()
	// Per-key order: sequencers of one key increase in arrival order, and
	// the record has the documented shape.
	last := map[string]string{}
	for _, r := range recs {
		key := field(r, "s3", "object", "key").(string)
		seq, _ := field(r, "s3", "object", "sequencer").(string)
		if prev, ok := last[key]; ok && seq <= prev {
			t.Fatalf("key %s: sequencer %s arrived after %s", key, seq, prev)
		}
		last[key] = seq
		if r["eventVersion"] != "2.2" || field(r, "s3", "configurationId") != "notif1" || r["opaqueData"] != "opaque-1" ||
			field(r, "s3", "bucket", "name") != "bk1" || field(r, "s3", "bucket", "arn") == nil {
			t.Fatalf("record shape: %v", r)
		}
	}
	if len(acked) == 0 {
		t.Fatal("no write acknowledged before the kill: the test proved nothing")
	}
	t.Logf("%d acknowledged writes, %d events delivered after kill -9 and endpoint recovery", len(acked), len(recs))

	// Admin views and the queue shards.
	stats, err := g.Admin("topic", "stats", "--topic", "fishtopic")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("topic stats: %s", stats)
	if out, err := g.Admin("topic", "list"); err != nil || !strings.Contains(out, "fishtopic") {
		t.Fatalf("topic list: %v %s", err, out)
	}
	// The queue shards, through the running gateway and then offline.
	remote := exec.Command(cairnBin, "rados", "--endpoint", g.Endpoint, "--pool", "default.rgw.log", "--namespace", "notif", "ls")
	remote.Env = append(os.Environ(), "CAIRN_ACCESS_KEY="+g.AccessKey, "CAIRN_SECRET_KEY="+g.SecretKey)
	lsRemote, err := remote.CombinedOutput()
	if err != nil {
		t.Fatalf("rados --endpoint ls: %v %s", err, lsRemote)
	}
	g.Stop()
	ls, err := exec.Command(cairnBin, "rados", "--data-dir", g.DataDir, "--pool", "default.rgw.log", "--namespace", "notif", "ls").CombinedOutput()
	if err != nil {
		t.Fatalf("rados ls: %v %s", err, ls)
	}
	for _, out := range []string{string(lsRemote), string(ls)} {
		for _, shard := range []string{":fishtopic", ":fishtopic.1", ":fishtopic.2"} {
			if !strings.Contains("\n"+out, "\n"+shard+"\n") {
				t.Fatalf("shard %s missing from rados ls:\n%s", shard, out)
			}
		}
	}
}
