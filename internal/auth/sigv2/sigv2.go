// Package sigv2 verifies AWS Signature Version 2 for S3: the
// "Authorization: AWS AK:sig" header and query-string presigned URLs
// (AWSAccessKeyId, Expires, Signature). boto3 still presigns with SigV2 by
// default in us-east-1, and RGW accepts it, so real clients need it.
// Bodies are not signed in V2; integrity comes from Content-MD5 and
// x-amz-checksum-*.
//
// A presigned URL carries the headers its signature covers in its query
// string (content-type, content-md5, x-amz-*; botocore's HmacV1QueryAuth
// moves them there): AWS signs them as headers, and so does Verify, which
// then makes them the request's headers.
package sigv2

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/s3err"
)

// SecretLookup returns the secret of an access key; an unknown key should
// return an error wrapping ErrUnknownAccessKey.
type SecretLookup func(ctx context.Context, accessKey string) (string, error)

// ErrUnknownAccessKey marks an unknown access key.
var ErrUnknownAccessKey = errors.New("unknown access key")

// MaxSkew is the clock skew tolerated on header-signed requests.
const MaxSkew = 15 * time.Minute

// IsV2 reports whether r carries SigV2 credentials.
func IsV2(r *http.Request) bool {
	if strings.HasPrefix(r.Header.Get("Authorization"), "AWS ") {
		return true
	}
	q := r.URL.Query()
	return q.Has("AWSAccessKeyId") && q.Has("Signature")
}

// subresources are the query parameters that are part of the signed
// resource, per the S3 SigV2 specification.
var subresources = map[string]bool{
	"acl": true, "cors": true, "delete": true, "lifecycle": true, "location": true, "logging": true,
	"notification": true, "partNumber": true, "policy": true, "requestPayment": true,
	"response-cache-control": true, "response-content-disposition": true, "response-content-encoding": true,
	"response-content-language": true, "response-content-type": true, "response-expires": true,
	"restore": true, "tagging": true, "torrent": true, "uploadId": true, "uploads": true,
	"versionId": true, "versioning": true, "versions": true, "website": true,
	// Signed by botocore's HmacV1Auth too (its QSAOfInterest).
	"accelerate": true, "analytics": true, "inventory": true, "metrics": true, "object-lock": true,
	"replication": true, "select": true, "select-type": true,
}

// Signed reports whether query parameter name is part of the resource V2
// signs (a subresource or a response-* override). Every other parameter
// is outside the signature: whoever holds a signed URL can add it.
func Signed(name string) bool { return subresources[name] }

// IsQueryHeader reports whether query parameter name stands for a header
// in a presigned URL: content-type, content-md5 or x-amz-*, lower case as
// botocore writes them.
func IsQueryHeader(name string) bool {
	return name == "content-type" || name == "content-md5" || strings.HasPrefix(name, "x-amz-")
}

// headerValue is a header's value as the string to sign has it: its
// values trimmed and joined by commas.
func headerValue(h http.Header, name string) (string, bool) {
	vs, ok := h[http.CanonicalHeaderKey(name)]
	if !ok {
		return "", false
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strings.TrimSpace(v)
	}
	return strings.Join(out, ","), true
}

// QueryHeaderSigned reports whether query parameter name is a header
// parameter (IsQueryHeader) whose one value is also the request's header
// value, so the signature, which covers the header, covers it too.
func QueryHeaderSigned(r *http.Request, name string) bool {
	vs := r.URL.Query()[name]
	if !IsQueryHeader(name) || len(vs) != 1 {
		return false
	}
	hv, ok := headerValue(r.Header, name)
	return ok && hv == strings.TrimSpace(vs[0])
}

// queryHeaders returns r's headers with the header parameters of its
// query folded in. A parameter given twice, or that disagrees with the
// header of the same name, cannot be what was signed.
func queryHeaders(r *http.Request) (http.Header, error) {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	for k, vs := range r.URL.Query() {
		if !IsQueryHeader(k) {
			continue
		}
		if len(vs) != 1 {
			return nil, s3err.New(s3err.ErrSignatureDoesNotMatch, "Query parameter %q is repeated; a SigV2 signature covers one value.", k)
		}
		v := strings.TrimSpace(vs[0])
		if hv, ok := headerValue(h, k); ok {
			if hv != v {
				return nil, s3err.New(s3err.ErrSignatureDoesNotMatch, "Query parameter %q and the header of that name differ.", k)
			}
			continue
		}
		h.Set(k, v)
	}
	return h, nil
}

// StringToSign builds V2's string to sign; dateOrExpires is the Date
// header (or "" when x-amz-date is used) or the presign Expires value.
func StringToSign(r *http.Request, dateOrExpires, bucketFromHost string) string {
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	if bucketFromHost != "" {
		path = "/" + bucketFromHost + path
	}
	return stringToSign(r, dateOrExpires, path)
}

// stringToSign builds the string to sign over the resource path given.
func stringToSign(r *http.Request, dateOrExpires, path string) string {
	var b strings.Builder
	b.WriteString(r.Method + "\n")
	b.WriteString(r.Header.Get("Content-Md5") + "\n")
	b.WriteString(r.Header.Get("Content-Type") + "\n")
	b.WriteString(dateOrExpires + "\n")
	var amz []string
	vals := map[string][]string{}
	for k, v := range r.Header {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "x-amz-") {
			if _, seen := vals[lk]; !seen {
				amz = append(amz, lk)
			}
			for _, x := range v {
				vals[lk] = append(vals[lk], strings.TrimSpace(x))
			}
		}
	}
	sort.Strings(amz)
	for _, k := range amz {
		b.WriteString(k + ":" + strings.Join(vals[k], ",") + "\n")
	}
	b.WriteString(path)
	q := r.URL.Query()
	var subs []string
	for k := range q {
		if subresources[k] {
			subs = append(subs, k)
		}
	}
	sort.Strings(subs)
	for i, k := range subs {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(k)
		if v := q.Get(k); v != "" {
			b.WriteString("=" + v)
		}
	}
	return b.String()
}

// Sign returns the base64 HMAC-SHA1 signature of sts.
func Sign(secret, sts string) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(sts))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Verify checks a SigV2 request and returns its access key. Errors are
// *s3err.Error. A verified presigned request gets the header parameters of
// its query (IsQueryHeader) as headers where it had none, so it does what
// was signed: a presigned PUT with content-type=image/png stores
// image/png even when the client sends no Content-Type.
func Verify(r *http.Request, lookup SecretLookup, now time.Time, bucketFromHost string) (string, error) {
	var ak, sig, dateOrExpires string
	signed := r // what the signature covers: r, or r with its query's headers
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "AWS ") {
		cred := strings.TrimPrefix(h, "AWS ")
		i := strings.LastIndexByte(cred, ':')
		if i <= 0 {
			return "", s3err.New(s3err.ErrAuthorizationHeaderMalformed, "")
		}
		ak, sig = cred[:i], cred[i+1:]
		t, err := requestTime(r)
		if err != nil {
			return "", err
		}
		if d := now.Sub(t); d > MaxSkew || d < -MaxSkew {
			return "", s3err.New(s3err.ErrRequestTimeTooSkewed, "")
		}
		if r.Header.Get("X-Amz-Date") == "" {
			dateOrExpires = r.Header.Get("Date")
		}
	} else {
		q := r.URL.Query()
		ak, sig, dateOrExpires = q.Get("AWSAccessKeyId"), q.Get("Signature"), q.Get("Expires")
		exp, err := strconv.ParseInt(dateOrExpires, 10, 64)
		if err != nil {
			return "", s3err.New(s3err.ErrAccessDenied, "Invalid Expires.")
		}
		if now.Unix() > exp {
			return "", s3err.New(s3err.ErrAccessDenied, "Request has expired")
		}
		h, err := queryHeaders(r)
		if err != nil {
			return "", err
		}
		c := *r
		c.Header = h
		signed = &c
	}
	secret, err := lookup(r.Context(), ak)
	if errors.Is(err, ErrUnknownAccessKey) {
		return "", s3err.New(s3err.ErrInvalidAccessKeyID, "")
	}
	if err != nil {
		var se *s3err.Error
		if errors.As(err, &se) {
			return "", se
		}
		return "", s3err.Wrap(s3err.ErrInternalError, err)
	}
	want := Sign(secret, StringToSign(signed, dateOrExpires, bucketFromHost))
	if !hmac.Equal([]byte(want), []byte(sig)) {
		// botocore signs a path-style bucket request to /bucket as
		// /bucket/ (the resource it names either way).
		p := r.URL.EscapedPath()
		if bucketFromHost != "" || len(p) < 2 || strings.IndexByte(p[1:], '/') >= 0 ||
			!hmac.Equal([]byte(Sign(secret, stringToSign(signed, dateOrExpires, p+"/"))), []byte(sig)) {
			return "", s3err.New(s3err.ErrSignatureDoesNotMatch, "")
		}
	}
	if signed != r {
		if r.Header == nil {
			r.Header = http.Header{}
		}
		for k, v := range signed.Header {
			if _, ok := r.Header[k]; !ok {
				r.Header[k] = v
			}
		}
	}
	return ak, nil
}

func requestTime(r *http.Request) (time.Time, error) {
	v := r.Header.Get("X-Amz-Date")
	if v == "" {
		v = r.Header.Get("Date")
	}
	if _, ok := r.Header["X-Amz-Date"]; ok {
		v = r.Header.Get("X-Amz-Date") // present but empty is no date (RGW)
	}
	if v == "" {
		return time.Time{}, s3err.New(s3err.ErrAccessDenied, "AWS authentication requires a valid Date or x-amz-date header")
	}
	for _, layout := range []string{http.TimeFormat, time.RFC1123Z, time.RFC1123, "20060102T150405Z"} {
		if t, err := time.Parse(layout, v); err == nil {
			if t.Before(time.Unix(0, 0)) {
				break // before the epoch: AccessDenied, not a skew (RGW, s3-tests)
			}
			return t, nil
		}
	}
	return time.Time{}, s3err.New(s3err.ErrAccessDenied, "AWS authentication requires a valid Date or x-amz-date header")
}
