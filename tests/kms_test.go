package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-s3/cairn/internal/kms/kmip"
	"github.com/cairn-s3/cairn/internal/kms/kmip/pykmip"
)

// grepDir returns the files under dir that contain any of needles.
func grepDir(t *testing.T, dir string, needles ...string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, n := range needles {
			if bytes.Contains(b, []byte(n)) {
				hits = append(hits, p+": "+n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// TestSecretsSealedWithKMIP: with a real KMIP server (PyKMIP), user
// secret keys and topic credentials created through `cairn serve` are
// nowhere in clear in the data directory; records written in clear
// before the KMS was configured are sealed at start and still work; the
// keys keep authenticating and the credentials keep reading back across
// restarts, a key rotation and `cairn admin kms reseal`.
func TestSecretsSealedWithKMIP(t *testing.T) {
	srv := pykmip.Start(t)
	k, err := kmip.New(kmip.Config{Endpoint: srv.Addr, CAFile: srv.CA, CertFile: srv.Cert, KeyFile: srv.Key})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.CreateKey(context.Background(), "cairn-secrets"); err != nil {
		t.Fatal(err)
	}
	_ = k.Close()

	g := StartGateway(t, "--allow-insecure-endpoint-secrets=true")
	// Before the KMS: a user and a topic stored in clear.
	const legacySecret = "LEGACYsecret0123456789abcdefghijklmnopqr"
	const legacyPW = "legacyAmqpPassword7a1c"
	if _, err := g.Admin("user", "create", "--uid", "legacy", "--access-key", "LEGACYKEY00000000000", "--secret", legacySecret); err != nil {
		t.Fatal(err)
	}
	legacyEndpoint := "amqp://bob:" + legacyPW + "@127.0.0.1:5672/"
	if code, body := snsCreateTopic(t, http.DefaultClient, g.Endpoint, g.AccessKey, g.SecretKey, "legacy-topic",
		map[string]string{"push-endpoint": legacyEndpoint, "amqp-exchange": "ex"}); code != 200 {
		t.Fatalf("CreateTopic: %d %s", code, body)
	}
	g.Stop()

	// With the KMS.
	g.args = append(g.args, "--kms-backend", "kmip", "--kmip-endpoint", srv.Addr, "--kmip-ca", srv.CA,
		"--kmip-cert", srv.Cert, "--kmip-key", srv.Key, "--kmip-default-key", "cairn-secrets")
	g.Start()
	if !strings.Contains(g.Log.String(), "sealed secrets stored in clear") {
		t.Fatalf("no migration at start; log:\n%s", g.Log.String())
	}
	const freshSecret = "FRESHsecret0123456789abcdefghijklmnopqrs"
	const saslPW = "freshSaslPassword3e9b"
	const urlPW = "freshUrlPassword51d0"
	if _, err := g.Admin("user", "create", "--uid", "fresh", "--access-key", "FRESHKEY000000000000", "--secret", freshSecret); err != nil {
		t.Fatal(err)
	}
	for name, attrs := range map[string]map[string]string{
		"sasl-topic": {"push-endpoint": "kafka://127.0.0.1:9092", "user-name": "carol", "password": saslPW, "use-ssl": "true", "mechanism": "PLAIN"},
		"url-topic":  {"push-endpoint": "amqp://dave:" + urlPW + "@127.0.0.1:5672/", "amqp-exchange": "ex"},
	} {
		if code, body := snsCreateTopic(t, http.DefaultClient, g.Endpoint, g.AccessKey, g.SecretKey, name, attrs); code != 200 {
			t.Fatalf("CreateTopic %s: %d %s", name, code, body)
		}
	}
	g.Stop()
	// Secrets written with the KMS configured never touch the disk in
	// clear. (Those written before stay in the store's older files until
	// compaction rewrites them: docs/format/kms.md.)
	if hits := grepDir(t, g.DataDir, freshSecret, saslPW, urlPW); len(hits) > 0 {
		t.Fatalf("secrets in clear in the data directory: %v", hits)
	}

	check := func(phase string) {
		t.Helper()
		for ak, sk := range map[string]string{"FRESHKEY000000000000": freshSecret, "LEGACYKEY00000000000": legacySecret} {
			if _, err := sdkClient(g, ak, sk).ListBuckets(context.Background(), &s3.ListBucketsInput{}); err != nil {
				t.Fatalf("%s: %s does not authenticate: %v", phase, ak, err)
			}
		}
		// GetTopicAttributes shows URL credentials (allowed in clear here)
		// but never the password attribute: HasStoredSecret says it is kept.
		for name, want := range map[string]string{"legacy-topic": legacyPW, "url-topic": urlPW, "sasl-topic": "HasStoredSecret&#34;:true"} {
			form := url.Values{"Action": {"GetTopicAttributes"}, "TopicArn": {"arn:aws:sns:default::" + name}}
			code, body := snsCall(t, http.DefaultClient, g.Endpoint, g.AccessKey, g.SecretKey, form)
			if code != 200 || !strings.Contains(body, want) {
				t.Fatalf("%s: GetTopicAttributes %s: %d %s (want its credentials back)", phase, name, code, body)
			}
		}
	}
	g.Start()
	check("restart")

	// Rotation, then re-seal: same secrets under the new key version.
	if out, err := g.Admin("kms", "rotate-key", "--key-id", "cairn-secrets"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	out, err := g.Admin("kms", "reseal")
	if err != nil {
		t.Fatal(err)
	}
	var counts struct{ Users, Topics int }
	if err := json.Unmarshal([]byte(out), &counts); err != nil || counts.Users != 3 || counts.Topics != 3 {
		t.Fatalf("reseal: %s (want 3 users: admin, legacy, fresh; 3 topics)", out)
	}
	g.Stop()
	g.Start()
	check("after rotation and reseal")
	if hits := grepDir(t, g.DataDir, freshSecret, saslPW, urlPW); len(hits) > 0 {
		t.Fatalf("secrets in clear after reseal: %v", hits)
	}

	// KMS outage: users read recently keep authenticating (cached keys);
	// a new user cannot be sealed and is refused within kmip-timeout,
	// not after a hang, and nothing is stored.
	srv.Stop()
	if _, err := sdkClient(g, "FRESHKEY000000000000", freshSecret).ListBuckets(context.Background(), &s3.ListBucketsInput{}); err != nil {
		t.Fatalf("recent user during a KMS outage: %v", err)
	}
	start := time.Now()
	if out, err := g.Admin("user", "create", "--uid", "during-outage", "--access-key", "OUTAGEKEY00000000000", "--secret", "outageSecret0123456789abcdefghijklmnopq"); err == nil {
		t.Fatalf("user created while its secret could not be sealed: %s", out)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("refusal took %v", d)
	}
	if out, err := g.Admin("user", "info", "--uid", "during-outage"); err == nil {
		t.Fatalf("a user was stored: %s", out)
	}
	if strings.Contains(g.Log.String(), freshSecret) || strings.Contains(g.Log.String(), saslPW) || strings.Contains(g.Log.String(), "outageSecret") {
		t.Fatal("a secret reached the log")
	}
}
