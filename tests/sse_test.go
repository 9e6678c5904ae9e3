package tests

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairn-s3/cairn/internal/kms/kmip"
	"github.com/cairn-s3/cairn/internal/kms/kmip/pykmip"
)

// testKMSKeys is a kms-keys value with the s3-tests key names.
func testKMSKeys() string {
	k1, k2 := make([]byte, 32), make([]byte, 32)
	rand.Read(k1)
	rand.Read(k2)
	return "testkey-1=" + base64.StdEncoding.EncodeToString(k1) + ",testkey-2=" + base64.StdEncoding.EncodeToString(k2)
}

// dataDirContains reports which files under dir hold needle.
func dataDirContains(t *testing.T, dir string, needle []byte) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, needle) {
			hits = append(hits, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// markedBody is random bytes with marker once in the middle.
func markedBody(n int, marker string) []byte {
	b := make([]byte, n)
	rand.Read(b)
	copy(b[n/2:], marker)
	return b
}

type sseCase struct {
	name  string
	mode  types.ServerSideEncryption
	kmsID string
	ckey  []byte
}

func (c sseCase) put(in *s3.PutObjectInput) *s3.PutObjectInput {
	if c.ckey != nil {
		in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = ssecArgs(c.ckey)
	} else if c.mode != "" {
		in.ServerSideEncryption = c.mode
		if c.kmsID != "" {
			in.SSEKMSKeyId = aws.String(c.kmsID)
		}
	}
	return in
}

func ssecArgs(key []byte) (*string, *string, *string) {
	sum := md5.Sum(key)
	return aws.String("AES256"), aws.String(base64.StdEncoding.EncodeToString(key)), aws.String(base64.StdEncoding.EncodeToString(sum[:]))
}

func (c sseCase) get(in *s3.GetObjectInput) *s3.GetObjectInput {
	if c.ckey != nil {
		in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = ssecArgs(c.ckey)
	}
	return in
}

// sseGatewayFlags are the options sseModesBody needs.
func sseGatewayFlags() []string {
	return []string{"--kms-keys", testKMSKeys(), "--crypt-require-tls=false"}
}

func TestSSEModesWithSDK(t *testing.T) {
	g := StartGateway(t, sseGatewayFlags()...)
	sseModesBody(t, g, func(t *testing.T) func([]byte) []string {
		return func(needle []byte) []string { return dataDirContains(t, g.DataDir, needle) }
	})
}

// sseModesBody runs every SSE mode through g (started with
// sseGatewayFlags). scan snapshots where the backend keeps data (after all
// writes) and returns a search for a byte string in it.
func sseModesBody(t *testing.T, g *Gateway, scan func(*testing.T) func([]byte) []string) {
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	b := aws.String("sse")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	ckey := make([]byte, 32)
	rand.Read(ckey)
	cases := []sseCase{
		{name: "s3", mode: types.ServerSideEncryptionAes256},
		{name: "kms", mode: types.ServerSideEncryptionAwsKms, kmsID: "testkey-1"},
		{name: "c", ckey: ckey},
	}
	const size = 5<<20 + 12345
	var markers []string
	bodies := map[string][]byte{}
	for _, tc := range cases {
		marker := fmt.Sprintf("CAIRN-SSE-MARKER-%s-%x", tc.name, ckey[:6])
		markers = append(markers, marker)
		body := markedBody(size, marker)
		bodies[tc.name] = body
		out, err := c.PutObject(ctx, tc.put(&s3.PutObjectInput{Bucket: b, Key: aws.String(tc.name), Body: bytes.NewReader(body)}))
		if err != nil {
			t.Fatalf("%s: put: %v", tc.name, err)
		}
		sum := md5.Sum(body)
		etag := strings.Trim(aws.ToString(out.ETag), `"`)
		switch tc.name {
		case "s3":
			if out.ServerSideEncryption != types.ServerSideEncryptionAes256 || etag != hex.EncodeToString(sum[:]) {
				t.Fatalf("s3 put: %q etag %s", out.ServerSideEncryption, etag)
			}
		case "kms":
			if out.ServerSideEncryption != types.ServerSideEncryptionAwsKms || aws.ToString(out.SSEKMSKeyId) != "testkey-1" || etag == hex.EncodeToString(sum[:]) {
				t.Fatalf("kms put: %q %q etag %s", out.ServerSideEncryption, aws.ToString(out.SSEKMSKeyId), etag)
			}
		case "c":
			_, _, md := ssecArgs(ckey)
			if aws.ToString(out.SSECustomerAlgorithm) != "AES256" || aws.ToString(out.SSECustomerKeyMD5) != *md || etag == hex.EncodeToString(sum[:]) {
				t.Fatalf("c put: %+v", out)
			}
		}
		got, err := c.GetObject(ctx, tc.get(&s3.GetObjectInput{Bucket: b, Key: aws.String(tc.name)}))
		if err != nil {
			t.Fatalf("%s: get: %v", tc.name, err)
		}
		data, err := io.ReadAll(got.Body)
		got.Body.Close()
		if err != nil || !bytes.Equal(data, body) {
			t.Fatalf("%s: get body differs (%v)", tc.name, err)
		}
		if got.ServerSideEncryption != out.ServerSideEncryption || aws.ToString(got.SSEKMSKeyId) != aws.ToString(out.SSEKMSKeyId) {
			t.Fatalf("%s: get reports %q %q", tc.name, got.ServerSideEncryption, aws.ToString(got.SSEKMSKeyId))
		}
		for _, r := range [][2]int{{0, 0}, {65535, 65536}, {65536, 65536 + 10}, {4<<20 - 1, 4 << 20}, {size - 1, size - 1}, {1 << 20, 2<<20 - 1}} {
			rg, err := c.GetObject(ctx, tc.get(&s3.GetObjectInput{Bucket: b, Key: aws.String(tc.name), Range: aws.String(fmt.Sprintf("bytes=%d-%d", r[0], r[1]))}))
			if err != nil {
				t.Fatalf("%s: range %v: %v", tc.name, r, err)
			}
			part, _ := io.ReadAll(rg.Body)
			rg.Body.Close()
			if !bytes.Equal(part, body[r[0]:r[1]+1]) {
				t.Fatalf("%s: range %v: wrong bytes", tc.name, r)
			}
		}
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String(tc.name),
			SSECustomerAlgorithm: tc.get(&s3.GetObjectInput{}).SSECustomerAlgorithm, SSECustomerKey: tc.get(&s3.GetObjectInput{}).SSECustomerKey, SSECustomerKeyMD5: tc.get(&s3.GetObjectInput{}).SSECustomerKeyMD5})
		if err != nil || aws.ToInt64(head.ContentLength) != size {
			t.Fatalf("%s: head: %v", tc.name, err)
		}
	}

	// SSE-C errors: no key, wrong key, key for an SSE-S3 object.
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("c")}); apiCode(err) != "InvalidRequest" {
		t.Fatalf("SSE-C GET without key: %v", err)
	}
	other := make([]byte, 32)
	if _, err := c.GetObject(ctx, sseCase{ckey: other}.get(&s3.GetObjectInput{Bucket: b, Key: aws.String("c")})); apiCode(err) != "AccessDenied" {
		t.Fatalf("SSE-C GET with another key: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("c")}); err == nil {
		t.Fatal("SSE-C HEAD without key succeeded")
	}
	if _, err := c.GetObject(ctx, sseCase{ckey: ckey}.get(&s3.GetObjectInput{Bucket: b, Key: aws.String("s3")})); apiCode(err) != "InvalidRequest" {
		t.Fatalf("SSE-C key on an SSE-S3 object: %v", err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("x"), Body: strings.NewReader("x"), ServerSideEncryption: "bogus"}); apiCode(err) != "InvalidArgument" {
		t.Fatalf("bogus SSE: %v", err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("x"), Body: strings.NewReader("x"), ServerSideEncryption: types.ServerSideEncryptionAwsKms, SSEKMSKeyId: aws.String("nokey")}); apiCode(err) != "KMS.NotFoundException" {
		t.Fatalf("unknown KMS key: %v", err)
	}

	// Multipart SSE-KMS, read by range across the part edge and by partNumber.
	mp, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("mp"), ServerSideEncryption: types.ServerSideEncryptionAwsKms, SSEKMSKeyId: aws.String("testkey-2")})
	if err != nil || mp.ServerSideEncryption != types.ServerSideEncryptionAwsKms || aws.ToString(mp.SSEKMSKeyId) != "testkey-2" {
		t.Fatalf("create mp: %v %+v", err, mp)
	}
	mpMarker := fmt.Sprintf("CAIRN-SSE-MARKER-mp-%x", ckey[:6])
	markers = append(markers, mpMarker)
	p1, p2 := markedBody(5<<20, mpMarker), markedBody(1<<20+7, mpMarker)
	var done []types.CompletedPart
	for i, p := range [][]byte{p1, p2} {
		up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("mp"), UploadId: mp.UploadId, PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p)})
		if err != nil || up.ServerSideEncryption != types.ServerSideEncryptionAwsKms {
			t.Fatalf("part %d: %v %q", i+1, err, up.ServerSideEncryption)
		}
		done = append(done, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: up.ETag})
	}
	cm, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("mp"), UploadId: mp.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
	if err != nil || cm.ServerSideEncryption != types.ServerSideEncryptionAwsKms {
		t.Fatalf("complete: %v", err)
	}
	whole := append(append([]byte{}, p1...), p2...)
	rg, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("mp"), Range: aws.String(fmt.Sprintf("bytes=%d-%d", 5<<20-100, 5<<20+100))})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rg.Body)
	rg.Body.Close()
	if !bytes.Equal(got, whole[5<<20-100:5<<20+101]) {
		t.Fatal("range across the part edge: wrong bytes")
	}
	pn, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("mp"), PartNumber: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(pn.Body)
	pn.Body.Close()
	if !bytes.Equal(got, p2) {
		t.Fatal("partNumber=2: wrong bytes")
	}

	// Copies across modes: SSE-C -> SSE-KMS -> clear, and SSE-KMS -> SSE-C.
	_, _, md := ssecArgs(ckey)
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("c2kms"), CopySource: aws.String("sse/c"),
		CopySourceSSECustomerAlgorithm: aws.String("AES256"), CopySourceSSECustomerKey: aws.String(base64.StdEncoding.EncodeToString(ckey)), CopySourceSSECustomerKeyMD5: md,
		ServerSideEncryption: types.ServerSideEncryptionAwsKms, SSEKMSKeyId: aws.String("testkey-1")}); err != nil {
		t.Fatalf("copy c -> kms: %v", err)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("c-nokey"), CopySource: aws.String("sse/c")}); apiCode(err) != "InvalidRequest" {
		t.Fatalf("copy of SSE-C without source key: %v", err)
	}
	alg, key, _ := ssecArgs(other)
	_, _, omd := ssecArgs(other)
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("mp2c"), CopySource: aws.String("sse/mp"),
		SSECustomerAlgorithm: alg, SSECustomerKey: key, SSECustomerKeyMD5: omd}); err != nil {
		t.Fatalf("copy kms -> c: %v", err)
	}
	g2, err := c.GetObject(ctx, sseCase{ckey: other}.get(&s3.GetObjectInput{Bucket: b, Key: aws.String("mp2c")}))
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(g2.Body)
	g2.Body.Close()
	if !bytes.Equal(got, whole) {
		t.Fatal("copy kms -> c: wrong bytes")
	}

	// UploadPartCopy: an SSE-C source into an SSE-C upload under another key.
	oalg, okey, omd5 := ssecArgs(other)
	calg, ckey64, cmd5 := ssecArgs(ckey)
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("upc"), SSECustomerAlgorithm: oalg, SSECustomerKey: okey, SSECustomerKeyMD5: omd5})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: b, Key: aws.String("upc"), UploadId: up.UploadId, PartNumber: aws.Int32(1), CopySource: aws.String("sse/c"),
		CopySourceSSECustomerAlgorithm: calg, CopySourceSSECustomerKey: ckey64, CopySourceSSECustomerKeyMD5: cmd5,
		SSECustomerAlgorithm: oalg, SSECustomerKey: okey, SSECustomerKeyMD5: omd5})
	if err != nil {
		t.Fatalf("upload part copy: %v", err)
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("upc"), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: pc.CopyPartResult.ETag}}}}); err != nil {
		t.Fatal(err)
	}
	src, err := c.GetObject(ctx, sseCase{ckey: ckey}.get(&s3.GetObjectInput{Bucket: b, Key: aws.String("c")}))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := io.ReadAll(src.Body)
	src.Body.Close()
	uc, err := c.GetObject(ctx, sseCase{ckey: other}.get(&s3.GetObjectInput{Bucket: b, Key: aws.String("upc")}))
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(uc.Body)
	uc.Body.Close()
	if !bytes.Equal(got, want) {
		t.Fatal("upload part copy: wrong bytes")
	}

	// Bucket default encryption.
	if _, err := c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: b}); apiCode(err) != "ServerSideEncryptionConfigurationNotFoundError" {
		t.Fatalf("get absent bucket encryption: %v", err)
	}
	if _, err := c.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: b, ServerSideEncryptionConfiguration: &types.ServerSideEncryptionConfiguration{
		Rules: []types.ServerSideEncryptionRule{{ApplyServerSideEncryptionByDefault: &types.ServerSideEncryptionByDefault{SSEAlgorithm: types.ServerSideEncryptionAwsKms, KMSMasterKeyID: aws.String("testkey-1")}, BucketKeyEnabled: aws.Bool(true)}},
	}}); err != nil {
		t.Fatal(err)
	}
	be, err := c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: b})
	if err != nil || aws.ToString(be.ServerSideEncryptionConfiguration.Rules[0].ApplyServerSideEncryptionByDefault.KMSMasterKeyID) != "testkey-1" {
		t.Fatalf("get bucket encryption: %v", err)
	}
	dflt, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("dflt"), Body: strings.NewReader("default-encrypted")})
	if err != nil || dflt.ServerSideEncryption != types.ServerSideEncryptionAwsKms || aws.ToString(dflt.SSEKMSKeyId) != "testkey-1" || !aws.ToBool(dflt.BucketKeyEnabled) {
		t.Fatalf("default encryption not applied: %v %+v", err, dflt)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("c2dflt"), CopySource: aws.String("sse/s3")}); err != nil {
		t.Fatal(err)
	}
	if h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("c2dflt")}); err != nil || h.ServerSideEncryption != types.ServerSideEncryptionAwsKms {
		t.Fatalf("copy into a default-encrypted bucket: %v", err)
	}
	if _, err := c.DeleteBucketEncryption(ctx, &s3.DeleteBucketEncryptionInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}

	// Versioning: two SSE-C versions under different keys.
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: b, VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	v1, err := c.PutObject(ctx, sseCase{ckey: ckey}.put(&s3.PutObjectInput{Bucket: b, Key: aws.String("ver"), Body: strings.NewReader("one")}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, sseCase{ckey: other}.put(&s3.PutObjectInput{Bucket: b, Key: aws.String("ver"), Body: strings.NewReader("two")})); err != nil {
		t.Fatal(err)
	}
	gv, err := c.GetObject(ctx, sseCase{ckey: ckey}.get(&s3.GetObjectInput{Bucket: b, Key: aws.String("ver"), VersionId: v1.VersionId}))
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(gv.Body)
	gv.Body.Close()
	if string(got) != "one" {
		t.Fatalf("version 1: %q", got)
	}

	// A manual reshard moves the index entries, encryption metadata
	// included: every encrypted object still decrypts.
	if out, err := g.Admin("bucket", "reshard", "--bucket", "sse", "--num-shards", "5"); err != nil {
		t.Fatalf("reshard: %v %s", err, out)
	}
	if out, err := g.Admin("bucket", "stats", "--bucket", "sse"); err != nil || !strings.Contains(out, `"num_shards": 5`) {
		t.Fatalf("stats after reshard: %v %s", err, out)
	}
	readBack := func(tc sseCase, in *s3.GetObjectInput, want []byte) {
		t.Helper()
		out, err := c.GetObject(ctx, tc.get(in))
		if err != nil {
			t.Fatalf("after reshard: get %s: %v", aws.ToString(in.Key), err)
		}
		b, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil || !bytes.Equal(b, want) {
			t.Fatalf("after reshard: %s: wrong bytes (%v)", aws.ToString(in.Key), err)
		}
	}
	for _, tc := range cases {
		readBack(tc, &s3.GetObjectInput{Bucket: b, Key: aws.String(tc.name)}, bodies[tc.name])
	}
	readBack(sseCase{}, &s3.GetObjectInput{Bucket: b, Key: aws.String("mp"), Range: aws.String(fmt.Sprintf("bytes=%d-%d", 5<<20-100, 5<<20+100))}, whole[5<<20-100:5<<20+101])
	readBack(sseCase{}, &s3.GetObjectInput{Bucket: b, Key: aws.String("c2kms")}, bodies["c"])
	readBack(sseCase{ckey: ckey}, &s3.GetObjectInput{Bucket: b, Key: aws.String("ver"), VersionId: v1.VersionId}, []byte("one"))
	readBack(sseCase{ckey: other}, &s3.GetObjectInput{Bucket: b, Key: aws.String("ver")}, []byte("two"))

	// The probe: no marker, and no SSE-C key, anywhere in the data
	// directory or the log; a clear object's marker is found (the probe
	// can see).
	clearMarker := fmt.Sprintf("CAIRN-CLEAR-MARKER-%x", ckey[:6])
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("sse"), Key: aws.String("clear"), Body: bytes.NewReader(markedBody(2<<20, clearMarker))}); err != nil {
		t.Fatal(err)
	}
	find := scan(t)
	if hits := find([]byte(clearMarker)); len(hits) == 0 {
		t.Fatal("probe: a clear object's marker is not found; the probe proves nothing")
	}
	for _, m := range markers {
		if hits := find([]byte(m)); len(hits) > 0 {
			t.Fatalf("plaintext marker %s found in %v", m, hits)
		}
	}
	for _, k := range [][]byte{ckey, []byte(base64.StdEncoding.EncodeToString(ckey))} {
		if hits := find(k); len(hits) > 0 {
			t.Fatalf("SSE-C key found in %v", hits)
		}
		if bytes.Contains([]byte(g.Log.String()), k) {
			t.Fatal("SSE-C key in the gateway log")
		}
	}
}

// TestSSECRequiresTLS: by default an SSE-C key over plain HTTP is refused,
// and nothing is stored.
func TestSSECRequiresTLS(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("tls")}); err != nil {
		t.Fatal(err)
	}
	_, err := c.PutObject(ctx, sseCase{ckey: make([]byte, 32)}.put(&s3.PutObjectInput{Bucket: aws.String("tls"), Key: aws.String("k"), Body: strings.NewReader("x")}))
	if apiCode(err) != "InvalidRequest" || !strings.Contains(err.Error(), "secure connection") {
		t.Fatalf("SSE-C over HTTP: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("tls"), Key: aws.String("k")}); err == nil {
		t.Fatal("a refused SSE-C PUT stored the object")
	}
	// SSE-S3 works out of the box: the keyring file is created 0600.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("tls"), Key: aws.String("s3"), Body: strings.NewReader("x"), ServerSideEncryption: types.ServerSideEncryptionAes256}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(g.DataDir, "kms.keyring"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("keyring file: %v %v", fi, err)
	}
}

// TestSSEKeyRotation: after `cairn admin kms rotate` new objects use the new
// key version, old ones stay readable (also after a restart), and
// `kms rewrap` re-seals every data key without touching data.
func TestSSEKeyRotation(t *testing.T) {
	g := StartGateway(t)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	b := aws.String("rot")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	put := func(k string) {
		t.Helper()
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String(k), Body: strings.NewReader("body of " + k), ServerSideEncryption: types.ServerSideEncryptionAes256}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(keys ...string) {
		t.Helper()
		for _, k := range keys {
			out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String(k)})
			if err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			got, _ := io.ReadAll(out.Body)
			out.Body.Close()
			if string(got) != "body of "+k {
				t.Fatalf("%s: %q", k, got)
			}
		}
	}
	put("old")
	out, err := g.Admin("kms", "rotate-key", "--key-id", "cairn-default")
	if err != nil || !strings.Contains(out, `"cairn-default"`) {
		t.Fatalf("rotate: %v %s", err, out)
	}
	put("new")
	check("old", "new")
	g.Stop()
	g.Start()
	check("old", "new")
	out, err = g.Admin("kms", "rewrap", "--bucket", "rot")
	if err != nil || !strings.Contains(out, `"rewrapped": 2`) {
		t.Fatalf("rewrap: %v %s", err, out)
	}
	check("old", "new")
	// Proof that rewrap re-sealed: with version 1 gone from the key file,
	// the old object still opens.
	g.Stop()
	kf := filepath.Join(g.DataDir, "kms.keyring")
	data, err := os.ReadFile(kf)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, "cairn-default 1 ") {
			kept = append(kept, l)
		}
	}
	if len(kept) != len(strings.Split(string(data), "\n"))-1 {
		t.Fatalf("key file has no version 1 line:\n%s", data)
	}
	if err := os.WriteFile(kf, []byte(strings.Join(kept, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	g.Start()
	check("old", "new")
}

// TestSSECOverTLS: with the default crypt-require-tls, SSE-C works over
// HTTPS and the same request over plain HTTP is refused.
func TestSSECOverTLS(t *testing.T) {
	cert, key, pool := writeTestCert(t)
	tlsAddr := freeAddr(t)
	g := StartGateway(t, "--tls-listen", tlsAddr, "--tls-cert", cert, "--tls-key", key)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	c := s3.New(s3.Options{BaseEndpoint: aws.String("https://" + tlsAddr), Region: "us-east-1", UsePathStyle: true, HTTPClient: hc,
		Credentials: credentials.NewStaticCredentialsProvider(g.AccessKey, g.SecretKey, "")})
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("tlsc")}); err != nil {
		t.Fatal(err)
	}
	ckey := make([]byte, 32)
	rand.Read(ckey)
	cs := sseCase{ckey: ckey}
	if _, err := c.PutObject(ctx, cs.put(&s3.PutObjectInput{Bucket: aws.String("tlsc"), Key: aws.String("k"), Body: strings.NewReader("over tls")})); err != nil {
		t.Fatalf("SSE-C PUT over HTTPS: %v", err)
	}
	out, err := c.GetObject(ctx, cs.get(&s3.GetObjectInput{Bucket: aws.String("tlsc"), Key: aws.String("k")}))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(got) != "over tls" {
		t.Fatalf("got %q", got)
	}
	plain := sdkClient(g, g.AccessKey, g.SecretKey)
	if _, err := plain.GetObject(ctx, cs.get(&s3.GetObjectInput{Bucket: aws.String("tlsc"), Key: aws.String("k")})); apiCode(err) != "InvalidRequest" {
		t.Fatalf("SSE-C GET over HTTP: %v", err)
	}
}

// TestSSEWithKMIP: SSE-S3 and SSE-KMS with the master keys in a real KMIP
// server (PyKMIP): objects round-trip, the marker is nowhere on disk, and
// a key the server does not hold is KMS.NotFoundException.
func TestSSEWithKMIP(t *testing.T) {
	srv := pykmip.Start(t)
	k, err := kmip.New(kmip.Config{Endpoint: srv.Addr, CAFile: srv.CA, CertFile: srv.Cert, KeyFile: srv.Key})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"sse-default", "sse-kms-1"} {
		if err := k.CreateKey(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	_ = k.Close()
	g := StartGateway(t, "--kms-backend", "kmip", "--kmip-endpoint", srv.Addr, "--kmip-ca", srv.CA,
		"--kmip-cert", srv.Cert, "--kmip-key", srv.Key, "--kmip-default-key", "sse-default")
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	b := aws.String("kmipsse")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("CAIRN-KMIP-SSE-MARKER-%d", os.Getpid())
	body := markedBody(300_000, marker)
	for _, tc := range []sseCase{{name: "s3", mode: types.ServerSideEncryptionAes256}, {name: "kms", mode: types.ServerSideEncryptionAwsKms, kmsID: "sse-kms-1"}} {
		out, err := c.PutObject(ctx, tc.put(&s3.PutObjectInput{Bucket: b, Key: aws.String(tc.name), Body: bytes.NewReader(body)}))
		if err != nil || out.ServerSideEncryption != tc.mode {
			t.Fatalf("%s: put: %v", tc.name, err)
		}
		got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String(tc.name)})
		if err != nil {
			t.Fatalf("%s: get: %v", tc.name, err)
		}
		data, _ := io.ReadAll(got.Body)
		got.Body.Close()
		if !bytes.Equal(data, body) {
			t.Fatalf("%s: wrong bytes", tc.name)
		}
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("x"), Body: strings.NewReader("x"),
		ServerSideEncryption: types.ServerSideEncryptionAwsKms, SSEKMSKeyId: aws.String("no-such-key")}); apiCode(err) != "KMS.NotFoundException" {
		t.Fatalf("unknown KMIP key: %v", err)
	}
	if hits := dataDirContains(t, g.DataDir, []byte(marker)); len(hits) > 0 {
		t.Fatalf("plaintext in %v", hits)
	}
}
