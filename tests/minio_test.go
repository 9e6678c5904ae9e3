package tests

import (
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"net/url"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// minio-go is the library behind `mc`: over plain HTTP it signs bodies as
// aws-chunked streams with its own trailer framing, uploads unknown-size
// streams (`mc pipe`) with Transfer-Encoding: chunked parts, and sends
// multipart checksums (composite by default, full-object on request).
func minioClient(t *testing.T, g *Gateway) *minio.Client {
	t.Helper()
	u, _ := url.Parse(g.Endpoint)
	c, err := minio.New(u.Host, &minio.Options{
		Creds:  credentials.NewStaticV4(g.AccessKey, g.SecretKey, ""),
		Secure: false, Region: "us-east-1", BucketLookup: minio.BucketLookupPath,
		TrailingHeaders: true, // as mc sets it
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMinioGoChecksums(t *testing.T) {
	g := StartGateway(t)
	c := minioClient(t, g)
	ctx := context.Background()
	const bucket = "minio-go"
	if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	castagnoli := crc32.MakeTable(crc32.Castagnoli)

	check := func(t *testing.T, key string, data []byte) minio.ObjectInfo {
		t.Helper()
		st, err := c.StatObject(ctx, bucket, key, minio.StatObjectOptions{Checksum: true})
		if err != nil {
			t.Fatal(err)
		}
		o, err := c.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(o)
		o.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: read %d bytes (%v), want %d", key, len(got), err, len(data))
		}
		return st
	}

	t.Run("single-put-signed-trailer", func(t *testing.T) {
		// `mc cp --checksum CRC32C`: a streaming-signed body with a
		// signed x-amz-checksum-crc32c trailer.
		data := randomData(t, 100_000)
		if _, err := c.PutObject(ctx, bucket, "small", bytes.NewReader(data), int64(len(data)),
			minio.PutObjectOptions{Checksum: minio.ChecksumCRC32C, DisableMultipart: true}); err != nil {
			t.Fatal(err)
		}
		if st := check(t, "small", data); st.ChecksumCRC32C != b64(crcSum(castagnoli, data)) {
			t.Fatalf("crc32c %q", st.ChecksumCRC32C)
		}
	})

	t.Run("pipe-unknown-size", func(t *testing.T) {
		// `mc pipe`: size unknown, multipart with CRC32C part checksums.
		data := randomData(t, 11*mib+5)
		if _, err := c.PutObject(ctx, bucket, "pipe", io.MultiReader(bytes.NewReader(data)), -1,
			minio.PutObjectOptions{PartSize: 5 * mib}); err != nil {
			t.Fatal(err)
		}
		st := check(t, "pipe", data)
		if st.ChecksumCRC32C == "" {
			t.Fatalf("no object checksum recorded: %+v", st)
		}
	})

	t.Run("full-object-crc32c", func(t *testing.T) {
		data := randomData(t, 11*mib+5)
		if _, err := c.PutObject(ctx, bucket, "full", bytes.NewReader(data), int64(len(data)),
			minio.PutObjectOptions{PartSize: 5 * mib, Checksum: minio.ChecksumFullObjectCRC32C}); err != nil {
			t.Fatal(err)
		}
		st := check(t, "full", data)
		if want := b64(crcSum(castagnoli, data)); st.ChecksumCRC32C != want || st.ChecksumMode != "FULL_OBJECT" {
			t.Fatalf("crc32c %q mode %q, want %q FULL_OBJECT", st.ChecksumCRC32C, st.ChecksumMode, want)
		}
	})
}
