package s3api

import (
	"context"
	"encoding/xml"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

func TestValidBucketName(t *testing.T) {
	for name, want := range map[string]bool{
		"abc": true, "my-bucket.data1": true, "a-b": true, strings.Repeat("a", 63): true,
		"ab": false, strings.Repeat("a", 64): false, "Abc": false, "a_b": false, "-abc": false,
		"abc-": false, "a..b": false, "a.-b": false, "192.168.1.1": false, "xn--abc": false,
		"abc-s3alias": false, "abc--ol-s3": false, "sthree-abc": false, "a b": false,
	} {
		if got := validBucketName(name); got != want {
			t.Errorf("validBucketName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestCreateBucket(t *testing.T) {
	h := newHarness(t)
	h.bucket("taken")
	for _, tc := range []struct {
		name   string
		rq     req
		status int
		code   string
	}{
		{"ok", req{method: "PUT", path: "/newbucket"}, 200, ""},
		{"bad name", req{method: "PUT", path: "/Bad_Name"}, 400, "InvalidBucketName"},
		{"short name", req{method: "PUT", path: "/ab"}, 400, "InvalidBucketName"},
		// us-east-1 (the default region): 200 for the owner (AWS's legacy
		// answer, RGW's), unless the request asks for another bucket.
		{"owned by you", req{method: "PUT", path: "/taken"}, 200, ""},
		{"owned by you, another ACL", req{method: "PUT", path: "/taken", hdr: map[string]string{"x-amz-acl": "public-read"}}, 409, "BucketAlreadyExists"},
		{"owned by other", req{method: "PUT", path: "/taken", key: bobKey}, 409, "BucketAlreadyExists"},
		{"location", req{method: "PUT", path: "/located", body: `<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>us-east-1</LocationConstraint></CreateBucketConfiguration>`}, 200, ""},
		{"empty location", req{method: "PUT", path: "/located2", body: `<CreateBucketConfiguration><LocationConstraint></LocationConstraint></CreateBucketConfiguration>`}, 200, ""},
		{"foreign location", req{method: "PUT", path: "/elsewhere", body: `<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>`}, 400, "InvalidLocationConstraint"},
		{"malformed config", req{method: "PUT", path: "/badxml", body: `<CreateBucketConfiguration><Location`}, 400, "MalformedXML"},
		{"wrong root", req{method: "PUT", path: "/badroot", body: `<Delete/>`}, 400, "MalformedXML"},
		{"shards", req{method: "PUT", path: "/sharded", hdr: map[string]string{BucketShardsHeader: "64"}}, 200, ""},
		{"bad shards", req{method: "PUT", path: "/badshards", hdr: map[string]string{BucketShardsHeader: "0"}}, 400, "InvalidArgument"},
		{"bad shards text", req{method: "PUT", path: "/badshards", hdr: map[string]string{BucketShardsHeader: "many"}}, 400, "InvalidArgument"},
		{"anonymous", req{method: "PUT", path: "/anon", key: "-"}, 403, "AccessDenied"},
		{"unknown key", req{method: "PUT", path: "/unknown", key: "NOPE"}, 403, "InvalidAccessKeyId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := h.mustDo(tc.rq, tc.status)
			if res.code() != tc.code {
				t.Fatalf("code %q, want %q: %s", res.code(), tc.code, res.body)
			}
		})
	}
	if b := h.be.buckets["sharded"]; b == nil || b.shards != 64 {
		t.Fatalf("pre-sharding header not passed: %+v", b)
	}
	if b := h.be.buckets["located"]; b == nil || b.info.Location != "us-east-1" {
		t.Fatalf("location not recorded: %+v", b)
	}
	for _, n := range []string{"Bad_Name", "ab", "badxml", "badroot", "badshards", "anon", "unknown", "elsewhere"} {
		if _, ok := h.be.buckets[n]; ok {
			t.Errorf("rejected request created bucket %q", n)
		}
	}
}

// The configured region (RGW's zonegroup api_name) is a valid constraint,
// with or without RGW's ":default-placement"; other regions and
// placements are not.
func TestCreateBucketLocationRegion(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Region = "default" })
	cfgBody := func(loc string) string {
		return `<CreateBucketConfiguration><LocationConstraint>` + loc + `</LocationConstraint></CreateBucketConfiguration>`
	}
	for loc, code := range map[string]string{
		"default": "", "default:default-placement": "", "us-east-1": "", ":default-placement": "",
		"eu-west-1": "InvalidLocationConstraint", "default:fast-placement": "InvalidLocationConstraint", "DEFAULT": "InvalidLocationConstraint",
	} {
		name := "loc-" + strings.NewReplacer(":", "-", "_", "-").Replace(strings.ToLower(loc))
		status := 200
		if code != "" {
			status = 400
		}
		if res := h.mustDo(req{method: "PUT", path: "/" + name + "x", body: cfgBody(loc)}, status); res.code() != code {
			t.Errorf("%q: %s", loc, res.body)
		}
	}
}

// x-cairn-bucket-index-shards is capped by the operator's limit.
func TestCreateBucketShardCap(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRequestShards = 100 })
	res := h.mustDo(req{method: "PUT", path: "/huge", hdr: map[string]string{BucketShardsHeader: "65521"}}, 400)
	if res.code() != "InvalidArgument" || !strings.Contains(res.body, "between 1 and 100") {
		t.Fatalf("%s", res.body)
	}
	if _, ok := h.be.buckets["huge"]; ok {
		t.Fatal("created")
	}
	h.mustDo(req{method: "PUT", path: "/capped", hdr: map[string]string{BucketShardsHeader: "100"}}, 200)
	if b := h.be.buckets["capped"]; b == nil || b.shards != 100 {
		t.Fatalf("%+v", b)
	}
}

func TestBucketOwnership(t *testing.T) {
	h := newHarness(t)
	h.bucket("alices")
	h.put("alices", "k", "data")
	for _, rq := range []req{
		{method: "GET", path: "/alices"},
		{method: "GET", path: "/alices?list-type=2"},
		{method: "HEAD", path: "/alices"},
		{method: "GET", path: "/alices?location"},
		{method: "GET", path: "/alices/k"},
		{method: "HEAD", path: "/alices/k"},
		{method: "PUT", path: "/alices/k2", body: "x"},
		{method: "DELETE", path: "/alices/k"},
		{method: "DELETE", path: "/alices"},
		{method: "POST", path: "/alices?delete", body: `<Delete><Object><Key>k</Key></Object></Delete>`,
			hdr: contentMD5(`<Delete><Object><Key>k</Key></Object></Delete>`)},
		{method: "POST", path: "/alices/k?uploads"},
		{method: "GET", path: "/alices?uploads"},
	} {
		rq.key = bobKey
		res := h.do(rq)
		if strings.HasSuffix(rq.path, "?delete") {
			// S3 decides DeleteObjects per key: 200 with an error each.
			if res.status != 200 || !strings.Contains(res.body, "<Code>AccessDenied</Code>") {
				t.Errorf("bob DeleteObjects: %d %s", res.status, res.body)
			}
			continue
		}
		if res.status != 403 {
			t.Errorf("bob %s %s: %d, want 403", rq.method, rq.path, res.status)
		}
		if rq.method != "HEAD" && res.code() != "AccessDenied" {
			t.Errorf("bob %s %s: code %q", rq.method, rq.path, res.code())
		}
	}
	// Bob cannot copy out of alice's bucket into his own either.
	h.be.CreateBucket(context.Background(), "bob", "bobs", "", 0)
	res := h.do(req{method: "PUT", path: "/bobs/stolen", key: bobKey, hdr: map[string]string{"x-amz-copy-source": "/alices/k"}})
	if res.status != 403 || res.code() != "AccessDenied" {
		t.Fatalf("cross-user copy: %d %s", res.status, res.body)
	}
	if _, ok := h.be.buckets["alices"].objects["k"]; !ok {
		t.Fatal("bob's requests changed alice's bucket")
	}
	// The admin may act on any bucket.
	h.mustDo(req{method: "GET", path: "/alices/k", key: adminKey}, 200)
	h.mustDo(req{method: "GET", path: "/alices", key: adminKey}, 200)
	// Missing buckets are NoSuchBucket.
	if res := h.mustDo(req{method: "GET", path: "/nobucket/k"}, 404); res.code() != "NoSuchBucket" {
		t.Fatal(res.body)
	}
}

func TestListBuckets(t *testing.T) {
	h := newHarness(t)
	h.bucket("b2")
	h.bucket("b1")
	h.be.CreateBucket(context.Background(), "bob", "bobs", "", 0)
	res := h.mustDo(req{method: "GET", path: "/"}, 200)
	var out struct {
		Owner   struct{ ID, DisplayName string }
		Buckets []struct{ Name, CreationDate string } `xml:"Buckets>Bucket"`
	}
	if err := xml.Unmarshal([]byte(res.body), &out); err != nil {
		t.Fatal(err)
	}
	if out.Owner.ID != "alice" || out.Owner.DisplayName != "Alice" || len(out.Buckets) != 2 ||
		out.Buckets[0].Name != "b1" || out.Buckets[1].Name != "b2" || out.Buckets[0].CreationDate != "2025-01-02T03:04:05.000Z" {
		t.Fatalf("%+v", out)
	}
	// Through the SDK, with pagination.
	c := h.client(aliceKey)
	lo, err := c.ListBuckets(context.Background(), &s3.ListBucketsInput{MaxBuckets: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	if len(lo.Buckets) != 1 || *lo.Buckets[0].Name != "b1" || aws.ToString(lo.ContinuationToken) != "b1" {
		t.Fatalf("%+v", lo)
	}
	lo, err = c.ListBuckets(context.Background(), &s3.ListBucketsInput{ContinuationToken: lo.ContinuationToken})
	if err != nil || len(lo.Buckets) != 1 || *lo.Buckets[0].Name != "b2" || lo.ContinuationToken != nil {
		t.Fatalf("%v %+v", err, lo)
	}
}

func TestBucketLifecycleSDK(t *testing.T) {
	h := newHarness(t)
	c := h.client(aliceKey)
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("sdk-bucket")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("sdk-bucket")}); err != nil {
		t.Fatal(err)
	}
	loc, err := c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("sdk-bucket")})
	if err != nil || loc.LocationConstraint != "" {
		t.Fatalf("%v %+v", err, loc)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("sdk-bucket"), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("sdk-bucket")})
	if apiCode(err) != "BucketNotEmpty" {
		t.Fatalf("delete non-empty: %v", err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("sdk-bucket"), Key: aws.String("k")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("sdk-bucket")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("sdk-bucket")})
	if apiCode(err) != "NotFound" {
		t.Fatalf("head deleted bucket: %v", err)
	}
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
