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

// Sealer seals the packages of one stream in order: the building block of
// Writer, for callers that manage their own buffers (no copy through an
// io.Writer).
type Sealer struct {
	aead  cipher.AEAD
	nonce [12]byte
	seq   uint32
	done  bool
}

// NewSealer starts a stream under key with a fresh random stream nonce.
func NewSealer(key []byte) (*Sealer, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	s := &Sealer{aead: aead}
	if _, err := rand.Read(s.nonce[:]); err != nil {
		return nil, err
	}
	s.nonce[0] &^= finalFlag
	return s, nil
}

// Seal appends the next package, holding plaintext p (1 to PackageSize
// bytes; only a final package may be shorter than PackageSize), to dst.
func (s *Sealer) Seal(dst, p []byte, final bool) ([]byte, error) {
	if s.done {
		return dst, errors.New("crypt: stream already final")
	}
	if len(p) == 0 || len(p) > PackageSize || (!final && len(p) != PackageSize) {
		return dst, fmt.Errorf("crypt: bad package length %d", len(p))
	}
	if s.seq == ^uint32(0) {
		return dst, errors.New("crypt: stream too long")
	}
	var hdr [HeaderSize]byte
	hdr[0], hdr[1] = Version, CipherAES256GCM
	binary.LittleEndian.PutUint16(hdr[2:4], uint16(len(p)-1))
	copy(hdr[4:], s.nonce[:])
	if final {
		hdr[4] |= finalFlag
		s.done = true
	}
	dst = append(dst, hdr[:]...)
	out := s.aead.Seal(dst, packageNonce(hdr[:], s.seq), p, hdr[:4])
	s.seq++
	return out, nil
}

// Writer encrypts a stream: Write buffers plaintext and emits full
// packages to the underlying writer; Close emits the final package.
type Writer struct {
	w   io.Writer
	s   *Sealer
	buf []byte // pending plaintext, <= PackageSize
	out []byte
	err error
}

// NewWriter starts a stream under key with a fresh random stream nonce.
func NewWriter(w io.Writer, key []byte) (*Writer, error) {
	s, err := NewSealer(key)
	if err != nil {
		return nil, err
	}
	return &Writer{w: w, s: s, buf: make([]byte, 0, PackageSize), out: make([]byte, 0, MaxPackage)}, nil
}

func (sw *Writer) seal(p []byte, final bool) error {
	out, err := sw.s.Seal(sw.out[:0], p, final)
	if err != nil {
		return err
	}
	_, err = sw.w.Write(out)
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
// Packages are opened in place in one MaxPackage buffer.
type Reader struct {
	src    io.Reader
	op     *Opener
	plain  int64
	seq    int64
	skip   int64 // plaintext bytes to drop from the first package
	remain int64 // plaintext bytes still to return
	pkg    []byte
	buf    []byte // opened plaintext not yet returned (inside pkg)
	err    error
}

// NewReader returns a Reader over [off, off+n) of a stream of plain bytes
// under key; src is positioned at the stored offset PackageRange returns.
// buf, if at least MaxPackage long, is used as the package buffer (the
// caller may pool it; it must not be used while the Reader is).
func NewReader(src io.Reader, key []byte, plain, off, n int64, buf ...[]byte) (*Reader, error) {
	op, err := NewOpener(key)
	if err != nil {
		return nil, err
	}
	if off < 0 || n < 0 || off+n > plain {
		return nil, errors.New("crypt: range outside stream")
	}
	r := &Reader{src: src, op: op, plain: plain, remain: n}
	if n > 0 {
		r.seq, _, _, _ = PackageRange(plain, off, n)
		r.skip = off - r.seq*PackageSize
		if len(buf) > 0 && len(buf[0]) >= MaxPackage {
			r.pkg = buf[0][:MaxPackage]
		} else {
			r.pkg = make([]byte, MaxPackage)
		}
	}
	return r, nil
}

// next opens the next package into r.buf.
func (r *Reader) next() error {
	size := int64(MaxPackage)
	if r.seq == Packages(r.plain)-1 {
		size = r.plain - r.seq*PackageSize + Overhead
	}
	pkg := r.pkg[:size]
	if _, err := io.ReadFull(r.src, pkg); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	// In place: the plaintext lands over the ciphertext.
	out, err := r.op.Open(pkg[HeaderSize:HeaderSize], pkg, r.seq, r.plain)
	if err != nil {
		return err
	}
	out = out[r.skip:]
	r.skip = 0
	if int64(len(out)) > r.remain {
		out = out[:r.remain]
	}
	r.buf = out
	r.seq++
	return nil
}

func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	for len(r.buf) == 0 {
		if r.remain == 0 {
			return 0, io.EOF
		}
		if r.err = r.next(); r.err != nil {
			return 0, r.err
		}
	}
	c := copy(p, r.buf)
	r.buf = r.buf[c:]
	r.remain -= int64(c)
	return c, nil
}

// WriteTo writes the rest of the range to w a package at a time (no copy
// through the caller's buffer).
func (r *Reader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if r.err != nil {
			return total, r.err
		}
		if len(r.buf) > 0 {
			n, err := w.Write(r.buf)
			total += int64(n)
			r.buf = r.buf[n:]
			r.remain -= int64(n)
			if err != nil {
				return total, err
			}
			continue
		}
		if r.remain == 0 {
			return total, nil
		}
		r.err = r.next()
	}
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
