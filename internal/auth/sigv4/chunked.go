package sigv4

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"hash"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/cairn-s3/cairn/internal/s3err"
)

const (
	// minChunkSize is the smallest signed chunk allowed before the last.
	minChunkSize = 8 << 10
	// maxLineSize bounds a chunk header or trailer line (and the buffer).
	maxLineSize = 4 << 10
	// maxTrailers bounds the number of trailing header lines.
	maxTrailers = 16
)

type chunkState int

const (
	stHeader  chunkState = iota // expecting "<hex-size>[;chunk-signature=<sig>]\r\n"
	stData                      // inside chunk data
	stDataEnd                   // expecting "\r\n" after data, then the signature check
	stDone
)

// chunkReader decodes an aws-chunked body:
//
//	<hex-size>;chunk-signature=<sig>\r\n<data>\r\n ... 0;chunk-signature=<sig>\r\n
//
// followed by "\r\n" or, with trailers, "name:value\r\n"... (and
// "x-amz-trailer-signature:<sig>\r\n" when signed) then "\r\n". Unsigned
// variants carry no chunk-signature extension. Data is passed on as it
// arrives; a chunk's signature is checked when the chunk ends, so a forged
// chunk fails the read before EOF is ever reported.
type chunkReader struct {
	br       *bufio.Reader
	sc       *streamCtx // nil: unsigned chunks
	trailer  bool       // trailers expected after the final chunk
	limit    int64      // decoded bytes allowed in total
	total    int64
	state    chunkState
	left     int64    // bytes left in the current chunk
	size     int64    // size of the current chunk
	prevSize int64    // size of the previous chunk, -1 before the first
	sig      [64]byte // the current chunk's signature (lower-case hex)
	prevSig  [64]byte // the previous chunk's, the seed for the first
	h        hash.Hash
	mac      hash.Hash // HMAC with the signing key, reset per chunk
	macUsed  bool
	// scratch for checkChunkSig: arrays on its stack would escape through
	// the hash.Hash interface, an allocation per chunk.
	sum      [sha256.Size]byte
	hexSum   [2 * sha256.Size]byte
	want     [2 * sha256.Size]byte
	err      error
	trailers map[string]string
}

func newChunkReader(r io.Reader, sc *streamCtx, trailer bool, limit int64) *chunkReader {
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(r)
	c := &chunkReader{
		br:       br,
		sc:       sc,
		trailer:  trailer,
		limit:    limit,
		prevSize: -1,
	}
	if sc != nil {
		copy(c.prevSig[:], sc.seed) // 64 lower-case hex digits: parseAuthorization checked
		c.h = sha256.New()
		c.mac = hmac.New(sha256.New, sc.key)
	}
	return c
}

// readerPool recycles the line buffers of chunked bodies (one per PUT).
var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, maxLineSize) }}

// release returns the buffer once the body is done (EOF or a sticky
// error): Read never touches it again.
func (c *chunkReader) release() {
	if c.br != nil {
		c.br.Reset(nil)
		readerPool.Put(c.br)
		c.br = nil
	}
}

func chunkErr(format string, args ...any) *s3err.Error {
	return s3err.New(s3err.ErrIncompleteBody, "Malformed aws-chunked body: "+format, args...)
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	for {
		switch c.state {
		case stHeader:
			if err := c.readHeader(); err != nil {
				return 0, c.fail(err)
			}
			if c.state == stDone {
				c.release()
			}
		case stData:
			if len(p) == 0 {
				return 0, nil
			}
			if int64(len(p)) > c.left {
				p = p[:c.left]
			}
			n, err := c.br.Read(p)
			c.left -= int64(n)
			if c.h != nil {
				c.h.Write(p[:n])
			}
			if c.left == 0 {
				c.state = stDataEnd
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			if err != nil {
				return n, c.fail(err)
			}
			if n > 0 {
				return n, nil
			}
		case stDataEnd:
			if err := c.expectCRLF(); err != nil {
				return 0, c.fail(err)
			}
			if err := c.checkChunkSig(); err != nil {
				return 0, c.fail(err)
			}
			c.state = stHeader
		case stDone:
			return 0, io.EOF
		}
	}
}

func (c *chunkReader) fail(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if _, ok := err.(*s3err.Error); !ok {
		err = readError(err)
	}
	c.err = err
	c.release()
	return err
}

// readLine returns one line without its "\r\n". Lines longer than the
// buffer, or ending in a bare "\n", are malformed.
// The line is only valid until the next read.
func (c *chunkReader) readLine() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, chunkErr("line too long")
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, chunkErr("line not terminated by CRLF")
	}
	return line[:len(line)-2], nil
}

// readTrailerLine is readLine for trailer lines, which minio-go (mc)
// terminates with "\n" followed by "\r\n" (it signs "name:value\n" and
// then frames it): a bare-LF line is accepted, and a CRLF right after it is
// taken as part of its terminator, not as the blank line ending the
// trailers.
func (c *chunkReader) readTrailerLine() (string, error) {
	line, err := c.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return "", chunkErr("line too long")
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	if len(line) >= 2 && line[len(line)-2] == '\r' {
		return string(line[:len(line)-2]), nil
	}
	s := string(line[:len(line)-1])
	if s == "" {
		return "", chunkErr("line not terminated by CRLF")
	}
	if next, _ := c.br.Peek(2); len(next) == 2 && next[0] == '\r' && next[1] == '\n' {
		c.br.Discard(2)
	}
	return s, nil
}

func (c *chunkReader) expectCRLF() error {
	var b [2]byte
	if _, err := io.ReadFull(c.br, b[:]); err != nil {
		return err
	}
	if b != [2]byte{'\r', '\n'} {
		return chunkErr("chunk data not followed by CRLF")
	}
	return nil
}

func (c *chunkReader) readHeader() error {
	line, err := c.readLine()
	if err != nil {
		return err
	}
	sizeStr, ext, hasExt := bytes.Cut(line, []byte(";"))
	size, ok := parseChunkSize(sizeStr)
	if !ok {
		return s3err.New(s3err.ErrInvalidChunkSize, "Invalid chunk size %q.", sizeStr)
	}
	c.size = int64(size)
	if c.sc != nil {
		sig, ok := bytes.CutPrefix(ext, []byte("chunk-signature="))
		if !hasExt || !ok || !isLowerHex(sig, 64) {
			return s3err.New(s3err.ErrSignatureDoesNotMatch, "Missing or malformed chunk-signature.")
		}
		copy(c.sig[:], sig)
		// Only the last data chunk may be short.
		if c.prevSize >= 0 && c.prevSize < minChunkSize && c.size != 0 {
			return s3err.New(s3err.ErrInvalidChunkSize, "")
		}
		c.h.Reset()
	}
	if c.size > c.limit-c.total {
		return s3err.New(s3err.ErrIncompleteBody, "The aws-chunked body is longer than x-amz-decoded-content-length %d.", c.limit)
	}
	c.total += c.size
	c.prevSize = c.size
	if c.size > 0 {
		c.left = c.size
		c.state = stData
		return nil
	}
	// Final chunk.
	if err := c.checkChunkSig(); err != nil {
		return err
	}
	if c.trailer {
		if err := c.readTrailers(); err != nil {
			return err
		}
	} else if err := c.expectCRLF(); err != nil {
		return err
	}
	c.state = stDone
	return nil
}

// checkChunkSig verifies the signature of the chunk just read, chained
// from the previous one (the seed for the first).
func (c *chunkReader) checkChunkSig() error {
	if c.sc == nil {
		return nil
	}
	// The string to sign, written straight into the HMAC:
	// "AWS4-HMAC-SHA256-PAYLOAD\n" time "\n" scope "\n" previous
	// signature "\n" hex(sha256("")) "\n" hex(sha256(chunk data)).
	hex.Encode(c.hexSum[:], c.h.Sum(c.sum[:0]))
	m := c.mac
	if c.macUsed { // a fresh HMAC is already keyed; its first Reset allocates
		m.Reset()
	}
	c.macUsed = true
	io.WriteString(m, c.sc.chunkPrefix())
	m.Write(c.prevSig[:])
	io.WriteString(m, "\n"+emptySHA256+"\n")
	m.Write(c.hexSum[:])
	hex.Encode(c.want[:], m.Sum(c.sum[:0]))
	if subtle.ConstantTimeCompare(c.want[:], c.sig[:]) != 1 {
		return s3err.New(s3err.ErrSignatureDoesNotMatch, "The chunk signature does not match.")
	}
	c.prevSig = c.sig
	return nil
}

// parseChunkSize parses a chunk's hex size (at most 16 digits, at most
// 2^62, as strconv.ParseUint(s, 16, 64) with that bound would).
func parseChunkSize(s []byte) (uint64, bool) {
	if len(s) == 0 || len(s) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range s {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(d)
	}
	return n, n <= 1<<62
}

// readTrailers reads "name:value" lines up to the blank line (or EOF,
// which some encoders send instead) and checks x-amz-trailer-signature in
// signed mode.
func (c *chunkReader) readTrailers() error {
	c.trailers = map[string]string{}
	var trailerSig string
	for i := 0; ; i++ {
		line, err := c.readTrailerLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if line == "" {
			break
		}
		if i >= maxTrailers {
			return s3err.New(s3err.ErrMalformedTrailer, "Too many trailing headers.")
		}
		name, value, ok := strings.Cut(line, ":")
		name = strings.ToLower(strings.TrimSpace(name))
		if !ok || name == "" {
			return s3err.New(s3err.ErrMalformedTrailer, "")
		}
		value = trimAll(value)
		if name == "x-amz-trailer-signature" {
			trailerSig = value
			continue
		}
		if _, dup := c.trailers[name]; dup {
			return s3err.New(s3err.ErrMalformedTrailer, "Trailing header %s repeated.", name)
		}
		c.trailers[name] = value
	}
	if c.sc == nil {
		return nil
	}
	if trailerSig == "" {
		return s3err.New(s3err.ErrSignatureDoesNotMatch, "Missing x-amz-trailer-signature.")
	}
	want := signHex(c.sc.key, trailerStringToSign(c.sc, string(c.prevSig[:]), c.trailers))
	if subtle.ConstantTimeCompare([]byte(want), []byte(trailerSig)) != 1 {
		return s3err.New(s3err.ErrSignatureDoesNotMatch, "The trailer signature does not match.")
	}
	return nil
}

// trailerStringToSign hashes the trailers in canonical form: sorted
// "name:value\n" lines.
func trailerStringToSign(sc *streamCtx, prevSig string, trailers map[string]string) string {
	names := make([]string, 0, len(trailers))
	for k := range trailers {
		names = append(names, k)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	for _, k := range names {
		buf.WriteString(k)
		buf.WriteByte(':')
		buf.WriteString(trailers[k])
		buf.WriteByte('\n')
	}
	sum := sha256.Sum256(buf.Bytes())
	return "AWS4-HMAC-SHA256-TRAILER\n" + sc.time.UTC().Format(timeFormat) + "\n" + sc.scope.String() + "\n" +
		prevSig + "\n" + hex.EncodeToString(sum[:])
}
