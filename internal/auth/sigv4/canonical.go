package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

const (
	algorithm       = "AWS4-HMAC-SHA256"
	scopeTerminator = "aws4_request"
	// timeFormat is the ISO 8601 basic format of X-Amz-Date.
	timeFormat = "20060102T150405Z"
	dateFormat = "20060102"
	// emptySHA256 is hex(sha256("")), the "previous header" hash in chunk
	// strings to sign.
	emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// uriEncode applies the SigV4 URI encoding: every byte but the unreserved
// set A-Z a-z 0-9 - . _ ~ becomes %XX with upper-case hex; '/' is kept when
// keepSlash (paths) and encoded otherwise (query names and values).
func uriEncode(s string, keepSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) && !(keepSlash && s[i] == '/') {
			n++
		}
	}
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) || (keepSlash && c == '/') {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

func unreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// canonicalURI is the CanonicalURI for path (already percent-decoded).
// S3 encodes the decoded path once and does not normalise it ("//" and
// "/../" stay as sent); other services (SNS) encode it twice, as the SDKs
// do for them.
func canonicalURI(path, service string) string {
	if path == "" {
		return "/"
	}
	enc := uriEncode(path, true)
	if service != "s3" {
		enc = uriEncode(enc, true)
	}
	return enc
}

// canonicalQuery builds the CanonicalQueryString from a raw query: each
// name and value decoded (form rules, so '+' is a space, matching what
// handlers read via URL.Query) and re-encoded, sorted by name then value.
// skip names a parameter to leave out (X-Amz-Signature for presigned
// URLs). A malformed escape fails.
func canonicalQuery(rawQuery, skip string) (string, error) {
	if rawQuery == "" {
		return "", nil
	}
	type kv struct{ k, v string }
	var pairs []kv
	for part := range strings.SplitSeq(rawQuery, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		dk, err := url.QueryUnescape(k)
		if err != nil {
			return "", err
		}
		if skip != "" && dk == skip {
			continue
		}
		dv, err := url.QueryUnescape(v)
		if err != nil {
			return "", err
		}
		pairs = append(pairs, kv{uriEncode(dk, false), uriEncode(dv, false)})
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].k != pairs[j].k {
			return pairs[i].k < pairs[j].k
		}
		return pairs[i].v < pairs[j].v
	})
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.k)
		b.WriteByte('=')
		b.WriteString(p.v)
	}
	return b.String(), nil
}

// headerValue is the canonical value of the signed header name (lower
// case): all values joined by ',', each trimmed with inner runs of spaces
// folded to one. net/http moves Host and Transfer-Encoding out of the
// header map, so they are read back from the request.
func headerValue(r *http.Request, name string) string {
	var vals []string
	switch name {
	case "host":
		vals = []string{r.Host}
	case "content-length":
		// Go keeps the header, but a request built in-process may only
		// have the field.
		vals = r.Header.Values("Content-Length")
		if len(vals) == 0 && r.ContentLength >= 0 {
			vals = []string{itoa(r.ContentLength)}
		}
	case "transfer-encoding":
		vals = r.Header.Values("Transfer-Encoding")
		if len(vals) == 0 {
			vals = r.TransferEncoding
		}
	default:
		vals = r.Header[http.CanonicalHeaderKey(name)]
		if vals == nil {
			vals = r.Header[name] // a non-canonical key set directly on the map
		}
	}
	out := make([]string, len(vals)) // never modify r.Header
	for i, v := range vals {
		out[i] = trimAll(v)
	}
	return strings.Join(out, ",")
}

func itoa(n int64) string {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(buf[i:])
		}
	}
}

// trimAll trims surrounding whitespace and folds each inner run of spaces
// and tabs to one space (SigV4 "Trimall").
func trimAll(s string) string {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "  ") && !strings.ContainsAny(s, "\t\n\r") {
		return s
	}
	var b strings.Builder
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteByte(c)
	}
	return b.String()
}

// canonicalRequest assembles the canonical request string.
func canonicalRequest(method, uri, query string, r *http.Request, signed []string, payloadHash string) string {
	var b strings.Builder
	b.WriteString(method)
	b.WriteByte('\n')
	b.WriteString(uri)
	b.WriteByte('\n')
	b.WriteString(query)
	b.WriteByte('\n')
	for _, h := range signed {
		b.WriteString(h)
		b.WriteByte(':')
		b.WriteString(headerValue(r, h))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(signed, ";"))
	b.WriteByte('\n')
	b.WriteString(payloadHash)
	return b.String()
}

// Scope is a credential scope: date/region/service/aws4_request.
type Scope struct {
	Date    string // YYYYMMDD
	Region  string
	Service string
}

func (s Scope) String() string {
	return s.Date + "/" + s.Region + "/" + s.Service + "/" + scopeTerminator
}

func stringToSign(t time.Time, scope Scope, canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return algorithm + "\n" + t.UTC().Format(timeFormat) + "\n" + scope.String() + "\n" + hex.EncodeToString(sum[:])
}

// SigningKey derives the SigV4 signing key for secret and scope.
func SigningKey(secret string, scope Scope) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), scope.Date)
	k = hmacSHA256(k, scope.Region)
	k = hmacSHA256(k, scope.Service)
	return hmacSHA256(k, scopeTerminator)
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// signHex is hex(HMAC(key, sts)).
func signHex(key []byte, sts string) string {
	return hex.EncodeToString(hmacSHA256(key, sts))
}
