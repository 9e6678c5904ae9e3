// Package crypt is the at-rest encryption format of server-side encryption:
// a plaintext stream cut into packages of at most PackageSize bytes, each
// sealed with AES-256-GCM under one stream key. The byte layout is specified
// in docs/format/sse.md.
//
// Every package can be opened on its own (Open with its sequence number), so
// a range read decrypts only the packages it covers. The sequence number is
// bound into each package's nonce (reordering fails), and the last package of
// a stream carries a final flag inside the authenticated nonce (truncation at
// a package boundary fails, because the reader knows from the plaintext size
// which package must be final). Any failure is ErrAuth: never wrong bytes.
package crypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

const (
	// Version is the first header byte of every package.
	Version = 0x20
	// CipherAES256GCM is the only cipher suite.
	CipherAES256GCM = 0x00
	// KeySize is the stream key size.
	KeySize = 32
	// PackageSize is the plaintext size of every package but the last.
	PackageSize = 64 << 10
	// HeaderSize and TagSize frame each package.
	HeaderSize = 16
	TagSize    = 16
	// Overhead is the ciphertext bytes a package adds to its plaintext.
	Overhead = HeaderSize + TagSize
	// MaxPackage is the stored size of a full package.
	MaxPackage = PackageSize + Overhead

	finalFlag = 0x80
)

// ErrAuth is returned for any package that does not open: tampered, cut,
// reordered, from another stream or another key.
var ErrAuth = errors.New("crypt: package authentication failed")

// CipherSize is the stored size of a stream of plain plaintext bytes.
func CipherSize(plain int64) int64 {
	if plain == 0 {
		return 0
	}
	n := (plain + PackageSize - 1) / PackageSize
	return plain + n*Overhead
}

// Packages is the number of packages of a stream of plain bytes.
func Packages(plain int64) int64 { return (plain + PackageSize - 1) / PackageSize }

// PackageRange returns the first and last package holding plaintext bytes
// [off, off+n) (n > 0), and the stored byte range [cOff, cOff+cLen) that
// holds exactly those packages in a stream of plain bytes.
func PackageRange(plain, off, n int64) (first, last, cOff, cLen int64) {
	first = off / PackageSize
	last = (off + n - 1) / PackageSize
	cOff = first * MaxPackage
	cEnd := min((last+1)*MaxPackage, CipherSize(plain))
	return first, last, cOff, cEnd - cOff
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("crypt: key must be %d bytes", KeySize)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// packageNonce is the header's stream nonce (final flag included) with its
// last four bytes XORed with the big-endian sequence number.
func packageNonce(hdr []byte, seq uint32) []byte {
	var n [12]byte
	copy(n[:], hdr[4:16])
	binary.BigEndian.PutUint32(n[8:], binary.BigEndian.Uint32(n[8:])^seq)
	return n[:]
}

// Writer encrypts a stream: Write buffers plaintext and emits full
// packages to the underlying writer; Close emits the final package.
type Writer struct {
	w     io.Writer
	aead  cipher.AEAD
	nonce [12]byte
	seq   uint32
	buf   []byte // pending plaintext, < PackageSize after each Write
	out   []byte
	err   error
}

// NewWriter starts a stream under key with a fresh random stream nonce.
func NewWriter(w io.Writer, key []byte) (*Writer, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	sw := &Writer{w: w, aead: aead, buf: make([]byte, 0, PackageSize), out: make([]byte, 0, MaxPackage)}
	if _, err := rand.Read(sw.nonce[:]); err != nil {
		return nil, err
	}
	sw.nonce[0] &^= finalFlag
	return sw, nil
}

func (sw *Writer) seal(p []byte, final bool) error {
	hdr := sw.out[:HeaderSize]
	hdr[0], hdr[1] = Version, CipherAES256GCM
	binary.LittleEndian.PutUint16(hdr[2:4], uint16(len(p)-1))
	copy(hdr[4:], sw.nonce[:])
	if final {
		hdr[4] |= finalFlag
	}
	out := sw.aead.Seal(hdr, packageNonce(hdr, sw.seq), p, hdr[:4])
	sw.seq++
	if sw.seq == 0 {
		return errors.New("crypt: stream too long")
	}
	_, err := sw.w.Write(out)
	return err
}

// Write encrypts p. A full package is held back until more data (or Close)
// shows whether it is the last.
func (sw *Writer) Write(p []byte) (int, error) {
	if sw.err != nil {
		return 0, sw.err
	}
	n := len(p)
	for len(p) > 0 {
		if len(sw.buf) == PackageSize {
			if sw.err = sw.seal(sw.buf, false); sw.err != nil {
				return n - len(p), sw.err
			}
			sw.buf = sw.buf[:0]
		}
		c := copy(sw.buf[len(sw.buf):PackageSize], p)
		sw.buf = sw.buf[:len(sw.buf)+c]
		p = p[c:]
	}
	return n, nil
}

// Close emits the final package (none for an empty stream). It does not
// close the underlying writer.
func (sw *Writer) Close() error {
	if sw.err != nil {
		return sw.err
	}
	if len(sw.buf) > 0 {
		sw.err = sw.seal(sw.buf, true)
	}
	if sw.err == nil {
		sw.err = errors.New("crypt: writer closed")
		return nil
	}
	return sw.err
}

// Opener opens single packages of streams under one key.
type Opener struct{ aead cipher.AEAD }

// NewOpener returns an Opener for key.
func NewOpener(key []byte) (*Opener, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	return &Opener{aead: aead}, nil
}

// Open authenticates and decrypts package seq of a stream of plain bytes
// from its stored form pkg, appending the plaintext to dst. It fails with
// ErrAuth unless pkg is exactly that package: right key, right position,
// right length, final flag set exactly on the stream's last package.
func (o *Opener) Open(dst, pkg []byte, seq, plain int64) ([]byte, error) {
	count := Packages(plain)
	if seq < 0 || seq >= count || len(pkg) < Overhead+1 {
		return dst, ErrAuth
	}
	want := int64(PackageSize)
	if seq == count-1 {
		want = plain - seq*PackageSize
	}
	hdr := pkg[:HeaderSize]
	if hdr[0] != Version || hdr[1] != CipherAES256GCM ||
		int64(binary.LittleEndian.Uint16(hdr[2:4]))+1 != want || int64(len(pkg)) != want+Overhead ||
		(hdr[4]&finalFlag != 0) != (seq == count-1) {
		return dst, ErrAuth
	}
	out, err := o.aead.Open(dst, packageNonce(hdr, uint32(seq)), pkg[HeaderSize:], hdr[:4])
	if err != nil {
		return dst, ErrAuth
	}
	return out, nil
}

// Reader decrypts plaintext bytes [off, off+n) of a stream of plain bytes.
// src must yield exactly the stored bytes PackageRange names, from cOff.
type Reader struct {
	src           io.Reader
	op            *Opener
	plain         int64
	seq, last     int64
	skip          int64 // plaintext bytes to drop from the first package
	remain        int64 // plaintext bytes still to return
	pkg, plainBuf []byte
	buf           []byte
	err           error
}

// NewReader returns a Reader over [off, off+n) of a stream of plain bytes
// under key; src is positioned at the stored offset PackageRange returns.
func NewReader(src io.Reader, key []byte, plain, off, n int64) (*Reader, error) {
	op, err := NewOpener(key)
	if err != nil {
		return nil, err
	}
	if off < 0 || n < 0 || off+n > plain {
		return nil, errors.New("crypt: range outside stream")
	}
	r := &Reader{src: src, op: op, plain: plain, remain: n}
	if n > 0 {
		r.seq, r.last, _, _ = PackageRange(plain, off, n)
		r.skip = off - r.seq*PackageSize
		r.pkg = make([]byte, MaxPackage)
		r.plainBuf = make([]byte, 0, PackageSize)
	}
	return r, nil
}

func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	for len(r.buf) == 0 {
		if r.remain == 0 {
			return 0, io.EOF
		}
		size := int64(MaxPackage)
		if r.seq == Packages(r.plain)-1 {
			size = r.plain - r.seq*PackageSize + Overhead
		}
		if _, err := io.ReadFull(r.src, r.pkg[:size]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			r.err = err
			return 0, err
		}
		out, err := r.op.Open(r.plainBuf[:0], r.pkg[:size], r.seq, r.plain)
		if err != nil {
			r.err = err
			return 0, err
		}
		out = out[r.skip:]
		r.skip = 0
		if int64(len(out)) > r.remain {
			out = out[:r.remain]
		}
		r.buf = out
		r.seq++
	}
	c := copy(p, r.buf)
	r.buf = r.buf[c:]
	r.remain -= int64(c)
	return c, nil
}

// DeriveKey derives a stream key from an object key: HMAC-SHA256(oek,
// label ‖ 0x00 ‖ id). Each stored run (a plain object's data, or one part's)
// gets its own key from the id that names it.
func DeriveKey(oek []byte, label, id string) []byte {
	m := hmac.New(sha256.New, oek)
	m.Write([]byte(label))
	m.Write([]byte{0})
	m.Write([]byte(id))
	return m.Sum(nil)
}
