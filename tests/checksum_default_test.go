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
