package sigv4

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/s3err"
)

// Fuzz targets. With plain `go test` they run on their seeds; explore with
// e.g. go test -fuzz=FuzzChunkReader ./internal/auth/sigv4/

func FuzzParseAuthorization(f *testing.F) {
	f.Add(exampleCred("f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41", "host;range;x-amz-content-sha256;x-amz-date"))
	f.Add("AWS4-HMAC-SHA256 Credential=a/b/c/d/e/20130524/r/s3/aws4_request, SignedHeaders=host, Signature=" + strings.Repeat("0", 64))
	f.Add("AWS4-HMAC-SHA256 Credential=,,,=,SignedHeaders=;;")
	f.Add("AWS4-HMAC-SHA256  Signature=x,Signature=y")
	f.Add("AWS AK:sig")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := parseAuthorization(s)
		if err != nil {
			var se *s3err.Error
			if !errors.As(err, &se) {
				t.Fatalf("non-S3 error %T", err)
			}
			return
		}
		if a.AccessKey == "" || len(a.SignedHeaders) == 0 || !isLowerHex(a.Signature, 64) || a.Scope.Service == "" {
			t.Fatalf("accepted incomplete authorization %+v from %q", a, s)
		}
		for _, h := range a.SignedHeaders {
			if h == "" || h != strings.ToLower(h) {
				t.Fatalf("bad signed header %q", h)
			}
		}
	})
}

func FuzzCanonicalQuery(f *testing.F) {
	for _, s := range []string{"", "a=1&b=2", "b=2&a=1&a=0", "x&y=&=z", "%zz", "k=%E2%82%AC+%2B/~", "uploads&partNumber=1&uploadId=a%2Fb", "&&&=&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := canonicalQuery(raw, "")
		if err != nil {
			return
		}
		// Canonical form is a fixed point, only ever holds encoded bytes,
		// and keeps every parameter the handler will see.
		again, err := canonicalQuery(q, "")
		if err != nil || again != q {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", raw, q, again, err)
		}
		for i := 0; i < len(q); i++ {
			c := q[i]
			if !unreserved(c) && c != '%' && c != '=' && c != '&' {
				t.Fatalf("unencoded byte %q in %q", c, q)
			}
		}
		if parsed, err := url.ParseQuery(raw); err == nil {
			back, _ := url.ParseQuery(q)
			n1, n2 := 0, 0
			for _, v := range parsed {
				n1 += len(v)
			}
			for _, v := range back {
				n2 += len(v)
			}
			if n1 != n2 {
				t.Fatalf("parameter count %d -> %d for %q", n1, n2, raw)
			}
		}
		_ = uriEncode(raw, true)
		_ = canonicalURI(raw, "sns")
		_ = trimAll(raw)
	})
}

// shortReader returns the input in pieces of random sizes (including
// zero-length reads), as a slow network would.
type shortReader struct {
	data []byte
	rng  *rand.Rand
}

func (s *shortReader) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	n := s.rng.Intn(min(len(p), len(s.data), 97) + 1)
	copy(p, s.data[:n])
	s.data = s.data[n:]
	return n, nil
}

func fuzzStream() *streamCtx {
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	sc := Scope{"20240102", "us-east-1", "s3"}
	return &streamCtx{key: SigningKey("secret", sc), scope: sc, time: at, seed: strings.Repeat("ab", 32)}
}

// encodeSigned encodes payload as a signed aws-chunked body whose chunks
// are chunkSize long (the last shorter), optionally with a signed trailer.
func encodeSigned(sc *streamCtx, payload []byte, chunkSize int, trailers string) []byte {
	cs := &chunkSigner{key: sc.key, at: sc.time, scope: sc.scope.String(), prevSig: sc.seed}
	var b bytes.Buffer
	for off := 0; off < len(payload); off += chunkSize {
		b.WriteString(cs.chunk(payload[off:min(off+chunkSize, len(payload))]))
	}
	b.WriteString(cs.chunk(nil))
	if trailers != "" {
		b.WriteString(cs.trailer(trailers))
	} else {
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// minioTrailer is the trailer framing minio-go (mc) sends after the final
// chunk: each "name:value" line ends in "\n", the block is followed by
// "\r\n"; signed, the signature covers "name:value\n" and comes next.
func minioTrailer(cs *chunkSigner, kv string) string {
	if cs == nil {
		return kv + "\n\r\n\r\n"
	}
	sts := "AWS4-HMAC-SHA256-TRAILER\n" + cs.at.Format("20060102T150405Z") + "\n" + cs.scope + "\n" + cs.prevSig + "\n" + sha256Hex([]byte(kv+"\n"))
	return kv + "\n\r\nx-amz-trailer-signature:" + cs.sign(sts) + "\r\n\r\n"
}

// encodeMinio encodes payload the way minio-go's streaming signers do,
// with one checksum trailer; sc nil gives the unsigned variant.
func encodeMinio(sc *streamCtx, payload []byte, chunkSize int) []byte {
	var b bytes.Buffer
	kv := "x-amz-checksum-crc32:AAAAAA=="
	if sc == nil {
		for off := 0; off < len(payload); off += chunkSize {
			end := min(off+chunkSize, len(payload))
			fmt.Fprintf(&b, "%x\r\n%s\r\n", end-off, payload[off:end])
		}
		b.WriteString("0\r\n" + minioTrailer(nil, kv))
		return b.Bytes()
	}
	cs := &chunkSigner{key: sc.key, at: sc.time, scope: sc.scope.String(), prevSig: sc.seed}
	for off := 0; off < len(payload); off += chunkSize {
		b.WriteString(cs.chunk(payload[off:min(off+chunkSize, len(payload))]))
	}
	b.WriteString(cs.chunk(nil))
	b.WriteString(minioTrailer(cs, kv))
	return b.Bytes()
}

// FuzzChunkReader feeds bodies, valid or mangled, through the decoder in
// random pieces. It must never panic and must either return exactly the
// encoded payload or an *s3err.Error.
func FuzzChunkReader(f *testing.F) {
	f.Add([]byte("hello world"), uint16(8192), int64(1), uint8(0), uint16(0), byte(0))
	f.Add(bytes.Repeat([]byte{7}, 20000), uint16(8192), int64(2), uint8(1), uint16(0), byte(0))
	f.Add(bytes.Repeat([]byte{1}, 17000), uint16(9000), int64(3), uint8(2), uint16(0), byte(0))
	f.Add(bytes.Repeat([]byte("ab"), 9000), uint16(8192), int64(4), uint8(0), uint16(100), byte('x'))
	f.Add([]byte{}, uint16(1), int64(5), uint8(1), uint16(3), byte(';'))
	f.Add([]byte("z"), uint16(1), int64(6), uint8(2), uint16(1), byte('\n'))
	f.Add(bytes.Repeat([]byte("mc"), 9000), uint16(8192), int64(7), uint8(3), uint16(0), byte(0))
	f.Add([]byte("mc pipe"), uint16(3), int64(8), uint8(4), uint16(0), byte(0))
	f.Add(bytes.Repeat([]byte("mc"), 9000), uint16(8192), int64(9), uint8(3), uint16(18090), byte('\r'))
	f.Fuzz(func(t *testing.T, payload []byte, chunk uint16, seed int64, variant uint8, flipAt uint16, flipTo byte) {
		if chunk == 0 {
			chunk = 1
		}
		if len(payload) > 1<<16 {
			payload = payload[:1<<16] // keep executions fast
		}
		sc := fuzzStream()
		var body []byte
		var trailer bool
		var ctx *streamCtx
		switch variant % 5 {
		case 0: // signed; small chunks are legal only if one data chunk
			if len(payload) > int(chunk) && chunk < minChunkSize {
				chunk = minChunkSize
			}
			body, ctx = encodeSigned(sc, payload, int(chunk), ""), sc
		case 1: // signed with trailer
			if len(payload) > int(chunk) && chunk < minChunkSize {
				chunk = minChunkSize
			}
			body, ctx, trailer = encodeSigned(sc, payload, int(chunk), "x-amz-checksum-crc32:AAAAAA==\r\n"), sc, true
		case 2: // unsigned with trailer
			var b bytes.Buffer
			for off := 0; off < len(payload); off += int(chunk) {
				end := min(off+int(chunk), len(payload))
				fmt.Fprintf(&b, "%x\r\n%s\r\n", end-off, payload[off:end])
			}
			b.WriteString("0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n")
			body, trailer = b.Bytes(), true
		case 3: // signed with trailer, minio-go framing
			if len(payload) > int(chunk) && chunk < minChunkSize {
				chunk = minChunkSize
			}
			body, ctx, trailer = encodeMinio(sc, payload, int(chunk)), sc, true
		case 4: // unsigned with trailer, minio-go framing
			body, trailer = encodeMinio(nil, payload, int(chunk)), true
		}
		mangled := flipAt != 0 && int(flipAt) <= len(body) && body[flipAt-1] != flipTo
		if mangled {
			body = append([]byte{}, body...)
			body[flipAt-1] = flipTo
		}
		cr := newChunkReader(&shortReader{data: body, rng: rand.New(rand.NewSource(seed))}, ctx, trailer, int64(len(payload)))
		got, err := io.ReadAll(cr)
		if err != nil {
			var se *s3err.Error
			if !errors.As(err, &se) {
				t.Fatalf("non-S3 error %T %v", err, err)
			}
			if !mangled {
				t.Fatalf("valid body rejected: %v", err)
			}
			return
		}
		if !mangled && !bytes.Equal(got, payload) {
			t.Fatalf("decoded %d bytes, want %d", len(got), len(payload))
		}
		// A signed body that decodes despite a flipped byte must decode to
		// the true payload (the flip hit something unsigned, like the
		// final CRLF).
		if mangled && ctx != nil && !bytes.Equal(got, payload) {
			t.Fatalf("mangled signed body decoded to different data")
		}
	})
}

// FuzzChunkReaderRaw throws arbitrary bytes at the decoder.
func FuzzChunkReaderRaw(f *testing.F) {
	f.Add([]byte("5\r\nhello\r\n0\r\n\r\n"), true, int64(1))
	f.Add([]byte("ffffffffffffffff\r\n"), false, int64(2))
	f.Add([]byte("0;chunk-signature=zz\r\n"), true, int64(3))
	f.Add([]byte("1\r\na\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n"), false, int64(4))
	f.Add([]byte("-1\r\n"), false, int64(5))
	f.Fuzz(func(t *testing.T, body []byte, signed bool, seed int64) {
		var ctx *streamCtx
		if signed {
			ctx = fuzzStream()
		}
		cr := newChunkReader(&shortReader{data: body, rng: rand.New(rand.NewSource(seed))}, ctx, seed%2 == 0, 1<<20)
		got, err := io.ReadAll(cr)
		if err != nil {
			var se *s3err.Error
			if !errors.As(err, &se) {
				t.Fatalf("non-S3 error %T %v", err, err)
			}
		}
		if len(got) > len(body) {
			t.Fatalf("decoded more than the input")
		}
	})
}

// TestChunkReaderMinioFraming decodes minio-go's trailer framing, checks
// the trailer value and signature, and rejects every truncation that
// loses data or (signed) the trailer signature.
func TestChunkReaderMinioFraming(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1200) // 19200 bytes: 3 chunks
	for _, signed := range []bool{true, false} {
		var sc *streamCtx
		if signed {
			sc = fuzzStream()
		}
		body := encodeMinio(sc, payload, minChunkSize)
		read := func(b []byte) ([]byte, *chunkReader, error) {
			cr := newChunkReader(bytes.NewReader(b), sc, true, int64(len(payload)))
			got, err := io.ReadAll(cr)
			return got, cr, err
		}
		got, cr, err := read(body)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("signed=%v: %v (%d bytes)", signed, err, len(got))
		}
		if v := cr.trailers["x-amz-checksum-crc32"]; v != "AAAAAA==" || len(cr.trailers) != 1 {
			t.Fatalf("signed=%v: trailers %q", signed, cr.trailers)
		}
		// Truncations: anything that loses data fails; signed bodies also
		// fail when the trailer signature is cut.
		mustFailBefore := bytes.LastIndex(body, []byte("0\r\n"))
		if signed {
			mustFailBefore = bytes.LastIndex(body, []byte("x-amz-trailer-signature:")) + len("x-amz-trailer-signature:") + 64
		}
		for n := 0; n < mustFailBefore; n++ {
			if _, _, err := read(body[:n]); err == nil {
				t.Fatalf("signed=%v: truncated body of %d/%d bytes accepted", signed, n, len(body))
			}
		}
		if signed {
			// A trailer value changed after signing fails.
			bad := bytes.Replace(body, []byte("AAAAAA=="), []byte("AAAAAB=="), 1)
			if _, _, err := read(bad); !errors.Is(err, s3err.ErrSignatureDoesNotMatch) {
				t.Fatalf("tampered trailer: %v", err)
			}
		}
	}
}
