package s3api

import (
	"crypto/md5"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// declaredObjectChecksum reads the object checksum a CompleteMultipartUpload
// declares: x-amz-checksum-<alg> names the assembled object (not the XML
// body), optionally with x-amz-checksum-type. A COMPOSITE value may carry
// its "-N" part-count suffix. The backend derives the real value from the
// parts and compares.
func declaredObjectChecksum(h http.Header) (driver.ObjectChecksum, error) {
	var out driver.ObjectChecksum
	for _, alg := range checksumAlgorithms {
		v := strings.TrimSpace(h.Get(checksumHeaderKey[alg]))
		if v == "" {
			continue
		}
		if out.Algorithm != "" {
			return out, s3err.New(s3err.ErrInvalidRequest, "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
		}
		if !validObjectChecksum(alg, v) {
			return out, s3err.New(s3err.ErrInvalidRequest, "Value for %s header is invalid.", checksumHeader(alg))
		}
		out.Algorithm, out.Value = alg, v
	}
	switch t := strings.ToUpper(strings.TrimSpace(h.Get("X-Amz-Checksum-Type"))); t {
	case "", "COMPOSITE", "FULL_OBJECT":
		out.Type = t
	default:
		return out, s3err.New(s3err.ErrInvalidRequest, "Value for x-amz-checksum-type header is invalid.")
	}
	return out, nil
}

func validObjectChecksum(alg, v string) bool {
	base, n, composite := strings.Cut(v, "-")
	if composite {
		if k, err := strconv.Atoi(n); err != nil || k < 1 || k > driver.MaxPartNumber {
			return false
		}
	}
	raw, err := base64.StdEncoding.DecodeString(base)
	return err == nil && len(raw) == newChecksumHash(alg).Size()
}

// verifyXMLBody is verifyBody for request bodies that are XML documents
// whose x-amz-checksum-* headers describe something else (the object of a
// CompleteMultipartUpload): only Content-MD5 (and the authenticator's
// signature checks) apply.
func verifyXMLBody(r *http.Request, rc *reqCtx) (*payload, error) {
	v := &verifier{r: r.Body, size: -1, trailer: rc.trailer}
	if r.Body == nil {
		v.r = http.NoBody
	}
	p := &payload{body: v, size: -1, checksums: map[string]string{}}
	if rc.verifiedSums != nil {
		return p, nil
	}
	if h := r.Header.Get("Content-Md5"); h != "" {
		sum, err := base64.StdEncoding.DecodeString(h)
		if err != nil || len(sum) != md5.Size {
			return nil, s3err.New(s3err.ErrInvalidDigest, "")
		}
		v.md5Want = sum
		v.md5 = md5.New()
	}
	return p, nil
}
