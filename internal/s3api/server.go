package s3api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/ratelimit"
	"github.com/cairn-s3/cairn/internal/s3err"
	"github.com/cairn-s3/cairn/internal/usage"
)

// DefaultMaxHeaderBytes is S3's documented request-header limit (8 KB).
const DefaultMaxHeaderBytes = 8 << 10

// Config configures a Server. Backend and Auth are required.
type Config struct {
	Backend Backend
	Auth    Authenticator
	// Logger receives one structured line per request. Nil discards.
	Logger *slog.Logger
	// Registerer receives the request metrics. Nil keeps them private.
	Registerer prometheus.Registerer
	// Region is returned by HeadBucket (x-amz-bucket-region). Default
	// "us-east-1".
	Region string
	// DomainNames enables virtual-host-style addressing: a request for
	// Host "b.<domain>" addresses bucket b. Other hosts are path-style.
	DomainNames []string
	// MaxHeaderBytes bounds the summed size of the request headers; larger
	// requests get RequestHeaderSectionTooLarge. Default
	// DefaultMaxHeaderBytes. The http.Server's own MaxHeaderBytes must be
	// larger (see HTTPMaxHeaderBytes) or Go answers with a bare 431 first.
	MaxHeaderBytes int
	// MaxRequestShards caps x-cairn-bucket-index-shards on CreateBucket.
	// Default MaxBucketIndexShards.
	MaxRequestShards int
	// BodyIdleTimeout fails a request whose body sends nothing for this
	// long with RequestTimeout. 0 disables it.
	BodyIdleTimeout time.Duration
	// HostID is sent as x-amz-id-2. Default: random per Server.
	HostID string
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// AllowSSECOverHTTP accepts SSE-C keys on plain-HTTP requests
	// (crypt-require-tls=false, RGW's rgw_crypt_require_ssl=false).
	AllowSSECOverHTTP bool
	// Limits serves quotas and rate limits (admin API, HeadBucket's
	// X-RGW-Quota-* headers); nil: those admin routes answer NotImplemented.
	Limits Limits
	// MaxBuckets is the buckets a user may own unless its record says
	// otherwise (max-buckets; 0 = unlimited): HeadBucket's
	// X-RGW-Quota-Max-Buckets for such a user.
	MaxBuckets int
	// RateLimiter enforces the rate limits Limits returns; nil: none.
	RateLimiter *ratelimit.Limiter
	// Usage is the usage log every S3 request is counted in; nil: none.
	Usage *usage.Log
	// AccessLog is bucket logging (PutBucketLogging and the records of
	// buckets that have it); nil: PutBucketLogging answers NotImplemented.
	AccessLog AccessLogger
}

// Validate reports every problem with c.
func (c *Config) Validate() error {
	var errs []error
	if c.Backend == nil {
		errs = append(errs, errors.New("s3api: Config.Backend is required"))
	}
	if c.Auth == nil {
		errs = append(errs, errors.New("s3api: Config.Auth is required"))
	}
	if c.MaxHeaderBytes < 0 {
		errs = append(errs, errors.New("s3api: Config.MaxHeaderBytes must be >= 0"))
	}
	if c.MaxRequestShards < 0 || c.MaxRequestShards > MaxBucketIndexShards {
		errs = append(errs, fmt.Errorf("s3api: Config.MaxRequestShards must be in 0..%d", MaxBucketIndexShards))
	}
	for _, d := range c.DomainNames {
		if d == "" || strings.ContainsAny(d, "/: ") {
			errs = append(errs, fmt.Errorf("s3api: invalid domain name %q", d))
		}
	}
	return errors.Join(errs...)
}

func (c *Config) ensureDefaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if c.MaxRequestShards == 0 {
		c.MaxRequestShards = MaxBucketIndexShards
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.HostID == "" {
		c.HostID = "cairn-" + randomHex(8)
	}
	for i, d := range c.DomainNames {
		c.DomainNames[i] = strings.ToLower(strings.TrimSuffix(d, "."))
	}
}

// Server is the S3/admin/SNS HTTP handler. It holds no goroutines of its
// own: everything it starts finishes before the request that started it.
type Server struct {
	cfg     Config
	be      Backend
	log     *slog.Logger
	metrics *metrics
	lc      lifecycleCache // parsed documents for x-amz-expiration

	ridPrefix string
	ridSeq    atomic.Uint64
	// inflight counts client requests (not admin API calls) being served.
	inflight atomic.Int64

	mu           sync.RWMutex
	admin        map[string]AdminHandlerFunc
	bucketSubres map[string]BucketHandlerFunc // method + " " + subresource
	sns          http.Handler
	iam          http.Handler
	sts          http.Handler
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.DomainNames = append([]string(nil), cfg.DomainNames...)
	cfg.ensureDefaults()
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:          cfg,
		be:           cfg.Backend,
		log:          cfg.Logger,
		metrics:      m,
		ridPrefix:    strings.ToUpper(randomHex(4)),
		admin:        map[string]AdminHandlerFunc{},
		bucketSubres: map[string]BucketHandlerFunc{},
	}
	s.registerBuiltinAdmin()
	return s, nil
}

// HTTPMaxHeaderBytes is the value to give http.Server.MaxHeaderBytes so
// that oversized headers reach the Server and get an S3 error instead of
// Go's plain 431.
func (s *Server) HTTPMaxHeaderBytes() int { return HTTPMaxHeaderBytesFor(s.cfg.MaxHeaderBytes) }

// HTTPMaxHeaderBytesFor is HTTPMaxHeaderBytes for a Config.MaxHeaderBytes
// (0 = the default), for callers that bind before building the Server.
func HTTPMaxHeaderBytesFor(maxHeaderBytes int) int {
	if maxHeaderBytes == 0 {
		maxHeaderBytes = DefaultMaxHeaderBytes
	}
	return 2*maxHeaderBytes + 4096
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Server) newRequestID() string {
	// fmt.Sprintf("%s%08X") without its allocations.
	const digits = "0123456789ABCDEF"
	var b [16]byte
	i := len(b)
	for v := s.ridSeq.Add(1); v != 0 || len(b)-i < 8; v >>= 4 {
		i--
		b[i] = digits[v&15]
	}
	return s.ridPrefix + string(b[i:])
}

// reqCtx is the per-request state handed to operation handlers.
type reqCtx struct {
	id     string
	op     string
	bucket string // the driver's name: "tenant/bucket" for a tenant's (tenant.go)
	key    string
	// rawBucket is the bucket as addressed ("tenant:bucket" explicit),
	// vhost whether by host name; bucketName is the S3 name responses show.
	rawBucket, bucketName string
	vhost                 bool
	ident                 Identity
	// body is the authenticated (and decoded) request body.
	body io.Reader
	// trailer returns the trailing headers once body hit EOF; may be nil.
	trailer func() http.Header
	// verifiedSums, if set, returns the checksums the authenticator's body
	// verified; the Server then does not hash the body itself.
	verifiedSums func() map[string]string
	// decodedLength is the authenticator's payload length, -1 if unknown.
	decodedLength int64
	// binfo is the bucket, loaded by authorize.
	binfo driver.BucketInfo
	// bauth is the bucket's access state, loaded by authorize.
	bauth *driver.BucketAuth
	// act is the action the request was authorized for (its version
	// form when it names a version).
	act authz.Action
	// objACLChecked: the decision already used the object's own ACL.
	objACLChecked bool
	// missingDecided: a missing key or version was already answered as
	// NoSuchKey or AccessDenied by who may list (authorize, copy source).
	missingDecided bool
	// errCode is the S3 error code sent, for the log line.
	errCode string
	cause   error
	// kind is the route's kind; rlKeys the rate limits the request was
	// admitted under (its bytes are charged when it ends).
	kind   routeKind
	rlKeys []ratelimit.Key
	// logged: a journal record was armed (no standard record); etag and
	// size are what a handler reports for the record when the response
	// headers do not carry them (CompleteMultipartUpload).
	logged bool
	etag   string
	size   int64
	// deleted are DeleteObjects' deleted keys when a journal record is
	// armed (one record each).
	deleted []deletedKey
	// logCfg and logInst: the bucket's logging configuration and
	// instance (nil when off), when logLooked: looked up once per request.
	logCfg    *driver.BucketLogging
	logInst   *driver.Instance
	logLooked bool
}

type deletedKey struct{ key, versionID string }

// InFlight is how many client requests (S3, SNS, IAM; not the admin
// API) are being served: background work yields to them.
func (s *Server) InFlight() int64 { return s.inflight.Load() }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := s.cfg.Now()
	rc := &reqCtx{id: s.newRequestID(), op: "Unknown", decodedLength: -1}
	rw := &statusWriter{ResponseWriter: w, now: s.cfg.Now}
	r = s.guardBody(w, r)
	var body *countingBody
	if r.Body != nil && r.Body != http.NoBody {
		body = &countingBody{ReadCloser: r.Body, now: s.cfg.Now}
		r.Body = body
	}
	h := w.Header()
	h.Set("X-Amz-Request-Id", rc.id)
	h.Set("X-Amz-Id-2", s.cfg.HostID)
	h.Set("Server", "Cairn")

	s.serve(rw, r, rc, start)

	if rw.status == 0 { // handler wrote nothing: an empty 200
		rw.WriteHeader(http.StatusOK)
	}
	dur := s.cfg.Now().Sub(start)
	s.metrics.observe(rc.op, rw.status, dur)
	var received int64
	if body != nil {
		received = body.n
	}
	s.account(r, rc, rc.kind, rw.status, rw.bytes, received)
	if s.cfg.AccessLog != nil {
		lastIn := start
		if body != nil {
			lastIn = body.eofAt
		}
		s.logAccess(r, rc, rw, start, lastIn)
	}
	level := slog.LevelInfo
	if rw.status >= 500 {
		level = slog.LevelError
	}
	if !s.log.Enabled(r.Context(), level) {
		return // the attributes below cost allocations on every request
	}
	attrs := []slog.Attr{
		slog.String("request_id", rc.id),
		slog.String("op", rc.op),
		slog.String("method", r.Method),
		slog.String("bucket", rc.bucket),
		slog.Int("status", rw.status),
		slog.Int64("bytes_out", rw.bytes),
		slog.Duration("duration", dur),
		slog.String("remote", r.RemoteAddr),
	}
	if rc.ident.User.ID != "" {
		attrs = append(attrs, slog.String("user", rc.ident.User.ID))
	}
	if rc.errCode != "" {
		attrs = append(attrs, slog.String("error", rc.errCode))
	}
	if rc.cause != nil {
		attrs = append(attrs, slog.String("cause", rc.cause.Error()))
	}
	s.log.LogAttrs(r.Context(), level, "request", attrs...)
}

func (s *Server) serve(w *statusWriter, r *http.Request, rc *reqCtx, start time.Time) {
	if headerBytes(r) > s.cfg.MaxHeaderBytes {
		rc.op = "HeaderTooLarge"
		s.writeError(w, r, rc, s3err.New(s3err.ErrRequestHeaderSectionTooLarge, ""))
		return
	}
	rt := s.route(r, rc)
	rc.op, rc.kind = rt.op, rt.kind
	if rt.kind != kindAdmin {
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
	}
	// Until the caller is known, a bare bucket name is the empty tenant's
	// (anonymous requests, CORS preflights, POST forms until signed).
	tenantErr := s.resolveBucket(rc, "")
	cors := rt.kind == kindS3 && r.Method != http.MethodOptions
	if rt.selfAuth && rt.err == nil {
		if cors {
			s.applyCORS(w, r, rc.bucket)
		}
		if tenantErr != nil {
			s.writeError(w, r, rc, tenantErr)
			return
		}
		s.serveSelfAuth(w, r, rc, rt)
		return
	}

	// Unsigned requests are the anonymous principal; authz decides.
	ident, err := s.authenticate(r, rc, rt.kind)
	if err == nil {
		tenantErr = s.resolveBucket(rc, ident.User.Tenant())
	}
	// CORS headers go on error responses too, so a browser page can read
	// why its request failed.
	if cors {
		s.applyCORS(w, r, rc.bucket)
	}
	if err == nil && tenantErr != nil && rt.kind == kindS3 {
		err = tenantErr
	}
	if err != nil {
		switch rt.kind {
		case kindSNS:
			s.writeSNSError(w, rc, err)
		case kindAdmin: // admin errors are JSON, authentication's too
			s.writeAdminError(w, rc, err)
		default:
			s.writeError(w, r, rc, err)
		}
		return
	}
	rc.ident = ident
	ctx := driver.WithRequest(r.Context(), driver.RequestMeta{
		RequestID: rc.id,
		HostID:    s.cfg.HostID,
		SourceIP:  sourceIP(r),
		Principal: ident.User.ID,
		Secure:    r.TLS != nil,
	})
	ctx = context.WithValue(ctx, identityKey{}, ident)
	r = r.WithContext(ctx)
	if rc.body != nil {
		r.Body = readCloser{rc.body, r.Body}
	}

	switch rt.kind {
	case kindSNS:
		s.mu.RLock()
		h, what := s.sns, "SNS"
		switch signedService(r) { // the IAM and STS query APIs share "POST /"
		case "iam":
			h, what = s.iam, "IAM"
			rc.op = "IAM"
		case "sts":
			h, what = s.sts, "STS"
			rc.op = "STS"
		}
		stsH := s.sts
		s.mu.RUnlock()
		if ident.User.ID == "" {
			// AssumeRoleWithWebIdentity is STS's one unsigned action: the
			// web identity token is its credential.
			if stsH != nil && webIdentityRequest(r) {
				rc.op = "STS"
				stsH.ServeHTTP(w, r)
				return
			}
			s.writeSNSError(w, rc, s3err.New(s3err.ErrAccessDenied, "Anonymous access is not allowed."))
			return
		}
		if h == nil {
			s.writeSNSError(w, rc, s3err.New(s3err.ErrNotImplemented, "The %s API is not enabled.", what))
			return
		}
		h.ServeHTTP(w, r)
		return
	case kindAdmin:
		s.serveAdmin(w, r, rc)
		return
	}
	if rt.err != nil {
		s.writeError(w, r, rc, rt.err)
		return
	}
	act, ok := routeAction(rt, r.URL.Query())
	if !ok {
		// A route nobody gave an action: refuse rather than guess.
		s.writeError(w, r, rc, fmt.Errorf("s3api: route %s has no authz action", rt.op))
		return
	}
	rc.act = act
	if err := s.authorize(r, rc, act); err != nil {
		s.writeError(w, r, rc, err)
		return
	}
	if err := s.admitRate(r, rc); err != nil {
		s.writeError(w, r, rc, err)
		return
	}
	if rt.deferred != nil {
		s.writeError(w, r, rc, rt.deferred)
		return
	}
	r = s.journalHook(w, r, rc, start)
	if err := rt.h(w, r, rc); err != nil {
		s.writeError(w, r, rc, s.hideMissing(w, r, rc, err))
	}
	if w.commit != nil && w.status == 0 && !w.failed {
		// A handler that wrote nothing: net/http would answer 200 without
		// the journal record (and its sync).
		w.WriteHeader(http.StatusOK)
	}
}

// serveSelfAuth runs a route that authenticates itself (POST forms) or
// needs no credentials (CORS preflights): no signature check, no ownership
// check here; the handler does what its operation requires.
func (s *Server) serveSelfAuth(w *statusWriter, r *http.Request, rc *reqCtx, rt route) {
	ctx := driver.WithRequest(r.Context(), driver.RequestMeta{
		RequestID: rc.id,
		HostID:    s.cfg.HostID,
		SourceIP:  sourceIP(r),
	})
	if err := rt.h(w, r.WithContext(ctx), rc); err != nil {
		s.writeError(w, r, rc, err)
	}
}

type readCloser struct {
	io.Reader
	io.Closer
}

// writeError maps err and writes it unless the response has started.
func (s *Server) writeError(w *statusWriter, r *http.Request, rc *reqCtx, err error) {
	e := s.mapError(err)
	rc.errCode = e.Code
	if e.HTTPStatus >= 500 {
		rc.cause = err
	}
	if w.status != 0 {
		return // mid-body failure: the short body tells the client
	}
	s3err.Write(w, r, e, rc.id)
}

func (s *Server) writeSNSError(w *statusWriter, rc *reqCtx, err error) {
	e := s.mapError(err)
	rc.errCode = e.Code
	if e.HTTPStatus >= 500 {
		rc.cause = err
	}
	if w.status == 0 {
		s3err.WriteSNSXML(w, e, rc.id)
	}
}

func headerBytes(r *http.Request) int {
	n := 0
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4 // ": " and CRLF
		}
	}
	return n
}

func sourceIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// statusWriter records the status and byte count for logs and metrics.
type statusWriter struct {
	http.ResponseWriter
	status   int
	bytes    int64
	firstOut time.Time // when the status was written (turn-around time)
	now      func() time.Time
	// commit, if set, runs once before the status goes out (bucket
	// logging's journal record); its error replaces the response with
	// fail's, and what the handler writes afterwards is dropped.
	commit func(status int) error
	fail   func(error)
	failed bool
}

// start runs commit and notes the first output; false: the response was
// replaced, drop the caller's.
func (w *statusWriter) start(code int) bool {
	if c := w.commit; c != nil {
		w.commit = nil
		if err := c(code); err != nil {
			if w.fail != nil {
				w.fail(err)
			}
			w.failed = true
			return false
		}
	}
	w.status = code
	if w.now != nil {
		w.firstOut = w.now()
	}
	return true
}

func (w *statusWriter) WriteHeader(code int) {
	if w.failed {
		return
	}
	if w.status == 0 && !w.start(code) {
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.failed || w.status == 0 && !w.start(http.StatusOK) {
		return len(p), nil
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// ReadFrom keeps sendfile/splice-style fast paths of the underlying writer.
func (w *statusWriter) ReadFrom(src io.Reader) (int64, error) {
	if w.failed || w.status == 0 && !w.start(http.StatusOK) {
		return io.Copy(io.Discard, src)
	}
	n, err := io.Copy(w.ResponseWriter, src)
	w.bytes += n
	return n, err
}

// Flush implements http.Flusher.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
