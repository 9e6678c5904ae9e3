package s3api

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-s3/cairn/internal/driver"
)

func TestConfigValidate(t *testing.T) {
	_, err := New(Config{DomainNames: []string{"bad/name"}, MaxHeaderBytes: -1})
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"Backend", "Auth", "MaxHeaderBytes", "bad/name"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not report %s: %v", want, err)
		}
	}
}

func TestVirtualHostStyle(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DomainNames = []string{"s3.example.com"} })
	h.bucket("vb")
	h.mustDo(req{method: "PUT", path: "/dir//key", host: "vb.s3.example.com", body: "vhost"}, 200)
	if o := h.be.buckets["vb"].objects["dir//key"]; o == nil || string(o.data) != "vhost" {
		t.Fatalf("vhost put: %v", h.be.buckets["vb"].objects)
	}
	res := h.mustDo(req{method: "GET", path: "/dir//key", host: "vb.s3.example.com:7480"}, 200)
	if res.body != "vhost" {
		t.Fatal(res.body)
	}
	// Bucket-level request by host; path-style still works on the domain.
	l := h.mustDo(req{method: "GET", path: "/?list-type=2", host: "vb.s3.example.com"}, 200)
	if !strings.Contains(l.body, "<Key>dir//key</Key>") {
		t.Fatal(l.body)
	}
	h.mustDo(req{method: "GET", path: "/vb/dir//key", host: "s3.example.com"}, 200)
	// Dotted bucket names in vhost form.
	h.bucket("my.dotted.bucket")
	h.mustDo(req{method: "HEAD", path: "/", host: "my.dotted.bucket.s3.example.com"}, 200)
}

func TestRequestIDsMetricsLogs(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	h.put("b", "k", "x")
	a := h.mustDo(req{method: "GET", path: "/b/k"}, 200)
	b := h.mustDo(req{method: "GET", path: "/b/missing"}, 404)
	ida, idb := a.header.Get("x-amz-request-id"), b.header.Get("x-amz-request-id")
	if ida == "" || ida == idb || a.header.Get("x-amz-id-2") == "" {
		t.Fatalf("request ids %q %q", ida, idb)
	}
	if !strings.Contains(b.body, "<RequestId>"+idb+"</RequestId>") {
		t.Fatalf("error body without request id: %s", b.body)
	}
	if got := metricValue(t, h.reg, "cairn_s3_requests_total", "GetObject", "404"); got != 1 {
		t.Fatalf("GetObject 404 count = %v", got)
	}
	if got := metricValue(t, h.reg, "cairn_s3_requests_total", "PutObject", "200"); got != 1 {
		t.Fatalf("PutObject 200 count = %v", got)
	}
	if got := metricValue(t, h.reg, "cairn_s3_request_duration_seconds", "GetObject", "200"); got != 1 {
		t.Fatalf("latency histogram sample count = %v", got)
	}
	// One JSON log line per request with id, op, status, duration.
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["request_id"] == idb {
			found = rec["op"] == "GetObject" && rec["status"] == 404.0 && rec["error"] == "NoSuchKey" && rec["duration"] != nil && rec["user"] == "alice"
		}
	}
	if !found {
		t.Fatalf("no proper log line for %s:\n%s", idb, h.logs)
	}
	// Two servers can share a registerer.
	if _, err := New(Config{Backend: h.be, Auth: testAuth{be: h.be}, Registerer: h.reg}); err != nil {
		t.Fatal(err)
	}
}

// metricValue reads a counter's value or a histogram's sample count.
func metricValue(t *testing.T, g prometheus.Gatherer, name, op, status string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["op"] != op || labels["status"] != status {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return 0
}

type failingBackend struct{ *fakeBackend }

func (f failingBackend) HeadObject(ctx context.Context, bucket, key string) (driver.ObjectInfo, error) {
	return driver.ObjectInfo{}, errors.New("disk on fire")
}

func TestInternalErrorLogged(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		be := c.Backend.(*fakeBackend)
		c.Backend = failingBackend{be}
		c.Auth = testAuth{be: be}
	})
	h.bucket("b")
	res := h.mustDo(req{method: "GET", path: "/b/k", hdr: map[string]string{"Range": "bytes=0-1"}}, 500)
	if res.code() != "InternalError" || strings.Contains(res.body, "fire") {
		t.Fatal(res.body)
	}
	if !strings.Contains(h.logs.String(), "disk on fire") || !strings.Contains(h.logs.String(), res.header.Get("x-amz-request-id")) {
		t.Fatalf("cause not logged with the request id:\n%s", h.logs)
	}
}

func TestRoutingErrors(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	h.put("b", "k", "x")
	for _, tc := range []struct {
		rq     req
		status int
		code   string
	}{
		{req{method: "GET", path: "/b?website"}, 501, "NotImplemented"},
		{req{method: "GET", path: "/b?policy"}, 404, "NoSuchBucketPolicy"},
		{req{method: "PUT", path: "/b?lifecycle", body: "<x/>"}, 501, "NotImplemented"},
		{req{method: "GET", path: "/b/k?tagging"}, 501, "NotImplemented"},
		{req{method: "GET", path: "/b?retention"}, 501, "NotImplemented"},
		{req{method: "PUT", path: "/b/k?lifecycle", body: "<x/>"}, 501, "NotImplemented"},
		{req{method: "GET", path: "/b/k?object-lock"}, 501, "NotImplemented"},
		{req{method: "POST", path: "/b/k"}, 501, "NotImplemented"},
		{req{method: "PATCH", path: "/b/k"}, 405, "MethodNotAllowed"},
		{req{method: "DELETE", path: "/"}, 405, "MethodNotAllowed"},
		{req{method: "POST", path: "/", body: "Action=ListTopics"}, 501, "NotImplemented"},
		{req{method: "GET", path: "/b/k?versionId=3"}, 400, "InvalidArgument"},
		{req{method: "GET", path: "/b/k?partNumber=2"}, 416, "InvalidPartNumber"},
		{req{method: "GET", path: "/b/k", hdr: map[string]string{"x-amz-meta-pad": strings.Repeat("p", 9000)}}, 400, "RequestHeaderSectionTooLarge"},
	} {
		res := h.do(tc.rq)
		code := res.code()
		if tc.rq.method == "POST" && tc.rq.path == "/" {
			var e struct {
				Error struct{ Code string }
			}
			_ = xmlUnmarshal(res.body, &e)
			code = e.Error.Code
		}
		if res.status != tc.status || code != tc.code {
			t.Errorf("%s %s: %d %s", tc.rq.method, tc.rq.path, res.status, res.body)
		}
	}
	// Supported read-only subresources that clients probe.
	h.mustDo(req{method: "GET", path: "/b?versioning"}, 200)
	if res := h.mustDo(req{method: "GET", path: "/b/k?acl"}, 200); !strings.Contains(res.body, "FULL_CONTROL") {
		t.Fatal(res.body)
	}
	// Part 1 of a single-part object: all of it as a 206, like S3.
	res := h.mustDo(req{method: "GET", path: "/b/k?partNumber=1"}, 206)
	if cr := res.header.Get("Content-Range"); !strings.HasPrefix(cr, "bytes 0-") || res.header.Get("x-amz-mp-parts-count") != "" {
		t.Fatalf("partNumber=1: Content-Range %q, parts count %q", cr, res.header.Get("x-amz-mp-parts-count"))
	}
	h.mustDo(req{method: "HEAD", path: "/b/k?partNumber=1"}, 206)
}

func TestExtensionHooks(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	var got string
	h.srv.HandleBucketSubresource("PUT", "notification", func(w http.ResponseWriter, r *http.Request, b driver.BucketInfo) error {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		id, _ := IdentityFrom(r.Context())
		got = b.Name + ":" + b.Owner + ":" + id.User.ID + ":" + string(data)
		w.WriteHeader(http.StatusOK)
		return nil
	})
	h.mustDo(req{method: "PUT", path: "/b?notification", body: "<NotificationConfiguration/>"}, 200)
	if got != "b:alice:alice:<NotificationConfiguration/>" {
		t.Fatalf("bucket hook got %q", got)
	}
	// Ownership is enforced before the hook runs.
	got = ""
	h.mustDo(req{method: "PUT", path: "/b?notification", body: "x", key: bobKey}, 403)
	if got != "" {
		t.Fatal("hook ran for a foreign bucket")
	}
	// GET ?notification is still unimplemented: hooks are per method.
	h.mustDo(req{method: "GET", path: "/b?notification"}, 501)

	h.srv.SetSNSHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := IdentityFrom(r.Context())
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		io.WriteString(w, r.PostForm.Get("Action")+" by "+id.User.ID+" "+driver.RequestFrom(r.Context()).RequestID)
	}))
	res := h.mustDo(req{method: "POST", path: "/", body: "Action=CreateTopic&Name=t", hdr: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, 200)
	if res.body != "CreateTopic by alice "+res.header.Get("x-amz-request-id") {
		t.Fatalf("sns: %q", res.body)
	}
	// Anonymous SNS requests are refused in the SNS error shape.
	res = h.mustDo(req{method: "POST", path: "/", body: "Action=ListTopics", key: "-"}, 403)
	if !strings.Contains(res.body, "<ErrorResponse") {
		t.Fatal(res.body)
	}
}

func xmlUnmarshal(s string, v any) error { return xml.Unmarshal([]byte(s), v) }

func TestMountHealthMetrics(t *testing.T) {
	h := newHarness(t)
	h.bucket("healthz")
	handler := Mount(h.srv, map[string]http.Handler{
		"/healthz": HealthHandler(nil),
		"/metrics": MetricsHandler(h.reg),
	})
	ts := httptest.NewServer(handler)
	defer ts.Close()
	res, err := http.Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(body) != "ok\n" {
		t.Fatalf("healthz %d %q", res.StatusCode, body)
	}
	h.ts.Config.Handler = handler
	// A signed request for /healthz is the bucket "healthz".
	if res := h.mustDo(req{method: "GET", path: "/healthz"}, 200); !strings.Contains(res.body, "<Name>healthz</Name>") {
		t.Fatal(res.body)
	}
	res, _ = http.Get(ts.URL + "/metrics")
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), "cairn_s3_requests_total") {
		t.Fatalf("metrics: %s", body)
	}
	// "//" in keys is not cleaned or redirected by Mount.
	h.put("healthz", "a//b", "x")
	h.mustDo(req{method: "GET", path: "/healthz/a//b"}, 200)
	unhealthy := HealthHandler(func(*http.Request) error { return errors.New("backend down") })
	rec := httptest.NewRecorder()
	unhealthy.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 503 {
		t.Fatal(rec.Code)
	}
}

func TestPresignedSDK(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	h.put("b", "k", "presigned")
	ps := s3.NewPresignClient(h.client(aliceKey))
	pr, err := ps.PresignGetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("k")}, s3.WithPresignExpires(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(pr.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(body) != "presigned" {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	// Tampered: another key under the same signature.
	u, _ := url.Parse(pr.URL)
	u.Path = "/b/other"
	res, _ = http.Get(u.String())
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Fatalf("tampered presign: %d", res.StatusCode)
	}
}

// TestNewRequestID: the hand-rolled formatting matches "%s%08X".
func TestNewRequestID(t *testing.T) {
	s := &Server{ridPrefix: "AB12"}
	for _, v := range []uint64{0, 9, 0xFFFFFFFE, 0xFFFFFFFF, 0x123456789A, math.MaxUint64 - 1} {
		s.ridSeq.Store(v)
		if got, want := s.newRequestID(), fmt.Sprintf("%s%08X", "AB12", v+1); got != want {
			t.Errorf("after %d: %q, want %q", v, got, want)
		}
	}
}
