// Package checksum implements the S3 additional checksums
// (x-amz-checksum-{crc32,crc32c,crc64nvme,sha1,sha256}): streaming hashers,
// verification of client-supplied values, and multipart composite values.
//
// It knows nothing of HTTP beyond header names; sigv4 uses it to verify
// header and trailer checksums while a body streams through.
package checksum

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"strconv"
	"strings"

	"github.com/minio/crc64nvme"

	"github.com/cairn-s3/cairn/internal/s3err"
)

// Algorithm is an S3 checksum algorithm, spelled as in
// x-amz-checksum-algorithm / x-amz-sdk-checksum-algorithm.
type Algorithm string

const (
	CRC32     Algorithm = "CRC32"
	CRC32C    Algorithm = "CRC32C"
	CRC64NVME Algorithm = "CRC64NVME"
	SHA1      Algorithm = "SHA1"
	SHA256    Algorithm = "SHA256"
)

// Algorithms lists every supported algorithm, in a fixed order.
var Algorithms = []Algorithm{CRC32, CRC32C, CRC64NVME, SHA1, SHA256}

// crc64NVMEPoly is the NVMe CRC-64 polynomial 0xad93d23594c93659 in the
// bit-reversed form hash/crc64 expects (refin/refout, init and xorout all
// ones, which crc64 applies itself).
const crc64NVMEPoly = 0x9a6c9329ac4bc9b5

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	nvme       = crc64.MakeTable(crc64NVMEPoly)
)

// Parse maps an algorithm name, case-insensitively, to an Algorithm.
// Unknown names give InvalidRequest, as S3 does.
func Parse(name string) (Algorithm, error) {
	a := Algorithm(strings.ToUpper(strings.TrimSpace(name)))
	if a.Size() == 0 {
		return "", s3err.New(s3err.ErrInvalidRequest, "Value for x-amz-checksum-algorithm header is invalid.")
	}
	return a, nil
}

// FromHeader returns the algorithm whose header (or trailer) name is h,
// such as "x-amz-checksum-crc32c"; the match is case-insensitive.
func FromHeader(h string) (Algorithm, bool) {
	const prefix = "x-amz-checksum-"
	if isASCII(h) {
		// The same test without lower-casing (an allocation for each of a
		// request's headers, which are canonical, so mixed case).
		if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
			return "", false
		}
		a := Algorithm(strings.ToUpper(h[len(prefix):]))
		return a, a.Size() != 0
	}
	h = strings.ToLower(h)
	if !strings.HasPrefix(h, prefix) {
		return "", false
	}
	a := Algorithm(strings.ToUpper(h[len(prefix):]))
	return a, a.Size() != 0
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// HeaderName is the lower-case header or trailer carrying a's value.
func (a Algorithm) HeaderName() string { return "x-amz-checksum-" + strings.ToLower(string(a)) }

// Size is the raw digest length in bytes, 0 for an unknown algorithm.
func (a Algorithm) Size() int {
	switch a {
	case CRC32, CRC32C:
		return 4
	case CRC64NVME:
		return 8
	case SHA1:
		return sha1.Size
	case SHA256:
		return sha256.Size
	}
	return 0
}

// New returns a fresh streaming hasher for a, or nil for an unknown one.
// CRC sums are big-endian, as S3 encodes them.
func (a Algorithm) New() hash.Hash {
	switch a {
	case CRC32:
		return crc32.NewIEEE()
	case CRC32C:
		return crc32.New(castagnoli)
	case CRC64NVME:
		// Carry-less-multiply accelerated where the CPU has it: S3 adds
		// this CRC to every object written without a checksum.
		return crc64nvme.New()
	case SHA1:
		return sha1.New()
	case SHA256:
		return sha256.New()
	}
	return nil
}

// Sum computes a's base64 value of data in one go.
func (a Algorithm) Sum(data []byte) string {
	h := a.New()
	h.Write(data)
	return Encode(h.Sum(nil))
}

// Encode is the wire form of a raw digest (standard base64).
func Encode(raw []byte) string { return base64.StdEncoding.EncodeToString(raw) }

// Decode parses a client-supplied value for a. A value that is not base64
// of the right length is InvalidRequest ("Value for x-amz-checksum-crc32
// header is invalid."), as S3 reports it.
func (a Algorithm) Decode(value string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(value))
	if err != nil || len(raw) != a.Size() || a.Size() == 0 {
		return nil, s3err.New(s3err.ErrInvalidRequest, "Value for %s header is invalid.", a.HeaderName())
	}
	return raw, nil
}

// Verify compares a computed raw digest with the client's base64 value:
// a malformed value is InvalidRequest, a mismatch BadDigest naming the
// algorithm ("The CRC32C you specified did not match the calculated
// checksum.").
func (a Algorithm) Verify(computed []byte, value string) error {
	want, err := a.Decode(value)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare(want, computed) != 1 {
		return s3err.New(s3err.ErrBadDigest, "The %s you specified did not match the calculated checksum.", a)
	}
	return nil
}

// Composite is the COMPOSITE multipart checksum S3 reports for a completed
// upload: the checksum of the concatenated raw part checksums, suffixed
// with "-<number of parts>". parts are the raw (decoded) part digests in
// part order.
func Composite(a Algorithm, parts [][]byte) string {
	h := a.New()
	for _, p := range parts {
		h.Write(p)
	}
	return Encode(h.Sum(nil)) + "-" + strconv.Itoa(len(parts))
}
