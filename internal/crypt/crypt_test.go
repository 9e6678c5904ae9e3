package crypt

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"testing"
)

func seal(t testing.TB, key, plain []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := NewWriter(&out, key)
	if err != nil {
		t.Fatal(err)
	}
	// Uneven writes exercise the package buffering.
	for p := plain; len(p) > 0; {
		n := min(len(p), 7777)
		if _, err := w.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if int64(out.Len()) != CipherSize(int64(len(plain))) {
		t.Fatalf("stored %d bytes, CipherSize says %d", out.Len(), CipherSize(int64(len(plain))))
	}
	return out.Bytes()
}

func readRange(key, stored []byte, plain, off, n int64) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	_, _, cOff, cLen := PackageRange(plain, off, n)
	if cOff+cLen > int64(len(stored)) {
		cLen = int64(len(stored)) - cOff
	}
	r, err := NewReader(bytes.NewReader(stored[cOff:cOff+cLen]), key, plain, off, n)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func TestRanges(t *testing.T) {
	key := randBytes(KeySize)
	const P = PackageSize
	for _, size := range []int{0, 1, P - 1, P, P + 1, 3*P + 17, 4 * P} {
		plain := randBytes(size)
		stored := seal(t, key, plain)
		s := int64(size)
		ranges := [][2]int64{{0, s}}
		for _, off := range []int64{0, 1, P - 1, P, P + 1, 2*P - 1, 2 * P, s - 1} {
			for _, n := range []int64{1, 2, P - 1, P, P + 1, s} {
				if off >= 0 && off+n <= s && n > 0 {
					ranges = append(ranges, [2]int64{off, n})
				}
			}
			if off >= 0 && off < s {
				ranges = append(ranges, [2]int64{off, s - off})
			}
		}
		for _, rg := range ranges {
			got, err := readRange(key, stored, s, rg[0], rg[1])
			if err != nil {
				t.Fatalf("size %d range %v: %v", size, rg, err)
			}
			if !bytes.Equal(got, plain[rg[0]:rg[0]+rg[1]]) {
				t.Fatalf("size %d range %v: wrong bytes", size, rg)
			}
		}
	}
}

// TestRangeReadsOnlyCoveredPackages: a 1-byte range in the middle of a
// large stream needs one package of stored bytes.
func TestRangeReadsOnlyCoveredPackages(t *testing.T) {
	_, _, cOff, cLen := PackageRange(100*PackageSize, 50*PackageSize+5, 10)
	if cOff != 50*MaxPackage || cLen != MaxPackage {
		t.Fatalf("got [%d,+%d)", cOff, cLen)
	}
	_, _, _, cLen = PackageRange(100*PackageSize, PackageSize-1, 2)
	if cLen != 2*MaxPackage {
		t.Fatalf("straddling range reads %d", cLen)
	}
}

func TestTamperTruncateReorder(t *testing.T) {
	key := randBytes(KeySize)
	plain := randBytes(3*PackageSize + 100)
	s := int64(len(plain))
	stored := seal(t, key, plain)
	mustFail := func(name string, stored []byte, plainSize int64) {
		t.Helper()
		got, err := readRange(key, stored, plainSize, 0, plainSize)
		if err == nil {
			t.Fatalf("%s: read %d bytes without error", name, len(got))
		}
		if !errors.Is(err, ErrAuth) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, i := range []int{0, 2, 3, 4, 5, 20, MaxPackage - 1, MaxPackage + 16, len(stored) - 1} {
		b := bytes.Clone(stored)
		b[i] ^= 1
		mustFail("flip", b, s)
	}
	// Truncated at a package boundary: the stream claims fewer bytes; the
	// last kept package is not flagged final.
	mustFail("cut-to-boundary", stored[:2*MaxPackage], 2*PackageSize)
	mustFail("cut-short", stored[:len(stored)-1], s)
	// Reordered packages.
	b := bytes.Clone(stored)
	copy(b[0:MaxPackage], stored[MaxPackage:2*MaxPackage])
	copy(b[MaxPackage:2*MaxPackage], stored[0:MaxPackage])
	mustFail("swap", b, s)
	// A package of another stream under the same key.
	other := seal(t, key, randBytes(len(plain)))
	b = bytes.Clone(stored)
	copy(b[MaxPackage:2*MaxPackage], other[MaxPackage:2*MaxPackage])
	if got, err := readRange(key, b, s, 0, s); err == nil && !bytes.Equal(got, plain) {
		// Same key and same position: it opens, but only as that
		// stream's bytes. Run keys are unique per stored run, so this
		// splice needs two streams under one key, which never happens.
		t.Log("cross-stream splice under one key opens (keys are per run)")
	}
	// Wrong key.
	if _, err := readRange(randBytes(KeySize), stored, s, 0, s); !errors.Is(err, ErrAuth) {
		t.Fatalf("wrong key: %v", err)
	}
	// A size claim larger than stored.
	mustFail("longer-claim", stored, s+1)
}

func TestDeriveKeyDistinct(t *testing.T) {
	oek := randBytes(KeySize)
	a, b := DeriveKey(oek, "run", "x"), DeriveKey(oek, "run", "y")
	if bytes.Equal(a, b) || len(a) != KeySize {
		t.Fatal("derived keys collide")
	}
}

func FuzzOpen(f *testing.F) {
	key := bytes.Repeat([]byte{7}, KeySize)
	var out bytes.Buffer
	w, _ := NewWriter(&out, key)
	msg := []byte("hello, packages")
	w.Write(msg)
	w.Close()
	f.Add(out.Bytes(), int64(15), int64(0), int64(15))
	f.Add(out.Bytes()[:10], int64(15), int64(3), int64(4))
	f.Fuzz(func(t *testing.T, stored []byte, plain, off, n int64) {
		if plain < 0 || plain > 1<<20 || off < 0 || n <= 0 || off+n > plain {
			return
		}
		_, _, cOff, cLen := PackageRange(plain, off, n)
		if cOff > int64(len(stored)) {
			return
		}
		src := stored[cOff:min(int64(len(stored)), cOff+cLen)]
		r, err := NewReader(bytes.NewReader(src), key, plain, off, n)
		if err != nil {
			return
		}
		got, err := io.ReadAll(r)
		if err == nil && int64(len(got)) != n {
			t.Fatalf("returned %d bytes for a %d-byte range without error", len(got), n)
		}
		// The only stream under this key is the genuine one: anything that
		// opens must be its bytes.
		if err == nil && (plain != int64(len(msg)) || !bytes.Equal(got, msg[off:off+n])) {
			t.Fatalf("forged stream opened: %q", got)
		}
	})
}

func BenchmarkSeal4MiB(b *testing.B) {
	key := randBytes(KeySize)
	plain := randBytes(4 << 20)
	b.SetBytes(int64(len(plain)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w, _ := NewWriter(io.Discard, key)
		w.Write(plain)
		w.Close()
	}
}

func BenchmarkOpen4MiB(b *testing.B) {
	key := randBytes(KeySize)
	plain := randBytes(4 << 20)
	stored := seal(b, key, plain)
	b.SetBytes(int64(len(plain)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r, _ := NewReader(bytes.NewReader(stored), key, int64(len(plain)), 0, int64(len(plain)))
		io.Copy(io.Discard, r)
	}
}
