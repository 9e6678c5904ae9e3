package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func sdkPut(t *testing.T, c *s3.Client, bucket, key, body string) *s3.PutObjectOutput {
	t.Helper()
	out, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)})
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return out
}

func sdkGet(t *testing.T, c *s3.Client, bucket, key, vid string) (string, *s3.GetObjectOutput, error) {
	t.Helper()
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if vid != "" {
		in.VersionId = aws.String(vid)
	}
	out, err := c.GetObject(context.Background(), in)
	if err != nil {
		return "", nil, err
	}
	b, err := io.ReadAll(out.Body)
	out.Body.Close()
	return string(b), out, err
}

// responseHeader captures a header of the raw response (for errors, whose
// headers the SDK does not surface as fields).
func responseHeader(err error, name string) string {
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.Response == nil {
		return ""
	}
	return re.Response.Header.Get(name)
}

// allVersions pages through ListObjectVersions with the given page size and
// renders "key:vid[dm][*]" words.
func allVersions(t *testing.T, c *s3.Client, bucket, prefix string, page int32) []string {
	t.Helper()
	var out []string
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix), MaxKeys: aws.Int32(page)}
	for {
		res, err := c.ListObjectVersions(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		// The SDK splits versions and markers; order them back by key, then
		// newest first (ids sort newest first within a key; "null" is placed
		// by its position in the raw order, so compare only sets per page).
		type item struct {
			key, vid   string
			dm, latest bool
		}
		var items []item
		for _, v := range res.Versions {
			items = append(items, item{aws.ToString(v.Key), aws.ToString(v.VersionId), false, aws.ToBool(v.IsLatest)})
		}
		for _, m := range res.DeleteMarkers {
			items = append(items, item{aws.ToString(m.Key), aws.ToString(m.VersionId), true, aws.ToBool(m.IsLatest)})
		}
		if len(items) > int(page) {
			t.Fatalf("page of %d has %d items", page, len(items))
		}
		for _, it := range items {
			s := it.key + ":" + it.vid
			if it.dm {
				s += "[dm]"
			}
			if it.latest {
				s += "*"
			}
			out = append(out, s)
		}
		if !aws.ToBool(res.IsTruncated) {
			return out
		}
		in.KeyMarker, in.VersionIdMarker = res.NextKeyMarker, res.NextVersionIdMarker
	}
}

func TestSDKVersioningWalkthrough(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	b := aws.String("vers")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	gv, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: b})
	if err != nil || gv.Status != "" {
		t.Fatalf("never-versioned bucket: %+v %v", gv, err)
	}
	// ListObjectVersions works on an unversioned bucket: the null versions.
	sdkPut(t, c, "vers", "k", "v0")
	if got := allVersions(t, c, "vers", "", 1000); fmt.Sprint(got) != "[k:null*]" {
		t.Fatalf("unversioned versions %v", got)
	}
	// Malformed configuration: MalformedXML, nothing changed.
	_, err = c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: b,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatus("Sometimes")}})
	if apiCode(err) != "MalformedXML" {
		t.Fatalf("bad status: %v", err)
	}
	if gv, _ := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: b}); gv.Status != "" {
		t.Fatalf("status after a malformed put: %q", gv.Status)
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: b,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	if gv, _ := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: b}); gv.Status != types.BucketVersioningStatusEnabled {
		t.Fatalf("status %q", gv.Status)
	}
	v1 := aws.ToString(sdkPut(t, c, "vers", "k", "v1").VersionId)
	v2 := aws.ToString(sdkPut(t, c, "vers", "k", "v2").VersionId)
	if v1 == "" || v1 == "null" || v2 >= v1 {
		t.Fatalf("version ids %q %q", v1, v2)
	}
	for vid, want := range map[string]string{"": "v2", v1: "v1", v2: "v2", "null": "v0"} {
		body, out, err := sdkGet(t, c, "vers", "k", vid)
		if err != nil || body != want {
			t.Fatalf("get %q: %q %v", vid, body, err)
		}
		if vid != "" && aws.ToString(out.VersionId) != vid {
			t.Fatalf("get %q answers version %q", vid, aws.ToString(out.VersionId))
		}
	}
	if h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("k"), VersionId: aws.String(v1)}); err != nil || aws.ToInt64(h.ContentLength) != 2 || aws.ToString(h.VersionId) != v1 {
		t.Fatalf("head v1: %+v %v", h, err)
	}
	if _, err := c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: aws.String("k"), VersionId: aws.String(v1)}); err != nil {
		t.Fatalf("acl of v1: %v", err)
	}
	if _, err := c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: aws.String("k"), VersionId: aws.String(strings.Repeat("0", 32))}); apiCode(err) != "NoSuchVersion" {
		t.Fatalf("acl of an unknown version: %v", err)
	}
	// Bad input.
	if _, _, err := sdkGet(t, c, "vers", "k", strings.Repeat("0", 32)); apiCode(err) != "NoSuchVersion" {
		t.Fatalf("unknown version: %v", err)
	}
	if _, _, err := sdkGet(t, c, "vers", "k", "not-a-version"); apiCode(err) != "InvalidArgument" {
		t.Fatalf("malformed version: %v", err)
	}
	// Copy an old version: x-amz-copy-source-version-id names it.
	cp, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copy"), CopySource: aws.String("vers/k?versionId=" + v1)})
	if err != nil || aws.ToString(cp.CopySourceVersionId) != v1 || aws.ToString(cp.VersionId) == "" {
		t.Fatalf("copy of v1: %+v %v", cp, err)
	}
	if body, _, _ := sdkGet(t, c, "vers", "copy", ""); body != "v1" {
		t.Fatalf("copy holds %q", body)
	}
	// Delete: a marker; GET says NoSuchKey with x-amz-delete-marker.
	del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("k")})
	if err != nil || !aws.ToBool(del.DeleteMarker) || aws.ToString(del.VersionId) == "" {
		t.Fatalf("delete: %+v %v", del, err)
	}
	dm := aws.ToString(del.VersionId)
	_, _, err = sdkGet(t, c, "vers", "k", "")
	if apiCode(err) != "NoSuchKey" || responseHeader(err, "x-amz-delete-marker") != "true" || responseHeader(err, "x-amz-version-id") != dm {
		t.Fatalf("get behind a marker: %v (%q %q)", err, responseHeader(err, "x-amz-delete-marker"), responseHeader(err, "x-amz-version-id"))
	}
	if _, _, err := sdkGet(t, c, "vers", "k", dm); apiCode(err) != "MethodNotAllowed" || responseHeader(err, "x-amz-delete-marker") != "true" {
		t.Fatalf("get of a marker by id: %v", err)
	}
	lo, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b})
	if err != nil || len(lo.Contents) != 1 || aws.ToString(lo.Contents[0].Key) != "copy" {
		t.Fatalf("ListObjectsV2 shows %+v %v", lo, err)
	}
	want := fmt.Sprint(sortVersions([]string{"copy:" + aws.ToString(cp.VersionId) + "*", "k:" + v2, "k:" + v1, "k:null", "k:" + dm + "[dm]*"}))
	for _, page := range []int32{1000, 1, 2, 3} {
		got := allVersions(t, c, "vers", "", page)
		// Each page lists versions, then markers; sort them back per key.
		if fmt.Sprint(sortVersions(got)) != want {
			t.Fatalf("versions by %d: %v\nwant %v", page, got, want)
		}
	}
	// DeleteObjects with version ids: remove the marker and v2.
	dres, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: b, Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("k"), VersionId: aws.String(dm)}, {Key: aws.String("k"), VersionId: aws.String(v2)},
	}}})
	if err != nil || len(dres.Deleted) != 2 || len(dres.Errors) != 0 {
		t.Fatalf("delete objects: %+v %v", dres, err)
	}
	if d := dres.Deleted[0]; !aws.ToBool(d.DeleteMarker) || aws.ToString(d.DeleteMarkerVersionId) != dm {
		t.Fatalf("deleted marker reported as %+v", d)
	}
	if body, out, err := sdkGet(t, c, "vers", "k", ""); err != nil || body != "v1" || aws.ToString(out.VersionId) != v1 {
		t.Fatalf("after removing the marker and v2: %q %v", body, err)
	}
	// Suspended: the null version is replaced, deletes never pile up.
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: b,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended}}); err != nil {
		t.Fatal(err)
	}
	// AWS answers a Suspended bucket's PUT without x-amz-version-id; the
	// version is the null one (GET names it).
	if vid := sdkPut(t, c, "vers", "k", "s1").VersionId; vid != nil {
		t.Fatalf("suspended put version %q", aws.ToString(vid))
	}
	if _, out, err := sdkGet(t, c, "vers", "k", ""); err != nil || aws.ToString(out.VersionId) != "null" {
		t.Fatalf("suspended get: %v", err)
	}
	for i := 0; i < 2; i++ {
		d, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("k")})
		if err != nil || !aws.ToBool(d.DeleteMarker) || aws.ToString(d.VersionId) != "null" {
			t.Fatalf("suspended delete: %+v %v", d, err)
		}
	}
	if got := sortVersions(allVersions(t, c, "vers", "k", 1000)); fmt.Sprint(got) != fmt.Sprint([]string{"k:" + v1, "k:null[dm]*"}) {
		t.Fatalf("suspended versions %v", got)
	}
}

// sortVersions sorts rendered versions: the SDK returns Versions and
// DeleteMarkers as two lists, so the interleaved order is not visible here
// (internal/driver and internal/bucketindex tests check it).
func sortVersions(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}

func TestSDKConditionalWritesAndCompleteRetry(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	b := aws.String("cond")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	put := func(body string, mod func(*s3.PutObjectInput)) (*s3.PutObjectOutput, error) {
		in := &s3.PutObjectInput{Bucket: b, Key: aws.String("k"), Body: strings.NewReader(body)}
		mod(in)
		return c.PutObject(ctx, in)
	}
	if _, err := put("a", func(in *s3.PutObjectInput) { in.IfMatch = aws.String("*") }); apiCode(err) != "NoSuchKey" {
		t.Fatalf("If-Match * on absent: %v", err)
	}
	first, err := put("a", func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := put("b", func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") }); apiCode(err) != "PreconditionFailed" {
		t.Fatalf("If-None-Match * on present: %v", err)
	}
	if _, err := put("b", func(in *s3.PutObjectInput) { in.IfMatch = aws.String(`"0123"`) }); apiCode(err) != "PreconditionFailed" {
		t.Fatalf("If-Match wrong etag: %v", err)
	}
	second, err := put("b", func(in *s3.PutObjectInput) { in.IfMatch = first.ETag })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("k"), IfMatch: first.ETag}); apiCode(err) != "PreconditionFailed" {
		t.Fatalf("delete If-Match stale: %v", err)
	}
	dres, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: b, Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("k"), ETag: first.ETag}}}})
	if err != nil || len(dres.Errors) != 1 || aws.ToString(dres.Errors[0].Code) != "PreconditionFailed" {
		t.Fatalf("DeleteObjects with a stale ETag: %+v %v", dres, err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("k"), IfMatch: second.ETag}); err != nil {
		t.Fatalf("delete If-Match current: %v", err)
	}

	// CompleteMultipartUpload: If-None-Match at link time, and a retry
	// whose first reply was lost.
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: b,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	upload := func() (*string, *types.CompletedMultipartUpload) {
		cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("mp")})
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("mp"), UploadId: cu.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("part"))})
		if err != nil {
			t.Fatal(err)
		}
		return cu.UploadId, &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: p.ETag}}}
	}
	id, parts := upload()
	// The first reply is lost: the client sees a transport error.
	lose := func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Deserialize.Add(middleware.DeserializeMiddlewareFunc("lose", func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleDeserialize(ctx, in)
				if err == nil {
					if r, ok := out.RawResponse.(*smithyhttp.Response); ok && r.StatusCode == http.StatusOK {
						return out, md, fmt.Errorf("reply lost")
					}
				}
				return out, md, err
			}), middleware.After)
		})
		o.RetryMaxAttempts = 1
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("mp"), UploadId: id, MultipartUpload: parts}, lose); err == nil {
		t.Fatal("the reply was not lost")
	}
	done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("mp"), UploadId: id, MultipartUpload: parts})
	if err != nil || aws.ToString(done.VersionId) == "" {
		t.Fatalf("retried complete: %+v %v", done, err)
	}
	again, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("mp"), UploadId: id, MultipartUpload: parts})
	if err != nil || aws.ToString(again.ETag) != aws.ToString(done.ETag) || aws.ToString(again.VersionId) != aws.ToString(done.VersionId) {
		t.Fatalf("second retry: %+v %v", again, err)
	}
	if got := allVersions(t, c, "cond", "mp", 1000); len(got) != 1 {
		t.Fatalf("versions after retries %v", got)
	}
	id2, parts2 := upload()
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("mp"), UploadId: id2, MultipartUpload: parts2, IfNoneMatch: aws.String("*")}); apiCode(err) != "PreconditionFailed" {
		t.Fatalf("complete If-None-Match on present: %v", err)
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("mp"), UploadId: id2, MultipartUpload: parts2, IfMatch: done.ETag}); err != nil {
		t.Fatalf("complete If-Match current: %v", err)
	}
}
