package tests

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// A POST form upload through cairn serve emits ObjectCreated:Post through
// the persistent notification path, and a configuration filtered on that
// event sees no PUTs.
func TestPostObjectNotification(t *testing.T) {
	rv := newReceiver(t)
	g := StartGateway(t, "--notif-scan-interval", "1s")
	out := awsCLI(t, g, "sns", "create-topic", "--name=posts",
		`--attributes={"push-endpoint": "`+rv.srv.URL+`", "persistent": "true"}`)
	arn := jsonField(t, out, "TopicArn")
	awsCLI(t, g, "s3api", "create-bucket", "--bucket", "forms")
	awsCLI(t, g, "s3api", "put-bucket-notification-configuration", "--bucket", "forms",
		`--notification-configuration={"TopicConfigurations": [{"Id": "onpost", "TopicArn": "`+arn+`", "Events": ["s3:ObjectCreated:Post"]}]}`)

	c := sdkClient(g, g.AccessKey, g.SecretKey)
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("forms"), Key: aws.String("put-key"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, f := range postPolicyFields(g.AccessKey, g.SecretKey, "forms", "forms/${filename}") {
		_ = mw.WriteField(f[0], f[1])
	}
	fw, _ := mw.CreateFormFile("file", "report.csv")
	_, _ = fw.Write([]byte("a,b,c\n"))
	_ = mw.Close()
	res, err := http.Post(g.Endpoint+"/forms", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Fatalf("POST: %d", res.StatusCode)
	}

	deadline := time.Now().Add(60 * time.Second)
	for len(rv.snapshot()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no event; gateway log:\n%s", tail(g.Log.String(), 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	recs := rv.snapshot()
	r := recs[0]
	if r["eventName"] != "ObjectCreated:Post" || field(r, "s3", "object", "key") != "forms/report.csv" ||
		field(r, "s3", "object", "size") != float64(6) || field(r, "s3", "configurationId") != "onpost" {
		t.Fatalf("record: %v", r)
	}
	for _, r := range recs {
		if field(r, "s3", "object", "key") == "put-key" {
			t.Fatalf("a PUT matched the Post-only configuration: %v", r)
		}
	}
}
