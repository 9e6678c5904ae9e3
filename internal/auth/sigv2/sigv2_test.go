package sigv2

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
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
