package s3api

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func TestMultipartSDK(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		var opt func(*harness)
		if tlsOn {
			opt = withTLS
		}
		h := newHarnessOpts(t, opt)
		h.be.minPart = 4 // small parts keep the test fast; the rule is the backend's
		h.bucket("b")
		c := h.client(aliceKey)
		ctx := context.Background()
		key := "multi part/ключ"
		cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
			Bucket: aws.String("b"), Key: aws.String(key), ContentType: aws.String("text/x-test"),
			Metadata: map[string]string{"m": "v"},
		})
		if err != nil {
			t.Fatal(err)
		}
		parts := [][]byte{[]byte("part-one-"), []byte("part-two-"), []byte("end")}
		var done []types.CompletedPart
		var sums []byte
		for i, p := range parts {
			up, err := c.UploadPart(ctx, &s3.UploadPartInput{
				Bucket: aws.String("b"), Key: aws.String(key), UploadId: cr.UploadId,
				PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p),
			})
			if err != nil {
				t.Fatalf("tls=%v part %d: %v", tlsOn, i+1, err)
			}
			s := md5.Sum(p)
			if *up.ETag != `"`+hex.EncodeToString(s[:])+`"` {
				t.Fatalf("part etag %s", *up.ETag)
			}
			sums = append(sums, s[:]...)
			done = append(done, types.CompletedPart{ETag: up.ETag, PartNumber: aws.Int32(int32(i + 1)), ChecksumCRC32: up.ChecksumCRC32})
		}
		lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("b"), Key: aws.String(key), UploadId: cr.UploadId, MaxParts: aws.Int32(2)})
		if err != nil || len(lp.Parts) != 2 || !aws.ToBool(lp.IsTruncated) || aws.ToString(lp.NextPartNumberMarker) != "2" {
			t.Fatalf("list parts: %v %+v", err, lp)
		}
		lu, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("b")})
		if err != nil || len(lu.Uploads) != 1 || *lu.Uploads[0].Key != key || *lu.Uploads[0].UploadId != *cr.UploadId {
			t.Fatalf("list uploads: %v %+v", err, lu)
		}
		co, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket: aws.String("b"), Key: aws.String(key), UploadId: cr.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: done},
		})
		if err != nil {
			t.Fatal(err)
		}
		s := md5.Sum(sums)
		if want := fmt.Sprintf(`"%s-3"`, hex.EncodeToString(s[:])); *co.ETag != want {
			t.Fatalf("etag %s, want %s", *co.ETag, want)
		}
		get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(get.Body)
		get.Body.Close()
		if string(data) != "part-one-part-two-end" || aws.ToString(get.ContentType) != "text/x-test" || get.Metadata["m"] != "v" {
			t.Fatalf("object %q %v %v", data, get.ContentType, get.Metadata)
		}
		// Abort of a finished upload: NoSuchUpload.
		_, err = c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("b"), Key: aws.String(key), UploadId: cr.UploadId})
		if apiCode(err) != "NoSuchUpload" {
			t.Fatalf("abort: %v", err)
		}
	}
}

func TestMultipartErrors(t *testing.T) {
	h := newHarness(t)
	h.bucket("b")
	res := h.mustDo(req{method: "POST", path: "/b/k?uploads"}, 200)
	var init struct{ UploadId string }
	xml.Unmarshal([]byte(res.body), &init)
	id := init.UploadId
	h.mustDo(req{method: "PUT", path: "/b/k?partNumber=1&uploadId=" + id, body: strings.Repeat("a", 10)}, 200)
	h.mustDo(req{method: "PUT", path: "/b/k?partNumber=2&uploadId=" + id, body: "b"}, 200)
	etag1 := md5hex([]byte(strings.Repeat("a", 10)))
	etag2 := md5hex([]byte("b"))
	part := func(n int, etag string) string {
		return fmt.Sprintf("<Part><PartNumber>%d</PartNumber><ETag>\"%s\"</ETag></Part>", n, etag)
	}
	complete := func(body string) string { return "<CompleteMultipartUpload>" + body + "</CompleteMultipartUpload>" }
	for _, tc := range []struct {
		name   string
		rq     req
		status int
		code   string
	}{
		{"part 0", req{method: "PUT", path: "/b/k?partNumber=0&uploadId=" + id, body: "x"}, 400, "InvalidArgument"},
		{"part 10001", req{method: "PUT", path: "/b/k?partNumber=10001&uploadId=" + id, body: "x"}, 400, "InvalidArgument"},
		{"part nan", req{method: "PUT", path: "/b/k?partNumber=one&uploadId=" + id, body: "x"}, 400, "InvalidArgument"},
		{"unknown upload", req{method: "PUT", path: "/b/k?partNumber=1&uploadId=nope", body: "x"}, 404, "NoSuchUpload"},
		{"malformed xml", req{method: "POST", path: "/b/k?uploadId=" + id, body: "<CompleteMultipartUpload><Part>"}, 400, "MalformedXML"},
		{"empty body", req{method: "POST", path: "/b/k?uploadId=" + id}, 400, "MalformedXML"},
		{"no parts", req{method: "POST", path: "/b/k?uploadId=" + id, body: complete("")}, 400, "MalformedXML"},
		{"order", req{method: "POST", path: "/b/k?uploadId=" + id, body: complete(part(2, etag2) + part(1, etag1))}, 400, "InvalidPartOrder"},
		{"duplicate", req{method: "POST", path: "/b/k?uploadId=" + id, body: complete(part(1, etag1) + part(1, etag1))}, 400, "InvalidPartOrder"},
		{"wrong etag", req{method: "POST", path: "/b/k?uploadId=" + id, body: complete(part(1, "00") + part(2, etag2))}, 400, "InvalidPart"},
		{"missing part", req{method: "POST", path: "/b/k?uploadId=" + id, body: complete(part(3, etag2))}, 400, "InvalidPart"},
		{"list parts unknown", req{method: "GET", path: "/b/k?uploadId=nope"}, 404, "NoSuchUpload"},
		{"abort unknown", req{method: "DELETE", path: "/b/k?uploadId=nope"}, 404, "NoSuchUpload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := h.mustDo(tc.rq, tc.status)
			if res.code() != tc.code {
				t.Fatalf("code %q, want %q: %s", res.code(), tc.code, res.body)
			}
		})
	}
	// Part 1 is 10 bytes, below the 5 MiB minimum for non-last parts.
	res = h.mustDo(req{method: "POST", path: "/b/k?uploadId=" + id, body: complete(part(1, etag1) + part(2, etag2))}, 400)
	if res.code() != "EntityTooSmall" {
		t.Fatal(res.body)
	}
	if len(h.be.buckets["b"].objects) != 0 {
		t.Fatal("failed completes created an object")
	}
	h.mustDo(req{method: "DELETE", path: "/b/k?uploadId=" + id}, 204)
}

func TestUploadPartCopy(t *testing.T) {
	h := newHarness(t)
	h.be.minPart = 1
	h.bucket("b")
	h.put("b", "src", "0123456789")
	res := h.mustDo(req{method: "POST", path: "/b/dst?uploads"}, 200)
	var init struct{ UploadId string }
	xml.Unmarshal([]byte(res.body), &init)
	id := init.UploadId
	copyPart := func(n int, hdr map[string]string) resp {
		return h.do(req{method: "PUT", path: fmt.Sprintf("/b/dst?partNumber=%d&uploadId=%s", n, id), hdr: hdr})
	}
	res = copyPart(1, map[string]string{"x-amz-copy-source": "/b/src", "x-amz-copy-source-range": "bytes=2-5"})
	var cp struct{ ETag string }
	if err := xml.Unmarshal([]byte(res.body), &cp); err != nil || res.status != 200 || cp.ETag != `"`+md5hex([]byte("2345"))+`"` {
		t.Fatalf("copy part: %d %s", res.status, res.body)
	}
	res = copyPart(2, map[string]string{"x-amz-copy-source": "b/src"}) // whole object
	if res.status != 200 {
		t.Fatal(res.body)
	}
	for _, tc := range []struct {
		hdr    map[string]string
		status int
		code   string
	}{
		{map[string]string{"x-amz-copy-source": "/b/src", "x-amz-copy-source-range": "bytes=5-100"}, 416, "InvalidRange"},
		{map[string]string{"x-amz-copy-source": "/b/src", "x-amz-copy-source-range": "bytes=5-"}, 400, "InvalidArgument"},
		{map[string]string{"x-amz-copy-source": "/b/src", "x-amz-copy-source-range": "0-5"}, 400, "InvalidArgument"},
		{map[string]string{"x-amz-copy-source": "/b/missing"}, 404, "NoSuchKey"},
		{map[string]string{"x-amz-copy-source": "/b/src", "x-amz-copy-source-if-match": `"nope"`}, 412, "PreconditionFailed"},
	} {
		if res := copyPart(3, tc.hdr); res.status != tc.status || res.code() != tc.code {
			t.Errorf("%v: %d %s", tc.hdr, res.status, res.body)
		}
	}
	body := "<CompleteMultipartUpload>" +
		fmt.Sprintf("<Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>", md5hex([]byte("2345"))) +
		fmt.Sprintf("<Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part>", md5hex([]byte("0123456789"))) +
		"</CompleteMultipartUpload>"
	h.mustDo(req{method: "POST", path: "/b/dst?uploadId=" + id, body: body}, 200)
	if got := string(h.be.buckets["b"].objects["dst"].data); got != "23450123456789" {
		t.Fatalf("assembled %q", got)
	}
}
