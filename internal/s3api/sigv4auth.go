package s3api

import (
	"context"
	"net/http"
	"time"

	"github.com/cairn-s3/cairn/internal/auth/sigv4"
	"github.com/cairn-s3/cairn/internal/driver"
)

// SigV4 is the production Authenticator: package sigv4's Verifier, whose
// Body also verifies Content-MD5 and x-amz-checksum-* (header or trailer)
// and decodes aws-chunked uploads.
type SigV4 struct {
	v *sigv4.Verifier
}

var _ Authenticator = (*SigV4)(nil)

// NewSigV4 returns a SigV4 authenticator that finds secrets in b (sharing
// the user lookup with the Server, see SecretLookup). now may be nil.
func NewSigV4(b Backend, now func() time.Time) (*SigV4, error) {
	return NewSigV4WithSessions(b, now, nil)
}

// SessionVerifier verifies temporary credentials: the principal and
// secret of access key ak presenting session token token, or an
// *s3err.Error (InvalidToken, ExpiredToken).
type SessionVerifier func(ctx context.Context, ak, token string) (driver.User, string, error)

// NewSigV4WithSessions is NewSigV4 also accepting temporary credentials
// (x-amz-security-token) that sessions verifies; nil refuses them.
func NewSigV4WithSessions(b Backend, now func() time.Time, sessions SessionVerifier) (*SigV4, error) {
	cfg := sigv4.Config{Lookup: SecretLookup(b), Now: now}
	if sessions != nil {
		cfg.Sessions = SessionSecretLookup(sessions)
	}
	v, err := sigv4.New(cfg)
	if err != nil {
		return nil, err
	}
	return &SigV4{v: v}, nil
}

// Authenticate implements Authenticator.
func (a *SigV4) Authenticate(r *http.Request) (AuthResult, error) {
	res, err := a.v.Verify(r)
	if err != nil {
		return AuthResult{}, err
	}
	body := res.Body
	return AuthResult{
		AccessKey:       res.AccessKey,
		UnsignedPayload: res.Payload == sigv4.PayloadUnsigned || res.Payload == sigv4.PayloadStreamingUnsignedTrailer,
		Body:            body,
		DecodedLength:   body.ContentLength(),
		Trailer: func() http.Header {
			h := http.Header{}
			for k, v := range body.Trailers() {
				h.Set(k, v)
			}
			return h
		},
		Checksums: func() map[string]string {
			sums := body.Checksums()
			if sums == nil {
				return nil
			}
			out := make(map[string]string, len(sums))
			for alg, v := range sums {
				out[string(alg)] = v
			}
			return out
		},
	}, nil
}

// SessionSecretLookup adapts sessions to a verifier's lookup of session
// secrets; within a request served by Server it records the session's
// principal, as SecretLookup does for long-term keys.
func SessionSecretLookup(sessions SessionVerifier) func(ctx context.Context, ak, token string) (string, error) {
	return func(ctx context.Context, ak, token string) (string, error) {
		u, secret, err := sessions(ctx, ak, token)
		if err != nil {
			return "", err
		}
		if m, ok := ctx.Value(memoKey{}).(*userMemo); ok {
			*m = userMemo{accessKey: ak, user: u, ok: true}
		}
		return secret, nil
	}
}
