package tests

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc64"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func crc64NVME(b []byte) string {
	return b64(binary.BigEndian.AppendUint64(nil, crc64.Checksum(b, crc64.MakeTable(0x9a6c9329ac4bc9b5))))
}

// AWS "Checking object integrity": an object uploaded without a checksum
// gets the default full-object CRC64NVME, returned by PutObject, by
// HEAD/GET with ChecksumMode ENABLED and by GetObjectAttributes. For an
// encrypted object it is the plaintext's checksum.
func TestSDKDefaultChecksumCRC64NVME(t *testing.T) {
	g := StartGateway(t, "--kms-keys", testKMSKeys(), "--crypt-require-tls=false")
	// WhenRequired: the SDK sends no checksum of its own on PutObject.
	c := s3.New(s3.Options{
		BaseEndpoint: aws.String(g.Endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials:                sdkClient(g, g.AccessKey, g.SecretKey).Options().Credentials,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
	})
	ctx := context.Background()
	b := aws.String("default-sums")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	body := randomData(t, 300000)
	want := crc64NVME(body)
	for _, enc := range []types.ServerSideEncryption{"", types.ServerSideEncryptionAes256} {
		key := aws.String("k-" + string(enc))
		put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: key, Body: bytes.NewReader(body), ServerSideEncryption: enc})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(put.ChecksumCRC64NVME) != want || put.ChecksumType != types.ChecksumTypeFullObject || put.ChecksumCRC32 != nil {
			t.Fatalf("%q put: crc64nvme %q type %q crc32 %v, want %q FULL_OBJECT", enc, aws.ToString(put.ChecksumCRC64NVME), put.ChecksumType, put.ChecksumCRC32, want)
		}
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: key, ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(head.ChecksumCRC64NVME) != want || head.ChecksumType != types.ChecksumTypeFullObject {
			t.Fatalf("%q head: %q %q", enc, aws.ToString(head.ChecksumCRC64NVME), head.ChecksumType)
		}
		// Without the mode no checksum is returned.
		if head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: key}); err != nil || head.ChecksumCRC64NVME != nil {
			t.Fatalf("%q head without mode: %v %v", enc, err, head)
		}
		get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: key, ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(get.Body) // the SDK validates the CRC64NVME here
		get.Body.Close()
		if err != nil || !bytes.Equal(data, body) || aws.ToString(get.ChecksumCRC64NVME) != want {
			t.Fatalf("%q get: %v %q", enc, err, aws.ToString(get.ChecksumCRC64NVME))
		}
		attrs, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: b, Key: key,
			ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesChecksum}})
		if err != nil {
			t.Fatal(err)
		}
		if attrs.Checksum == nil || aws.ToString(attrs.Checksum.ChecksumCRC64NVME) != want || attrs.Checksum.ChecksumType != types.ChecksumTypeFullObject {
			t.Fatalf("%q attributes: %+v", enc, attrs.Checksum)
		}
	}
}

// A multipart upload created without an algorithm (and parts sent without
// checksums) completes with the default full-object CRC64NVME of the
// whole data, as AWS computes it; GET with ChecksumMode validates it.
func TestSDKDefaultChecksumMultipart(t *testing.T) {
	g := StartGateway(t)
	c := s3.New(s3.Options{
		BaseEndpoint: aws.String(g.Endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials:                sdkClient(g, g.AccessKey, g.SecretKey).Options().Credentials,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
	})
	ctx := context.Background()
	b, k := aws.String("default-mp"), aws.String("k")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	data := randomData(t, 5*mib+777)
	cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k})
	if err != nil {
		t.Fatal(err)
	}
	var parts []types.CompletedPart
	for i, chunk := range [][]byte{data[:5*mib], data[5*mib:]} {
		up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: cu.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(chunk)})
		if err != nil {
			t.Fatal(err)
		}
		if up.ChecksumCRC64NVME != nil {
			t.Fatalf("part %d: a checksum nobody asked for: %q", i+1, aws.ToString(up.ChecksumCRC64NVME))
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: up.ETag})
	}
	done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: cu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		t.Fatal(err)
	}
	want := crc64NVME(data)
	if aws.ToString(done.ChecksumCRC64NVME) != want || done.ChecksumType != types.ChecksumTypeFullObject {
		t.Fatalf("complete: %q %q, want %q FULL_OBJECT", aws.ToString(done.ChecksumCRC64NVME), done.ChecksumType, want)
	}
	get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(get.Body) // validated by the SDK against the full-object CRC
	get.Body.Close()
	if err != nil || !bytes.Equal(got, data) || aws.ToString(get.ChecksumCRC64NVME) != want || get.ChecksumType != types.ChecksumTypeFullObject {
		t.Fatalf("get: %v %q %q", err, aws.ToString(get.ChecksumCRC64NVME), get.ChecksumType)
	}
}
