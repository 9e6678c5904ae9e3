package tests

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

func sdkClient(g *Gateway, ak, sk string) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(g.Endpoint),
		Region:       "us-east-1",
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(ak, sk, ""),
		// Default checksum behaviour of the current SDK (when_supported) is
		// deliberately left on: CRC32 headers and aws-chunked trailers.
	})
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestSDKObjectLifecycle(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()

	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("sdk-bucket")}); err != nil {
		t.Fatal(err)
	}
	// The owner's re-create: 200 in us-east-1 / RGW's "default" (AWS's
	// legacy answer, RGW's); tests/conform_test.go checks the other cases.
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("sdk-bucket")}); err != nil {
		t.Fatalf("second create: %v", err)
	}
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("Bad_Name")}); apiCode(err) != "InvalidBucketName" {
		t.Fatalf("bad name: %v", err)
	}

	keys := []string{"a.txt", "dir/b.txt", "dir/c.txt", "dir/sub/d.txt", "e f+g%h.txt", "ünï/cødé"}
	for _, k := range keys {
		body := []byte("content of " + k)
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("sdk-bucket"), Key: aws.String(k), Body: bytes.NewReader(body),
			ContentType: aws.String("text/plain"), Metadata: map[string]string{"color": "blue"}})
		if err != nil {
			t.Fatalf("put %q: %v", k, err)
		}
		sum := md5.Sum(body)
		if strings.Trim(aws.ToString(out.ETag), `"`) != hex.EncodeToString(sum[:]) {
			t.Fatalf("etag %s", aws.ToString(out.ETag))
		}
	}
	get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("sdk-bucket"), Key: aws.String("e f+g%h.txt")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(get.Body)
	get.Body.Close()
	if string(b) != "content of e f+g%h.txt" || aws.ToString(get.ContentType) != "text/plain" || get.Metadata["color"] != "blue" {
		t.Fatalf("get: %q %v %v", b, aws.ToString(get.ContentType), get.Metadata)
	}
	rng, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("sdk-bucket"), Key: aws.String("a.txt"), Range: aws.String("bytes=-4")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(rng.Body)
	rng.Body.Close()
	if string(b) != ".txt" {
		t.Fatalf("suffix range: %q", b)
	}

	// Listing v2 with a delimiter.
	lo, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("sdk-bucket"), Prefix: aws.String("dir/"), Delimiter: aws.String("/")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range lo.Contents {
		got = append(got, aws.ToString(o.Key))
	}
	if strings.Join(got, ",") != "dir/b.txt,dir/c.txt" || len(lo.CommonPrefixes) != 1 || aws.ToString(lo.CommonPrefixes[0].Prefix) != "dir/sub/" {
		t.Fatalf("list: %v %v", got, lo.CommonPrefixes)
	}
	// Paging through everything with max-keys 2.
	var all []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String("sdk-bucket"), MaxKeys: aws.Int32(2)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			all = append(all, aws.ToString(o.Key))
		}
	}
	want := append([]string(nil), keys...)
	sort.Strings(want)
	if strings.Join(all, "|") != strings.Join(want, "|") {
		t.Fatalf("paged list %v want %v", all, want)
	}

	// Copy with metadata replacement.
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("sdk-bucket"), Key: aws.String("copy.txt"),
		CopySource: aws.String("sdk-bucket/a.txt"), MetadataDirective: types.MetadataDirectiveReplace,
		Metadata: map[string]string{"color": "red"}}); err != nil {
		t.Fatal(err)
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("sdk-bucket"), Key: aws.String("copy.txt")})
	if err != nil || h.Metadata["color"] != "red" || aws.ToInt64(h.ContentLength) != int64(len("content of a.txt")) {
		t.Fatalf("head copy: %v %+v", err, h)
	}

	// Conditional GET.
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("sdk-bucket"), Key: aws.String("a.txt"), IfMatch: aws.String(`"0000"`)})
	if apiCode(err) != "PreconditionFailed" {
		t.Fatalf("if-match: %v", err)
	}

	// Delete, multi-delete, missing keys.
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("sdk-bucket"), Key: aws.String("a.txt")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("sdk-bucket"), Key: aws.String("a.txt")}); apiCode(err) != "NoSuchKey" {
		t.Fatalf("get deleted: %v", err)
	}
	var objs []types.ObjectIdentifier
	for _, k := range append(keys[1:], "copy.txt", "never-existed") {
		objs = append(objs, types.ObjectIdentifier{Key: aws.String(k)})
	}
	do, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("sdk-bucket"), Delete: &types.Delete{Objects: objs}})
	if err != nil || len(do.Errors) != 0 || len(do.Deleted) != len(objs) {
		t.Fatalf("delete objects: %v %+v", err, do)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("sdk-bucket")}); err != nil {
		t.Fatalf("delete bucket: %v", err)
	}
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("sdk-bucket")}); err == nil {
		t.Fatal("bucket still there")
	}
}

func TestSDKMultipart(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	bucket := aws.String("mp-bucket")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bucket, Key: aws.String("big")})
	if err != nil {
		t.Fatal(err)
	}
	partSize := 5 << 20
	var full bytes.Buffer
	var parts []types.CompletedPart
	var md5s []byte
	for i := 1; i <= 3; i++ {
		n := partSize
		if i == 3 {
			n = 1234
		}
		data := bytes.Repeat([]byte{byte('a' + i)}, n)
		full.Write(data)
		up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: bucket, Key: aws.String("big"), UploadId: cu.UploadId,
			PartNumber: aws.Int32(int32(i)), Body: bytes.NewReader(data)})
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		s := md5.Sum(data)
		md5s = append(md5s, s[:]...)
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i)), ETag: up.ETag, ChecksumCRC32: up.ChecksumCRC32})
	}
	lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: bucket, Key: aws.String("big"), UploadId: cu.UploadId})
	if err != nil || len(lp.Parts) != 3 {
		t.Fatalf("list parts: %v %d", err, len(lp.Parts))
	}
	comp, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: bucket, Key: aws.String("big"), UploadId: cu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		t.Fatal(err)
	}
	s := md5.Sum(md5s)
	if want := fmt.Sprintf("%s-3", hex.EncodeToString(s[:])); strings.Trim(aws.ToString(comp.ETag), `"`) != want {
		t.Fatalf("etag %s want %s", aws.ToString(comp.ETag), want)
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("big")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if !bytes.Equal(b, full.Bytes()) {
		t.Fatalf("multipart content differs: %d vs %d bytes", len(b), full.Len())
	}
	// A range across the part boundary.
	r, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("big"), Range: aws.String(fmt.Sprintf("bytes=%d-%d", partSize-2, partSize+1))})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(r.Body)
	r.Body.Close()
	if string(b) != "bbcc" {
		t.Fatalf("cross-part range %q", b)
	}
	// GET and HEAD by part number (what part-wise downloaders use): each
	// part's bytes, its range and the part count.
	for i := 1; i <= 3; i++ {
		start, n := int64(i-1)*int64(partSize), int64(partSize)
		if i == 3 {
			n = 1234
		}
		pg, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("big"), PartNumber: aws.Int32(int32(i))})
		if err != nil {
			t.Fatalf("get part %d: %v", i, err)
		}
		b, _ = io.ReadAll(pg.Body)
		pg.Body.Close()
		if !bytes.Equal(b, full.Bytes()[start:start+n]) || aws.ToInt32(pg.PartsCount) != 3 ||
			aws.ToString(pg.ContentRange) != fmt.Sprintf("bytes %d-%d/%d", start, start+n-1, full.Len()) {
			t.Fatalf("part %d: %d bytes, parts count %d, range %q", i, len(b), aws.ToInt32(pg.PartsCount), aws.ToString(pg.ContentRange))
		}
		hd, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String("big"), PartNumber: aws.Int32(int32(i))})
		if err != nil || aws.ToInt64(hd.ContentLength) != n || aws.ToInt32(hd.PartsCount) != 3 {
			t.Fatalf("head part %d: %v, length %d", i, err, aws.ToInt64(hd.ContentLength))
		}
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("big"), PartNumber: aws.Int32(4)}); apiCode(err) != "InvalidPartNumber" {
		t.Fatalf("part 4 of 3: %v", err)
	}
	// Too-small middle part.
	cu2, _ := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bucket, Key: aws.String("small")})
	var p2 []types.CompletedPart
	for i := 1; i <= 2; i++ {
		up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: bucket, Key: aws.String("small"), UploadId: cu2.UploadId,
			PartNumber: aws.Int32(int32(i)), Body: bytes.NewReader([]byte("tiny"))})
		if err != nil {
			t.Fatal(err)
		}
		p2 = append(p2, types.CompletedPart{PartNumber: aws.Int32(int32(i)), ETag: up.ETag})
	}
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: bucket, Key: aws.String("small"), UploadId: cu2.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: p2}})
	if apiCode(err) != "EntityTooSmall" {
		t.Fatalf("small parts: %v", err)
	}
	if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: bucket, Key: aws.String("small"), UploadId: cu2.UploadId}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: bucket, Key: aws.String("small"), UploadId: cu2.UploadId}); apiCode(err) != "NoSuchUpload" {
		t.Fatalf("aborted upload: %v", err)
	}
}

func TestSDKPresignAndUsers(t *testing.T) {
	g := StartGateway(t)
	ctx := context.Background()
	out, err := g.Admin("user", "create", "--uid", "alice", "--display-name", "Alice")
	if err != nil {
		t.Fatal(err)
	}
	ak, sk := jsonField(t, out, "access_key"), jsonField(t, out, "secret_key")
	alice := sdkClient(g, ak, sk)
	admin := sdkClient(g, g.AccessKey, g.SecretKey)
	if _, err := alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("alice-b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("alice-b")}); apiCode(err) != "BucketAlreadyExists" {
		t.Fatalf("other owner's name: %v", err)
	}
	if _, err := alice.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("alice-b"), Key: aws.String("k"), Body: strings.NewReader("v")}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("admin-b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("admin-b"), Key: aws.String("k"), Body: strings.NewReader("v")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("foreign bucket: %v", err)
	}
	lb, err := alice.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(lb.Buckets) != 1 || aws.ToString(lb.Buckets[0].Name) != "alice-b" {
		t.Fatalf("alice's buckets: %v %+v", err, lb)
	}

	ps := s3.NewPresignClient(alice)
	req, err := ps.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("alice-b"), Key: aws.String("k")}, s3.WithPresignExpires(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(req.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "v" {
		t.Fatalf("presigned get: %d %q", resp.StatusCode, body)
	}
	tampered := strings.Replace(req.URL, "alice-b/k", "alice-b/x", 1)
	resp, err = http.Get(tampered)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("tampered presign: %d", resp.StatusCode)
	}
	// Anonymous requests are denied.
	resp, err = http.Get(g.Endpoint + "/alice-b/k")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("anonymous: %d", resp.StatusCode)
	}
	// Bad secret.
	bad := sdkClient(g, ak, "wrong-secret-wrong-secret-wrong-secret!!")
	if _, err := bad.ListBuckets(ctx, &s3.ListBucketsInput{}); apiCode(err) != "SignatureDoesNotMatch" {
		t.Fatalf("bad secret: %v", err)
	}
}
