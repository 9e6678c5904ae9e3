package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	tmtypes "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Multipart checksums end to end (AWS "Checking object integrity") with
// aws-sdk-go-v2 and its transfer manager against a real gateway.

const mib = 1 << 20

func randomData(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func crcSum(tab *crc32.Table, b []byte) []byte {
	h := crc32.New(tab)
	h.Write(b)
	return h.Sum(nil)
}

// compositeCRC is S3's COMPOSITE value: the CRC of the concatenated raw
// part CRCs, "-N".
func compositeCRC(tab *crc32.Table, data []byte, partSize int) string {
	var cat []byte
	n := 0
	for off := 0; off < len(data); off += partSize {
		cat = append(cat, crcSum(tab, data[off:min(off+partSize, len(data))])...)
		n++
	}
	return b64(crcSum(tab, cat)) + "-" + strconv.Itoa(n)
}

func TestSDKTransferManagerChecksums(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	bucket := aws.String("tm-checksums")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	data := randomData(t, 12*mib+333)
	tm := transfermanager.New(c, func(o *transfermanager.Options) {
		o.PartSizeBytes = 5 * mib
		o.MultipartUploadThreshold = 5 * mib
	})
	ieee := crc32.IEEETable

	t.Run("full-object", func(t *testing.T) {
		want := b64(crcSum(ieee, data))
		out, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{
			Bucket: bucket, Key: aws.String("full"), Body: bytes.NewReader(data),
			ChecksumAlgorithm: tmtypes.ChecksumAlgorithmCrc32, ChecksumType: tmtypes.ChecksumTypeFullObject,
			ChecksumCRC32: aws.String(want),
		})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(out.ChecksumCRC32) != want || out.ChecksumType != tmtypes.ChecksumTypeFullObject {
			t.Fatalf("upload reply: crc32 %q type %q, want %q FULL_OBJECT", aws.ToString(out.ChecksumCRC32), out.ChecksumType, want)
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String("full"), ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(h.ChecksumCRC32) != want || h.ChecksumType != types.ChecksumTypeFullObject {
			t.Fatalf("HEAD: crc32 %q type %q", aws.ToString(h.ChecksumCRC32), h.ChecksumType)
		}
		// The SDK validates the full-object CRC of the GET body itself.
		g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("full"), ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if _, err := got.ReadFrom(g.Body); err != nil {
			t.Fatalf("GET body (SDK checksum validation): %v", err)
		}
		g.Body.Close()
		if !bytes.Equal(got.Bytes(), data) || aws.ToString(g.ChecksumCRC32) != want {
			t.Fatalf("GET: %d bytes, crc32 %q", got.Len(), aws.ToString(g.ChecksumCRC32))
		}
	})

	t.Run("full-object-mismatch", func(t *testing.T) {
		_, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{
			Bucket: bucket, Key: aws.String("bad"), Body: bytes.NewReader(data),
			ChecksumAlgorithm: tmtypes.ChecksumAlgorithmCrc32, ChecksumType: tmtypes.ChecksumTypeFullObject,
			ChecksumCRC32: aws.String(b64(crcSum(ieee, data[1:]))),
		})
		if apiCode(err) != "BadDigest" {
			t.Fatalf("wrong full-object CRC: %v, want BadDigest", err)
		}
		if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String("bad")}); apiCode(err) != "NotFound" {
			t.Fatalf("object stored despite BadDigest: %v", err)
		}
	})

	t.Run("composite-default", func(t *testing.T) {
		// The transfer manager's defaults: CRC32 parts, composite object.
		out, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: bucket, Key: aws.String("composite"), Body: bytes.NewReader(data)})
		if err != nil {
			t.Fatal(err)
		}
		want := compositeCRC(ieee, data, 5*mib)
		if aws.ToString(out.ChecksumCRC32) != want {
			t.Fatalf("composite crc32 %q (type %q), want %q", aws.ToString(out.ChecksumCRC32), out.ChecksumType, want)
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String("composite"), ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(h.ChecksumCRC32) != want || h.ChecksumType != types.ChecksumTypeComposite {
			t.Fatalf("HEAD: crc32 %q type %q", aws.ToString(h.ChecksumCRC32), h.ChecksumType)
		}
	})

	t.Run("crc64nvme-full-object", func(t *testing.T) {
		_, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{
			Bucket: bucket, Key: aws.String("nvme"), Body: bytes.NewReader(data),
			ChecksumAlgorithm: tmtypes.ChecksumAlgorithm("CRC64NVME"),
		})
		if err != nil {
			t.Fatal(err)
		}
		g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("nvme"), ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if _, err := got.ReadFrom(g.Body); err != nil {
			t.Fatalf("GET body (SDK CRC64NVME validation): %v", err)
		}
		g.Body.Close()
		if g.ChecksumCRC64NVME == nil || g.ChecksumType != types.ChecksumTypeFullObject {
			t.Fatalf("GET: crc64nvme %v type %q", g.ChecksumCRC64NVME, g.ChecksumType)
		}
	})
}

// An upload created with an algorithm gets a composite checksum even when
// the parts carry none; part checksums listed in Complete are checked;
// ListParts reports them.
func TestSDKMultipartChecksumsWithoutPartChecksums(t *testing.T) {
	g := StartGateway(t)
	c := s3.New(s3.Options{
		BaseEndpoint: aws.String(g.Endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials:                sdkClient(g, g.AccessKey, g.SecretKey).Options().Credentials,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
	})
	ctx := context.Background()
	bucket := aws.String("mp-nosums")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	data := randomData(t, 5*mib+100)
	cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bucket, Key: aws.String("k"), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c})
	if err != nil {
		t.Fatal(err)
	}
	var parts []types.CompletedPart
	for i, chunk := range [][]byte{data[:5*mib], data[5*mib:]} {
		up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: bucket, Key: aws.String("k"), UploadId: cu.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(chunk)})
		if err != nil {
			t.Fatal(err)
		}
		if want := b64(crcSum(crc32.MakeTable(crc32.Castagnoli), chunk)); aws.ToString(up.ChecksumCRC32C) != want {
			t.Fatalf("part %d: crc32c %q, want %q (computed by the gateway)", i+1, aws.ToString(up.ChecksumCRC32C), want)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: up.ETag, ChecksumCRC32C: up.ChecksumCRC32C})
	}
	lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: bucket, Key: aws.String("k"), UploadId: cu.UploadId})
	if err != nil {
		t.Fatal(err)
	}
	if len(lp.Parts) != 2 || aws.ToString(lp.Parts[1].ChecksumCRC32C) != aws.ToString(parts[1].ChecksumCRC32C) || lp.ChecksumAlgorithm != types.ChecksumAlgorithmCrc32c {
		t.Fatalf("ListParts: %+v algorithm %q", lp.Parts, lp.ChecksumAlgorithm)
	}
	// A wrong part checksum in the Complete XML is InvalidPart.
	bad := append([]types.CompletedPart{}, parts...)
	bad[0].ChecksumCRC32C = parts[1].ChecksumCRC32C
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: bucket, Key: aws.String("k"), UploadId: cu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: bad}}); apiCode(err) != "InvalidPart" {
		t.Fatalf("wrong listed part checksum: %v, want InvalidPart", err)
	}
	// A full-object type on a composite upload is InvalidRequest.
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: bucket, Key: aws.String("k"), UploadId: cu.UploadId,
		ChecksumType: types.ChecksumTypeFullObject, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); apiCode(err) != "InvalidRequest" {
		t.Fatalf("mismatched checksum type: %v, want InvalidRequest", err)
	}
	want := compositeCRC(crc32.MakeTable(crc32.Castagnoli), data, 5*mib)
	co, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: bucket, Key: aws.String("k"), UploadId: cu.UploadId,
		ChecksumCRC32C:  aws.String(want),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(co.ChecksumCRC32C) != want || co.ChecksumType != types.ChecksumTypeComposite {
		t.Fatalf("Complete: crc32c %q type %q, want %q COMPOSITE", aws.ToString(co.ChecksumCRC32C), co.ChecksumType, want)
	}
}

// GetObjectAttributes with aws-sdk-go-v2: checksum, parts with their
// checksums, pagination, size; on a single-part object no ObjectParts.
func TestSDKGetObjectAttributes(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	bucket := aws.String("attrs")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	data := randomData(t, 12*mib+333)
	tm := transfermanager.New(c, func(o *transfermanager.Options) { o.PartSizeBytes = 5 * mib; o.MultipartUploadThreshold = 5 * mib })
	if _, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: bucket, Key: aws.String("mp"), Body: bytes.NewReader(data),
		ChecksumAlgorithm: tmtypes.ChecksumAlgorithmCrc32c}); err != nil {
		t.Fatal(err)
	}
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	all := []types.ObjectAttributes{types.ObjectAttributesEtag, types.ObjectAttributesChecksum, types.ObjectAttributesObjectParts,
		types.ObjectAttributesStorageClass, types.ObjectAttributesObjectSize}
	a, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: bucket, Key: aws.String("mp"), ObjectAttributes: all, MaxParts: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToInt64(a.ObjectSize) != int64(len(data)) || a.StorageClass != types.StorageClassStandard || !strings.HasSuffix(aws.ToString(a.ETag), "-3") {
		t.Fatalf("size %d class %q etag %q", aws.ToInt64(a.ObjectSize), a.StorageClass, aws.ToString(a.ETag))
	}
	if a.Checksum == nil || aws.ToString(a.Checksum.ChecksumCRC32C) != compositeCRC(castagnoli, data, 5*mib) || a.Checksum.ChecksumType != types.ChecksumTypeComposite {
		t.Fatalf("checksum %+v", a.Checksum)
	}
	op := a.ObjectParts
	if op == nil || aws.ToInt32(op.TotalPartsCount) != 3 || !aws.ToBool(op.IsTruncated) || len(op.Parts) != 2 || aws.ToString(op.NextPartNumberMarker) != "2" {
		t.Fatalf("parts page 1: %+v", op)
	}
	if aws.ToString(op.Parts[1].ChecksumCRC32C) != b64(crcSum(castagnoli, data[5*mib:10*mib])) || aws.ToInt64(op.Parts[1].Size) != 5*mib {
		t.Fatalf("part 2: %+v", op.Parts[1])
	}
	a, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: bucket, Key: aws.String("mp"), ObjectAttributes: all,
		MaxParts: aws.Int32(2), PartNumberMarker: op.NextPartNumberMarker})
	if err != nil {
		t.Fatal(err)
	}
	if op := a.ObjectParts; op == nil || aws.ToBool(op.IsTruncated) || len(op.Parts) != 1 || aws.ToInt32(op.Parts[0].PartNumber) != 3 || aws.ToInt64(op.Parts[0].Size) != int64(len(data)-10*mib) {
		t.Fatalf("parts page 2: %+v", a.ObjectParts)
	}
	// A single-part object has no ObjectParts.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("one"), Body: bytes.NewReader(data[:1000]),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32}); err != nil {
		t.Fatal(err)
	}
	a, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: bucket, Key: aws.String("one"), ObjectAttributes: all})
	if err != nil {
		t.Fatal(err)
	}
	if a.ObjectParts != nil || aws.ToInt64(a.ObjectSize) != 1000 || a.Checksum == nil || aws.ToString(a.Checksum.ChecksumCRC32) != b64(crcSum(crc32.IEEETable, data[:1000])) {
		t.Fatalf("single part: parts %+v size %d checksum %+v", a.ObjectParts, aws.ToInt64(a.ObjectSize), a.Checksum)
	}
	if _, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: bucket, Key: aws.String("missing"), ObjectAttributes: all}); apiCode(err) != "NoSuchKey" {
		t.Fatalf("missing key: %v", err)
	}
	// Copying the multipart object gives a single-part object whose
	// checksum is the whole data's.
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: bucket, Key: aws.String("copy"), CopySource: aws.String("attrs/mp")}); err != nil {
		t.Fatal(err)
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String("copy"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(h.ChecksumCRC32C) != b64(crcSum(castagnoli, data)) {
		t.Fatalf("copy checksum %q type %q", aws.ToString(h.ChecksumCRC32C), h.ChecksumType)
	}
}
