package checksum

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc64"
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/s3err"
)

// Known-answer values: the CRC catalogue check values for "123456789"
// and the value the AWS SDK for Go v2 test suite expects for "hello world"
// with CRC64NVME.
func TestKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		alg   Algorithm
		input string
		hex   string // raw digest, big-endian
		b64   string
	}{
		{CRC32, "123456789", "cbf43926", ""},
		{CRC32C, "123456789", "e3069283", ""},
		{CRC64NVME, "123456789", "ae8b14860a799888", ""},
		{CRC64NVME, "hello world", "", "jSnVw/bqjr4="},
		{CRC32, "hello world", "", "DUoRhQ=="},
		{CRC32C, "hello world", "", "yZRlqg=="},
		{SHA1, "hello world", "2aae6c35c94fcfb415dbe95f408b9ce91ee846ed", ""},
		{SHA256, "hello world", "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9", ""},
		{CRC32, "", "00000000", "AAAAAA=="},
	} {
		h := tc.alg.New()
		h.Write([]byte(tc.input))
		sum := h.Sum(nil)
		if tc.hex != "" && hex.EncodeToString(sum) != tc.hex {
			t.Errorf("%s(%q) = %x, want %s", tc.alg, tc.input, sum, tc.hex)
		}
		if tc.b64 != "" && Encode(sum) != tc.b64 {
			t.Errorf("%s(%q) = %s, want %s", tc.alg, tc.input, Encode(sum), tc.b64)
		}
		if got := tc.alg.Sum([]byte(tc.input)); got != Encode(sum) {
			t.Errorf("Sum disagrees with New: %s vs %s", got, Encode(sum))
		}
		if err := tc.alg.Verify(sum, Encode(sum)); err != nil {
			t.Errorf("%s: verify own value: %v", tc.alg, err)
		}
	}
}

func TestParseAndHeaders(t *testing.T) {
	for _, in := range []string{"crc32", "CRC32C", "Crc64Nvme", " sha1 ", "SHA256"} {
		a, err := Parse(in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		b, ok := FromHeader(a.HeaderName())
		if !ok || a != b {
			t.Fatalf("FromHeader(%q) = %v %v", a.HeaderName(), b, ok)
		}
		if a.New().Size() != a.Size() {
			t.Fatalf("%s: size mismatch", a)
		}
	}
	if _, err := Parse("md5"); !errors.Is(err, s3err.ErrInvalidRequest) {
		t.Fatalf("Parse(md5) = %v", err)
	}
	for _, h := range []string{"x-amz-checksum-md5", "x-amz-checksum-", "content-md5", "x-amz-checksum-type"} {
		if _, ok := FromHeader(h); ok {
			t.Fatalf("FromHeader(%q) accepted", h)
		}
	}
}

func TestVerifyErrors(t *testing.T) {
	sum := CRC32C.New().Sum(nil)
	for _, tc := range []struct {
		value string
		want  s3err.APIError
	}{
		{"not base64!", s3err.ErrInvalidRequest},
		{"AAAAAAAA", s3err.ErrInvalidRequest}, // 6 bytes, CRC32C is 4
		{"AQIDBA==", s3err.ErrBadDigest},
	} {
		err := CRC32C.Verify(sum, tc.value)
		if !errors.Is(err, tc.want) {
			t.Errorf("Verify(%q) = %v, want %s", tc.value, err, tc.want.Code)
		}
	}
	err := CRC32C.Verify(sum, "AQIDBA==")
	if got := s3err.From(err).WireMessage(); got != "The CRC32C you specified did not match the calculated checksum." {
		t.Errorf("message %q", got)
	}
}

func TestComposite(t *testing.T) {
	p1 := SHA256.New()
	p1.Write([]byte("part one"))
	p2 := SHA256.New()
	p2.Write([]byte("part two"))
	s1, s2 := p1.Sum(nil), p2.Sum(nil)
	want := SHA256.Sum(append(append([]byte{}, s1...), s2...)) + "-2"
	if got := Composite(SHA256, [][]byte{s1, s2}); got != want {
		t.Fatalf("Composite = %s, want %s", got, want)
	}
}

func TestFullObject(t *testing.T) {
	data := bytes.Repeat([]byte("cairn-full-object-checksum/"), 1000)
	for _, alg := range []Algorithm{CRC32, CRC32C, CRC64NVME} {
		for _, cuts := range [][]int{{0}, {1}, {100, 5000}, {0, 0, 27000}, {len(data)}} {
			var parts []Part
			prev := 0
			for _, c := range append(cuts, len(data)) {
				if c < prev {
					c = prev
				}
				h := alg.New()
				h.Write(data[prev:c])
				parts = append(parts, Part{Sum: h.Sum(nil), Size: int64(c - prev)})
				prev = c
			}
			got, err := FullObject(alg, parts)
			if err != nil {
				t.Fatal(err)
			}
			if Encode(got) != alg.Sum(data) {
				t.Errorf("%s cuts %v: %s, want %s", alg, cuts, Encode(got), alg.Sum(data))
			}
		}
	}
	if _, err := FullObject(SHA256, nil); err == nil {
		t.Fatal("SHA256 full-object accepted")
	}
	// Guard against someone "fixing" the polynomial to the non-reflected form.
	if crc64.Checksum([]byte("123456789"), crc64.MakeTable(0xad93d23594c93659)) == 0xae8b14860a799888 {
		t.Fatal("unexpected: non-reflected polynomial matched")
	}
}

func BenchmarkCRC64NVME(b *testing.B) {
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	h := CRC64NVME.New()
	for b.Loop() {
		h.Write(buf)
	}
}

// The accelerated CRC64NVME agrees with hash/crc64 over the NVMe table at
// every length around the vector widths and in split writes.
func TestCRC64NVMEMatchesTable(t *testing.T) {
	data := make([]byte, 5000)
	for i := range data {
		data[i] = byte(i*131 + i>>3)
	}
	for n := 0; n <= len(data); n += 1 + n/7 {
		want := crc64.Checksum(data[:n], nvme)
		h := CRC64NVME.New()
		h.Write(data[:n/3])
		h.Write(data[n/3 : n])
		if got := binary.BigEndian.Uint64(h.Sum(nil)); got != want {
			t.Fatalf("len %d: %x, want %x", n, got, want)
		}
	}
}

// TestFromHeaderAnyCase: FromHeader answers as lower-casing the whole
// name first would, for canonical, odd-case and non-ASCII names.
func TestFromHeaderAnyCase(t *testing.T) {
	ref := func(h string) (Algorithm, bool) {
		h = strings.ToLower(h)
		if !strings.HasPrefix(h, "x-amz-checksum-") {
			return "", false
		}
		a := Algorithm(strings.ToUpper(h[len("x-amz-checksum-"):]))
		return a, a.Size() != 0
	}
	for _, h := range []string{"X-Amz-Checksum-Crc64nvme", "X-AMZ-CHECKSUM-SHA1", "x-amz-checksum-crc32c", "X-Amz-Checksum-Type",
		"X-Amz-Content-Sha256", "X-Amz-Checksum", "x-amz-checksum-ſha256", "x-amz-chec\u212asum-crc32", "X-Amz-Checksum-Crc32\u0130", ""} {
		a, ok := FromHeader(h)
		ra, rok := ref(h)
		if a != ra || ok != rok {
			t.Errorf("FromHeader(%q) = %q %v, lower-casing first gives %q %v", h, a, ok, ra, rok)
		}
	}
	if a, ok := FromHeader("X-Amz-Checksum-Crc64nvme"); !ok || a != CRC64NVME {
		t.Errorf("canonical name: %q %v", a, ok)
	}
}
