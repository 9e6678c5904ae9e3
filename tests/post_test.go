package tests

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strconv"
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
	for _, f := range postPolicyFields(g.AccessKey, g.SecretKey, "forms", "forms/${filename}", 1024) {
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

// procHWM returns a process's peak resident set size in bytes.
func procHWM(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// The file part streams to the object layer: a 512 MiB form upload raises
// the gateway's peak RSS by far less than the file's size.
func TestPostObjectStreams(t *testing.T) {
	const size = 512 << 20
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("big")}); err != nil {
		t.Fatal(err)
	}
	before := procHWM(t, g.cmd.Process.Pid)
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		for _, f := range postPolicyFields(g.AccessKey, g.SecretKey, "big", "forms/big.bin", size) {
			_ = mw.WriteField(f[0], f[1])
		}
		fw, _ := mw.CreateFormFile("file", "big.bin")
		chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
		for n := 0; n < size; n += len(chunk) {
			if _, err := fw.Write(chunk); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	res, err := http.Post(g.Endpoint+"/big", mw.FormDataContentType(), pr)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Fatalf("POST: %d %s", res.StatusCode, msg)
	}
	after := procHWM(t, g.cmd.Process.Pid)
	t.Logf("gateway peak RSS %d MiB -> %d MiB for a %d MiB POST", before>>20, after>>20, size>>20)
	if grew := after - before; grew > 128<<20 {
		t.Fatalf("peak RSS grew by %d MiB: the file part was buffered", grew>>20)
	}
	head, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("big"), Key: aws.String("forms/big.bin")})
	if err != nil || aws.ToInt64(head.ContentLength) != size {
		t.Fatalf("stored object: %v %v", head, err)
	}
}
