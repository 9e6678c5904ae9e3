package sigv4

import (
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/s3err"
)

// authorization is a parsed SigV4 Authorization header or presigned query.
type authorization struct {
	AccessKey     string
	Scope         Scope
	SignedHeaders []string
	Signature     string
}

func malformed(format string, args ...any) *s3err.Error {
	return s3err.New(s3err.ErrAuthorizationHeaderMalformed, "The authorization header is malformed; "+format, args...)
}

// parseAuthorization parses
// "AWS4-HMAC-SHA256 Credential=AK/date/region/service/aws4_request,
// SignedHeaders=a;b, Signature=hex". Components may come in any order,
// separated by commas with optional spaces.
func parseAuthorization(v string) (authorization, error) {
	var a authorization
	rest, ok := strings.CutPrefix(v, algorithm)
	if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
		return a, s3err.New(s3err.ErrUnsupportedSignature, "")
	}
	var cred, signed, sig string
	var haveCred, haveSigned, haveSig bool
	for part := range strings.SplitSeq(rest, ",") {
		part = strings.TrimSpace(part)
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			return a, malformed("the authorization component %q is malformed.", part)
		}
		var dup bool
		switch k {
		case "Credential":
			dup, haveCred, cred = haveCred, true, val
		case "SignedHeaders":
			dup, haveSigned, signed = haveSigned, true, val
		case "Signature":
			dup, haveSig, sig = haveSig, true, val
		default:
			return a, malformed("the authorization component %q is malformed.", part)
		}
		if dup {
			return a, malformed("the authorization component %q is repeated.", k)
		}
	}
	if !haveCred || !haveSigned || !haveSig {
		return a, malformed("it must contain Credential, SignedHeaders and Signature.")
	}
	var err error
	if a.AccessKey, a.Scope, err = parseCredential(cred); err != nil {
		return a, malformed("%s", err.Error())
	}
	if a.SignedHeaders, err = parseSignedHeaders(signed); err != nil {
		return a, malformed("%s", err.Error())
	}
	if !isLowerHex(sig, 64) {
		return a, malformed("the Signature is mal-formed.")
	}
	a.Signature = sig
	return a, nil
}

type parseError string

func (e parseError) Error() string { return string(e) }

// parseCredential splits "AK/YYYYMMDD/region/service/aws4_request". The
// scope is taken from the end, so an access key containing '/' survives.
func parseCredential(c string) (string, Scope, error) {
	parts := strings.Split(c, "/")
	n := len(parts)
	if n < 5 || strings.Join(parts[:n-4], "/") == "" {
		return "", Scope{}, parseError(`the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".`)
	}
	s := Scope{Date: parts[n-4], Region: parts[n-3], Service: parts[n-2]}
	if parts[n-1] != scopeTerminator {
		return "", Scope{}, parseError(`incorrect terminal "` + parts[n-1] + `". This endpoint uses "aws4_request".`)
	}
	if _, err := time.Parse(dateFormat, s.Date); err != nil || len(s.Date) != 8 {
		return "", Scope{}, parseError(`incorrect date format "` + s.Date + `". This date in the credential must be in the format "yyyyMMdd".`)
	}
	if s.Region == "" || s.Service == "" {
		return "", Scope{}, parseError(`the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".`)
	}
	return strings.Join(parts[:n-4], "/"), s, nil
}

// parseSignedHeaders splits "a;b;c". Names are lower-cased (the canonical
// form); empty names are malformed.
func parseSignedHeaders(s string) ([]string, error) {
	if s == "" {
		return nil, parseError("SignedHeaders is empty.")
	}
	hs := strings.Split(s, ";")
	for i, h := range hs {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			return nil, parseError("SignedHeaders contains an empty header name.")
		}
		hs[i] = h
	}
	return hs, nil
}

func isLowerHex[T string | []byte](s T, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
