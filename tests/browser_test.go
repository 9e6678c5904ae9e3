package tests

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// A real browser (Debian's headless chromium) on a page from another origin
// uses cairn the way a web app does: presigned PUT and GET with fetch(), a
// POST form upload, and reads the body and the exposed headers. A page from
// an origin the bucket's CORS rules do not name must be blocked.

// browserPage runs the checks and posts what it saw to /report on its own
// origin.
var browserPage = template.Must(template.New("page").Parse(`<!doctype html>
<html><body><script>
const cfg = {{.}};
async function step(out, name, fn) {
  try { await fn(); } catch (e) { out[name + "Error"] = String(e); }
}
(async () => {
  const out = {};
  await step(out, "put", async () => {
    const r = await fetch(cfg.putURL, {method: "PUT", body: "written by a browser"});
    out.putStatus = r.status;
    out.putETag = r.headers.get("ETag");
  });
  await step(out, "get", async () => {
    const r = await fetch(cfg.getURL);
    out.getStatus = r.status;
    out.getBody = await r.text();
    out.getETag = r.headers.get("ETag");
    out.getColor = r.headers.get("x-amz-meta-color");
    out.getRequestID = r.headers.get("x-amz-request-id");
  });
  await step(out, "post", async () => {
    const fd = new FormData();
    for (const [k, v] of cfg.postFields) fd.append(k, v);
    fd.append("file", new Blob(["posted from a form"], {type: "text/plain"}), "hello.txt");
    const r = await fetch(cfg.postURL, {method: "POST", body: fd});
    out.postStatus = r.status;
    out.postBody = await r.text();
  });
  await fetch("/report", {method: "POST", body: JSON.stringify(out)});
})();
</script></body></html>`))

type browserReport struct {
	PutStatus    int     `json:"putStatus"`
	PutETag      *string `json:"putETag"`
	PutError     string  `json:"putError"`
	GetStatus    int     `json:"getStatus"`
	GetBody      string  `json:"getBody"`
	GetETag      *string `json:"getETag"`
	GetColor     *string `json:"getColor"`
	GetRequestID *string `json:"getRequestID"`
	GetError     string  `json:"getError"`
	PostStatus   int     `json:"postStatus"`
	PostBody     string  `json:"postBody"`
	PostError    string  `json:"postError"`
}

func requireChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CAIRN_REQUIRE_BROWSER") == "1" {
		t.Fatal("chromium not installed")
	}
	t.Skip("chromium not installed")
	return ""
}

// servePage serves the page on a fresh loopback port and returns its origin
// and the channel its report arrives on.
func servePage(t *testing.T, cfg any) (string, <-chan browserReport) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reports := make(chan browserReport, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = browserPage.Execute(w, cfg)
	})
	mux.HandleFunc("/report", func(w http.ResponseWriter, r *http.Request) {
		var rep browserReport
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Errorf("report %s: %v", data, err)
		}
		select {
		case reports <- rep:
		default:
		}
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String(), reports
}

// runBrowser opens url in headless chromium and waits for the page's report.
func runBrowser(t *testing.T, chromium, url string, reports <-chan browserReport) browserReport {
	t.Helper()
	cmd := exec.Command(chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-extensions", "--disable-background-networking", "--user-data-dir="+t.TempDir(), url)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers die with it
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	select {
	case rep := <-reports:
		return rep
	case <-time.After(90 * time.Second):
		t.Fatalf("no report from the browser; chromium output:\n%s", tail(log.String(), 4000))
	}
	return browserReport{}
}

// postPolicyFields signs a SigV4 POST policy for bucket: keys under
// "forms/", files of 1..maxSize bytes, success_action_status 201.
func postPolicyFields(ak, sk, bucket, key string, maxSize int64) [][2]string {
	now := time.Now().UTC()
	date := now.Format("20060102")
	cred := ak + "/" + date + "/us-east-1/s3/aws4_request"
	amzDate := now.Format("20060102T150405Z")
	doc, _ := json.Marshal(map[string]any{
		"expiration": now.Add(10 * time.Minute).Format("2006-01-02T15:04:05.000Z"),
		"conditions": []any{
			map[string]string{"bucket": bucket}, []any{"starts-with", "$key", "forms/"},
			[]any{"content-length-range", 1, maxSize}, map[string]string{"success_action_status": "201"},
			map[string]string{"x-amz-algorithm": "AWS4-HMAC-SHA256"}, map[string]string{"x-amz-credential": cred},
			map[string]string{"x-amz-date": amzDate},
		},
	})
	pol := base64.StdEncoding.EncodeToString(doc)
	k := hmacSum([]byte("AWS4"+sk), date)
	for _, s := range []string{"us-east-1", "s3", "aws4_request", pol} {
		k = hmacSum(k, s)
	}
	return [][2]string{{"key", key}, {"success_action_status", "201"}, {"x-amz-algorithm", "AWS4-HMAC-SHA256"},
		{"x-amz-credential", cred}, {"x-amz-date", amzDate}, {"policy", pol}, {"x-amz-signature", hex.EncodeToString(k)}}
}

func hmacSum(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

func TestBrowserCORS(t *testing.T) {
	chromium := requireChromium(t)
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	const bucket = "browser"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	presign := s3.NewPresignClient(c, func(o *s3.PresignOptions) {
		o.ClientOptions = append(o.ClientOptions, func(o *s3.Options) {
			// A browser sends no checksum headers: presign without them.
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		})
	})
	pageCfg := func(key string) map[string]any {
		put, err := presign.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}, s3.WithPresignExpires(10*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		get, err := presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("greeting")}, s3.WithPresignExpires(10*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return map[string]any{"putURL": put.URL, "getURL": get.URL, "postURL": g.Endpoint + "/" + bucket,
			"postFields": postPolicyFields(g.AccessKey, g.SecretKey, bucket, "forms/${filename}", 1024)}
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("greeting"),
		Body: strings.NewReader("hello, page"), Metadata: map[string]string{"color": "teal"}}); err != nil {
		t.Fatal(err)
	}

	allowedOrigin, allowedReports := servePage(t, pageCfg("from-browser"))
	blockedOrigin, blockedReports := servePage(t, pageCfg("from-blocked"))
	if _, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: aws.String(bucket), CORSConfiguration: &types.CORSConfiguration{
		CORSRules: []types.CORSRule{{
			AllowedOrigins: []string{allowedOrigin}, AllowedMethods: []string{"GET", "PUT", "POST"},
			AllowedHeaders: []string{"*"}, ExposeHeaders: []string{"ETag", "x-amz-meta-color"}, MaxAgeSeconds: aws.Int32(60),
		}},
	}}); err != nil {
		t.Fatal(err)
	}

	rep := runBrowser(t, chromium, allowedOrigin+"/", allowedReports)
	t.Logf("allowed origin %s: %+v", allowedOrigin, rep)
	if rep.PutStatus != 200 || rep.PutETag == nil || *rep.PutETag == "" {
		t.Errorf("presigned PUT from the browser: %+v", rep)
	}
	if rep.GetStatus != 200 || rep.GetBody != "hello, page" || rep.GetColor == nil || *rep.GetColor != "teal" || rep.GetETag == nil {
		t.Errorf("presigned GET from the browser: %+v", rep)
	}
	if rep.GetRequestID != nil {
		t.Errorf("a header the rule does not expose reached the page: %q", *rep.GetRequestID)
	}
	if rep.PostStatus != 201 || !strings.Contains(rep.PostBody, "<Key>forms/hello.txt</Key>") {
		t.Errorf("POST form from the browser: %+v", rep)
	}
	for key, want := range map[string]string{"from-browser": "written by a browser", "forms/hello.txt": "posted from a form"} {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		data, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if string(data) != want {
			t.Errorf("%s = %q, want %q", key, data, want)
		}
	}

	rep = runBrowser(t, chromium, blockedOrigin+"/", blockedReports)
	t.Logf("blocked origin %s: %+v", blockedOrigin, rep)
	if rep.PutError == "" || rep.GetError == "" || rep.PostError == "" || rep.GetBody != "" {
		t.Errorf("a page from an origin the rules do not name was not blocked: %+v", rep)
	}
	// The preflight stopped the PUT before it reached the bucket.
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("from-blocked")}); apiCode(err) != "NotFound" {
		t.Errorf("blocked PUT stored an object: %v", err)
	}
}
