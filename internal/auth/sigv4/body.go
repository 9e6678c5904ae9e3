package sigv4

import (
	"crypto/md5"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"hash"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/checksum"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// streamCtx is what the chunk decoder needs to verify chunk signatures.
type streamCtx struct {
	key    []byte
	scope  Scope
	time   time.Time
	seed   string // the request signature, chaining the first chunk
	prefix string // chunkPrefix, built on first use
}

// chunkPrefix is the start of every chunk's string to sign, the same for
// all chunks of a request: algorithm, time and scope lines.
func (sc *streamCtx) chunkPrefix() string {
	if sc.prefix == "" {
		sc.prefix = "AWS4-HMAC-SHA256-PAYLOAD\n" + sc.time.UTC().Format(timeFormat) + "\n" + sc.scope.String() + "\n"
	}
	return sc.prefix
}

// Body is a verified request body. It streams (memory is bounded whatever
// the body size) and checks, at EOF: the signed sha256 payload hash, the
// Content-MD5, the x-amz-checksum-* header or trailer, and the decoded
// length; aws-chunked bodies are decoded with each chunk signature checked
// at the end of its chunk. Read returns io.EOF only when all checks pass;
// otherwise an *s3err.Error that the handler must return to the client,
// discarding what it read. Errors are sticky.
type Body struct {
	rc     io.ReadCloser
	src    io.Reader
	chunks *chunkReader

	sha     hash.Hash
	shaWant []byte
	md5     hash.Hash
	md5Want []byte

	ck        checksum.Algorithm
	ckHash    hash.Hash
	ckWant    string // header value, "" when from the trailer or only computed
	ckTrailer bool

	want int64 // expected decoded length, -1 unknown
	n    int64
	err  error
	sums map[checksum.Algorithm]string
}

// newBody wraps r.Body for mode. digest is the signed sha256 for
// PayloadSHA256; sc is set for signed streaming modes.
func newBody(r *http.Request, mode PayloadMode, digest []byte, sc *streamCtx) (*Body, error) {
	rc := r.Body
	if rc == nil {
		rc = http.NoBody
	}
	b := &Body{rc: rc, src: rc, want: r.ContentLength}
	if r.ContentLength < 0 || (r.ContentLength == 0 && rc != http.NoBody && r.Header.Get("Content-Length") == "") {
		b.want = -1
	}
	if digest != nil {
		b.sha, b.shaWant = sha256.New(), digest
	}
	if v := r.Header.Get("Content-Md5"); v != "" {
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(raw) != md5.Size {
			return nil, s3err.New(s3err.ErrInvalidDigest, "")
		}
		b.md5, b.md5Want = md5.New(), raw
	}
	if err := b.setupChecksum(r, mode); err != nil {
		return nil, err
	}
	if mode.Streaming() {
		dl := r.Header.Get("X-Amz-Decoded-Content-Length")
		if dl == "" {
			return nil, s3err.New(s3err.ErrMissingContentLength, "You must provide the x-amz-decoded-content-length header for aws-chunked uploads.")
		}
		n, err := strconv.ParseInt(dl, 10, 64)
		if err != nil || n < 0 {
			return nil, s3err.New(s3err.ErrInvalidArgument, "x-amz-decoded-content-length is not a valid length.")
		}
		b.want = n
		b.chunks = newChunkReader(rc, sc, mode != PayloadStreamingSigned, n)
		b.src = b.chunks
	}
	return b, nil
}

// setupChecksum picks the one x-amz-checksum-* to verify: a header value,
// a declared trailer, or an algorithm named without a value (computed so
// the handler can store it).
func (b *Body) setupChecksum(r *http.Request, mode PayloadMode) error {
	multiple := func() error {
		return s3err.New(s3err.ErrInvalidRequest, "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
	}
	if describesObject(r) {
		return nil
	}
	for k, vs := range r.Header {
		a, ok := checksum.FromHeader(k)
		if !ok {
			continue
		}
		if b.ck != "" || len(vs) != 1 {
			return multiple()
		}
		if _, err := a.Decode(vs[0]); err != nil {
			return err
		}
		b.ck, b.ckWant = a, vs[0]
	}
	if mode == PayloadStreamingSignedTrailer || mode == PayloadStreamingUnsignedTrailer {
		for _, tv := range r.Header.Values("X-Amz-Trailer") {
			for name := range strings.SplitSeq(tv, ",") {
				name = strings.ToLower(strings.TrimSpace(name))
				if name == "" {
					continue
				}
				a, ok := checksum.FromHeader(name)
				if !ok {
					return s3err.New(s3err.ErrInvalidRequest, "The value specified in the x-amz-trailer header is not supported: %s", name)
				}
				if b.ck != "" {
					return multiple()
				}
				b.ck, b.ckTrailer = a, true
			}
		}
	}
	if b.ck == "" {
		for _, h := range []string{"X-Amz-Sdk-Checksum-Algorithm", "X-Amz-Checksum-Algorithm"} {
			if v := r.Header.Get(h); v != "" {
				a, err := checksum.Parse(v)
				if err != nil {
					return err
				}
				b.ck = a
				break
			}
		}
	}
	if b.ck != "" {
		b.ckHash = b.ck.New()
	}
	return nil
}

// describesObject reports a CompleteMultipartUpload (POST ?uploadId):
// its x-amz-checksum-* headers are the assembled object's checksum (AWS
// "Checking object integrity"), checked against the parts by the handler,
// never against the XML body.
func describesObject(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.Query().Has("uploadId")
}

// Read implements io.Reader.
func (b *Body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.src.Read(p)
	if n > 0 {
		data := p[:n]
		if b.sha != nil {
			b.sha.Write(data)
		}
		if b.md5 != nil {
			b.md5.Write(data)
		}
		if b.ckHash != nil {
			b.ckHash.Write(data)
		}
		b.n += int64(n)
		if b.want >= 0 && b.n > b.want {
			b.err = s3err.New(s3err.ErrIncompleteBody, "The request body is longer than its declared length %d.", b.want)
			return n, b.err
		}
	}
	switch {
	case err == io.EOF:
		if ferr := b.finish(); ferr != nil {
			b.err = ferr
		} else {
			b.err = io.EOF
		}
		return n, b.err
	case err != nil:
		b.err = readError(err)
		return n, b.err
	}
	return n, nil
}

func (b *Body) finish() error {
	if b.want >= 0 && b.n != b.want {
		return s3err.New(s3err.ErrIncompleteBody, "")
	}
	if b.sha != nil && subtle.ConstantTimeCompare(b.sha.Sum(nil), b.shaWant) != 1 {
		return s3err.New(s3err.ErrXAmzContentSHA256Mismatch, "")
	}
	if b.md5 != nil && subtle.ConstantTimeCompare(b.md5.Sum(nil), b.md5Want) != 1 {
		return s3err.New(s3err.ErrBadDigest, "")
	}
	if b.ck == "" {
		return nil
	}
	sum := b.ckHash.Sum(nil)
	want := b.ckWant
	if b.ckTrailer {
		v, ok := b.chunks.trailers[b.ck.HeaderName()]
		if !ok {
			return s3err.New(s3err.ErrMalformedTrailer, "The x-amz-trailer header declared %s but the trailer was not sent.", b.ck.HeaderName())
		}
		want = v
	}
	if want != "" {
		if err := b.ck.Verify(sum, want); err != nil {
			return err
		}
	}
	b.sums = map[checksum.Algorithm]string{b.ck: checksum.Encode(sum)}
	return nil
}

// Close closes the underlying request body.
func (b *Body) Close() error { return b.rc.Close() }

// Checksums returns the x-amz-checksum-* value computed over the body
// (verified against the client's when one was sent), keyed by algorithm.
// It is nil until Read has returned io.EOF, and nil when the request named
// no checksum.
func (b *Body) Checksums() map[checksum.Algorithm]string {
	if b.err != io.EOF {
		return nil
	}
	return b.sums
}

// ContentLength is the length of the decoded body (x-amz-decoded-content-
// length for aws-chunked uploads, else Content-Length), or -1 if unknown.
func (b *Body) ContentLength() int64 { return b.want }

// Trailers returns the trailing headers of an aws-chunked body after
// io.EOF (without x-amz-trailer-signature), or nil.
func (b *Body) Trailers() map[string]string {
	if b.err != io.EOF || b.chunks == nil {
		return nil
	}
	return b.chunks.trailers
}

// readError maps a transport error to the S3 error for the client.
func readError(err error) error {
	var se *s3err.Error
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &se):
		return se
	case errors.As(err, &mbe):
		return s3err.Wrap(s3err.ErrEntityTooLarge, err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return s3err.Wrap(s3err.ErrRequestTimeout, err)
	}
	return s3err.Wrap(s3err.ErrIncompleteBody, err)
}

// StripAWSChunked removes the aws-chunked coding from a Content-Encoding
// value, which S3 does not store; "" when nothing else remains.
func StripAWSChunked(contentEncoding string) string {
	var keep []string
	for c := range strings.SplitSeq(contentEncoding, ",") {
		c = strings.TrimSpace(c)
		if c != "" && !strings.EqualFold(c, "aws-chunked") {
			keep = append(keep, c)
		}
	}
	return strings.Join(keep, ",")
}
