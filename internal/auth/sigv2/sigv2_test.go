package sigv2

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/s3err"
)

// The worked example from the S3 SigV2 documentation (GET object).
func TestDocumentedExample(t *testing.T) {
	r := httptest.NewRequest("GET", "/awsexamplebucket1/photos/puppy.jpg", nil)
	r.Header.Set("Date", "Tue, 27 Mar 2007 19:36:42 +0000")
	sts := StringToSign(r, r.Header.Get("Date"), "")
	if want := "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/awsexamplebucket1/photos/puppy.jpg"; sts != want {
		t.Fatalf("sts %q", sts)
	}
	if got := Sign("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", sts); got != "qgk2+6Sv9/oM7G3qLEjTH1a1l1g=" {
		t.Fatalf("signature %s", got)
	}
}

func lookup(ctx context.Context, ak string) (string, error) {
	if ak == "AK" {
		return "SECRET", nil
	}
	return "", ErrUnknownAccessKey
}

func TestPresignedAndHeader(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	exp := strconv.FormatInt(now.Unix()+60, 10)
	r := httptest.NewRequest("GET", "/b/k?uploadId=x&foo=bar", nil)
	sig := Sign("SECRET", "GET\n\n\n"+exp+"\n/b/k?uploadId=x")
	r.URL.RawQuery += "&AWSAccessKeyId=AK&Expires=" + exp + "&Signature=" + url.QueryEscape(sig)
	if !IsV2(r) {
		t.Fatal("not detected")
	}
	if ak, err := Verify(r, lookup, now, ""); err != nil || ak != "AK" {
		t.Fatalf("presigned: %v", err)
	}
	if _, err := Verify(r, lookup, now.Add(2*time.Minute), ""); !errors.Is(err, s3err.ErrAccessDenied) {
		t.Fatalf("expired: %v", err)
	}
	h := httptest.NewRequest("PUT", "/b/k", nil)
	h.Header.Set("Date", now.UTC().Format(http.TimeFormat))
	h.Header.Set("Content-Type", "text/plain")
	h.Header.Set("X-Amz-Meta-A", "1")
	sig = Sign("SECRET", "PUT\n\ntext/plain\n"+h.Header.Get("Date")+"\nx-amz-meta-a:1\n/b/k")
	h.Header.Set("Authorization", "AWS AK:"+sig)
	if _, err := Verify(h, lookup, now, ""); err != nil {
		t.Fatalf("header: %v", err)
	}
	h.Header.Set("X-Amz-Meta-A", "2")
	if _, err := Verify(h, lookup, now, ""); !errors.Is(err, s3err.ErrSignatureDoesNotMatch) {
		t.Fatalf("tampered: %v", err)
	}
	if _, err := Verify(h, lookup, now.Add(time.Hour), ""); !errors.Is(err, s3err.ErrRequestTimeTooSkewed) {
		t.Fatalf("skew: %v", err)
	}
	h.Header.Set("Authorization", "AWS NOPE:"+sig)
	if _, err := Verify(h, lookup, now, ""); !errors.Is(err, s3err.ErrInvalidAccessKeyID) {
		t.Fatalf("unknown key: %v", err)
	}
}

// A presigned URL as botocore's HmacV1QueryAuth makes it: the signed
// Content-Type and x-amz-* headers travel in the query string.
func TestPresignedQueryHeaders(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	exp := strconv.FormatInt(now.Unix()+60, 10)
	sig := Sign("SECRET", "PUT\n\nimage/png\n"+exp+"\nx-amz-acl:private\nx-amz-meta-a:1\n/b/k")
	q := "content-type=image%2Fpng&x-amz-acl=private&x-amz-meta-a=1&AWSAccessKeyId=AK&Expires=" + exp + "&Signature=" + url.QueryEscape(sig)
	for _, tc := range []struct {
		name    string
		query   string
		headers map[string]string
		ok      bool
	}{
		{"no headers", q, nil, true},
		{"same headers", q, map[string]string{"Content-Type": "image/png", "X-Amz-Meta-A": "1"}, true},
		{"other content-type", q, map[string]string{"Content-Type": "text/html"}, false},
		{"other meta header", q, map[string]string{"X-Amz-Meta-A": "2"}, false},
		{"unsigned extra header", q, map[string]string{"X-Amz-Meta-B": "2"}, false},
		{"tampered content-type", strings.Replace(q, "image%2Fpng", "text%2Fhtml", 1), nil, false},
		{"tampered acl", strings.Replace(q, "x-amz-acl=private", "x-amz-acl=public-read", 1), nil, false},
		{"added x-amz parameter", q + "&x-amz-meta-b=2", nil, false},
		{"repeated x-amz parameter", q + "&x-amz-meta-a=1", nil, false},
	} {
		r := httptest.NewRequest("PUT", "/b/k?"+tc.query, nil)
		for k, v := range tc.headers {
			r.Header.Set(k, v)
		}
		_, err := Verify(r, lookup, now, "")
		if tc.ok {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			if r.Header.Get("Content-Type") != "image/png" || r.Header.Get("X-Amz-Acl") != "private" || r.Header.Get("X-Amz-Meta-A") != "1" {
				t.Errorf("%s: signed query headers not applied: %v", tc.name, r.Header)
			}
			if !QueryHeaderSigned(r, "x-amz-acl") || QueryHeaderSigned(r, "AWSAccessKeyId") {
				t.Errorf("%s: QueryHeaderSigned wrong", tc.name)
			}
			continue
		}
		if !errors.Is(err, s3err.ErrSignatureDoesNotMatch) {
			t.Errorf("%s: %v, want SignatureDoesNotMatch", tc.name, err)
		}
		if tc.headers == nil && r.Header.Get("Content-Type") != "" {
			t.Errorf("%s: refused request got headers: %v", tc.name, r.Header)
		}
	}
}
