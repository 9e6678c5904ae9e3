package sigv4

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairn-s3/cairn/internal/checksum"
	"github.com/cairn-s3/cairn/internal/s3err"
)

const (
	testAK     = "CAIRNTESTKEY"
	testSecret = "cairn/test+secret=="
)

func testLookup(_ context.Context, ak string) (string, error) {
	switch ak {
	case testAK:
		return testSecret, nil
	case "SUSPENDED":
		return "", s3err.New(s3err.ErrUserSuspended, "")
	case "BROKEN":
		return "", errors.New("metadata store down")
	}
	return "", ErrUnknownAccessKey
}

// seen is what the test server observed for one request.
type seen struct {
	res  *Result
	body []byte
	err  error
	sums map[checksum.Algorithm]string
}

// gateway is a minimal S3 endpoint: it verifies, drains the body, and
// answers like S3 would (an error document, or 200 with an ETag).
type gateway struct {
	v    *Verifier
	mu   sync.Mutex
	last seen
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	res, err := g.v.Verify(r)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(r.Body)
	}
	g.mu.Lock()
	g.last = seen{res: res, body: body, err: err}
	if err == nil {
		g.last.sums = res.Body.Checksums()
	}
	g.mu.Unlock()
	if err != nil {
		s3err.Write(w, r, s3err.From(err), "req-1")
		return
	}
	w.Header().Set("ETag", `"d41d8cd98f00b204e9800998ecf8427e"`)
	w.WriteHeader(http.StatusOK)
}

func (g *gateway) observed() seen {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last
}

func newGateway(t *testing.T, now func() time.Time, tls bool) (*gateway, *httptest.Server) {
	t.Helper()
	g := &gateway{v: NewVerifier(testLookup, now)}
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(g)
	} else {
		srv = httptest.NewServer(g)
	}
	t.Cleanup(srv.Close)
	return g, srv
}

var sdkCreds = aws.Credentials{AccessKeyID: testAK, SecretAccessKey: testSecret}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// signS3 signs req as the S3 SDK does (no path escaping by the signer:
// the URL's escaped path is signed as it is).
func signS3(t *testing.T, req *http.Request, payloadHash, service, region string, at time.Time) {
	t.Helper()
	s := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = service == "s3" })
	if err := s.SignHTTP(context.Background(), sdkCreds, req, payloadHash, service, region, at); err != nil {
		t.Fatal(err)
	}
}

func TestSDKSignerRoundTrip(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	g, srv := newGateway(t, func() time.Time { return now.Add(3 * time.Second) }, false)
	body := []byte("hello cairn")
	for _, tc := range []struct {
		name    string
		method  string
		path    string // escaped, as sent
		query   string
		headers map[string][]string
		payload string // "" = sha256 of body
		region  string
	}{
		{"simple put", "PUT", "/bucket/key", "", nil, "", "us-east-1"},
		{"unsigned payload", "PUT", "/bucket/key", "", nil, UnsignedPayload, "us-east-1"},
		{"odd region", "PUT", "/bucket/key", "", nil, "", "zg1-default"},
		{"escaped key", "PUT", "/bucket/a%20b%2Bc/%C3%BC%21%27%28%29%2A/x~y_z.", "", nil, "", "us-east-1"},
		{"double slash and dots", "PUT", "/bucket//a/../b/./c", "", nil, "", "us-east-1"},
		{"percent in key", "PUT", "/bucket/100%25", "", nil, "", "us-east-1"},
		{"query subresources", "GET", "/bucket", "list-type=2&prefix=a%2Fb&delimiter=%2F&encoding-type=url&start-after=%20x&uploads", nil, "", "us-east-1"},
		{"repeated query names", "GET", "/bucket", "a=2&a=1&b=&c", nil, "", "us-east-1"},
		{"spaces and multi-value headers", "PUT", "/bucket/key", "", map[string][]string{
			"X-Amz-Meta-Foo":  {"  a   b  c  "},
			"X-Amz-Meta-Bar":  {"one", "two"},
			"Content-Type":    {"text/plain;  charset=utf-8"},
			"X-Amz-Tagging":   {"k=v&k2=v2"},
			"Cache-Control":   {"no-cache"},
			"X-Amz-Meta-Utf8": {"caf\u00e9"},
		}, "", "us-east-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := srv.URL + tc.path
			if tc.query != "" {
				u += "?" + tc.query
			}
			var rd io.Reader
			if tc.method == "PUT" {
				rd = bytes.NewReader(body)
			}
			req, err := http.NewRequest(tc.method, u, rd)
			if err != nil {
				t.Fatal(err)
			}
			for k, vs := range tc.headers {
				for _, v := range vs {
					req.Header.Add(k, v)
				}
			}
			ph := tc.payload
			if ph == "" {
				if rd == nil {
					ph = sha256Hex(nil)
				} else {
					ph = sha256Hex(body)
				}
			}
			req.Header.Set("X-Amz-Content-Sha256", ph)
			signS3(t, req, ph, "s3", tc.region, now)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			o := g.observed()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s (server: %v)", resp.StatusCode, msg, o.err)
			}
			if o.res.AccessKey != testAK || o.res.Scope.Region != tc.region || o.res.Type != AuthHeader {
				t.Fatalf("result %+v", o.res)
			}
			if tc.method == "PUT" && !bytes.Equal(o.body, body) {
				t.Fatalf("body %q", o.body)
			}
		})
	}
}

func TestSDKSignerFailures(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	clock := now
	g, srv := newGateway(t, func() time.Time { return clock }, false)
	body := []byte("payload")
	send := func(sign func(*http.Request), tamper func(*http.Request)) (int, string, error) {
		req, _ := http.NewRequest("PUT", srv.URL+"/bucket/key", bytes.NewReader(body))
		req.Header.Set("X-Amz-Content-Sha256", sha256Hex(body))
		sign(req)
		if tamper != nil {
			tamper(req)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b), g.observed().err
	}
	std := func(r *http.Request) { signS3(t, r, sha256Hex(body), "s3", "us-east-1", now) }
	for _, tc := range []struct {
		name   string
		sign   func(*http.Request)
		tamper func(*http.Request)
		clock  time.Time
		want   s3err.APIError
	}{
		{"wrong secret", func(r *http.Request) {
			s := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
			_ = s.SignHTTP(context.Background(), aws.Credentials{AccessKeyID: testAK, SecretAccessKey: "nope"}, r, sha256Hex(body), "s3", "us-east-1", now)
		}, nil, now, s3err.ErrSignatureDoesNotMatch},
		{"skew ahead", std, nil, now.Add(16 * time.Minute), s3err.ErrRequestTimeTooSkewed},
		{"skew behind", std, nil, now.Add(-16 * time.Minute), s3err.ErrRequestTimeTooSkewed},
		{"within skew", std, nil, now.Add(14 * time.Minute), s3err.APIError{}},
		{"body differs from signed hash", std, func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader("PAYLOAD"))
		}, now, s3err.ErrXAmzContentSHA256Mismatch},
		{"wrong service", func(r *http.Request) { signS3(t, r, sha256Hex(body), "ec2", "us-east-1", now) }, nil, now, s3err.ErrAuthorizationHeaderMalformed},
		{"suspended user", func(r *http.Request) {
			_ = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: "SUSPENDED", SecretAccessKey: "x"}, r, sha256Hex(body), "s3", "us-east-1", now)
		}, nil, now, s3err.ErrUserSuspended},
		{"lookup failure", func(r *http.Request) {
			_ = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: "BROKEN", SecretAccessKey: "x"}, r, sha256Hex(body), "s3", "us-east-1", now)
		}, nil, now, s3err.ErrInternalError},
		{"no auth", func(*http.Request) {}, nil, now, s3err.ErrAccessDenied},
		{"sigv2", func(r *http.Request) { r.Header.Set("Authorization", "AWS "+testAK+":c2lnbmF0dXJl") }, nil, now, s3err.ErrUnsupportedSignature},
		{"invalid content sha", std, func(r *http.Request) { r.Header.Set("X-Amz-Content-Sha256", "xyz") }, now, s3err.ErrInvalidArgument},
		{"bad Content-MD5", func(r *http.Request) {
			r.Header.Set("Content-Md5", "AAAAAAAAAAAAAAAAAAAAAA==")
			std(r)
		}, nil, now, s3err.ErrBadDigest},
		{"malformed Content-MD5", func(r *http.Request) {
			r.Header.Set("Content-Md5", "zz")
			std(r)
		}, nil, now, s3err.ErrInvalidDigest},
		{"wrong crc32 header", func(r *http.Request) {
			r.Header.Set("X-Amz-Checksum-Crc32", "AAAAAA==")
			std(r)
		}, nil, now, s3err.ErrBadDigest},
		{"right crc32c header", func(r *http.Request) {
			r.Header.Set("X-Amz-Checksum-Crc32c", checksum.CRC32C.Sum(body))
			std(r)
		}, nil, now, s3err.APIError{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock = tc.clock
			status, msg, err := send(tc.sign, tc.tamper)
			if tc.want == (s3err.APIError{}) {
				if err != nil || status != 200 {
					t.Fatalf("status %d err %v", status, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("server error %v, want %s", err, tc.want.Code)
			}
			if status != tc.want.HTTPStatus || !strings.Contains(msg, "<Code>"+tc.want.Code+"</Code>") {
				t.Fatalf("response %d %s", status, msg)
			}
		})
	}
}

func TestSDKPresign(t *testing.T) {
	signedAt := time.Now().UTC().Truncate(time.Second)
	clock := signedAt
	g, srv := newGateway(t, func() time.Time { return clock }, false)
	presign := func(method, path string, expires time.Duration, hdr http.Header) string {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		for k, v := range hdr {
			req.Header[k] = v
		}
		q := req.URL.Query()
		q.Set("X-Amz-Expires", strconv.Itoa(int(expires/time.Second)))
		req.URL.RawQuery = q.Encode()
		s := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
		u, _, err := s.PresignHTTP(context.Background(), sdkCreds, req, UnsignedPayload, "s3", "us-east-1", signedAt)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	do := func(method, u string, body io.Reader, hdr http.Header) int {
		req, _ := http.NewRequest(method, u, body)
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	u := presign("GET", "/bucket/some%20key", time.Hour, nil)
	if st := do("GET", u, nil, nil); st != 200 {
		t.Fatalf("fresh presign: %d %v", st, g.observed().err)
	}
	if o := g.observed(); o.res.Type != AuthPresigned || o.res.Payload != PayloadUnsigned || !o.res.Expires.Equal(signedAt.Add(time.Hour)) {
		t.Fatalf("result %+v", o.res)
	}
	clock = signedAt.Add(time.Hour + time.Second)
	if st := do("GET", u, nil, nil); st != 403 || !errors.Is(g.observed().err, s3err.ErrRequestExpired) {
		t.Fatalf("expired: %d %v", st, g.observed().err)
	}
	clock = signedAt.Add(-time.Hour)
	if st := do("GET", u, nil, nil); st != 403 || !errors.Is(g.observed().err, s3err.ErrRequestNotYetValid) {
		t.Fatalf("future: %d %v", st, g.observed().err)
	}
	clock = signedAt
	if st := do("PUT", u, nil, nil); st != 403 || !errors.Is(g.observed().err, s3err.ErrSignatureDoesNotMatch) {
		t.Fatalf("method changed: %d %v", st, g.observed().err)
	}
	tampered := strings.Replace(u, "some%20key", "other%20key", 1)
	if st := do("GET", tampered, nil, nil); st != 403 {
		t.Fatalf("path changed: %d", st)
	}
	long := presign("GET", "/bucket/k", 8*24*time.Hour, nil)
	if st := do("GET", long, nil, nil); st != 400 || !errors.Is(g.observed().err, s3err.ErrAuthorizationQueryParameters) {
		t.Fatalf("8 days: %d %v", st, g.observed().err)
	}
	// A presigned PUT with a signed header and a body.
	hdr := http.Header{"Content-Type": {"image/png"}}
	put := presign("PUT", "/bucket/up", 7*24*time.Hour, hdr)
	if st := do("PUT", put, strings.NewReader("png-bytes"), hdr); st != 200 || string(g.observed().body) != "png-bytes" {
		t.Fatalf("presigned put: %d %v", st, g.observed().err)
	}
	if st := do("PUT", put, strings.NewReader("png-bytes"), http.Header{"Content-Type": {"text/html"}}); st != 403 {
		t.Fatalf("presigned put with changed signed header: %d", st)
	}
}

// TestSNSQueryAPI signs like the SNS client: service "sns", a form body and
// no x-amz-content-sha256 header, so the verifier hashes the body itself.
func TestSNSQueryAPI(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	g, srv := newGateway(t, func() time.Time { return now }, false)
	form := url.Values{"Action": {"CreateTopic"}, "Name": {"fishtopic"},
		"Attributes.entry.1.key": {"push-endpoint"}, "Attributes.entry.1.value": {"kafka://127.0.0.1:9092"}}.Encode()
	for _, tc := range []struct {
		name   string
		body   string
		sent   string
		status int
	}{
		{"create topic", form, form, 200},
		{"body swapped", form, strings.Replace(form, "fishtopic", "fishtopiX", 1), 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", srv.URL+"/", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
			if err := v4.NewSigner().SignHTTP(context.Background(), sdkCreds, req, sha256Hex([]byte(tc.body)), "sns", "default", now); err != nil {
				t.Fatal(err)
			}
			req.Body = io.NopCloser(strings.NewReader(tc.sent))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			o := g.observed()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d: %v", resp.StatusCode, o.err)
			}
			if tc.status == 200 && (o.res.Scope.Service != "sns" || string(o.body) != tc.body) {
				t.Fatalf("result %+v body %q", o.res, o.body)
			}
		})
	}
}

// TestS3Client drives the real aws-sdk-go-v2 S3 client, with its default
// CRC checksums, against the verifier over HTTP and HTTPS (where it uses
// aws-chunked STREAMING-UNSIGNED-PAYLOAD-TRAILER bodies).
func TestS3Client(t *testing.T) {
	for _, tls := range []bool{false, true} {
		g, srv := newGateway(t, time.Now, tls)
		client := s3.New(s3.Options{
			BaseEndpoint: aws.String(srv.URL),
			UsePathStyle: true,
			Region:       "us-east-1",
			Credentials:  credentials.NewStaticCredentialsProvider(testAK, testSecret, ""),
			HTTPClient:   srv.Client(),
			// What config.LoadDefaultConfig gives current SDKs.
			RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		})
		data := bytes.Repeat([]byte("0123456789abcdef"), 40000) // 640000 bytes, several SDK chunks
		for _, alg := range []types.ChecksumAlgorithm{"", types.ChecksumAlgorithmCrc32, types.ChecksumAlgorithmCrc32c, types.ChecksumAlgorithmCrc64nvme, types.ChecksumAlgorithmSha1, types.ChecksumAlgorithmSha256} {
			t.Run(fmt.Sprintf("tls=%v/alg=%q", tls, alg), func(t *testing.T) {
				_, err := client.PutObject(context.Background(), &s3.PutObjectInput{
					Bucket:            aws.String("bucket"),
					Key:               aws.String("dir/key with spaces+plus&amp"),
					Body:              bytes.NewReader(data),
					ChecksumAlgorithm: alg,
					Metadata:          map[string]string{"note": "  spaced   value "},
				})
				o := g.observed()
				if err != nil {
					t.Fatalf("PutObject: %v (server: %v)", err, o.err)
				}
				if !bytes.Equal(o.body, data) {
					t.Fatalf("server got %d bytes", len(o.body))
				}
				want := checksum.Algorithm(alg)
				if want == "" {
					want = checksum.CRC32 // the SDK's default
				}
				if got := o.sums[want]; got != want.Sum(data) {
					t.Fatalf("mode %v: checksum %v, want %s=%s", o.res.Payload, o.sums, want, want.Sum(data))
				}
				t.Logf("payload mode %v", o.res.Payload)
			})
		}
		t.Run(fmt.Sprintf("tls=%v/delete", tls), func(t *testing.T) {
			if _, err := client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("b"), Key: aws.String("k")}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// chunkSigner builds aws-chunked bodies per the AWS spec, signing chunks
// and trailers with an HMAC computed here, independently of chunked.go.
type chunkSigner struct {
	key     []byte
	at      time.Time
	scope   string
	prevSig string
}

func (c *chunkSigner) sign(sts string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(sts))
	c.prevSig = hex.EncodeToString(m.Sum(nil))
	return c.prevSig
}

// chunk encodes one chunk; the final (empty) one has no data CRLF, the
// caller appends "\r\n" or the trailer.
func (c *chunkSigner) chunk(data []byte) string {
	sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + c.at.Format("20060102T150405Z") + "\n" + c.scope + "\n" + c.prevSig + "\n" +
		sha256Hex(nil) + "\n" + sha256Hex(data)
	s := strconv.FormatInt(int64(len(data)), 16) + ";chunk-signature=" + c.sign(sts) + "\r\n"
	if len(data) > 0 {
		s += string(data) + "\r\n"
	}
	return s
}

func (c *chunkSigner) trailer(lines string) string {
	sts := "AWS4-HMAC-SHA256-TRAILER\n" + c.at.Format("20060102T150405Z") + "\n" + c.scope + "\n" + c.prevSig + "\n" +
		sha256Hex([]byte(strings.ReplaceAll(lines, "\r\n", "\n")))
	return lines + "x-amz-trailer-signature:" + c.sign(sts) + "\r\n\r\n"
}

var seedRe = regexp.MustCompile(`Signature=([0-9a-f]{64})`)

// streamingRequest signs the headers of an aws-chunked upload with the SDK
// signer, then encodes data in chunks of chunkSize signed from the seed.
func streamingRequest(t *testing.T, srvURL string, data []byte, chunkSize int, mode string, trailer string, at time.Time) (*http.Request, *chunkSigner) {
	t.Helper()
	req, _ := http.NewRequest("PUT", srvURL+"/bucket/streamed", nil)
	req.Header.Set("X-Amz-Content-Sha256", mode)
	req.Header.Set("Content-Encoding", "aws-chunked")
	req.Header.Set("X-Amz-Decoded-Content-Length", strconv.Itoa(len(data)))
	if trailer != "" {
		req.Header.Set("X-Amz-Trailer", trailer)
	}
	signS3(t, req, mode, "s3", "us-east-1", at)
	m := seedRe.FindStringSubmatch(req.Header.Get("Authorization"))
	cs := &chunkSigner{
		key: SigningKey(testSecret, Scope{at.Format("20060102"), "us-east-1", "s3"}), at: at,
		scope: at.Format("20060102") + "/us-east-1/s3/aws4_request", prevSig: m[1],
	}
	return req, cs
}

func TestStreamingSigned(t *testing.T) {
	at := time.Now().UTC().Truncate(time.Second)
	g, srv := newGateway(t, func() time.Time { return at }, false)
	data := bytes.Repeat([]byte("streaming!"), 3000) // 30000 bytes
	put := func(req *http.Request, body string) (int, seen) {
		req.Body = io.NopCloser(strings.NewReader(body))
		req.ContentLength = int64(len(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, g.observed()
	}
	encode := func(cs *chunkSigner, sizes ...int) string {
		var b strings.Builder
		off := 0
		for _, n := range sizes {
			b.WriteString(cs.chunk(data[off : off+n]))
			off += n
		}
		return b.String()
	}
	crc := checksum.CRC32C.Sum(data)

	t.Run("signed", func(t *testing.T) {
		req, cs := streamingRequest(t, srv.URL, data, 8192, StreamingPayload, "", at)
		body := encode(cs, 8192, 8192, 8192, 5424, 0) + "\r\n"
		if st, o := put(req, body); st != 200 || !bytes.Equal(o.body, data) {
			t.Fatalf("%d %v", st, o.err)
		}
	})
	t.Run("signed with trailer", func(t *testing.T) {
		req, cs := streamingRequest(t, srv.URL, data, 8192, StreamingPayloadTrailer, "x-amz-checksum-crc32c", at)
		body := encode(cs, 10000, 20000, 0) + cs.trailer("x-amz-checksum-crc32c:"+crc+"\r\n")
		st, o := put(req, body)
		if st != 200 || !bytes.Equal(o.body, data) || o.sums[checksum.CRC32C] != crc {
			t.Fatalf("%d %v %v", st, o.err, o.sums)
		}
	})
	t.Run("unsigned trailer", func(t *testing.T) {
		req, _ := streamingRequest(t, srv.URL, data, 0, StreamingUnsignedPayloadTrail, "x-amz-checksum-crc32c", at)
		body := fmt.Sprintf("%x\r\n%s\r\n0\r\nx-amz-checksum-crc32c:%s\r\n\r\n", len(data), data, crc)
		if st, o := put(req, body); st != 200 || o.sums[checksum.CRC32C] != crc {
			t.Fatalf("%d %v", st, o.err)
		}
	})
	for _, tc := range []struct {
		name string
		mode string
		body func(cs *chunkSigner) string
		want s3err.APIError
	}{
		{"short middle chunk", StreamingPayload, func(cs *chunkSigner) string {
			return encode(cs, 100, 29900, 0) + "\r\n"
		}, s3err.ErrInvalidChunkSize},
		{"chunks reordered", StreamingPayload, func(cs *chunkSigner) string {
			a := cs.chunk(data[:15000])
			b := cs.chunk(data[15000:])
			return b + a + cs.chunk(nil) + "\r\n"
		}, s3err.ErrSignatureDoesNotMatch},
		{"final chunk missing", StreamingPayload, func(cs *chunkSigner) string {
			return encode(cs, 15000, 15000)
		}, s3err.ErrIncompleteBody},
		{"more than decoded length", StreamingPayload, func(cs *chunkSigner) string {
			return encode(cs, 15000, 15000) + cs.chunk([]byte("x")) + cs.chunk(nil) + "\r\n"
		}, s3err.ErrIncompleteBody},
		{"fewer than decoded length", StreamingPayload, func(cs *chunkSigner) string {
			return encode(cs, 15000, 14999) + cs.chunk(nil) + "\r\n"
		}, s3err.ErrIncompleteBody},
		{"trailer checksum wrong", StreamingPayloadTrailer, func(cs *chunkSigner) string {
			return encode(cs, 30000, 0) + cs.trailer("x-amz-checksum-crc32c:AAAAAA==\r\n")
		}, s3err.ErrBadDigest},
		{"trailer value tampered", StreamingPayloadTrailer, func(cs *chunkSigner) string {
			tr := cs.trailer("x-amz-checksum-crc32c:AAAAAA==\r\n")
			return encode(cs, 30000, 0) + strings.Replace(tr, "AAAAAA==", crc, 1)
		}, s3err.ErrSignatureDoesNotMatch},
		{"trailer signature missing", StreamingPayloadTrailer, func(cs *chunkSigner) string {
			return encode(cs, 30000, 0) + "x-amz-checksum-crc32c:" + crc + "\r\n\r\n"
		}, s3err.ErrSignatureDoesNotMatch},
		{"declared trailer absent", StreamingPayloadTrailer, func(cs *chunkSigner) string {
			return encode(cs, 30000, 0) + cs.trailer("")
		}, s3err.ErrMalformedTrailer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trailer := ""
			if tc.mode == StreamingPayloadTrailer {
				trailer = "x-amz-checksum-crc32c"
			}
			req, cs := streamingRequest(t, srv.URL, data, 0, tc.mode, trailer, at)
			st, o := put(req, tc.body(cs))
			if !errors.Is(o.err, tc.want) || st != tc.want.HTTPStatus {
				t.Fatalf("%d %v, want %s", st, o.err, tc.want.Code)
			}
		})
	}
}
