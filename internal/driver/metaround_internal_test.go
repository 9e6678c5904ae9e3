package driver

import (
	"reflect"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/authz"
	json "github.com/goccy/go-json"
)

// roundTripped gives what decoding the stored Meta gives, so a PUT's reply
// and events carry the same metadata as a later HEAD; it declines what it
// cannot copy exactly.
func TestRoundTrippedMeta(t *testing.T) {
	metas := []ObjectMeta{
		{},
		{ContentType: "application/octet-stream", Checksums: map[string]string{"CRC64NVME": "AAAAAAAAAAA="}, ChecksumType: "FULL_OBJECT"},
		{ContentType: "text/plain", ContentEncoding: "gzip", ContentDisposition: "inline", ContentLanguage: "de", CacheControl: "no-cache",
			Expires: "Thu, 01 Dec 1994 16:00:00 GMT", UserMeta: map[string]string{"a": "1", "b": ""}, Tags: map[string]string{"t": "v"},
			PartChecksums: []string{"x", "y"}, LegalHold: "ON", LockMode: "GOVERNANCE", StorageClass: "COLD"},
		{UserMeta: map[string]string{}, Tags: map[string]string{}, Checksums: map[string]string{}, PartChecksums: []string{}, StorageClass: "STANDARD"},
	}
	for i, m := range metas {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var want ObjectMeta
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		got, ok := roundTripped(m)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("meta %d: roundTripped %+v (%v), decoded %+v", i, got, ok, want)
		}
		if len(m.UserMeta) > 0 {
			got.UserMeta["a"] = "changed"
			if m.UserMeta["a"] != "1" {
				t.Fatalf("meta %d: the copy shares the caller's map", i)
			}
		}
	}
	for i, m := range []ObjectMeta{{ACL: &authz.ACL{}}, {SSE: &SSERecord{}}, {LockUntil: LockDate(time.Now())}} {
		if _, ok := roundTripped(m); ok {
			t.Fatalf("declinable meta %d taken", i)
		}
	}
}
