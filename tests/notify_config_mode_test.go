package tests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// signedDo sends one SigV4-signed request with the admin keys (for RGW's
// extensions no SDK models, such as GET/DELETE ?notification=ID).
func signedDo(t *testing.T, g *Gateway, method, pathQuery string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, g.Endpoint+pathQuery, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(nil)
	ph := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", ph)
	creds := aws.Credentials{AccessKeyID: g.AccessKey, SecretAccessKey: g.SecretKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, ph, "s3", "default", time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func putNotif(t *testing.T, g *Gateway, arn, id, event string) {
	t.Helper()
	awsCLI(t, g, "s3api", "put-bucket-notification-configuration", "--bucket", "mbk",
		`--notification-configuration={"TopicConfigurations": [{"Id": "`+id+`", "TopicArn": "`+arn+`", "Events": ["`+event+`"]}]}`)
}

func notifIDs(t *testing.T, g *Gateway) string {
	t.Helper()
	out := awsCLI(t, g, "s3api", "get-bucket-notification-configuration", "--bucket", "mbk")
	var ids []string
	for _, id := range []string{"n1", "n2"} {
		if strings.Contains(out, `"Id": "`+id+`"`) {
			ids = append(ids, id)
		}
	}
	return strings.Join(ids, ",")
}

// TestNotificationConfigModes runs the aws CLI against both dialects of
// PutBucketNotificationConfiguration: AWS replaces the configuration, RGW
// adds or updates by Id and deletes all only on an empty configuration.
func TestNotificationConfigModes(t *testing.T) {
	rv := newReceiver(t)
	setup := func(t *testing.T, mode ...string) (*Gateway, string) {
		g := StartGateway(t, mode...)
		out := awsCLI(t, g, "sns", "create-topic", "--name=mt", `--attributes={"push-endpoint": "`+rv.srv.URL+`"}`)
		awsCLI(t, g, "s3api", "create-bucket", "--bucket", "mbk")
		return g, jsonField(t, out, "TopicArn")
	}
	t.Run("aws", func(t *testing.T) {
		g, arn := setup(t) // the default
		putNotif(t, g, arn, "n1", "s3:ObjectCreated:*")
		putNotif(t, g, arn, "n2", "s3:ObjectRemoved:*")
		if got := notifIDs(t, g); got != "n2" {
			t.Fatalf("aws mode: configurations after two PUTs = %q, want n2 (replaced)", got)
		}
	})
	t.Run("rgw", func(t *testing.T) {
		g, arn := setup(t, "--notification-config-mode", "rgw")
		putNotif(t, g, arn, "n1", "s3:ObjectCreated:*")
		putNotif(t, g, arn, "n2", "s3:ObjectRemoved:*")
		if got := notifIDs(t, g); got != "n1,n2" {
			t.Fatalf("rgw mode: configurations after two PUTs = %q, want n1,n2", got)
		}
		putNotif(t, g, arn, "n1", "s3:ObjectCreated:Put") // same Id: updated in place
		s, body := signedDo(t, g, http.MethodGet, "/mbk?notification=n1")
		if s != 200 || !strings.Contains(body, "<Id>n1</Id>") || strings.Contains(body, "n2") ||
			!strings.Contains(body, "s3:ObjectCreated:Put") || strings.Contains(body, "s3:ObjectCreated:*") {
			t.Fatalf("GET ?notification=n1: %d %s", s, body)
		}
		if s, body := signedDo(t, g, http.MethodDelete, "/mbk?notification=n1"); s != 200 {
			t.Fatalf("DELETE ?notification=n1: %d %s, want 200 as RGW", s, body)
		}
		if got := notifIDs(t, g); got != "n2" {
			t.Fatalf("after DELETE n1: %q", got)
		}
		awsCLI(t, g, "s3api", "put-bucket-notification-configuration", "--bucket", "mbk",
			`--notification-configuration={}`)
		if got := notifIDs(t, g); got != "" {
			t.Fatalf("an empty configuration must delete all: %q", got)
		}
	})
}
