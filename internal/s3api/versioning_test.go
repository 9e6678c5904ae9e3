package s3api

import (
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
)

// versionedFake adds the versioning methods to the fake backend: bucket
// states, and a canned ListObjectVersions result so the handler's XML is
// under test.
type versionedFake struct {
	*fakeBackend
	status  map[string]string
	lastIn  driver.ListVersionsInput
	listRes driver.ListVersionsResult
}

func (v *versionedFake) PutBucketVersioning(ctx context.Context, bucket, status string) error {
	v.status[bucket] = status
	return nil
}
func (v *versionedFake) GetBucketVersioning(ctx context.Context, bucket string) (string, error) {
	return v.status[bucket], nil
}
func (v *versionedFake) ListObjectVersions(ctx context.Context, in driver.ListVersionsInput) (driver.ListVersionsResult, error) {
	v.lastIn = in
	return v.listRes, nil
}
func (v *versionedFake) GetObjectVersion(ctx context.Context, bucket, key, vid string, rng *driver.Range) (driver.ObjectInfo, io.ReadCloser, error) {
	if vid == "dm" {
		return driver.ObjectInfo{}, nil, &driver.DeleteMarkerError{Err: driver.ErrMethodNotAllowed, VersionID: "dm", ModTime: time.Unix(1e9, 0)}
	}
	return v.fakeBackend.GetObject(ctx, bucket, key, rng)
}
func (v *versionedFake) HeadObjectVersion(ctx context.Context, bucket, key, vid string) (driver.ObjectInfo, error) {
	info, rd, err := v.GetObjectVersion(ctx, bucket, key, vid, nil)
	if rd != nil {
		rd.Close()
	}
	return info, err
}
func (v *versionedFake) DeleteObjectVersion(ctx context.Context, in driver.DeleteObjectInput) (driver.DeleteResult, error) {
	return driver.DeleteResult{VersionID: "m1", DeleteMarker: true}, nil
}
func (v *versionedFake) CompleteMultipartUploadCond(ctx context.Context, bucket, key, id string, parts []driver.CompletePart, c driver.Conditions) (driver.ObjectInfo, error) {
	return v.fakeBackend.CompleteMultipartUpload(ctx, bucket, key, id, parts)
}

func newVersionedHarness(t *testing.T) (*harness, *versionedFake) {
	var vf *versionedFake
	h := newHarness(t, func(c *Config) {
		vf = &versionedFake{fakeBackend: c.Backend.(*fakeBackend), status: map[string]string{}}
		c.Backend = vf
	})
	return h, vf
}

func TestPutBucketVersioningValidation(t *testing.T) {
	h, vf := newVersionedHarness(t)
	h.bucket("b")
	const ns = ` xmlns="http://s3.amazonaws.com/doc/2006-03-01/"`
	for _, tc := range []struct {
		body   string
		status int
		code   string
	}{
		{`<VersioningConfiguration` + ns + `><Status>Enabled</Status>`, 400, "MalformedXML"}, // truncated
		{`<VersioningConfiguration` + ns + `><Status>enabled</Status></VersioningConfiguration>`, 400, "MalformedXML"},
		{`<VersioningConfiguration` + ns + `></VersioningConfiguration>`, 400, "MalformedXML"},
		{`<VersioningConfiguration` + ns + `><Status>Enabled</Status><MfaDelete>Maybe</MfaDelete></VersioningConfiguration>`, 400, "MalformedXML"},
		{`<VersioningConfiguration` + ns + `><Status>Enabled</Status><MfaDelete>Enabled</MfaDelete></VersioningConfiguration>`, 501, "NotImplemented"},
	} {
		res := h.do(req{method: "PUT", path: "/b?versioning", body: tc.body})
		if res.status != tc.status || res.code() != tc.code {
			t.Fatalf("%s: %d %s", tc.body, res.status, res.body)
		}
		if vf.status["b"] != "" {
			t.Fatalf("%s changed the state to %q", tc.body, vf.status["b"])
		}
	}
	if res := h.mustDo(req{method: "GET", path: "/b?versioning"}, 200); strings.Contains(res.body, "<Status>") {
		t.Fatalf("never-versioned bucket: %s", res.body)
	}
	h.mustDo(req{method: "PUT", path: "/b?versioning", body: `<VersioningConfiguration` + ns + `><Status>Suspended</Status><MfaDelete>Disabled</MfaDelete></VersioningConfiguration>`}, 200)
	if res := h.mustDo(req{method: "GET", path: "/b?versioning"}, 200); !strings.Contains(res.body, "<Status>Suspended</Status>") {
		t.Fatalf("after suspend: %s", res.body)
	}
	// Bob does not own the bucket.
	if res := h.do(req{method: "PUT", path: "/b?versioning", key: bobKey, body: `<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>`}); res.status != http.StatusForbidden {
		t.Fatalf("bob: %d %s", res.status, res.body)
	}
}

func TestListObjectVersionsXML(t *testing.T) {
	h, vf := newVersionedHarness(t)
	h.bucket("b")
	mt := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	vf.listRes = driver.ListVersionsResult{
		Versions: []driver.ObjectInfo{
			{Key: "a b+c", VersionID: "v2", IsLatest: true, DeleteMarker: true, ModTime: mt, Owner: "alice"},
			{Key: "a b+c", VersionID: "v1", ETag: "abc", Size: 3, ModTime: mt, Owner: "alice"},
			{Key: "z", VersionID: "", ETag: "def", Size: 1, IsLatest: true, ModTime: mt, Owner: "alice"},
		},
		CommonPrefixes: []string{"p q/"},
		IsTruncated:    true, NextKeyMarker: "z", NextVersionIDMarker: "null",
	}
	res := h.mustDo(req{method: "GET", path: "/b?versions&prefix=a%20&delimiter=/&key-marker=a&version-id-marker=v9&max-keys=3&encoding-type=url"}, 200)
	if vf.lastIn.Prefix != "a " || vf.lastIn.Delimiter != "/" || vf.lastIn.KeyMarker != "a" || vf.lastIn.VersionIDMarker != "v9" || vf.lastIn.MaxKeys != 3 {
		t.Fatalf("input %+v", vf.lastIn)
	}
	// Versions and markers interleaved in the listing's order.
	i1, i2, i3 := strings.Index(res.body, "<DeleteMarker>"), strings.Index(res.body, "<Version>"), strings.LastIndex(res.body, "<Version>")
	if i1 < 0 || i2 < i1 || i3 == i2 {
		t.Fatalf("order: %s", res.body)
	}
	var out struct {
		XMLName             xml.Name `xml:"ListVersionsResult"`
		KeyMarker           string
		NextKeyMarker       string
		NextVersionIdMarker string
		EncodingType        string
		IsTruncated         bool
		DeleteMarker        []struct{ Key, VersionId string }
		Version             []struct {
			Key, VersionId, ETag, StorageClass string
			Size                               int64
			IsLatest                           bool
		}
		CommonPrefixes []struct{ Prefix string }
	}
	if err := xml.Unmarshal([]byte(res.body), &out); err != nil {
		t.Fatal(err)
	}
	if out.EncodingType != "url" || out.DeleteMarker[0].Key != "a+b%2Bc" || out.Version[0].ETag != `"abc"` ||
		out.Version[1].VersionId != "null" || !out.Version[1].IsLatest || out.Version[0].IsLatest ||
		out.CommonPrefixes[0].Prefix != "p+q%2F" || !out.IsTruncated || out.NextKeyMarker != "z" || out.NextVersionIdMarker != "null" {
		t.Fatalf("%+v\n%s", out, res.body)
	}
	for _, tc := range []struct{ path, code string }{
		{"/b?versions&version-id-marker=v1", "InvalidArgument"},
		{"/b?versions&max-keys=-1", "InvalidArgument"},
		{"/b?versions&encoding-type=base64", "InvalidArgument"},
	} {
		if res := h.do(req{method: "GET", path: tc.path}); res.code() != tc.code {
			t.Fatalf("%s: %d %s", tc.path, res.status, res.body)
		}
	}
}

func TestMarkerHeadersAndDeleteHeaders(t *testing.T) {
	h, _ := newVersionedHarness(t)
	h.bucket("b")
	res := h.do(req{method: "GET", path: "/b/k?versionId=dm"})
	if res.status != 405 || res.code() != "MethodNotAllowed" || res.header.Get("x-amz-delete-marker") != "true" ||
		res.header.Get("x-amz-version-id") != "dm" || res.header.Get("Last-Modified") == "" {
		t.Fatalf("GET of a marker: %d %v %s", res.status, res.header, res.body)
	}
	res = h.mustDo(req{method: "DELETE", path: "/b/k"}, 204)
	if res.header.Get("x-amz-delete-marker") != "true" || res.header.Get("x-amz-version-id") != "m1" {
		t.Fatalf("DELETE headers %v", res.header)
	}
	if res := h.do(req{method: "GET", path: "/b/k?versionId="}); res.code() != "InvalidArgument" {
		t.Fatalf("empty versionId: %d %s", res.status, res.body)
	}
}
