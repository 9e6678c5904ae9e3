package s3api

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"hash"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-s3/cairn/internal/checksum"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// checksumAlgorithms are the x-amz-checksum-* algorithms S3 defines, by
// their upper-case name as used in x-amz-sdk-checksum-algorithm and in
// driver.ObjectMeta.Checksums.
var checksumAlgorithms = []string{"CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"}

func newChecksumHash(alg string) hash.Hash { return checksum.Algorithm(alg).New() }

func checksumHeader(alg string) string { return "x-amz-checksum-" + strings.ToLower(alg) }

// checksumHeaderKey is checksumHeader in canonical form, built once: the
// lookups of every PUT then neither concatenate nor canonicalise.
var checksumHeaderKey = func() map[string]string {
	m := map[string]string{}
	for _, a := range checksumAlgorithms {
		m[a] = http.CanonicalHeaderKey(checksumHeader(a))
	}
	return m
}()

func validAlgorithm(alg string) bool {
	for _, a := range checksumAlgorithms {
		if a == alg {
			return true
		}
	}
	return false
}

// payload is a request body ready for the backend: its length is checked,
// and Content-MD5 and the declared x-amz-checksum-* are verified when the
// body reaches EOF, failing the read (and so the write) on a mismatch.
type payload struct {
	body io.Reader
	size int64
	// checksums receives the verified checksum (algorithm → base64) at
	// EOF. It is the same map the caller passes to the backend in the
	// object metadata, so trailer checksums (known only at EOF) get stored.
	checksums map[string]string
	// alg is the algorithm the request declares (its checksum will be in
	// checksums at EOF), "" when none.
	alg string
}

// payloadSize is the decoded payload length: x-amz-decoded-content-length
// for aws-chunked bodies, else Content-Length; -1 when neither is known.
func payloadSize(r *http.Request, rc *reqCtx) (int64, error) {
	if v := r.Header.Get("X-Amz-Decoded-Content-Length"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, s3err.New(s3err.ErrInvalidArgument, "Invalid x-amz-decoded-content-length.")
		}
		return n, nil
	}
	if rc.decodedLength >= 0 {
		return rc.decodedLength, nil
	}
	if r.ContentLength >= 0 {
		return r.ContentLength, nil
	}
	return -1, nil
}

// newPayload validates the body headers of a data upload (PutObject,
// UploadPart) of at most maxSize bytes.
func newPayload(r *http.Request, rc *reqCtx, maxSize int64) (*payload, error) {
	// Without Content-Length or Transfer-Encoding, HTTP says the body is
	// empty; S3 says the client forgot the length (411) rather than
	// storing an empty object. Chunked transfer without a length is
	// accepted, as RGW does.
	chunked := len(r.TransferEncoding) > 0
	if r.ContentLength <= 0 && r.Header.Get("Content-Length") == "" && !chunked {
		return nil, s3err.New(s3err.ErrMissingContentLength, "")
	}
	size, err := payloadSize(r, rc)
	if err != nil {
		return nil, err
	}
	if size < 0 {
		// RGW accepts a plain (not aws-chunked) Transfer-Encoding: chunked
		// body without Content-Length: the size is what arrives, bounded
		// by maxSize in the backend.
		if !slices.Contains(r.TransferEncoding, "chunked") {
			return nil, s3err.New(s3err.ErrMissingContentLength, "")
		}
		return verifyBody(r, rc, -1)
	}
	if size > maxSize {
		return nil, s3err.New(s3err.ErrEntityTooLarge, "")
	}
	return verifyBody(r, rc, size)
}

// verifyBody wraps the request body in the Content-MD5 and checksum
// verifier. size -1 skips the length check.
func verifyBody(r *http.Request, rc *reqCtx, size int64) (*payload, error) {
	if md5s, ok := r.Header["Content-Md5"]; ok && (len(md5s) == 0 || md5s[0] == "") {
		return nil, s3err.New(s3err.ErrInvalidDigest, "") // sent empty: AWS's InvalidDigest
	}
	v := &verifier{r: r.Body, size: size, trailer: rc.trailer}
	if r.Body == nil {
		v.r = http.NoBody
	}
	if rc.verifiedSums != nil {
		// The authenticator's body verifies digests; only collect them.
		p := &payload{body: v, size: size, checksums: map[string]string{}}
		v.verified, v.out = rc.verifiedSums, p.checksums
		p.alg, _, _, _ = declaredChecksum(r.Header)
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
	alg, value, fromTrailer, err := declaredChecksum(r.Header)
	if err != nil {
		return nil, err
	}
	p := &payload{body: v, size: size, checksums: map[string]string{}, alg: alg}
	if alg != "" {
		v.alg, v.want, v.fromTrailer = alg, value, fromTrailer
		v.sum = newChecksumHash(alg)
		v.out = p.checksums
	}
	return p, nil
}

// defaultChecksum makes an object body that declares no checksum get S3's
// default, a full-object CRC64NVME computed over the bytes stored (AWS
// adds it to every object uploaded without one). It must be called before
// the body is read; p.alg stays "" since the client declared nothing.
func (p *payload) defaultChecksum() {
	v, ok := p.body.(*verifier)
	if !ok || p.alg != "" || v.sum != nil {
		return
	}
	v.alg, v.sum, v.out = "CRC64NVME", newChecksumHash("CRC64NVME"), p.checksums
}

// declaredChecksum finds the checksum the client declared: a value header,
// a trailer named in x-amz-trailer, or just an algorithm in
// x-amz-sdk-checksum-algorithm (we then compute and store it).
func declaredChecksum(h http.Header) (alg, value string, fromTrailer bool, err error) {
	for _, a := range checksumAlgorithms {
		v := h.Get(checksumHeaderKey[a])
		if v == "" {
			continue
		}
		if alg != "" {
			return "", "", false, s3err.New(s3err.ErrInvalidRequest, "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
		}
		sum, derr := base64.StdEncoding.DecodeString(v)
		if derr != nil || len(sum) != newChecksumHash(a).Size() {
			return "", "", false, s3err.New(s3err.ErrInvalidRequest, "Value for %s header is invalid.", checksumHeader(a))
		}
		alg, value = a, v
	}
	if t := strings.ToLower(strings.TrimSpace(h.Get("X-Amz-Trailer"))); strings.HasPrefix(t, "x-amz-checksum-") {
		a := strings.ToUpper(strings.TrimPrefix(t, "x-amz-checksum-"))
		if !validAlgorithm(a) {
			return "", "", false, s3err.New(s3err.ErrInvalidRequest, "The value specified in the x-amz-trailer header is not supported.")
		}
		if alg != "" && alg != a {
			return "", "", false, s3err.New(s3err.ErrInvalidRequest, "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
		}
		alg, fromTrailer = a, true
	}
	if sdk := strings.ToUpper(h.Get("X-Amz-Sdk-Checksum-Algorithm")); sdk != "" {
		if !validAlgorithm(sdk) {
			return "", "", false, s3err.New(s3err.ErrInvalidRequest, "Value for x-amz-sdk-checksum-algorithm header is invalid.")
		}
		if alg == "" {
			alg = sdk
		} else if alg != sdk {
			return "", "", false, s3err.New(s3err.ErrInvalidRequest, "Value for x-amz-sdk-checksum-algorithm header is invalid.")
		}
	}
	return alg, value, fromTrailer, nil
}

// verifier hashes a body as it is read and checks it at EOF.
type verifier struct {
	r       io.Reader
	size    int64 // -1: unknown
	n       int64
	err     error
	md5     hash.Hash
	md5Want []byte

	alg         string
	sum         hash.Hash
	want        string
	fromTrailer bool
	trailer     func() http.Header
	out         map[string]string
	verified    func() map[string]string
}

func (v *verifier) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.r.Read(p)
	if n > 0 {
		v.n += int64(n)
		if v.size >= 0 && v.n > v.size {
			v.err = s3err.New(s3err.ErrIncompleteBody, "The request body is longer than its declared length.")
			return 0, v.err
		}
		if v.md5 != nil {
			v.md5.Write(p[:n])
		}
		if v.sum != nil {
			v.sum.Write(p[:n])
		}
	}
	switch {
	case err == io.EOF:
		if ferr := v.finish(); ferr != nil {
			v.err = ferr
			return n, ferr
		}
		v.err = io.EOF
	case err != nil:
		v.err = err
	}
	return n, err
}

func (v *verifier) finish() error {
	if v.size >= 0 && v.n != v.size {
		return s3err.New(s3err.ErrIncompleteBody, "")
	}
	if v.verified != nil {
		sums := v.verified()
		for alg, sum := range sums {
			v.out[alg] = sum
		}
		if len(sums) > 0 || v.sum == nil {
			return nil
		}
		// Nothing declared: only the default checksum is left to compute.
		v.out[v.alg] = base64.StdEncoding.EncodeToString(v.sum.Sum(nil))
		return nil
	}
	if v.md5 != nil && !bytes.Equal(v.md5.Sum(nil), v.md5Want) {
		return s3err.New(s3err.ErrBadDigest, "")
	}
	if v.sum == nil {
		return nil
	}
	got := base64.StdEncoding.EncodeToString(v.sum.Sum(nil))
	want := v.want
	if v.fromTrailer && v.trailer != nil {
		want = strings.TrimSpace(v.trailer().Get(checksumHeader(v.alg)))
	}
	// A trailer the decoder could not hand us is not verifiable here; the
	// value we store is the one computed over the bytes actually stored.
	if want != "" && want != got {
		return s3err.New(s3err.ErrBadDigest, "The %s you specified did not match the calculated checksum.", v.alg)
	}
	v.out[v.alg] = got
	return nil
}
