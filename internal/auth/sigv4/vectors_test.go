package sigv4

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/s3err"
)

// The example credentials and time of the AWS S3 SigV4 documentation.
const (
	exampleAK     = "AKIAIOSFODNN7EXAMPLE"
	exampleSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

var exampleTime = time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC)

func exampleLookup(_ context.Context, ak string) (string, error) {
	if ak == exampleAK {
		return exampleSecret, nil
	}
	return "", ErrUnknownAccessKey
}

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

func exampleCred(sig, signed string) string {
	return "AWS4-HMAC-SHA256 Credential=" + exampleAK + "/20130524/us-east-1/s3/aws4_request,SignedHeaders=" +
		signed + ",Signature=" + sig
}

// docRequest builds a server-side request the way net/http would parse it.
func docRequest(method, target, host string, headers map[string]string, body string) *http.Request {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.Host = host
	if body == "" {
		r.Body = http.NoBody
	}
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	return r
}

// TestAWSDocumentedExamples replays the worked examples of the S3 API
// reference ("Signature Calculations for the Authorization Header",
// "Query String Auth", "Chunked Upload").
func TestAWSDocumentedExamples(t *testing.T) {
	emptyHash := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	cases := []struct {
		name string
		req  func() *http.Request
		body string
	}{
		{"GET object", func() *http.Request {
			return docRequest("GET", "/test.txt", "examplebucket.s3.amazonaws.com", map[string]string{
				"Range": "bytes=0-9", "X-Amz-Content-Sha256": emptyHash, "X-Amz-Date": "20130524T000000Z",
				"Authorization": exampleCred("f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
					"host;range;x-amz-content-sha256;x-amz-date"),
			}, "")
		}, ""},
		{"PUT object", func() *http.Request {
			return docRequest("PUT", "/test$file.text", "examplebucket.s3.amazonaws.com", map[string]string{
				"Date": "Fri, 24 May 2013 00:00:00 GMT", "X-Amz-Date": "20130524T000000Z",
				"X-Amz-Storage-Class":  "REDUCED_REDUNDANCY",
				"X-Amz-Content-Sha256": "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
				"Authorization": exampleCred("98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
					"date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class"),
			}, "Welcome to Amazon S3.")
		}, "Welcome to Amazon S3."},
		{"GET bucket lifecycle", func() *http.Request {
			return docRequest("GET", "/?lifecycle", "examplebucket.s3.amazonaws.com", map[string]string{
				"X-Amz-Content-Sha256": emptyHash, "X-Amz-Date": "20130524T000000Z",
				"Authorization": exampleCred("fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
					"host;x-amz-content-sha256;x-amz-date"),
			}, "")
		}, ""},
		{"list objects", func() *http.Request {
			return docRequest("GET", "/?max-keys=2&prefix=J", "examplebucket.s3.amazonaws.com", map[string]string{
				"X-Amz-Content-Sha256": emptyHash, "X-Amz-Date": "20130524T000000Z",
				"Authorization": exampleCred("34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
					"host;x-amz-content-sha256;x-amz-date"),
			}, "")
		}, ""},
		{"presigned GET", func() *http.Request {
			return docRequest("GET", "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
				"examplebucket.s3.amazonaws.com", nil, "")
		}, ""},
	}
	v := NewVerifier(exampleLookup, fixedClock(exampleTime.Add(time.Minute)))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.req()
			res, err := v.Verify(r)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if res.AccessKey != exampleAK || res.Scope.Region != "us-east-1" || res.Scope.Service != "s3" {
				t.Fatalf("result %+v", res)
			}
			got, err := io.ReadAll(r.Body)
			if err != nil || string(got) != tc.body {
				t.Fatalf("body %q, %v", got, err)
			}
		})
	}

	// The same requests, each with one thing changed, must fail.
	for _, tc := range []struct {
		name   string
		mutate func(*http.Request)
		want   s3err.APIError
	}{
		{"header value changed", func(r *http.Request) { r.Header.Set("Range", "bytes=0-10") }, s3err.ErrSignatureDoesNotMatch},
		{"path changed", func(r *http.Request) { r.URL.Path = "/test.txT"; r.RequestURI = "/test.txT" }, s3err.ErrSignatureDoesNotMatch},
		{"host changed", func(r *http.Request) { r.Host = "otherbucket.s3.amazonaws.com" }, s3err.ErrSignatureDoesNotMatch},
		{"unknown key", func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), exampleAK, "AKIDUNKNOWN", 1))
		}, s3err.ErrInvalidAccessKeyID},
		{"unsigned x-amz header", func(r *http.Request) { r.Header.Set("X-Amz-Acl", "public-read") }, s3err.ErrAccessDenied},
		{"session token", func(r *http.Request) {
			r.Header.Set("X-Amz-Security-Token", "tok")
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "x-amz-date", "x-amz-date;x-amz-security-token", 1))
		}, s3err.ErrInvalidToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cases[0].req()
			tc.mutate(r)
			_, err := v.Verify(r)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %s", err, tc.want.Code)
			}
		})
	}
}

// The chunked-upload example of the S3 API reference: 66560 bytes of 'a'
// in a 65536-byte chunk, a 1024-byte chunk and the final chunk.
func TestAWSChunkedExample(t *testing.T) {
	seed := "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
	sigs := []string{
		"ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
		"0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
		"b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
	}
	var body strings.Builder
	body.WriteString("10000;chunk-signature=" + sigs[0] + "\r\n" + strings.Repeat("a", 65536) + "\r\n")
	body.WriteString("400;chunk-signature=" + sigs[1] + "\r\n" + strings.Repeat("a", 1024) + "\r\n")
	body.WriteString("0;chunk-signature=" + sigs[2] + "\r\n\r\n")
	if body.Len() != 66824 {
		t.Fatalf("encoded length %d, the example says 66824", body.Len())
	}
	mk := func(b string) *http.Request {
		return docRequest("PUT", "/examplebucket/chunkObject.txt", "s3.amazonaws.com", map[string]string{
			"X-Amz-Date": "20130524T000000Z", "X-Amz-Storage-Class": "REDUCED_REDUNDANCY",
			"X-Amz-Content-Sha256": StreamingPayload, "Content-Encoding": "aws-chunked",
			"X-Amz-Decoded-Content-Length": "66560", "Content-Length": "66824",
			"Authorization": exampleCred(seed,
				"content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class"),
		}, b)
	}
	v := NewVerifier(exampleLookup, fixedClock(exampleTime))
	r := mk(body.String())
	res, err := v.Verify(r)
	if err != nil {
		t.Fatal(err)
	}
	if res.Payload != PayloadStreamingSigned {
		t.Fatalf("payload mode %v", res.Payload)
	}
	got, err := io.ReadAll(r.Body)
	if err != nil || string(got) != strings.Repeat("a", 66560) {
		t.Fatalf("decoded %d bytes, %v", len(got), err)
	}

	// One flipped data byte fails the first chunk's signature.
	bad := []byte(body.String())
	bad[200] = 'b'
	r = mk(string(bad))
	if _, err := v.Verify(r); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r.Body); !errors.Is(err, s3err.ErrSignatureDoesNotMatch) {
		t.Fatalf("tampered chunk: %v", err)
	}
}
