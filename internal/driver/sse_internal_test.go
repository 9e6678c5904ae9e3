package driver

import (
	"bytes"
	"crypto/md5"
	"crypto/rand"
	"io"
	"testing"
	"testing/iotest"

	"github.com/cairn-s3/cairn/internal/crypt"
)

// TestEncReaderAnyReadSize: the stream encReader produces is the same
// valid stream whatever the caller's read sizes (sealed in place or via
// its buffer), and it hashes the plaintext.
func TestEncReaderAnyReadSize(t *testing.T) {
	key := make([]byte, 32)
	rand.Read(key)
	for _, size := range []int{0, 1, crypt.PackageSize - 1, crypt.PackageSize, crypt.PackageSize + 1, 3*crypt.PackageSize + 5} {
		plain := make([]byte, size)
		rand.Read(plain)
		for _, wrap := range []func(io.Reader) io.Reader{
			func(r io.Reader) io.Reader { return r },
			iotest.OneByteReader,
			iotest.HalfReader,
		} {
			er, err := newEncReader(iotest.HalfReader(bytes.NewReader(plain)), key)
			if err != nil {
				t.Fatal(err)
			}
			var stored []byte
			stored, err = io.ReadAll(wrap(er))
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(stored)) != crypt.CipherSize(int64(size)) || er.plain != int64(size) {
				t.Fatalf("size %d: stored %d", size, len(stored))
			}
			if sum := md5.Sum(plain); !bytes.Equal(er.h.Sum(nil), sum[:]) {
				t.Fatalf("size %d: md5", size)
			}
			if size == 0 {
				continue
			}
			r, _ := crypt.NewReader(bytes.NewReader(stored), key, int64(size), 0, int64(size))
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("size %d: %v", size, err)
			}
		}
	}
}
