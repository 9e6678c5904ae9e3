package s3api

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/s3err"
)

// FuzzDeclaredObjectChecksum: any header value either parses into a value
// of the algorithm's size (optionally "-N") or is InvalidRequest.
func FuzzDeclaredObjectChecksum(f *testing.F) {
	for _, s := range [][2]string{{"x-amz-checksum-crc32", "AAAAAA=="}, {"x-amz-checksum-crc32c", "AAAAAA==-3"}, {"x-amz-checksum-sha256", "bad"},
		{"x-amz-checksum-crc64nvme", "AAAAAAAAAAA=-0"}, {"x-amz-checksum-type", "full_object"}, {"x-amz-checksum-crc32", "AAAAAA==-99999"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		h := http.Header{}
		h.Set(name, value)
		got, err := declaredObjectChecksum(h)
		if err != nil {
			if !errors.Is(err, s3err.ErrInvalidRequest) {
				t.Fatalf("non-InvalidRequest error %v", err)
			}
			return
		}
		if got.Algorithm == "" {
			return
		}
		base, _, _ := strings.Cut(got.Value, "-")
		raw, derr := base64.StdEncoding.DecodeString(base)
		if derr != nil || len(raw) != newChecksumHash(got.Algorithm).Size() {
			t.Fatalf("accepted %q for %s", got.Value, got.Algorithm)
		}
	})
}
