// Package sigv2 verifies AWS Signature Version 2 for S3: the
// "Authorization: AWS AK:sig" header and query-string presigned URLs
// (AWSAccessKeyId, Expires, Signature). boto3 still presigns with SigV2 by
// default, and RGW accepts it, so real clients need it. Bodies are not
// signed in V2; integrity comes from Content-MD5 and x-amz-checksum-*.
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
}

// Signed reports whether query parameter name is part of the resource V2
// signs (a subresource or a response-* override). Every other parameter
// is outside the signature: whoever holds a signed URL can add it.
func Signed(name string) bool { return subresources[name] }

// StringToSign builds V2's string to sign; dateOrExpires is the Date
// header (or "" when x-amz-date is used) or the presign Expires value.
func StringToSign(r *http.Request, dateOrExpires, bucketFromHost string) string {
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
	if bucketFromHost != "" {
		b.WriteString("/" + bucketFromHost)
	}
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
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
// *s3err.Error.
func Verify(r *http.Request, lookup SecretLookup, now time.Time, bucketFromHost string) (string, error) {
	var ak, sig, dateOrExpires string
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
	want := Sign(secret, StringToSign(r, dateOrExpires, bucketFromHost))
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return "", s3err.New(s3err.ErrSignatureDoesNotMatch, "")
	}
	return ak, nil
}

func requestTime(r *http.Request) (time.Time, error) {
	v := r.Header.Get("X-Amz-Date")
	if v == "" {
		v = r.Header.Get("Date")
	}
	if v == "" {
		return time.Time{}, s3err.New(s3err.ErrAccessDenied, "AWS authentication requires a valid Date or x-amz-date header")
	}
	for _, layout := range []string{http.TimeFormat, time.RFC1123Z, time.RFC1123, "20060102T150405Z"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, s3err.New(s3err.ErrAccessDenied, "AWS authentication requires a valid Date or x-amz-date header")
}
