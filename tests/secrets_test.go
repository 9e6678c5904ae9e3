package tests

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// lockedLog collects a process's output; safe to read while it runs.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) add(s string) { l.mu.Lock(); l.b.WriteString(s); l.mu.Unlock() }
func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSecretsStayOutOfLogs: with generated admin keys and debug logging,
// the admin secret is only in <data-dir>/admin.credentials (0600), and no
// secret (admin or user secret key, endpoint password or token, request
// signature) reaches the console or the JSON log while users, topics with
// credentials, notifications and failing deliveries are exercised.
func TestSecretsStayOutOfLogs(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	cmd := exec.Command(cairnBin, "serve", "--data-dir", dir, "--listen", addr, "--log-level", "debug",
		"--allow-insecure-endpoint-secrets=true", "--notif-scan-interval", "1s")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CAIRN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	logs := &lockedLog{}
	pr, pw, _ := os.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			logs.add(sc.Text() + "\n")
		}
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		<-done
	}
	t.Cleanup(stop)
	endpoint := "http://" + addr
	waitFor(t, 20*time.Second, "gateway healthy", func() bool {
		res, err := http.Get(endpoint + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})

	credFile := filepath.Join(dir, "admin.credentials")
	st, err := os.Stat(credFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("admin.credentials: %v %v", st, err)
	}
	raw, _ := os.ReadFile(credFile)
	var ak, sk string
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "CAIRN_ACCESS_KEY="); ok {
			ak = v
		}
		if v, ok := strings.CutPrefix(line, "CAIRN_SECRET_KEY="); ok {
			sk = v
		}
	}
	if ak == "" || len(sk) < 20 {
		t.Fatalf("admin.credentials: %q", raw)
	}
	if !strings.Contains(logs.String(), credFile) {
		t.Fatalf("the console does not point at %s:\n%s", credFile, logs.String())
	}

	g := &Gateway{t: t, Endpoint: endpoint, Addr: addr, DataDir: dir, AccessKey: ak, SecretKey: sk}
	const userSecret = "userSecretValue0123456789abcdefXYZ"
	if _, err := g.Admin("user", "create", "--uid", "carol", "--access-key", "CAROLKEY00000000000A", "--secret", userSecret); err != nil {
		t.Fatal(err)
	}
	if out, err := g.Admin("user", "info", "--uid", "carol"); err != nil || !strings.Contains(out, userSecret) {
		t.Fatalf("user info: %v %s", err, out)
	}
	const topicPassword, httpToken = "topicPasswordValue42", "httpTokenValue42"
	if status, body := snsCreateTopic(t, http.DefaultClient, endpoint, ak, sk, "amqptopic",
		map[string]string{"push-endpoint": "amqp://bob:" + topicPassword + "@127.0.0.1:1", "amqp-exchange": "ex", "persistent": "true"}); status != 200 {
		t.Fatalf("CreateTopic amqp: %d %s", status, body)
	}
	if status, body := snsCreateTopic(t, http.DefaultClient, endpoint, ak, sk, "httptopic",
		map[string]string{"push-endpoint": "http://127.0.0.1:1/hook?token=" + httpToken, "persistent": "true"}); status != 200 {
		t.Fatalf("CreateTopic http: %d %s", status, body)
	}
	ctx := context.Background()
	c := sdkClient(g, ak, sk)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("logs")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
		Bucket: aws.String("logs"),
		NotificationConfiguration: &types.NotificationConfiguration{TopicConfigurations: []types.TopicConfiguration{
			{Id: aws.String("a"), TopicArn: aws.String("arn:aws:sns:default::amqptopic"), Events: []types.Event{"s3:ObjectCreated:*"}},
			{Id: aws.String("h"), TopicArn: aws.String("arn:aws:sns:default::httptopic"), Events: []types.Event{"s3:ObjectCreated:*"}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("logs"), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	// A request with a wrong signature (logged as a failure).
	bad := sdkClient(g, ak, "wrong"+sk)
	_, _ = bad.ListBuckets(ctx, &s3.ListBucketsInput{})
	// Both endpoints are unreachable: wait until delivery has failed and
	// said so in the log, so the failure paths are covered.
	waitFor(t, 90*time.Second, "delivery failures logged for both topics", func() bool {
		l := logs.String()
		return strings.Contains(l, `"topic":"amqptopic"`) && strings.Contains(l, `"topic":"httptopic"`) && strings.Contains(l, "push failed")
	})
	stop()
	out := logs.String()
	if testing.Verbose() {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "push failed") || strings.Contains(l, "unavailable") || strings.Contains(l, "admin") {
				t.Log(l)
			}
		}
	}
	for name, secret := range map[string]string{
		"admin secret key": sk, "user secret key": userSecret, "endpoint password": topicPassword,
		"endpoint token": httpToken, "request signature": "Signature=",
	} {
		if strings.Contains(out, secret) {
			i := strings.Index(out, secret)
			t.Errorf("%s in the log: …%s…", name, out[max(0, i-300):min(len(out), i+100)])
		}
	}
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
