package s3api

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// Authenticator verifies a request's signature (SigV4 header, presigned
// query, or streaming aws-chunked) and returns who signed it.
//
// Errors should be *s3err.Error (SignatureDoesNotMatch, InvalidAccessKeyId,
// RequestTimeTooSkewed, ...); anything else becomes InternalError. The
// Server treats unsigned requests as anonymous without calling it.
// To find secrets, implementations should use SecretLookup(backend), which
// shares the user lookup with the Server within one request.
type Authenticator interface {
	Authenticate(r *http.Request) (AuthResult, error)
}

// AuthResult is a verified request.
type AuthResult struct {
	AccessKey string
	// Body is the payload to use instead of r.Body: decoded from
	// aws-chunked, and failing at or before EOF with an *s3err.Error when a
	// chunk signature or the declared payload hash does not match. Nil
	// means r.Body as is.
	Body io.Reader
	// DecodedLength is the decoded payload length when known (>= 0) and the
	// request carries no x-amz-decoded-content-length header; 0 is treated
	// as unknown.
	DecodedLength int64
	// Trailer, when non-nil, returns the trailing headers of an aws-chunked
	// body (x-amz-checksum-*). It is called only after Body returned EOF.
	Trailer func() http.Header
	// Checksums, when non-nil, says Body itself verifies Content-MD5 and
	// x-amz-checksum-* (header or trailer), and returns the verified values
	// by algorithm (CRC32, ..., SHA256) after Body returned EOF. The Server
	// then stores them instead of hashing the body a second time.
	Checksums func() map[string]string
	// SigV2 marks a Signature Version 2 request. V2 signs only the method,
	// Content-MD5, Content-Type, the date, x-amz-* headers and the path
	// with V2's subresource parameters, so the Server refuses it for the
	// SNS and admin APIs and for S3 requests with other parameters that
	// could change the operation (sigv2scope.go).
	SigV2 bool
	// UnsignedPayload marks a request whose body the signature does not
	// cover (UNSIGNED-PAYLOAD, presigned, streaming-unsigned-trailer).
	// The SNS API refuses it: there the body names the action.
	UnsignedPayload bool
}

// Identity is the authenticated principal of a request.
type Identity struct {
	User      driver.User
	AccessKey string
}

type identityKey struct{}

type vhostKey struct{}

// VirtualHostBucket returns the bucket a virtual-host-style request
// addresses through its Host header, "" for path-style requests. Within
// Authenticate it lets a SigV2 verifier sign "/bucket/key" as V2 requires,
// so a URL signed for one bucket cannot be replayed against another.
func VirtualHostBucket(ctx context.Context) string {
	b, _ := ctx.Value(vhostKey{}).(string)
	return b
}

// IdentityFrom returns the principal the Server attached to ctx. Extension
// handlers (admin routes, SNS, bucket subresources) use it.
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// userMemo carries the user looked up by SecretLookup to the Server, so a
// request costs one LookupAccessKey.
type userMemo struct {
	accessKey string
	user      driver.User
	ok        bool
}

type memoKey struct{}

// SecretLookup returns a function giving the secret for an access key, for
// the SigV4 verifier. Within a request served by Server it records the user
// so the Server does not look it up again. Unknown keys give an
// InvalidAccessKeyId *s3err.Error.
func SecretLookup(b Backend) func(ctx context.Context, accessKey string) (string, error) {
	return func(ctx context.Context, accessKey string) (string, error) {
		u, secret, err := b.LookupAccessKey(ctx, accessKey)
		if err != nil {
			return "", lookupError(err)
		}
		if m, ok := ctx.Value(memoKey{}).(*userMemo); ok {
			*m = userMemo{accessKey: accessKey, user: u, ok: true}
		}
		return secret, nil
	}
}

func lookupError(err error) error {
	if errors.Is(err, driver.ErrInvalidAccessKey) || errors.Is(err, driver.ErrNoSuchUser) {
		return s3err.Wrap(s3err.ErrInvalidAccessKeyID, err)
	}
	return err
}

// isSigned reports whether r carries any AWS authentication at all.
func isSigned(r *http.Request) bool {
	if r.Header.Get("Authorization") != "" {
		return true
	}
	q := r.URL.Query()
	return q.Has("X-Amz-Signature") || q.Has("X-Amz-Credential") || q.Has("AWSAccessKeyId") || q.Has("Signature")
}

func (s *Server) authenticate(r *http.Request, rc *reqCtx, kind routeKind) (Identity, error) {
	if !isSigned(r) {
		return Identity{}, nil // anonymous
	}
	memo := &userMemo{}
	actx := context.WithValue(r.Context(), memoKey{}, memo)
	if b, _, vhost := s.target(r); vhost {
		actx = context.WithValue(actx, vhostKey{}, b)
	}
	ar, err := s.cfg.Auth.Authenticate(r.WithContext(actx))
	if err != nil {
		return Identity{}, err
	}
	if ar.AccessKey == "" {
		return Identity{}, s3err.New(s3err.ErrAccessDenied, "")
	}
	if err := checkSignedScope(r, kind, ar); err != nil {
		return Identity{}, err
	}
	user := memo.user
	if !memo.ok || memo.accessKey != ar.AccessKey {
		u, _, err := s.be.LookupAccessKey(r.Context(), ar.AccessKey)
		if err != nil {
			return Identity{}, lookupError(err)
		}
		user = u
	}
	rc.body = ar.Body
	rc.trailer = ar.Trailer
	rc.verifiedSums = ar.Checksums
	if ar.DecodedLength > 0 {
		rc.decodedLength = ar.DecodedLength
	}
	return Identity{User: user, AccessKey: ar.AccessKey}, nil
}
