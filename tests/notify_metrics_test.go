package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// scrapeGauge returns the value of metric{topic="topic"} from /metrics
// (-1 when absent); the gateway must run with --metrics-tenant-labels.
func scrapeGauge(t *testing.T, g *Gateway, metric, topic string) float64 {
	t.Helper()
	b := scrapeMetrics(t, g)
	prefix := metric + `{topic="` + topic + `"} `
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return -1
}

type topicStats struct {
	Entries      float64 `json:"entries"`
	Size         float64 `json:"size"`
	Reservations float64 `json:"reservations"`
}

func adminTopicStats(t *testing.T, g *Gateway, topic string) topicStats {
	t.Helper()
	out, err := g.Admin("topic", "stats", "--topic", topic)
	if err != nil {
		t.Fatal(err)
	}
	var st topicStats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err, out)
	}
	return st
}

// The queue gauges equal `topic stats` right after writes (no refresh
// interval to wait for), while the endpoint is down and after it drained;
// the failing endpoint is logged at warn once (then rate-limited), and its
// recovery once.
func TestQueueGaugesAgreeWithTopicStats(t *testing.T) {
	rv := newReceiver(t)
	rv.setDown(true)
	g := StartGateway(t, "--notif-shards", "3", "--notif-scan-interval", "1s", "--metrics-tenant-labels")
	out := awsCLI(t, g, "sns", "create-topic", "--name=gt",
		`--attributes={"push-endpoint": "`+rv.srv.URL+`", "persistent": "true"}`)
	arn := jsonField(t, out, "TopicArn")
	awsCLI(t, g, "s3api", "create-bucket", "--bucket", "gbk")
	awsCLI(t, g, "s3api", "put-bucket-notification-configuration", "--bucket", "gbk",
		`--notification-configuration={"TopicConfigurations": [{"Id": "g1", "TopicArn": "`+arn+`", "Events": ["s3:ObjectCreated:*"]}]}`)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	compare := func(when string) topicStats {
		t.Helper()
		st := adminTopicStats(t, g, "gt")
		entries := scrapeGauge(t, g, "cairn_notify_queue_entries", "gt")
		size := scrapeGauge(t, g, "cairn_notify_queue_bytes", "gt")
		if entries != st.Entries || size != st.Size {
			t.Fatalf("%s: gauges entries=%v bytes=%v, topic stats entries=%v size=%v", when, entries, size, st.Entries, st.Size)
		}
		if age := scrapeGauge(t, g, "cairn_notify_queue_oldest_entry_age_seconds", "gt"); (st.Entries > 0) != (age > 0) {
			t.Fatalf("%s: oldest age %v with %v entries", when, age, st.Entries)
		}
		return st
	}
	compare("before writes")
	for round := 1; round <= 3; round++ {
		for i := 0; i < 5; i++ {
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("gbk"), Key: aws.String(fmt.Sprintf("r%d/k%d", round, i)),
				Body: strings.NewReader("x")}); err != nil {
				t.Fatal(err)
			}
		}
		// Commits follow the replies (notif-commit-linger): wait for them.
		deadline := time.Now().Add(30 * time.Second)
		for adminTopicStats(t, g, "gt").Entries != float64(5*round) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %v entries queued, want %d", round, adminTopicStats(t, g, "gt").Entries, 5*round)
			}
			time.Sleep(20 * time.Millisecond)
		}
		compare(fmt.Sprintf("after round %d", round))
	}
	// Pushes fail: one warn line for the endpoint, not one per failure.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(g.Log.String(), "notification push failed") {
		if time.Now().After(deadline) {
			t.Fatalf("no warn line for the failing endpoint:\n%s", tail(g.Log.String(), 3000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	rv.setDown(false)
	deadline = time.Now().Add(60 * time.Second)
	for adminTopicStats(t, g, "gt").Entries != 0 {
		if time.Now().After(deadline) {
			t.Fatal("queue did not drain")
		}
		time.Sleep(100 * time.Millisecond)
	}
	compare("after draining")
	logs := g.Log.String()
	if n := strings.Count(logs, `"msg":"notification push failed"`); n != 1 {
		t.Errorf("%d first-failure lines, want 1 (rate-limited per endpoint)", n)
	}
	if !strings.Contains(logs, `"level":"WARN","msg":"notification push failed"`) {
		t.Errorf("first failure not at warn")
	}
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(g.Log.String(), "notification endpoint recovered") {
		if time.Now().After(deadline) {
			t.Fatalf("no recovery line:\n%s", tail(g.Log.String(), 3000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkDashboardMetrics(t, g)
}

// checkDashboardMetrics: every metric docs/grafana/cairn-notifications.json
// queries is one the gateway exports (so the dashboard cannot rot). Vec
// families appear in /metrics only once a sample exists; those the test
// traffic cannot produce are listed in mayBeAbsent.
func checkDashboardMetrics(t *testing.T, g *Gateway) {
	t.Helper()
	raw, err := os.ReadFile("../docs/grafana/cairn-notifications.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	body := scrapeMetrics(t, g)
	mayBeAbsent := map[string]bool{"cairn_notify_delivery_events_expired_total": true}
	re := regexp.MustCompile(`cairn_[a-z0-9_]+`)
	seen := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, name := range re.FindAllString(tg.Expr, -1) {
				seen++
				family := strings.TrimSuffix(name, "_bucket")
				if !strings.Contains(string(body), "\n"+family) && !mayBeAbsent[family] {
					t.Errorf("panel %q queries %s, which the gateway does not export", p.Title, name)
				}
			}
		}
	}
	if seen < 10 {
		t.Fatalf("only %d metric references in the dashboard", seen)
	}
}
