package sigv4

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/s3err"
)

// Payload hash literals of x-amz-content-sha256.
const (
	UnsignedPayload               = "UNSIGNED-PAYLOAD"
	StreamingPayload              = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	StreamingPayloadTrailer       = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	StreamingUnsignedPayloadTrail = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
)

// MaxPresignExpiry is the longest X-Amz-Expires S3 accepts (7 days).
const MaxPresignExpiry = 7 * 24 * time.Hour

// ErrUnknownAccessKey is what a SecretLookup returns (possibly wrapped)
// for an access key it does not know; Verify reports InvalidAccessKeyId.
var ErrUnknownAccessKey = errors.New("sigv4: unknown access key")

// SecretLookup returns the secret key for an access key. It returns
// ErrUnknownAccessKey for an unknown key; an *s3err.Error (such as
// UserSuspended) is passed to the client as is; any other error becomes
// InternalError.
type SecretLookup func(ctx context.Context, accessKey string) (secret string, err error)

// SessionLookup returns the secret of temporary credentials: access key
// ak presenting session token (x-amz-security-token). It returns an
// *s3err.Error (InvalidToken, ExpiredToken) for a bad token.
type SessionLookup func(ctx context.Context, accessKey, token string) (secret string, err error)

// AuthType says how a request was authenticated.
type AuthType int

const (
	AuthAnonymous AuthType = iota // no credentials (only with Config.AllowAnonymous)
	AuthHeader                    // Authorization: AWS4-HMAC-SHA256 ...
	AuthPresigned                 // X-Amz-Signature in the query string
)

func (t AuthType) String() string {
	return [...]string{"anonymous", "header", "presigned"}[t]
}

// PayloadMode is how the body is protected, from x-amz-content-sha256.
type PayloadMode int

const (
	PayloadUnsigned                 PayloadMode = iota // UNSIGNED-PAYLOAD, presigned, anonymous
	PayloadSHA256                                      // hex sha256 of the body, checked at EOF
	PayloadStreamingSigned                             // aws-chunked, each chunk signed
	PayloadStreamingSignedTrailer                      // aws-chunked, signed chunks and signed trailer
	PayloadStreamingUnsignedTrailer                    // aws-chunked, unsigned, trailer (checksum)
)

func (m PayloadMode) String() string {
	return [...]string{"unsigned", "sha256", "streaming-signed", "streaming-signed-trailer", "streaming-unsigned-trailer"}[m]
}

// Streaming reports whether the body is aws-chunked encoded.
func (m PayloadMode) Streaming() bool { return m >= PayloadStreamingSigned }

// Config configures a Verifier. Zero fields take the documented defaults.
type Config struct {
	// Lookup finds secret keys. Required.
	Lookup SecretLookup
	// Sessions finds the secrets of temporary credentials; nil refuses
	// every request carrying a session token (InvalidToken).
	Sessions SessionLookup
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Services are the credential-scope services accepted; default
	// {"s3", "sns", "iam", "sts"} (the SNS, IAM and STS query APIs share
	// the S3 listener).
	Services []string
	// MaxSkew is the allowed distance between the request time and Now;
	// default 15 minutes.
	MaxSkew time.Duration
	// AllowAnonymous makes Verify return an AuthAnonymous result for a
	// request without credentials instead of AccessDenied, so that
	// handlers can apply bucket policies and ACLs.
	AllowAnonymous bool
	// MaxBufferedPayload bounds the body read into memory to hash it when
	// a non-S3 request (SNS) sends no x-amz-content-sha256; default 1 MiB.
	MaxBufferedPayload int64
}

// Verifier checks SigV4 requests. It is safe for concurrent use.
type Verifier struct {
	cfg  Config
	keys keyCache
}

// keyCache holds derived signing keys. A key is four HMACs to derive and
// a client signs all its requests of a day with the same one.
type keyCache struct {
	mu sync.RWMutex
	m  map[keyID][]byte
}

type keyID struct {
	secret string
	scope  Scope
}

// maxCachedKeys bounds the cache; when full it starts over.
const maxCachedKeys = 4096

// signingKey is SigningKey(secret, scope), cached. The returned slice is
// shared: callers must not modify it.
func (c *keyCache) signingKey(secret string, scope Scope) []byte {
	id := keyID{secret, scope}
	c.mu.RLock()
	k, ok := c.m[id]
	c.mu.RUnlock()
	if ok {
		return k
	}
	k = SigningKey(secret, scope)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedKeys {
		c.m = make(map[keyID][]byte)
	}
	c.m[id] = k
	c.mu.Unlock()
	return k
}

// NewVerifier returns a Verifier with default settings; a nil now means
// time.Now.
func NewVerifier(lookup SecretLookup, now func() time.Time) *Verifier {
	v, err := New(Config{Lookup: lookup, Now: now})
	if err != nil {
		panic(err) // only a nil lookup fails
	}
	return v
}

// New validates cfg, fills defaults and returns a Verifier.
func New(cfg Config) (*Verifier, error) {
	var errs []error
	if cfg.Lookup == nil {
		errs = append(errs, errors.New("sigv4: Config.Lookup is required"))
	}
	if cfg.MaxSkew < 0 {
		errs = append(errs, errors.New("sigv4: Config.MaxSkew is negative"))
	}
	if cfg.MaxBufferedPayload < 0 {
		errs = append(errs, errors.New("sigv4: Config.MaxBufferedPayload is negative"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if len(cfg.Services) == 0 {
		cfg.Services = []string{"s3", "sns", "iam", "sts"}
	}
	if cfg.MaxSkew == 0 {
		cfg.MaxSkew = 15 * time.Minute
	}
	if cfg.MaxBufferedPayload == 0 {
		cfg.MaxBufferedPayload = 1 << 20
	}
	return &Verifier{cfg: cfg}, nil
}

// Result describes an authenticated request.
type Result struct {
	Type      AuthType
	AccessKey string // empty for anonymous
	Scope     Scope  // credential scope; Scope.Service tells S3 from SNS
	Payload   PayloadMode
	// Time is the signing time (X-Amz-Date or Date).
	Time time.Time
	// Expires is when a presigned URL stops being valid (zero otherwise).
	Expires time.Time
	// SignedHeaders are the lower-case header names covered by the
	// signature.
	SignedHeaders []string
	// Body replaces r.Body: it decodes aws-chunked bodies and verifies the
	// payload hash, chunk and trailer signatures, Content-MD5 and
	// x-amz-checksum-* as the data streams. Its Read returns io.EOF only
	// once everything checked out; any other error (an *s3err.Error) means
	// the request must fail and nothing read may be committed. Verify also
	// sets r.Body to it.
	Body *Body
}

// Verify authenticates r. On success r.Body is replaced by res.Body. Errors
// are *s3err.Error: AccessDenied (no credentials, expired presign),
// InvalidAccessKeyId, SignatureDoesNotMatch, AuthorizationHeaderMalformed,
// AuthorizationQueryParametersError, RequestTimeTooSkewed,
// InvalidRequest (unsupported signature versions, bad checksum headers),
// InvalidArgument (bad x-amz-content-sha256), InternalError (lookup
// failure).
func (v *Verifier) Verify(r *http.Request) (*Result, error) {
	res, err := v.verify(r)
	if err != nil {
		return nil, err
	}
	r.Body = res.Body
	return res, nil
}

func (v *Verifier) verify(r *http.Request) (*Result, error) {
	authz := r.Header.Get("Authorization")
	q := r.URL.Query()
	presigned := q.Has("X-Amz-Algorithm") || q.Has("X-Amz-Credential") || q.Has("X-Amz-Signature")
	switch {
	case authz != "" && presigned:
		return nil, s3err.New(s3err.ErrInvalidArgument, "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified")
	case authz != "":
		return v.verifyHeader(r, authz)
	case presigned:
		return v.verifyPresigned(r)
	case q.Has("AWSAccessKeyId") || q.Has("Signature"):
		return nil, s3err.New(s3err.ErrUnsupportedSignature, "")
	}
	if !v.cfg.AllowAnonymous {
		return nil, s3err.New(s3err.ErrAccessDenied, "")
	}
	body, err := newBody(r, PayloadUnsigned, nil, nil)
	if err != nil {
		return nil, err
	}
	return &Result{Type: AuthAnonymous, Payload: PayloadUnsigned, Body: body}, nil
}

// requestTime reads X-Amz-Date, falling back to Date.
func requestTime(r *http.Request) (time.Time, error) {
	if s := r.Header.Get("X-Amz-Date"); s != "" {
		t, err := time.Parse(timeFormat, s)
		if err != nil {
			return time.Time{}, s3err.New(s3err.ErrMissingDateHeader, "")
		}
		return t, nil
	}
	if s := r.Header.Get("Date"); s != "" {
		t, err := http.ParseTime(s)
		if err != nil {
			return time.Time{}, s3err.New(s3err.ErrMissingDateHeader, "")
		}
		return t.UTC(), nil
	}
	return time.Time{}, s3err.New(s3err.ErrMissingDateHeader, "")
}

func (v *Verifier) checkScope(s Scope, t time.Time, mk func(string, ...any) *s3err.Error) error {
	if s.Date != t.UTC().Format(dateFormat) {
		return mk("Invalid credential date %q. Date is not the same as X-Amz-Date: %q.", s.Date, t.UTC().Format(dateFormat))
	}
	if !slices.Contains(v.cfg.Services, s.Service) {
		return mk("incorrect service %q. This endpoint belongs to %q.", s.Service, strings.Join(v.cfg.Services, `", "`))
	}
	return nil
}

// secretFor returns the signing secret: a long-term key's, or with a
// session token the session's (Config.Sessions). The query APIs (IAM,
// STS, SNS) answer a bad token as AWS's do there: InvalidClientTokenId,
// ExpiredToken with 403.
func (v *Verifier) secretFor(r *http.Request, token string, a authorization) (string, error) {
	if token == "" {
		return v.secret(r.Context(), a.AccessKey)
	}
	if v.cfg.Sessions == nil {
		return "", s3err.New(s3err.ErrInvalidToken, "Session tokens are not supported by this endpoint.")
	}
	secret, err := v.cfg.Sessions(r.Context(), a.AccessKey, token)
	if err == nil {
		return secret, nil
	}
	var se *s3err.Error
	if !errors.As(err, &se) {
		return "", s3err.Wrap(s3err.ErrInternalError, err)
	}
	if a.Scope.Service != "s3" {
		switch se.Code {
		case s3err.ErrInvalidToken.Code:
			return "", s3err.New(s3err.ErrInvalidClientTokenID, "")
		case s3err.ErrExpiredToken.Code:
			return "", s3err.New(s3err.ErrExpiredTokenQuery, "")
		}
	}
	return "", se
}

func (v *Verifier) secret(ctx context.Context, accessKey string) (string, error) {
	secret, err := v.cfg.Lookup(ctx, accessKey)
	if err != nil {
		var se *s3err.Error
		switch {
		case errors.As(err, &se):
			return "", se
		case errors.Is(err, ErrUnknownAccessKey):
			return "", s3err.New(s3err.ErrInvalidAccessKeyID, "")
		default:
			return "", s3err.Wrap(s3err.ErrInternalError, err)
		}
	}
	return secret, nil
}

// unsignedAmzHeaders lists x-amz-* headers present but not signed; a
// proxy could have added them, so S3 refuses the request.
func unsignedAmzHeaders(r *http.Request, signed []string) []string {
	var out []string
	for k := range r.Header {
		if len(k) < 6 || !strings.EqualFold(k[:6], "x-amz-") {
			continue
		}
		// signed names are lower case (parseAuthorization)
		if !slices.ContainsFunc(signed, func(s string) bool { return strings.EqualFold(s, k) }) {
			out = append(out, strings.ToLower(k))
		}
	}
	slices.Sort(out)
	return out
}

func (v *Verifier) verifyHeader(r *http.Request, authz string) (*Result, error) {
	if strings.HasPrefix(authz, "AWS ") || !strings.HasPrefix(authz, algorithm) {
		return nil, s3err.New(s3err.ErrUnsupportedSignature, "")
	}
	a, err := parseAuthorization(authz)
	if err != nil {
		return nil, err
	}
	t, err := requestTime(r)
	if err != nil {
		return nil, err
	}
	mk := func(f string, args ...any) *s3err.Error {
		return s3err.New(s3err.ErrAuthorizationHeaderMalformed, "The authorization header is malformed; "+f, args...)
	}
	if err := v.checkScope(a.Scope, t, mk); err != nil {
		return nil, err
	}
	if !slices.Contains(a.SignedHeaders, "host") {
		return nil, mk("the SignedHeaders must include host.")
	}
	if un := unsignedAmzHeaders(r, a.SignedHeaders); len(un) > 0 {
		return nil, s3err.New(s3err.ErrAccessDenied, "There were headers present in the request which were not signed: %s", strings.Join(un, ", "))
	}
	if d := v.cfg.Now().Sub(t); d > v.cfg.MaxSkew || d < -v.cfg.MaxSkew {
		return nil, s3err.New(s3err.ErrRequestTimeTooSkewed, "The difference between the request time (%s) and the server's time (%s) is too large.",
			t.Format(timeFormat), v.cfg.Now().UTC().Format(timeFormat))
	}

	payloadHash := r.Header.Get("X-Amz-Content-Sha256")
	var mode PayloadMode
	var buffered []byte
	if payloadHash == "" {
		if a.Scope.Service == "s3" {
			return nil, s3err.New(s3err.ErrInvalidRequest, "Missing required header for this request: x-amz-content-sha256")
		}
		// Non-S3 services sign the body hash without sending it.
		if buffered, err = readBounded(r.Body, v.cfg.MaxBufferedPayload); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(buffered)
		payloadHash, mode = hex.EncodeToString(sum[:]), PayloadSHA256
	} else if mode, err = parsePayloadMode(payloadHash); err != nil {
		return nil, err
	}

	secret, err := v.secretFor(r, r.Header.Get("X-Amz-Security-Token"), a)
	if err != nil {
		return nil, err
	}
	key := v.keys.signingKey(secret, a.Scope)
	query, err := canonicalQuery(r.URL.RawQuery, "")
	if err != nil {
		return nil, s3err.New(s3err.ErrInvalidURI, "")
	}
	if err := matchSignature(r, a, key, t, query, payloadHash); err != nil {
		return nil, err
	}
	res := &Result{
		Type: AuthHeader, AccessKey: a.AccessKey, Scope: a.Scope, Payload: mode,
		Time: t, SignedHeaders: a.SignedHeaders,
	}
	if buffered != nil {
		r.Body = io.NopCloser(bytes.NewReader(buffered))
	}
	var sc *streamCtx
	if mode == PayloadStreamingSigned || mode == PayloadStreamingSignedTrailer {
		sc = &streamCtx{key: key, scope: a.Scope, time: t, seed: a.Signature}
	}
	if res.Body, err = newBody(r, mode, payloadDigest(mode, payloadHash), sc); err != nil {
		return nil, err
	}
	return res, nil
}

func (v *Verifier) verifyPresigned(r *http.Request) (*Result, error) {
	q := r.URL.Query()
	qerr := func(f string, args ...any) *s3err.Error {
		return s3err.New(s3err.ErrAuthorizationQueryParameters, f, args...)
	}
	for _, p := range []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature", "X-Amz-Date", "X-Amz-SignedHeaders", "X-Amz-Expires"} {
		if len(q[p]) != 1 {
			return nil, qerr("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
		}
	}
	if q.Get("X-Amz-Algorithm") != algorithm {
		return nil, qerr("X-Amz-Algorithm only supports %q", algorithm)
	}
	var a authorization
	var err error
	if a.AccessKey, a.Scope, err = parseCredential(q.Get("X-Amz-Credential")); err != nil {
		return nil, qerr("Error parsing the X-Amz-Credential parameter; %s", err.Error())
	}
	if a.SignedHeaders, err = parseSignedHeaders(q.Get("X-Amz-SignedHeaders")); err != nil {
		return nil, qerr("Error parsing the X-Amz-SignedHeaders parameter; %s", err.Error())
	}
	if !slices.Contains(a.SignedHeaders, "host") {
		return nil, qerr("X-Amz-SignedHeaders must include host.")
	}
	a.Signature = q.Get("X-Amz-Signature")
	t, err := time.Parse(timeFormat, q.Get("X-Amz-Date"))
	if err != nil {
		return nil, qerr("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"")
	}
	if err := v.checkScope(a.Scope, t, qerr); err != nil {
		return nil, err
	}
	secs, err := strconv.ParseInt(q.Get("X-Amz-Expires"), 10, 64)
	switch {
	case err != nil:
		return nil, qerr("X-Amz-Expires should be a number")
	case secs < 0:
		return nil, qerr("X-Amz-Expires must be non-negative")
	case secs > int64(MaxPresignExpiry/time.Second):
		return nil, qerr("X-Amz-Expires must be less than a week (in seconds) that is 604800")
	}
	expires := t.Add(time.Duration(secs) * time.Second)
	now := v.cfg.Now()
	if now.Before(t.Add(-v.cfg.MaxSkew)) {
		return nil, s3err.New(s3err.ErrRequestNotYetValid, "")
	}
	if now.After(expires) {
		return nil, s3err.New(s3err.ErrRequestExpired, "")
	}
	token := q.Get("X-Amz-Security-Token")
	if h := r.Header.Get("X-Amz-Security-Token"); h != "" {
		if token != "" && token != h {
			return nil, s3err.New(s3err.ErrInvalidToken, "The request carries two different session tokens.")
		}
		token = h
	}
	// Presigned URLs sign UNSIGNED-PAYLOAD unless the signer pinned a hash.
	payloadHash := q.Get("X-Amz-Content-Sha256")
	if payloadHash == "" {
		payloadHash = UnsignedPayload
	}
	mode, err := parsePayloadMode(payloadHash)
	if err != nil {
		return nil, err
	}
	if mode.Streaming() {
		return nil, s3err.New(s3err.ErrInvalidRequest, "Streaming payloads are not supported with presigned URLs.")
	}

	secret, err := v.secretFor(r, token, a)
	if err != nil {
		return nil, err
	}
	key := v.keys.signingKey(secret, a.Scope)
	query, err := canonicalQuery(r.URL.RawQuery, "X-Amz-Signature")
	if err != nil {
		return nil, s3err.New(s3err.ErrInvalidURI, "")
	}
	if err := matchSignature(r, a, key, t, query, payloadHash); err != nil {
		return nil, err
	}
	res := &Result{
		Type: AuthPresigned, AccessKey: a.AccessKey, Scope: a.Scope, Payload: mode,
		Time: t, Expires: expires, SignedHeaders: a.SignedHeaders,
	}
	if res.Body, err = newBody(r, mode, payloadDigest(mode, payloadHash), nil); err != nil {
		return nil, err
	}
	return res, nil
}

// matchSignature recomputes the signature and compares it in constant
// time. For S3 it first canonicalises the decoded path (what every SDK
// signs); if that fails and the client's own escaping differs, it tries the
// path exactly as sent, for clients that sign their wire form.
func matchSignature(r *http.Request, a authorization, key []byte, t time.Time, query, payloadHash string) error {
	uris := []string{canonicalURI(r.URL.Path, a.Scope.Service)}
	if a.Scope.Service == "s3" {
		if raw := wirePath(r); raw != "" && raw != uris[0] {
			uris = append(uris, raw)
		}
	}
	var first string
	for i, uri := range uris {
		creq := canonicalRequest(r.Method, uri, query, r, a.SignedHeaders, payloadHash)
		sig := signHex(key, stringToSign(t, a.Scope, creq))
		if subtle.ConstantTimeCompare([]byte(sig), []byte(a.Signature)) == 1 {
			return nil
		}
		if i == 0 {
			first = creq
		}
	}
	return &s3err.Error{
		APIError: s3err.ErrSignatureDoesNotMatch,
		Cause:    fmt.Errorf("access key %s: canonical request %q", a.AccessKey, first),
	}
}

// wirePath is the path as the client sent it, before net/http decoded it.
func wirePath(r *http.Request) string {
	p := r.RequestURI
	if p == "" || p[0] != '/' {
		return r.URL.EscapedPath()
	}
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	return p
}

func parsePayloadMode(h string) (PayloadMode, error) {
	switch h {
	case UnsignedPayload:
		return PayloadUnsigned, nil
	case StreamingPayload:
		return PayloadStreamingSigned, nil
	case StreamingPayloadTrailer:
		return PayloadStreamingSignedTrailer, nil
	case StreamingUnsignedPayloadTrail:
		return PayloadStreamingUnsignedTrailer, nil
	case "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER":
		return 0, s3err.New(s3err.ErrNotImplemented, "SigV4a (ECDSA) streaming payloads are not supported.")
	}
	if isLowerHex(strings.ToLower(h), 64) {
		return PayloadSHA256, nil
	}
	return 0, s3err.New(s3err.ErrInvalidArgument, "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.")
}

func payloadDigest(mode PayloadMode, h string) []byte {
	if mode != PayloadSHA256 {
		return nil
	}
	d, _ := hex.DecodeString(strings.ToLower(h))
	return d
}

func readBounded(r io.Reader, limit int64) ([]byte, error) {
	if r == nil {
		return []byte{}, nil
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, readError(err)
	}
	if int64(len(b)) > limit {
		return nil, s3err.New(s3err.ErrMaxMessageLengthExceeded, "")
	}
	return b, nil
}
