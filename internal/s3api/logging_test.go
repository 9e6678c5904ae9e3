package s3api

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-s3/cairn/internal/accesslog"
	"github.com/cairn-s3/cairn/internal/driver"
)

// fakeAccessLog logs into memory; journal appends fail while failJournal.
type fakeAccessLog struct {
	mu          sync.Mutex
	cfg         *driver.BucketLogging
	recs        []accesslog.Record
	failJournal bool
}

func (f *fakeAccessLog) Enabled(ctx context.Context, bucket string) (*driver.BucketLogging, driver.Instance) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if bucket != "b" {
		return nil, driver.Instance{}
	}
	return f.cfg, driver.Instance{Name: "b", Owner: "alice"}
}

func (f *fakeAccessLog) Log(ctx context.Context, inst driver.Instance, cfg *driver.BucketLogging, rs ...*accesslog.Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cfg.Type == driver.LoggingJournal && f.failJournal {
		return errors.New("log pool unavailable")
	}
	for _, r := range rs {
		f.recs = append(f.recs, *r)
	}
	return nil
}

func (f *fakeAccessLog) DeferSyncs(ctx context.Context) context.Context { return ctx }

func (f *fakeAccessLog) Put(ctx context.Context, bucket string, cfg *driver.BucketLogging, hasGrants bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cfg = cfg
	return nil
}

func (f *fakeAccessLog) Flush(ctx context.Context, bucket string) ([]string, error) { return nil, nil }

// A journal record that cannot be stored turns the write's success into
// 500 InternalError before anything of the success is sent; a stored one
// carries the response's ETag and the request's size.
func TestJournalRecordBeforeResponse(t *testing.T) {
	fl := &fakeAccessLog{cfg: &driver.BucketLogging{TargetBucket: "logs", Type: driver.LoggingJournal}}
	h := newHarness(t, func(c *Config) { c.AccessLog = fl })
	h.bucket("b")
	res := h.do(req{method: "PUT", path: "/b/k1", body: "four"})
	if res.status != 200 || len(fl.recs) != 1 {
		t.Fatalf("journaled PUT: %d, %d records", res.status, len(fl.recs))
	}
	r := fl.recs[0]
	if r.Operation != "REST.PUT.OBJECT" || r.Key != "k1" || r.ObjectSize != 4 || r.ETag != res.header.Get("ETag") || r.ETag == "" {
		t.Fatalf("record %+v, ETag %q", r, res.header.Get("ETag"))
	}
	// Reads are not journaled.
	h.mustDo(req{method: "GET", path: "/b/k1"}, 200)
	if len(fl.recs) != 1 {
		t.Fatalf("GET was journaled: %d records", len(fl.recs))
	}
	fl.failJournal = true
	res = h.do(req{method: "PUT", path: "/b/k2", body: "data"})
	if res.status != 500 || res.code() != "InternalError" || res.header.Get("ETag") != "" {
		t.Fatalf("PUT whose record failed: %d %s ETag %q", res.status, res.body, res.header.Get("ETag"))
	}
	res = h.do(req{method: "POST", path: "/b?delete", body: `<Delete><Object><Key>k1</Key></Object></Delete>`,
		hdr: contentMD5(`<Delete><Object><Key>k1</Key></Object></Delete>`)})
	if res.status != 500 || strings.Contains(res.body, "<Deleted>") {
		t.Fatalf("DeleteObjects whose record failed: %d %s", res.status, res.body)
	}
	fl.failJournal = false
	body := `<Delete><Object><Key>k1</Key></Object><Object><Key>k2</Key></Object></Delete>`
	h.mustDo(req{method: "POST", path: "/b?delete", body: body, hdr: contentMD5(body)}, 200)
	var keys []string
	for _, r := range fl.recs[1:] {
		keys = append(keys, r.Operation+" "+r.Key)
	}
	if strings.Join(keys, ",") != "REST.POST.MULTI_OBJECT_DELETE k1,REST.POST.MULTI_OBJECT_DELETE k2" {
		t.Fatalf("DeleteObjects records %v", keys)
	}
}

// Standard records: every request to the bucket, failed ones included,
// after the response (sizes and status final); none in journal-only ops.
func TestStandardRecordAfterResponse(t *testing.T) {
	fl := &fakeAccessLog{cfg: &driver.BucketLogging{TargetBucket: "logs", Type: driver.LoggingStandard}}
	h := newHarness(t, func(c *Config) { c.AccessLog = fl })
	h.bucket("b")
	h.put("b", "k", "hello")
	h.mustDo(req{method: "GET", path: "/b/k", hdr: map[string]string{"Range": "bytes=1-2", "Referer": "http://x/"}}, 206)
	h.mustDo(req{method: "GET", path: "/b/nope"}, 404)
	h.mustDo(req{method: "GET", path: "/b/k", key: "-"}, 403)
	byKey := map[string]accesslog.Record{}
	for _, r := range fl.recs {
		byKey[r.Operation+" "+r.Key+" "+r.ErrorCode] = r
	}
	g, ok := byKey["REST.GET.OBJECT k "]
	if !ok || g.HTTPStatus != 206 || g.BytesSent != 2 || g.ObjectSize != 5 || g.Referer != "http://x/" || g.Requester != "alice" ||
		g.SigVersion != "SigV4" || g.AuthType != "AuthHeader" || g.BucketOwner == "" || g.TotalTime < 0 || g.TurnAroundTime < 0 {
		t.Fatalf("ranged GET record %+v (all %v)", g, byKey)
	}
	if r, ok := byKey["REST.GET.OBJECT nope NoSuchKey"]; !ok || r.HTTPStatus != 404 {
		t.Fatalf("404 record: %+v", r)
	}
	if r, ok := byKey["REST.GET.OBJECT k AccessDenied"]; !ok || r.Requester != "" || r.SigVersion != "" {
		t.Fatalf("anonymous record: %+v", r)
	}
}
