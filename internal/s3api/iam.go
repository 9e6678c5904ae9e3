package s3api

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
)

// principalOf is who u is for authz.
func principalOf(u driver.User) authz.Principal { return u.Principal() }

// principalRef is the caller for the aws:* condition keys.
func (rc *reqCtx) principalRef() *authz.Principal {
	p := rc.principal()
	return &p
}

// ownerID is who owns what the caller creates (buckets, objects): its
// account for an account's user (AWS and RGW), the user otherwise.
func (rc *reqCtx) ownerID() string {
	if a := rc.ident.User.Account; a != "" {
		return a
	}
	return rc.ident.User.ID
}

// signedService returns the service of a SigV4 credential scope
// ("s3", "sns", "iam"), "" for other requests.
func signedService(r *http.Request) string {
	cred := r.URL.Query().Get("X-Amz-Credential")
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "AWS4-HMAC-SHA256 ") {
		_, cred, _ = strings.Cut(h, "Credential=")
		cred, _, _ = strings.Cut(cred, ",")
	}
	parts := strings.Split(strings.TrimSpace(cred), "/")
	if len(parts) != 5 {
		return ""
	}
	return parts[3]
}

// SetIAMHandler serves the IAM query API: POST requests to "/" signed
// for the "iam" service (RGW serves it on the S3 port too). As for SNS,
// the payload must be signed, r.Body is the verified form and
// IdentityFrom(r.Context()) the caller. Without a handler such requests
// get NotImplemented.
func (s *Server) SetIAMHandler(h http.Handler) {
	s.mu.Lock()
	s.iam = h
	s.mu.Unlock()
}

// SetSTSHandler serves the STS query API: POST requests to "/" signed
// for the "sts" service, and unsigned ones whose form names
// AssumeRoleWithWebIdentity.
func (s *Server) SetSTSHandler(h http.Handler) {
	s.mu.Lock()
	s.sts = h
	s.mu.Unlock()
}

// maxWebIdentityForm bounds the unsigned form read to route it.
const maxWebIdentityForm = 64 << 10

// webIdentityRequest reports whether an unsigned POST / is an
// AssumeRoleWithWebIdentity form; r.Body is restored for the handler.
func webIdentityRequest(r *http.Request) bool {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWebIdentityForm+1))
	if err != nil || len(body) > maxWebIdentityForm {
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	form, err := url.ParseQuery(string(body))
	return err == nil && form.Get("Action") == "AssumeRoleWithWebIdentity"
}
