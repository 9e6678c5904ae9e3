package tests

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// TestBucketStatsByClassAndUsageHeaders: in a versioned bucket with data
// in three storage classes, `cairn admin bucket stats` splits objects and
// bytes by class and reports RGW's usage map, and HeadBucket (as
// aws-sdk-go-v2 reads it) carries RGW's X-RGW-Object-Count and
// X-RGW-Bytes-Used (every stored version, as RGW counts) and, for the
// owner, the X-RGW-Quota-* headers.
func TestBucketStatsByClassAndUsageHeaders(t *testing.T) {
	g, _ := classGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	const b = "statsb"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(b),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	put := func(key string, n int, class types.StorageClass) {
		t.Helper()
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key),
			Body: strings.NewReader(strings.Repeat("x", n)), StorageClass: class}); err != nil {
			t.Fatal(err)
		}
	}
	put("k1", 100, "")                          // noncurrent STANDARD
	put("k1", 50, types.StorageClassGlacier)    // current GLACIER
	put("k2", 30, types.StorageClassStandardIa) // noncurrent STANDARD_IA once deleted
	put("k3", 7, types.StorageClassStandardIa)  // overwritten, then its version deleted
	put("k3", 9, types.StorageClassStandard)    // current STANDARD
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("k2")}); err != nil {
		t.Fatal(err)
	}
	lv, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(b), Prefix: aws.String("k3")})
	if err != nil || len(lv.Versions) != 2 {
		t.Fatalf("versions of k3: %+v %v", lv, err)
	}
	for _, v := range lv.Versions {
		if !aws.ToBool(v.IsLatest) {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("k3"), VersionId: v.VersionId}); err != nil {
				t.Fatal(err)
			}
		}
	}

	out := g.mustAdmin(t, "bucket", "stats", "--bucket", b)
	type class struct {
		NumObjects   uint64 `json:"num_objects"`
		Size         uint64 `json:"size"`
		NumVersions  uint64 `json:"num_versions"`
		VersionsSize uint64 `json:"versions_size"`
	}
	var st struct {
		class
		StorageClasses map[string]class `json:"storage_classes"`
		Usage          map[string]struct {
			Size       uint64 `json:"size"`
			SizeKB     uint64 `json:"size_kb"`
			NumObjects uint64 `json:"num_objects"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// Versions: k1 ×2, k2 and its delete marker, k3.
	if st.class != (class{2, 59, 5, 189}) {
		t.Fatalf("totals %+v:\n%s", st.class, out)
	}
	want := map[string]class{
		"STANDARD":    {1, 9, 3, 109}, // k1's old version, k2's delete marker, k3
		"GLACIER":     {1, 50, 1, 50},
		"STANDARD_IA": {0, 0, 1, 30},
	}
	if !reflect.DeepEqual(st.StorageClasses, want) {
		t.Fatalf("storage_classes %+v, want %+v:\n%s", st.StorageClasses, want, out)
	}
	if m := st.Usage["rgw.main"]; m.NumObjects != 5 || m.Size != 189 || m.SizeKB != 1 || len(st.Usage) != 1 {
		t.Fatalf("usage %+v:\n%s", st.Usage, out)
	}

	hb, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b)})
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := awsmiddleware.GetRawResponse(hb.ResultMetadata).(*smithyhttp.Response)
	if !ok {
		t.Fatal("no raw response in the HeadBucket result")
	}
	h := raw.Header
	if h.Get("X-RGW-Object-Count") != "5" || h.Get("X-RGW-Bytes-Used") != "189" {
		t.Fatalf("usage headers: count %q bytes %q", h.Get("X-RGW-Object-Count"), h.Get("X-RGW-Bytes-Used"))
	}
	for _, name := range []string{"X-RGW-Quota-User-Size", "X-RGW-Quota-User-Objects", "X-RGW-Quota-Bucket-Size", "X-RGW-Quota-Bucket-Objects"} {
		if h.Get(name) != "-1" {
			t.Errorf("%s: %q, want -1 (no quota set)", name, h.Get(name))
		}
	}
	// The user record sets no max_buckets: the gateway's default.
	if got := h.Get("X-RGW-Quota-Max-Buckets"); got != "1000" {
		t.Errorf("X-RGW-Quota-Max-Buckets %q, want max-buckets' default 1000", got)
	}
}
