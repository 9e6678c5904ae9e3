package s3api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/accesslog"
	"github.com/cairn-s3/cairn/internal/driver"
)

// BenchmarkStandardRecord is the request path's share of standard bucket
// logging for a 4 KiB PUT: the configuration lookups, the record, and its
// line (the fake logger formats it as the real one does).
func BenchmarkStandardRecord(b *testing.B) {
	fl := &benchAccessLog{cfg: &driver.BucketLogging{TargetBucket: "logs", Type: driver.LoggingStandard}}
	s := &Server{cfg: Config{AccessLog: fl, Now: time.Now, HostID: "host"}}
	r := httptest.NewRequest(http.MethodPut, "/b/some/key-000123", nil)
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIA/20261126/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=abc")
	r.Header.Set("User-Agent", "aws-sdk-go-v2/1.30")
	r.ContentLength = 4096
	rec := httptest.NewRecorder()
	rec.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
	w := &statusWriter{ResponseWriter: rec, status: 200, now: time.Now}
	start := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		rc := &reqCtx{id: "REQ", op: "PutObject", bucket: "b", key: "some/key-000123", kind: kindS3, decodedLength: 4096}
		rc.binfo.Owner = "alice"
		rc.ident.User.ID = "alice"
		r2 := s.journalHook(w, r, rc, start)
		s.logAccess(r2, rc, w, start, start)
	}
}

// benchAccessLog formats standard records into a reused buffer.
type benchAccessLog struct {
	fakeAccessLog
	cfg *driver.BucketLogging
	buf []byte
}

func (f *benchAccessLog) Enabled(ctx context.Context, bucket string) (*driver.BucketLogging, driver.Instance) {
	return f.cfg, driver.Instance{Name: "b", Owner: "alice"}
}

func (f *benchAccessLog) Log(ctx context.Context, inst driver.Instance, cfg *driver.BucketLogging, rs ...*accesslog.Record) error {
	f.buf = f.buf[:0]
	for _, r := range rs {
		f.buf = accesslog.AppendStandard(f.buf, r)
	}
	return nil
}
