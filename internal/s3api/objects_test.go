package s3api

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash/crc64"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairn-s3/cairn/internal/driver"
)

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		h     string
		size  int64
		start int64
		len   int64
		nil   bool
		unsat bool
	}{
		{h: "bytes=0-9", size: 100, start: 0, len: 10},
		{h: "bytes=90-", size: 100, start: 90, len: 10},
		{h: "bytes=-10", size: 100, start: 90, len: 10},
		{h: "bytes=-200", size: 100, start: 0, len: 100},
		{h: "bytes=50-500", size: 100, start: 50, len: 50},
		{h: "bytes=99-99", size: 100, start: 99, len: 1},
		{h: "bytes=100-", size: 100, unsat: true},
		{h: "bytes=100-200", size: 100, unsat: true},
		{h: "bytes=-0", size: 100, unsat: true},
		{h: "bytes=0-", size: 0, unsat: true},
		{h: "bytes=-5", size: 0, unsat: true},
		{h: "bytes=5-1", size: 100, nil: true},
		{h: "bytes=a-b", size: 100, nil: true},
		{h: "items=0-1", size: 100, nil: true},
		{h: "bytes=0-1,5-6", size: 100, nil: true},
		{h: "bytes=5", size: 100, nil: true},
	} {
		rng, err := parseRange(tc.h, tc.size)
		switch {
		case tc.unsat:
			if err != errRangeNotSatisfiable {
				t.Errorf("%q/%d: %v %v, want unsatisfiable", tc.h, tc.size, rng, err)
			}
		case tc.nil:
			if rng != nil || err != nil {
				t.Errorf("%q: %v %v, want ignored", tc.h, rng, err)
			}
		default:
			if err != nil || rng == nil || rng.Start != tc.start || rng.Length != tc.len {
				t.Errorf("%q/%d: %+v %v, want %d+%d", tc.h, tc.size, rng, err, tc.start, tc.len)
			}
		}
	}
}

func TestGetObjectRanges(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	data := "0123456789abcdefghij"
	h.put("b", "obj", data)
	for _, tc := range []struct {
		rng, want, contentRange string
		status                  int
	}{
		{"bytes=0-3", "0123", "bytes 0-3/20", 206},
		{"bytes=15-", "fghij", "bytes 15-19/20", 206},
		{"bytes=-3", "hij", "bytes 17-19/20", 206},
		{"bytes=10-100", "abcdefghij", "bytes 10-19/20", 206},
		{"bytes=20-", "", "bytes */20", 416},
		{"bytes=garbage", data, "", 200},
		{"", data, "", 200},
	} {
		res := h.do(req{method: "GET", path: "/b/obj", hdr: map[string]string{"Range": tc.rng}})
		if res.status != tc.status || res.header.Get("Content-Range") != tc.contentRange {
			t.Errorf("%q: %d %q, want %d %q", tc.rng, res.status, res.header.Get("Content-Range"), tc.status, tc.contentRange)
			continue
		}
		if tc.status == 416 {
			if res.code() != "InvalidRange" {
				t.Errorf("%q: code %q", tc.rng, res.code())
			}
			continue
		}
		if res.body != tc.want || res.header.Get("Content-Length") != strconv.Itoa(len(tc.want)) {
			t.Errorf("%q: body %q len %s", tc.rng, res.body, res.header.Get("Content-Length"))
		}
	}
	// HEAD honours Range too, without a body.
	res := h.mustDo(req{method: "HEAD", path: "/b/obj", hdr: map[string]string{"Range": "bytes=0-1"}}, 206)
	if res.header.Get("Content-Length") != "2" || res.body != "" {
		t.Fatalf("HEAD range: %v %q", res.header, res.body)
	}
}

func TestGetObjectConditions(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	h.put("b", "obj", "hello")
	etag := `"` + md5hex([]byte("hello")) + `"`
	mod := h.be.now() // the fake's fixed clock
	before := mod.Add(-time.Hour).Format(http.TimeFormat)
	after := mod.Add(time.Hour).Format(http.TimeFormat)
	at := mod.Format(http.TimeFormat)
	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		status int
	}{
		{"if-match hit", map[string]string{"If-Match": etag}, 200},
		{"if-match star", map[string]string{"If-Match": "*"}, 200},
		{"if-match list", map[string]string{"If-Match": `"x", ` + etag}, 200},
		{"if-match miss", map[string]string{"If-Match": `"nope"`}, 412},
		{"if-none-match hit", map[string]string{"If-None-Match": etag}, 304},
		{"if-none-match miss", map[string]string{"If-None-Match": `"nope"`}, 200},
		{"if-modified-since before", map[string]string{"If-Modified-Since": before}, 200},
		{"if-modified-since at", map[string]string{"If-Modified-Since": at}, 304},
		{"if-modified-since after", map[string]string{"If-Modified-Since": after}, 304},
		{"if-unmodified-since after", map[string]string{"If-Unmodified-Since": after}, 200},
		{"if-unmodified-since at", map[string]string{"If-Unmodified-Since": at}, 200},
		{"if-unmodified-since before", map[string]string{"If-Unmodified-Since": before}, 412},
		{"bad date ignored", map[string]string{"If-Unmodified-Since": "yesterday"}, 200},
		// Precedence: If-Match true overrides If-Unmodified-Since false.
		{"match overrides unmodified", map[string]string{"If-Match": etag, "If-Unmodified-Since": before}, 200},
		// If-None-Match false (etag matches) with If-Modified-Since true: 304.
		{"none-match hit + modified", map[string]string{"If-None-Match": etag, "If-Modified-Since": before}, 304},
		// If-None-Match true overrides If-Modified-Since false.
		{"none-match miss overrides", map[string]string{"If-None-Match": `"x"`, "If-Modified-Since": after}, 200},
		// 412 wins over 304.
		{"412 before 304", map[string]string{"If-Match": `"x"`, "If-None-Match": etag}, 412},
	} {
		for _, method := range []string{"GET", "HEAD"} {
			res := h.do(req{method: method, path: "/b/obj", hdr: tc.hdr})
			if res.status != tc.status {
				t.Errorf("%s %s: %d, want %d", method, tc.name, res.status, tc.status)
			}
			switch tc.status {
			case 304:
				if res.body != "" || res.header.Get("ETag") != etag {
					t.Errorf("%s %s: 304 with body %q etag %q", method, tc.name, res.body, res.header.Get("ETag"))
				}
			case 412:
				if method == "GET" && res.code() != "PreconditionFailed" {
					t.Errorf("%s: %s", tc.name, res.body)
				}
			}
		}
	}
}

func TestPutGetHeaders(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	hdr := map[string]string{
		"Content-Type":        "text/plain",
		"Content-Encoding":    "gzip",
		"Content-Disposition": "attachment",
		"Content-Language":    "en",
		"Cache-Control":       "no-cache",
		"Expires":             "Thu, 01 Dec 2094 16:00:00 GMT",
		"x-amz-meta-Color":    "blue",
		"x-amz-meta-empty":    "",
		"x-amz-tagging":       "a=1&b=2",
	}
	res := h.mustDo(req{method: "PUT", path: "/b/k", body: "data", hdr: hdr}, 200)
	if res.header.Get("ETag") != `"`+md5hex([]byte("data"))+`"` {
		t.Fatalf("etag %q", res.header.Get("ETag"))
	}
	for _, m := range []string{"GET", "HEAD"} {
		res = h.mustDo(req{method: m, path: "/b/k"}, 200)
		for k, v := range map[string]string{
			"Content-Type": "text/plain", "Content-Encoding": "gzip", "Content-Disposition": "attachment",
			"Content-Language": "en", "Cache-Control": "no-cache", "Expires": "Thu, 01 Dec 2094 16:00:00 GMT",
			"x-amz-meta-color": "blue", "x-amz-tagging-count": "2", "Content-Length": "4",
			"Last-Modified": "Thu, 02 Jan 2025 03:04:05 GMT", "Accept-Ranges": "bytes",
		} {
			if got := res.header.Get(k); got != v {
				t.Errorf("%s %s = %q, want %q", m, k, got, v)
			}
		}
		if _, ok := res.header["X-Amz-Meta-Empty"]; !ok {
			t.Errorf("%s: empty user metadata lost", m)
		}
		if res.header.Get("x-amz-request-id") == "" || res.header.Get("x-amz-id-2") == "" {
			t.Errorf("%s: missing request ids", m)
		}
	}
	// response-* overrides.
	res = h.mustDo(req{method: "GET", path: "/b/k?response-content-type=image/png&response-cache-control=max-age%3D5&response-content-disposition=inline"}, 200)
	if res.header.Get("Content-Type") != "image/png" || res.header.Get("Cache-Control") != "max-age=5" || res.header.Get("Content-Disposition") != "inline" {
		t.Fatalf("overrides: %v", res.header)
	}
	// No Content-Type stored: S3's default, never a sniffed one.
	h.put("b", "plain", "<html></html>")
	if ct := h.mustDo(req{method: "GET", path: "/b/plain"}, 200).header.Get("Content-Type"); ct != defaultContentType {
		t.Fatalf("default content type %q", ct)
	}
	// aws-chunked is a transfer coding, not stored.
	if got := stripAWSChunked("aws-chunked,gzip"); got != "gzip" {
		t.Fatalf("strip: %q", got)
	}
}

func TestPutObjectErrors(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	sum := md5.Sum([]byte("data"))
	good := base64.StdEncoding.EncodeToString(sum[:])
	for _, tc := range []struct {
		name   string
		rq     req
		status int
		code   string
	}{
		{"bad digest", req{method: "PUT", path: "/b/k", body: "data", hdr: map[string]string{"Content-MD5": base64.StdEncoding.EncodeToString(make([]byte, 16))}}, 400, "BadDigest"},
		{"invalid digest", req{method: "PUT", path: "/b/k", body: "data", hdr: map[string]string{"Content-MD5": "notbase64!"}}, 400, "InvalidDigest"},
		{"short digest", req{method: "PUT", path: "/b/k", body: "data", hdr: map[string]string{"Content-MD5": "AAAA"}}, 400, "InvalidDigest"},
		{"empty digest", req{method: "PUT", path: "/b/k", body: "data", hdr: map[string]string{"Content-MD5": ""}}, 400, "InvalidDigest"},
		{"bad crc32", req{method: "PUT", path: "/b/k", body: "data", hdr: map[string]string{"x-amz-checksum-crc32": "AAAAAA=="}}, 400, "BadDigest"},
		{"malformed crc32", req{method: "PUT", path: "/b/k", body: "data", hdr: map[string]string{"x-amz-checksum-crc32": "zz"}}, 400, "InvalidRequest"},
		{"metadata too large", req{method: "PUT", path: "/b/k", body: "data", hdr: map[string]string{"x-amz-meta-big": strings.Repeat("x", 2100)}}, 400, "MetadataTooLarge"},
		{"bad tagging", req{method: "PUT", path: "/b/k", body: "data", hdr: map[string]string{"x-amz-tagging": "a=%zz"}}, 400, "InvalidArgument"},
		{"key too long", req{method: "PUT", path: "/b/" + strings.Repeat("k", 1025), body: "data"}, 400, "KeyTooLongError"},
		{"sse-c over http", req{method: "PUT", path: "/b/k", body: "data", hdr: map[string]string{"x-amz-server-side-encryption-customer-algorithm": "AES256"}}, 400, "InvalidRequest"},
		{"sse bogus", req{method: "PUT", path: "/b/k", body: "data", hdr: map[string]string{"x-amz-server-side-encryption": "bogus"}}, 400, "InvalidArgument"},
		{"sse kms key without kms", req{method: "PUT", path: "/b/k", body: "data", hdr: map[string]string{"x-amz-server-side-encryption": "AES256", "x-amz-server-side-encryption-aws-kms-key-id": "k"}}, 400, "InvalidArgument"},
		{"sse kms key alone", req{method: "PUT", path: "/b/k", body: "data", hdr: map[string]string{"x-amz-server-side-encryption-aws-kms-key-id": "k"}}, 400, "InvalidArgument"},
		{"sse bad context", req{method: "PUT", path: "/b/k", body: "data", hdr: map[string]string{"x-amz-server-side-encryption": "aws:kms", "x-amz-server-side-encryption-context": "!!"}}, 400, "InvalidArgument"},
		{"sse bucket key bogus", req{method: "PUT", path: "/b/k", body: "data", hdr: map[string]string{"x-amz-server-side-encryption": "AES256", "x-amz-server-side-encryption-bucket-key-enabled": "yes"}}, 400, "InvalidArgument"},
		{"sse dsse", req{method: "PUT", path: "/b/k", body: "data", hdr: map[string]string{"x-amz-server-side-encryption": "aws:kms:dsse"}}, 501, "NotImplemented"},
		{"unsupported subresource", req{method: "PUT", path: "/b/k?tagging", body: "<Tagging/>"}, 501, "NotImplemented"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := h.mustDo(tc.rq, tc.status)
			if res.code() != tc.code {
				t.Fatalf("code %q, want %q: %s", res.code(), tc.code, res.body)
			}
		})
	}
	if n := len(h.be.buckets["b"].objects); n != 0 {
		t.Fatalf("rejected PUTs stored %d objects", n)
	}
	h.mustDo(req{method: "PUT", path: "/b/k", body: "data", hdr: map[string]string{"Content-MD5": good}}, 200)
	// Conditional create.
	res := h.mustDo(req{method: "PUT", path: "/b/k", body: "other", hdr: map[string]string{"If-None-Match": "*"}}, 412)
	if res.code() != "PreconditionFailed" || string(h.be.buckets["b"].objects["k"].data) != "data" {
		t.Fatalf("conditional put: %s", res.body)
	}
	h.mustDo(req{method: "PUT", path: "/b/new", body: "x", hdr: map[string]string{"If-None-Match": "*"}}, 200)
	// If-None-Match: <etag> (RGW): refused only when the current object has it.
	etag := `"` + md5hex([]byte("data")) + `"`
	h.mustDo(req{method: "PUT", path: "/b/k", body: "other", hdr: map[string]string{"If-None-Match": etag}}, 412)
	h.mustDo(req{method: "PUT", path: "/b/k", body: "other", hdr: map[string]string{"If-None-Match": `"abc"`}}, 200)
}

func TestEntityTooLarge(t *testing.T) {
	r := httptestRequest("PUT", "/b/k", "")
	r.ContentLength = driver.MaxPutSize + 1
	_, err := newPayload(r, &reqCtx{decodedLength: -1}, driver.MaxPutSize)
	if MapError(err).Code != "EntityTooLarge" {
		t.Fatalf("got %v", err)
	}
	r = httptestRequest("PUT", "/b/k", "")
	r.ContentLength = -1
	if _, err := newPayload(r, &reqCtx{decodedLength: -1}, driver.MaxPutSize); MapError(err).Code != "MissingContentLength" {
		t.Fatalf("got %v", err)
	}
	r = httptestRequest("PUT", "/b/k", "")
	r.Header.Set("Content-Length", "100")
	r.Header.Set("x-amz-decoded-content-length", "6000000000")
	if _, err := newPayload(r, &reqCtx{decodedLength: -1}, driver.MaxPutSize); MapError(err).Code != "EntityTooLarge" {
		t.Fatalf("decoded length: %v", err)
	}
}

func httptestRequest(method, target, body string) *http.Request {
	r, _ := http.NewRequest(method, "http://localhost"+target, strings.NewReader(body))
	return r
}

func TestDeleteObject(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	h.put("b", "k", "x")
	h.mustDo(req{method: "DELETE", path: "/b/k"}, 204)
	h.mustDo(req{method: "DELETE", path: "/b/k"}, 204) // missing: still 204
	if res := h.mustDo(req{method: "GET", path: "/b/k"}, 404); res.code() != "NoSuchKey" {
		t.Fatal(res.body)
	}
	h.mustDo(req{method: "HEAD", path: "/b/k"}, 404)
	if res := h.mustDo(req{method: "DELETE", path: "/b/k?versionId=abc"}, 400); res.code() != "InvalidArgument" {
		t.Fatal(res.body)
	}
}

// Keys with characters that trip up routing and signing round-trip.
func TestOddKeysSDK(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		var opt func(*harness)
		if tlsOn {
			opt = withTLS
		}
		h := newHarnessOpts(t, opt)
		h.bucket("b")
		c := h.client(aliceKey)
		ctx := context.Background()
		keys := []string{
			"plain", "with space", "uni-ключ-鍵-🙂", "per%cent", "plus+sign", "double//slash",
			"trailing/", "/leading", "q?mark", "hash#tag", "amp&eq=", "tilde~star*", "dots/../x", "semi;colon",
		}
		for _, k := range keys {
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String(k), Body: strings.NewReader("v:" + k)}); err != nil {
				t.Fatalf("tls=%v put %q: %v", tlsOn, k, err)
			}
			out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String(k)})
			if err != nil {
				t.Fatalf("get %q: %v", k, err)
			}
			data, _ := io.ReadAll(out.Body)
			out.Body.Close()
			if string(data) != "v:"+k {
				t.Fatalf("get %q: %q", k, data)
			}
		}
		lo, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("b")})
		if err != nil || len(lo.Contents) != len(keys) {
			t.Fatalf("list: %v %d", err, len(lo.Contents))
		}
		for _, k := range keys {
			if _, ok := h.be.buckets["b"].objects[k]; !ok {
				t.Errorf("key %q stored under another name", k)
			}
		}
	}
}

// The SDK's default checksums: CRC32 header over HTTP, aws-chunked with a
// trailer over TLS; both verified, stored and returned with checksum mode.
func TestChecksumsSDK(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		var opt func(*harness)
		if tlsOn {
			opt = withTLS
		}
		h := newHarnessOpts(t, opt)
		h.bucket("b")
		c := h.client(aliceKey)
		ctx := context.Background()
		body := bytes.Repeat([]byte("cairn"), 20000)
		for _, alg := range []types.ChecksumAlgorithm{"", types.ChecksumAlgorithmCrc32c, types.ChecksumAlgorithmSha256, types.ChecksumAlgorithmCrc64nvme} {
			key := "obj-" + string(alg)
			put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String(key), Body: bytes.NewReader(body), ChecksumAlgorithm: alg})
			if err != nil {
				t.Fatalf("tls=%v %s: %v", tlsOn, alg, err)
			}
			stored := h.be.buckets["b"].objects[key].info.Meta.Checksums
			want := string(alg)
			if want == "" {
				want = "CRC32"
			}
			if len(stored) != 1 || stored[want] == "" {
				t.Fatalf("tls=%v %s: stored checksums %v", tlsOn, alg, stored)
			}
			if want == "CRC32" && aws.ToString(put.ChecksumCRC32) != stored["CRC32"] {
				t.Fatalf("put response checksum %v vs %v", aws.ToString(put.ChecksumCRC32), stored)
			}
			get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(get.Body) // the SDK validates the checksum here
			get.Body.Close()
			if err != nil || !bytes.Equal(data, body) {
				t.Fatalf("get: %v", err)
			}
			if get.ChecksumType != types.ChecksumTypeFullObject {
				t.Fatalf("checksum type %q", get.ChecksumType)
			}
		}
	}
}

// A checksum trailer is verified by the Server's own verifier when the
// authenticator does not verify bodies.
func TestOwnVerifierTrailer(t *testing.T) {
	var trailer http.Header
	h := newHarness(t, func(c *Config) {
		c.Auth = testAuth{be: c.Backend, result: func(r *http.Request) AuthResult {
			return AuthResult{Trailer: func() http.Header { return trailer }}
		}}
	})
	h.bucket("b")
	crc := "rfPzYw==" // CRC32 of "data"
	hdr := map[string]string{"x-amz-trailer": "x-amz-checksum-crc32"}
	trailer = http.Header{"X-Amz-Checksum-Crc32": {"AAAAAA=="}}
	if res := h.mustDo(req{method: "PUT", path: "/b/k", body: "data", hdr: hdr}, 400); res.code() != "BadDigest" {
		t.Fatal(res.body)
	}
	if len(h.be.buckets["b"].objects) != 0 {
		t.Fatal("stored despite bad trailer")
	}
	trailer = http.Header{"X-Amz-Checksum-Crc32": {crc}}
	res := h.mustDo(req{method: "PUT", path: "/b/k", body: "data", hdr: hdr}, 200)
	if res.header.Get("x-amz-checksum-crc32") != crc || h.be.buckets["b"].objects["k"].info.Meta.Checksums["CRC32"] != crc {
		t.Fatalf("trailer checksum not stored/returned: %v", res.header)
	}
	// Header checksum and Content-MD5 through the same verifier.
	if res := h.mustDo(req{method: "PUT", path: "/b/k2", body: "data", hdr: map[string]string{"x-amz-checksum-crc32": "AAAAAA=="}}, 400); res.code() != "BadDigest" {
		t.Fatal(res.body)
	}
	if res := h.mustDo(req{method: "PUT", path: "/b/k2", body: "data", hdr: map[string]string{"Content-MD5": base64.StdEncoding.EncodeToString(make([]byte, 16))}}, 400); res.code() != "BadDigest" {
		t.Fatal(res.body)
	}
	h.mustDo(req{method: "PUT", path: "/b/k2", body: "data", hdr: map[string]string{"x-amz-checksum-crc32": crc}}, 200)
	h.mustDo(req{method: "PUT", path: "/b/k3", body: "data", hdr: map[string]string{"x-amz-sdk-checksum-algorithm": "SHA256"}}, 200)
	want := sha256.Sum256([]byte("data"))
	if got := h.be.buckets["b"].objects["k3"].info.Meta.Checksums["SHA256"]; got != base64.StdEncoding.EncodeToString(want[:]) {
		t.Fatalf("computed sha256 %q", got)
	}
}

// An object uploaded without any checksum gets S3's default full-object
// CRC64NVME (AWS "Checking object integrity"): stored, returned on PUT and
// on HEAD with x-amz-checksum-mode: ENABLED.
func TestPutDefaultChecksum(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	tab := crc64.MakeTable(0x9a6c9329ac4bc9b5)
	sum := crc64.Checksum([]byte("data"), tab)
	want := base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint64(nil, sum))
	res := h.mustDo(req{method: "PUT", path: "/b/k", body: "data"}, 200)
	if got := res.header.Get("x-amz-checksum-crc64nvme"); got != want || res.header.Get("x-amz-checksum-type") != "FULL_OBJECT" {
		t.Fatalf("put headers %v, want crc64nvme %s", res.header, want)
	}
	if got := h.be.buckets["b"].objects["k"].info.Meta.Checksums; len(got) != 1 || got["CRC64NVME"] != want {
		t.Fatalf("stored %v", got)
	}
	head := h.mustDo(req{method: "HEAD", path: "/b/k", hdr: map[string]string{"x-amz-checksum-mode": "ENABLED"}}, 200)
	if head.header.Get("x-amz-checksum-crc64nvme") != want || head.header.Get("x-amz-checksum-type") != "FULL_OBJECT" {
		t.Fatalf("head headers %v", head.header)
	}
	// A declared algorithm replaces the default rather than adding to it.
	res = h.mustDo(req{method: "PUT", path: "/b/k2", body: "data", hdr: map[string]string{"x-amz-checksum-crc32": "rfPzYw=="}}, 200)
	if res.header.Get("x-amz-checksum-crc64nvme") != "" || len(h.be.buckets["b"].objects["k2"].info.Meta.Checksums) != 1 {
		t.Fatalf("declared CRC32 also got the default: %v", res.header)
	}
}
