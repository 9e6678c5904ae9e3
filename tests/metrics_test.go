package tests

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// emptySHA256 is the SHA-256 of an empty body.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// metricsRequest is a GET /metrics signed by g's admin (SigV4, as
// `curl --aws-sigv4` sends it).
func metricsRequest(g *Gateway) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, g.Endpoint+"/metrics", nil)
	r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	_ = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: g.AccessKey, SecretAccessKey: g.SecretKey},
		r, emptySHA256, "s3", "us-east-1", time.Now())
	return r
}

// scrapeMetrics returns g's /metrics page, scraped as its admin.
func scrapeMetrics(t *testing.T, g *Gateway) string {
	t.Helper()
	resp, err := http.DefaultClient.Do(metricsRequest(g))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics as admin: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

func getStatus(t *testing.T, url, bearer string) (int, string) {
	t.Helper()
	r, _ := http.NewRequest(http.MethodGet, url, nil)
	if bearer != "" {
		r.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// /metrics leaks nothing to whoever reaches the port: anonymous scrapes
// are refused, a non-admin's signature too; the admin's signature or the
// bearer token get the page, which names no topic unless
// metrics-tenant-labels is set.
func TestMetricsAccess(t *testing.T) {
	const token = "scrape-token-0123456789"
	g := StartGateway(t, "--metrics-token", token, "--notif-scan-interval", "1s")
	awsCLI(t, g, "sns", "create-topic", "--name=hidden-tenant-topic",
		`--attributes={"push-endpoint": "http://127.0.0.1:1", "persistent": "true"}`)
	if s, b := getStatus(t, g.Endpoint+"/metrics", ""); s != http.StatusUnauthorized || strings.Contains(b, "hidden-tenant-topic") {
		t.Fatalf("anonymous GET /metrics: %d %.300s", s, b)
	}
	if s, _ := getStatus(t, g.Endpoint+"/metrics", "wrong-token-0123456789"); s != http.StatusForbidden {
		t.Fatalf("wrong token: %d", s)
	}
	s, b := getStatus(t, g.Endpoint+"/metrics", token)
	if s != http.StatusOK || !strings.Contains(b, "cairn_notify_queue_entries ") {
		t.Fatalf("token: %d %.300s", s, b)
	}
	if strings.Contains(b, "hidden-tenant-topic") {
		t.Fatal("/metrics names a topic without metrics-tenant-labels")
	}
	if b := scrapeMetrics(t, g); strings.Contains(b, "hidden-tenant-topic") || !strings.Contains(b, "cairn_notify_queue_entries ") {
		t.Fatalf("admin scrape: %.300s", b)
	}
	// A user who is not an admin cannot scrape with his own keys.
	user := createUser(t, g, "metricsbob")
	r := metricsRequest(&Gateway{Endpoint: g.Endpoint, AccessKey: user.ak, SecretKey: user.sk})
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("non-admin signature: %d", resp.StatusCode)
	}

	// Asked for, the topic is named.
	g2 := StartGateway(t, "--metrics-tenant-labels", "--metrics-public")
	awsCLI(t, g2, "sns", "create-topic", "--name=named-topic",
		`--attributes={"push-endpoint": "http://127.0.0.1:1", "persistent": "true"}`)
	if s, b := getStatus(t, g2.Endpoint+"/metrics", ""); s != http.StatusOK || !strings.Contains(b, `cairn_notify_queue_entries{topic="named-topic"} 0`) {
		t.Fatalf("public with tenant labels: %d %.300s", s, b)
	}
}

// metrics-listen serves /metrics on its own port, open there; the main
// port no longer serves it.
func TestMetricsListen(t *testing.T) {
	addr := freeAddr(t)
	g := StartGateway(t, "--metrics-listen", addr)
	// Bound before the gateway started answering: no wait needed.
	s, b := getStatus(t, "http://"+addr+"/metrics", "")
	if s != http.StatusOK || !strings.Contains(b, "go_goroutines") {
		t.Fatalf("metrics listener: %d %.300s", s, b)
	}
	if s, b := getStatus(t, g.Endpoint+"/metrics", ""); s == http.StatusOK || strings.Contains(b, "go_goroutines") {
		t.Fatalf("main listener still serves metrics: %d", s)
	}
	if s, _ := getStatus(t, "http://"+addr+"/other", ""); s != http.StatusNotFound {
		t.Fatalf("metrics listener serves other paths: %d", s)
	}
}
