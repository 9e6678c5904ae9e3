package s3err

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRegistryWellFormed(t *testing.T) {
	seen := map[APIError]bool{}
	for _, a := range Registry {
		if a.Code == "" || a.Description == "" {
			t.Errorf("%+v: empty code or description", a)
		}
		if http.StatusText(a.HTTPStatus) == "" {
			t.Errorf("%s: unknown status %d", a.Code, a.HTTPStatus)
		}
		if seen[a] {
			t.Errorf("%s: duplicate entry %q", a.Code, a.Description)
		}
		seen[a] = true
	}
}

// The wire facts clients depend on (botocore retries on SlowDown 503, the
// aws CLI shows the code, presign expiry is AccessDenied).
func TestRegistryWireValues(t *testing.T) {
	for _, tc := range []struct {
		api    APIError
		code   string
		status int
	}{
		{ErrAccessDenied, "AccessDenied", 403},
		{ErrRequestExpired, "AccessDenied", 403},
		{ErrBadDigest, "BadDigest", 400},
		{ErrBucketAlreadyExists, "BucketAlreadyExists", 409},
		{ErrBucketAlreadyOwnedByYou, "BucketAlreadyOwnedByYou", 409},
		{ErrBucketNotEmpty, "BucketNotEmpty", 409},
		{ErrEntityTooSmall, "EntityTooSmall", 400},
		{ErrIncompleteBody, "IncompleteBody", 400},
		{ErrInternalError, "InternalError", 500},
		{ErrInvalidAccessKeyID, "InvalidAccessKeyId", 403},
		{ErrInvalidRange, "InvalidRange", 416},
		{ErrKeyTooLong, "KeyTooLongError", 400},
		{ErrMethodNotAllowed, "MethodNotAllowed", 405},
		{ErrMissingContentLength, "MissingContentLength", 411},
		{ErrNoSuchBucket, "NoSuchBucket", 404},
		{ErrNoSuchKey, "NoSuchKey", 404},
		{ErrNoSuchUpload, "NoSuchUpload", 404},
		{ErrNotImplemented, "NotImplemented", 501},
		{ErrNotModified, "NotModified", 304},
		{ErrPreconditionFailed, "PreconditionFailed", 412},
		{ErrRequestTimeTooSkewed, "RequestTimeTooSkewed", 403},
		{ErrSignatureDoesNotMatch, "SignatureDoesNotMatch", 403},
		{ErrSlowDown, "SlowDown", 503},
		{ErrServiceUnavailable, "ServiceUnavailable", 503},
		{ErrXAmzContentSHA256Mismatch, "XAmzContentSHA256Mismatch", 400},
		{ErrInvalidChunkSize, "InvalidChunkSizeError", 400},
		{ErrInvalidEncodingType, "InvalidArgument", 400},
		{ErrTopicNotFound, "NotFound", 404},
		{ErrInvalidParameterValue, "InvalidParameterValue", 400},
	} {
		if tc.api.Code != tc.code || tc.api.HTTPStatus != tc.status {
			t.Errorf("got %s/%d, want %s/%d", tc.api.Code, tc.api.HTTPStatus, tc.code, tc.status)
		}
	}
}

func TestErrorsIs(t *testing.T) {
	err := fmt.Errorf("put: %w", New(ErrNoSuchKey, "key %q", "a"))
	if !errors.Is(err, ErrNoSuchKey) {
		t.Fatal("errors.Is(NoSuchKey) = false")
	}
	if errors.Is(err, ErrNoSuchBucket) {
		t.Fatal("errors.Is(NoSuchBucket) = true")
	}
	// Same code, different entry.
	if errors.Is(New(ErrRequestExpired, ""), ErrAccessDenied) {
		t.Fatal("RequestExpired matched AccessDenied")
	}
	cause := errors.New("disk on fire")
	if !errors.Is(Wrap(ErrInternalError, cause), cause) {
		t.Fatal("cause not unwrapped")
	}
}

func TestFrom(t *testing.T) {
	cause := errors.New("boom")
	for _, tc := range []struct {
		name    string
		in      error
		code    string
		message string
	}{
		{"s3 error", fmt.Errorf("x: %w", New(ErrNoSuchBucket, "no bucket b")), "NoSuchBucket", "no bucket b"},
		{"bare api error", ErrSlowDown, "SlowDown", ErrSlowDown.Description},
		{"wrapped api error", fmt.Errorf("q: %w", ErrSlowDown), "SlowDown", ErrSlowDown.Description},
		{"unmapped", cause, "InternalError", ErrInternalError.Description},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := From(tc.in)
			if e.Code != tc.code || e.WireMessage() != tc.message {
				t.Fatalf("got %s %q", e.Code, e.WireMessage())
			}
		})
	}
	if From(nil) != nil {
		t.Fatal("From(nil) != nil")
	}
	// The internal cause must never reach the wire.
	rec := httptest.NewRecorder()
	WriteXML(rec, From(cause), "/b/k", "rid")
	if strings.Contains(rec.Body.String(), "boom") {
		t.Fatalf("cause leaked: %s", rec.Body)
	}
}

func TestWriteXML(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      *Error
		resource string
		wantMsg  string
		status   int
	}{
		{"default message", New(ErrNoSuchKey, ""), "/bucket/key", ErrNoSuchKey.Description, 404},
		{"custom message escaped", New(ErrInvalidArgument, "bad <max-keys> & %d", 7), "/b?x=<1>", "bad <max-keys> & 7", 400},
		{"throttle", New(ErrSlowDown, "queue full for topic %s", "t"), "/b/k", "queue full for topic t", 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.err.HostID = "zg1"
			rec := httptest.NewRecorder()
			WriteXML(rec, tc.err, tc.resource, "req-1")
			res := rec.Result()
			if res.StatusCode != tc.status {
				t.Fatalf("status %d", res.StatusCode)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/xml" {
				t.Fatalf("content-type %q", ct)
			}
			if res.Header.Get("x-amz-request-id") != "req-1" {
				t.Fatal("missing x-amz-request-id")
			}
			raw, _ := io.ReadAll(res.Body)
			if !strings.HasPrefix(string(raw), "<?xml") {
				t.Fatalf("no xml header: %s", raw)
			}
			var got struct {
				XMLName   xml.Name `xml:"Error"`
				Code      string
				Message   string
				Resource  string
				RequestID string `xml:"RequestId"`
				HostID    string `xml:"HostId"`
			}
			if err := xml.Unmarshal(raw, &got); err != nil {
				t.Fatalf("%v: %s", err, raw)
			}
			if got.Code != tc.err.Code || got.Message != tc.wantMsg || got.Resource != tc.resource ||
				got.RequestID != "req-1" || got.HostID != "zg1" {
				t.Fatalf("got %+v", got)
			}
		})
	}
}

func TestWriteNoBody(t *testing.T) {
	// HEAD: status only.
	rec := httptest.NewRecorder()
	Write(rec, httptest.NewRequest(http.MethodHead, "/b/k", nil), New(ErrNoSuchKey, ""), "r")
	if rec.Code != 404 || rec.Body.Len() != 0 || rec.Header().Get("x-amz-request-id") != "r" {
		t.Fatalf("HEAD: %d %q", rec.Code, rec.Body)
	}
	// GET through Write: body with the path as resource.
	rec = httptest.NewRecorder()
	Write(rec, httptest.NewRequest(http.MethodGet, "/b/k", nil), New(ErrNoSuchKey, ""), "r")
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), "<Resource>/b/k</Resource>") {
		t.Fatalf("GET: %d %q", rec.Code, rec.Body)
	}
	// 304 never carries a body.
	rec = httptest.NewRecorder()
	WriteXML(rec, New(ErrNotModified, ""), "/b/k", "r")
	if rec.Code != 304 || rec.Body.Len() != 0 {
		t.Fatalf("304: %d %q", rec.Code, rec.Body)
	}
}

func TestWriteSNSXML(t *testing.T) {
	for _, tc := range []struct {
		api  APIError
		typ  string
		code int
	}{
		{ErrTopicNotFound, "Sender", 404},
		{ErrSNSInternal, "Receiver", 500},
	} {
		rec := httptest.NewRecorder()
		WriteSNSXML(rec, New(tc.api, ""), "rid")
		var got struct {
			Error     struct{ Type, Code, Message string }
			RequestID string `xml:"RequestId"`
		}
		if err := xml.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if rec.Code != tc.code || got.Error.Type != tc.typ || got.Error.Code != tc.api.Code || got.RequestID != "rid" {
			t.Fatalf("%d %+v", rec.Code, got)
		}
	}
}
