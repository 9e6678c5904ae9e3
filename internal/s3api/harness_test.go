package s3api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-s3/cairn/internal/driver"
)

// testAuth trusts the access key named in the request (header or presign
// query) without checking the signature: signature verification is the
// sigv4 package's job and is tested there. It resolves the secret through
// SecretLookup to exercise the shared user lookup.
type testAuth struct {
	be     Backend
	result func(r *http.Request) AuthResult // optional override
}

func (a testAuth) Authenticate(r *http.Request) (AuthResult, error) {
	ak := credentialAccessKey(r)
	if _, err := SecretLookup(a.be)(r.Context(), ak); err != nil {
		return AuthResult{}, err
	}
	if a.result != nil {
		res := a.result(r)
		res.AccessKey = ak
		return res, nil
	}
	return AuthResult{AccessKey: ak}, nil
}

func credentialAccessKey(r *http.Request) string {
	cred := r.URL.Query().Get("X-Amz-Credential")
	if cred == "" {
		h := r.Header.Get("Authorization")
		if i := strings.Index(h, "Credential="); i >= 0 {
			cred = h[i+len("Credential="):]
		}
	}
	if i := strings.IndexByte(cred, '/'); i >= 0 {
		return cred[:i]
	}
	return cred
}

type harness struct {
	t    *testing.T
	be   *fakeBackend
	srv  *Server
	ts   *httptest.Server
	reg  *prometheus.Registry
	logs *bytes.Buffer
	tls  bool
}

const (
	aliceKey = "AKALICE"
	bobKey   = "AKBOB"
	adminKey = "AKADMIN"
)

var secrets = map[string]string{aliceKey: "alicesecret", bobKey: "bobsecret", adminKey: "adminsecret"}

func newHarness(t *testing.T, mods ...func(*Config)) *harness {
	return newHarnessOpts(t, nil, mods...)
}

func newHarnessOpts(t *testing.T, opt func(*harness), mods ...func(*Config)) *harness {
	t.Helper()
	be := newFakeBackend()
	ctx := context.Background()
	for _, u := range []driver.User{
		{ID: "alice", DisplayName: "Alice", Keys: []driver.Key{{User: "alice", AccessKey: aliceKey, SecretKey: "alicesecret"}}},
		{ID: "bob", Keys: []driver.Key{{User: "bob", AccessKey: bobKey, SecretKey: "bobsecret"}}},
		{ID: "admin", Admin: true, Keys: []driver.Key{{User: "admin", AccessKey: adminKey, SecretKey: "adminsecret"}}},
	} {
		if _, err := be.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	h := &harness{t: t, be: be, reg: prometheus.NewRegistry(), logs: &bytes.Buffer{}}
	if opt != nil {
		opt(h)
	}
	auth, err := NewSigV4(be, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Backend:    be,
		Auth:       auth,
		Logger:     slog.New(slog.NewJSONHandler(h.logs, nil)),
		Registerer: h.reg,
	}
	for _, m := range mods {
		m(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = srv
	if h.tls {
		h.ts = httptest.NewTLSServer(srv)
	} else {
		h.ts = httptest.NewServer(srv)
	}
	t.Cleanup(h.ts.Close)
	return h
}

// withTLS serves over TLS, where the SDK switches PutObject/UploadPart to
// aws-chunked bodies with trailing checksums.
func withTLS(h *harness) { h.tls = true }

// req is a raw request description for error-case tests.
type req struct {
	method, path string
	body         string
	key          string // access key; "" = alice, "-" = anonymous
	hdr          map[string]string
	host         string
	chunked      bool   // send the body with Transfer-Encoding: chunked, no Content-Length
	service      string // SigV4 service of the signature; "" = s3
}

type resp struct {
	status int
	header http.Header
	body   string
}

// code returns the S3 error code of an XML error body.
func (r resp) code() string {
	var e struct{ Code string }
	_ = xml.Unmarshal([]byte(r.body), &e)
	return e.Code
}

func (h *harness) do(rq req) resp {
	h.t.Helper()
	var body io.Reader
	if rq.body != "" {
		body = strings.NewReader(rq.body)
		if rq.chunked {
			body = io.MultiReader(body) // length unknown: Transfer-Encoding: chunked
		}
	}
	r, err := http.NewRequest(rq.method, h.ts.URL+rq.path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range rq.hdr {
		r.Header.Set(k, v)
	}
	if rq.host != "" {
		r.Host = rq.host
	}
	if r.Header.Get("Accept-Encoding") == "" {
		r.Header.Set("Accept-Encoding", "identity") // no transparent gunzip
	}
	if rq.key == "" {
		rq.key = aliceKey
	}
	if rq.key != "-" {
		// Real signatures (unsigned payload): requests pass through the
		// production verifier like any client's.
		payload := "UNSIGNED-PAYLOAD"
		if rq.method == http.MethodPost && rq.path == "/" {
			sum := sha256.Sum256([]byte(rq.body)) // SNS needs a signed body
			payload = hex.EncodeToString(sum[:])
		}
		r.Header.Set("X-Amz-Content-Sha256", payload)
		creds := aws.Credentials{AccessKeyID: rq.key, SecretAccessKey: secrets[rq.key]}
		svc := rq.service
		if svc == "" {
			svc = "s3"
		}
		if err := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).SignHTTP(context.Background(), creds, r, payload, svc, "us-east-1", time.Now()); err != nil {
			h.t.Fatal(err)
		}
	}
	res, err := h.ts.Client().Do(r)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: string(data)}
}

// mustDo runs rq and fails unless it gets status.
func (h *harness) mustDo(rq req, status int) resp {
	h.t.Helper()
	res := h.do(rq)
	if res.status != status {
		h.t.Fatalf("%s %s: status %d, want %d: %s", rq.method, rq.path, res.status, status, res.body)
	}
	return res
}

// client is an aws-sdk-go-v2 S3 client for user key, with default
// checksum behaviour.
func (h *harness) client(key string) *s3.Client {
	secret := secrets[key]
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(h.ts.URL),
		Credentials:  credentials.NewStaticCredentialsProvider(key, secret, ""),
		UsePathStyle: true,
		HTTPClient:   h.ts.Client(),
		// What config.LoadDefaultConfig sets: the SDK's default checksums.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenSupported,
	})
}

// bucket creates bucket name for alice through the fake directly.
func (h *harness) bucket(name string) {
	h.t.Helper()
	if err := h.be.CreateBucket(context.Background(), "alice", name, "", 0); err != nil {
		h.t.Fatal(err)
	}
}

// put stores an object for tests through the handlers.
func (h *harness) put(bucket, key, data string) {
	h.t.Helper()
	h.mustDo(req{method: "PUT", path: "/" + bucket + "/" + key, body: data}, 200)
}
