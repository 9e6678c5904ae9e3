package driver_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/crypt"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/kms"
	"github.com/cairn-s3/cairn/internal/kms/keyring"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// flakyKMS fails every call while down is set.
type flakyKMS struct {
	kms.KMS
	down  bool
	calls int
}

func (f *flakyKMS) GenerateDataKey(ctx context.Context, id string, aad []byte) (kms.DataKey, error) {
	f.calls++
	if f.down {
		return kms.DataKey{}, kms.ErrUnavailable
	}
	return f.KMS.GenerateDataKey(ctx, id, aad)
}

func (f *flakyKMS) Decrypt(ctx context.Context, id string, sealed, aad []byte) ([]byte, error) {
	f.calls++
	if f.down {
		return nil, kms.ErrUnavailable
	}
	return f.KMS.Decrypt(ctx, id, sealed, aad)
}

func newSSEDriver(t testing.TB, byDefault bool) (*driver.Driver, objstore.Store, *flakyKMS) {
	return newSSEDriverOn(t, byDefault, "/d", vfs.NewMem())
}

// newSSEDriverOn is newSSEDriver on a store at dir of fs (vfs.Default: the
// store keeps large data in files, which GETs read with pread).
func newSSEDriverOn(t testing.TB, byDefault bool, dir string, fs vfs.FS) (*driver.Driver, objstore.Store, *flakyKMS) {
	t.Helper()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: dir, FS: fs, Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	kr, err := keyring.Open(keyring.Options{
		MasterKey: base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32)),
		Keys:      "testkey-1=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)),
	})
	if err != nil {
		t.Fatal(err)
	}
	fk := &flakyKMS{KMS: kr}
	d, err := driver.New(context.Background(), driver.Options{Store: st, DefaultShards: 3, GCMinWait: -1, KMS: fk, EncryptByDefault: byDefault})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); st.Close() })
	if err := d.CreateBucket(context.Background(), "owner", "bkt", "", 0); err != nil {
		t.Fatal(err)
	}
	return d, st, fk
}

func sseCtx(put *driver.SSESpec, ckey, srcKey []byte) context.Context {
	return driver.WithSSE(context.Background(), driver.SSERequest{Put: put, CustomerKey: ckey, CopySourceKey: srcKey})
}

func readAll(t *testing.T, ctx context.Context, d *driver.Driver, key string, rng *driver.Range) ([]byte, error) {
	t.Helper()
	_, rd, err := d.GetObject(ctx, "bkt", key, rng)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// readBoth is readAll, then the same range through WriteTo (what an HTTP
// response uses): the chunked decryption path must give the same bytes
// and errors.
func readBoth(t *testing.T, ctx context.Context, d *driver.Driver, key string, rng *driver.Range) ([]byte, error) {
	t.Helper()
	got, err := readAll(t, ctx, d, key, rng)
	// The same range through WriteTo (what an HTTP response uses): the
	// chunked decryption path must give the same bytes and errors.
	_, rd2, err2 := d.GetObject(ctx, "bkt", key, rng)
	if err2 != nil {
		t.Fatalf("second get: %v", err2)
	}
	defer rd2.Close()
	var buf bytes.Buffer
	_, err2 = rd2.(io.WriterTo).WriteTo(&buf)
	if (err == nil) != (err2 == nil) || (err == nil && !bytes.Equal(got, buf.Bytes())) {
		t.Fatalf("Read and WriteTo differ: %v / %v, %d / %d bytes", err, err2, len(got), buf.Len())
	}
	return got, err
}

// rawContains reports whether any stored data object holds marker.
func rawContains(t *testing.T, st objstore.Store, marker []byte) bool {
	t.Helper()
	ctx := context.Background()
	io, err := st.IOContext(ctx, driver.PoolData)
	if err != nil {
		t.Fatal(err)
	}
	oids, _, err := io.ListObjects(ctx, "", 100000)
	if err != nil {
		t.Fatal(err)
	}
	for _, oid := range oids {
		op := objstore.NewReadOp()
		rd := op.Read(0, 1<<30)
		if err := io.OperateRead(ctx, oid, op); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(rd.Data, marker) {
			return true
		}
	}
	return false
}

func payload(n int, marker []byte) []byte {
	b := make([]byte, n)
	rand.Read(b)
	for i := 0; i+len(marker) <= n; i += 50000 {
		copy(b[i:], marker)
	}
	return b
}

func TestSSEModesRoundTripAndRanges(t *testing.T) {
	t.Run("mem", func(t *testing.T) { d, st, _ := newSSEDriver(t, false); testSSERoundTrip(t, d, st) })
	t.Run("disk", func(t *testing.T) {
		d, st, _ := newSSEDriverOn(t, false, t.TempDir(), vfs.Default)
		testSSERoundTrip(t, d, st)
	})
}

func testSSERoundTrip(t *testing.T, d *driver.Driver, st objstore.Store) {
	ckey := bytes.Repeat([]byte{0xC}, 32)
	const P = crypt.PackageSize
	size := 2*driver.StripeSize + 3*P + 7 // spans encrypted stripes
	for _, tc := range []struct {
		name string
		spec *driver.SSESpec
		ckey []byte
	}{
		{"s3", &driver.SSESpec{Mode: driver.SSEModeS3}, nil},
		{"kms", &driver.SSESpec{Mode: driver.SSEModeKMS, KMSKeyID: "testkey-1"}, nil},
		{"c", &driver.SSESpec{Mode: driver.SSEModeC, CustomerKey: ckey}, ckey},
	} {
		marker := []byte("MARKER-" + tc.name + "-7f3a9c")
		body := payload(size, marker)
		oi, err := d.PutObject(sseCtx(tc.spec, nil, nil), driver.PutObjectInput{Bucket: "bkt", Key: tc.name, Body: bytes.NewReader(body), Size: int64(len(body))})
		if err != nil {
			t.Fatalf("%s: put: %v", tc.name, err)
		}
		sum := md5.Sum(body)
		if isMD5 := oi.ETag == hex.EncodeToString(sum[:]); isMD5 != (tc.spec.Mode == driver.SSEModeS3) {
			t.Fatalf("%s: ETag %s (md5 %x)", tc.name, oi.ETag, sum)
		}
		if oi.Size != int64(size) || oi.Meta.SSE == nil || oi.Meta.SSE.Mode != tc.spec.Mode {
			t.Fatalf("%s: info %+v", tc.name, oi)
		}
		if rawContains(t, st, marker) {
			t.Fatalf("%s: plaintext marker found in the store", tc.name)
		}
		rctx := sseCtx(nil, tc.ckey, nil)
		S := int64(driver.StripeSize)
		for _, r := range [][2]int64{{0, int64(size)}, {0, 1}, {P - 1, 2}, {P, 1}, {P + 1, P}, {S - 1, 2}, {S, 1}, {2*S - P - 3, P + 10}, {int64(size) - 1, 1}, {int64(size) - P - 8, P + 8}, {16*P - 5, 10}, {3, 20 * P}, {S - 17*P - 1, 18*P + 2}} {
			got, err := readBoth(t, rctx, d, tc.name, &driver.Range{Start: r[0], Length: r[1]})
			if err != nil || !bytes.Equal(got, body[r[0]:r[0]+r[1]]) {
				t.Fatalf("%s: range %v: %v (equal=%v)", tc.name, r, err, bytes.Equal(got, body[r[0]:r[0]+r[1]]))
			}
		}
	}
	// The probe works: a clear object's marker is found.
	put(t, d, "bkt", "clear", payload(1000, []byte("MARKER-clear-probe")))
	if !rawContains(t, st, []byte("MARKER-clear-probe")) {
		t.Fatal("the store probe cannot see clear data")
	}
	// SSE-C: no key, wrong key, a key for a non-SSE-C object.
	if _, err := readAll(t, context.Background(), d, "c", nil); !errors.Is(err, driver.ErrSSECustomerKeyMissing) {
		t.Fatalf("no key: %v", err)
	}
	if _, err := readAll(t, sseCtx(nil, bytes.Repeat([]byte{1}, 32), nil), d, "c", nil); !errors.Is(err, driver.ErrSSECustomerKeyMismatch) {
		t.Fatalf("wrong key: %v", err)
	}
	if _, err := readAll(t, sseCtx(nil, ckey, nil), d, "s3", nil); !errors.Is(err, driver.ErrSSENotApplicable) {
		t.Fatalf("key for SSE-S3: %v", err)
	}
	info, _ := d.HeadObject(context.Background(), "bkt", "c")
	if driver.CheckCustomerKey(info, ckey) != nil || !errors.Is(driver.CheckCustomerKey(info, nil), driver.ErrSSECustomerKeyMissing) {
		t.Fatal("CheckCustomerKey")
	}
}

func TestSSETamperedDataIsAnError(t *testing.T) {
	t.Run("mem", func(t *testing.T) { d, st, _ := newSSEDriver(t, true); testSSETampered(t, d, st) })
	// 20 packages: a stripe large enough to be read from its file.
	t.Run("disk", func(t *testing.T) {
		d, st, _ := newSSEDriverOn(t, true, t.TempDir(), vfs.Default)
		testSSETampered(t, d, st)
	})
}

// testSSETampered runs on a driver that encrypts by default.
func testSSETampered(t *testing.T, d *driver.Driver, st objstore.Store) {
	body := payload(20*crypt.PackageSize, []byte("x"))
	if _, err := d.PutObject(context.Background(), driver.PutObjectInput{Bucket: "bkt", Key: "k", Body: bytes.NewReader(body), Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	info, _ := d.HeadObject(context.Background(), "bkt", "k")
	if info.Meta.SSE == nil || info.Meta.SSE.Mode != driver.SSEModeS3 {
		t.Fatalf("default encryption not applied: %+v", info.Meta.SSE)
	}
	ctx := context.Background()
	ioc, _ := st.IOContext(ctx, driver.PoolData)
	oids, _, _ := ioc.ListObjects(ctx, "", 10)
	if len(oids) != 1 {
		t.Fatalf("data objects %v", oids)
	}
	op := objstore.NewReadOp()
	rd := op.Read(0, 1<<30)
	if err := ioc.OperateRead(ctx, oids[0], op); err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(rd.Data)
	bad[crypt.MaxPackage+100] ^= 1
	if err := ioc.Operate(ctx, oids[0], objstore.NewWriteOp().WriteFull(bad)); err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(t, ctx, d, "k", &driver.Range{Start: 0, Length: crypt.PackageSize}); err != nil || !bytes.Equal(got, body[:crypt.PackageSize]) {
		t.Fatalf("untouched package: %v", err)
	}
	got, err := readBoth(t, ctx, d, "k", nil)
	if !errors.Is(err, crypt.ErrAuth) {
		t.Fatalf("tampered read: %v", err)
	}
	if len(got) > crypt.PackageSize {
		t.Fatalf("returned %d bytes past the tampered package", len(got))
	}
	// Cut the stored data: the last package is gone.
	if err := ioc.Operate(ctx, oids[0], objstore.NewWriteOp().WriteFull(rd.Data[:2*crypt.MaxPackage])); err != nil {
		t.Fatal(err)
	}
	if _, err := readBoth(t, ctx, d, "k", &driver.Range{Start: 2 * crypt.PackageSize, Length: 10}); err == nil {
		t.Fatal("truncated data read without error")
	}
}

func TestSSEMultipartCopyAndKMSDown(t *testing.T) {
	d, st, fk := newSSEDriver(t, false)
	ckey := bytes.Repeat([]byte{0xD}, 32)
	cctx := sseCtx(&driver.SSESpec{Mode: driver.SSEModeC, CustomerKey: ckey}, ckey, nil)
	id, err := d.CreateMultipartUpload(cctx, "bkt", "mp", driver.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	marker := []byte("MARKER-multipart-5b1e")
	parts := [][]byte{payload(driver.MinPartSize, marker), payload(driver.MinPartSize+crypt.PackageSize+1, marker), payload(100, nil)}
	var cps []driver.CompletePart
	var whole []byte
	for i, p := range parts {
		if _, err := d.UploadPart(context.Background(), "bkt", "mp", id, i+1, bytes.NewReader(p), int64(len(p)), nil); !errors.Is(err, driver.ErrSSECustomerKeyMissing) {
			t.Fatalf("part without key: %v", err)
		}
		pi, err := d.UploadPart(cctx, "bkt", "mp", id, i+1, bytes.NewReader(p), int64(len(p)), nil)
		if err != nil {
			t.Fatal(err)
		}
		cps = append(cps, driver.CompletePart{PartNumber: i + 1, ETag: pi.ETag})
		whole = append(whole, p...)
	}
	oi, err := d.CompleteMultipartUpload(cctx, "bkt", "mp", id, cps, driver.ObjectChecksum{})
	if err != nil {
		t.Fatal(err)
	}
	if oi.Size != int64(len(whole)) || oi.Meta.SSE == nil || oi.Meta.SSE.Mode != driver.SSEModeC {
		t.Fatalf("%+v", oi)
	}
	if rawContains(t, st, marker) {
		t.Fatal("multipart plaintext in the store")
	}
	edge := int64(driver.MinPartSize)
	for _, r := range [][2]int64{{0, int64(len(whole))}, {edge - 1, 2}, {edge - 5, crypt.PackageSize + 10}, {2*edge + crypt.PackageSize - 3, 104}} {
		got, err := readAll(t, cctx, d, "mp", &driver.Range{Start: r[0], Length: r[1]})
		if err != nil || !bytes.Equal(got, whole[r[0]:r[0]+r[1]]) {
			t.Fatalf("range %v: %v", r, err)
		}
	}
	// Copy SSE-C -> SSE-KMS -> clear, each readable with the right keys.
	kctx := sseCtx(&driver.SSESpec{Mode: driver.SSEModeKMS, KMSKeyID: "testkey-1"}, nil, ckey)
	if _, err := d.CopyObject(kctx, driver.CopyObjectInput{SrcBucket: "bkt", SrcKey: "mp", DstBucket: "bkt", DstKey: "kms"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CopyObject(context.Background(), driver.CopyObjectInput{SrcBucket: "bkt", SrcKey: "kms", DstBucket: "bkt", DstKey: "clear"}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"kms", "clear"} {
		got, err := readAll(t, context.Background(), d, k, nil)
		if err != nil || !bytes.Equal(got, whole) {
			t.Fatalf("copy %s: %v", k, err)
		}
	}
	if info, _ := d.HeadObject(context.Background(), "bkt", "clear"); info.Meta.SSE != nil {
		t.Fatal("a copy without encryption kept the source's record")
	}
	// KMS down: the PUT fails before writing anything.
	fk.down = true
	_, err = d.PutObject(sseCtx(&driver.SSESpec{Mode: driver.SSEModeS3}, nil, nil), driver.PutObjectInput{Bucket: "bkt", Key: "down", Body: bytes.NewReader([]byte("x")), Size: 1})
	if !errors.Is(err, kms.ErrUnavailable) {
		t.Fatalf("kms down: %v", err)
	}
	if _, err := d.HeadObject(context.Background(), "bkt", "down"); !errors.Is(err, driver.ErrNoSuchKey) {
		t.Fatalf("object after failed put: %v", err)
	}
	if _, err := readAll(t, context.Background(), d, "kms", nil); !errors.Is(err, kms.ErrUnavailable) {
		t.Fatalf("read with kms down: %v", err)
	}
	fk.down = false
	// Bucket default encryption applies to a PUT asking for none.
	if err := d.PutBucketEncryption(context.Background(), "bkt", driver.BucketEncryption{Mode: driver.SSEModeKMS, KMSKeyID: "testkey-1"}); err != nil {
		t.Fatal(err)
	}
	oi = put(t, d, "bkt", "dflt", []byte("hello"))
	if oi.Meta.SSE == nil || oi.Meta.SSE.KeyID != "testkey-1" {
		t.Fatalf("default not applied: %+v", oi.Meta.SSE)
	}
	if got, _ := readAll(t, context.Background(), d, "dflt", nil); string(got) != "hello" {
		t.Fatal(string(got))
	}
	// Empty encrypted object.
	oi = put(t, d, "bkt", "empty", nil)
	if got, err := readAll(t, context.Background(), d, "empty", nil); err != nil || len(got) != 0 || oi.Size != 0 {
		t.Fatalf("empty: %v %d", err, len(got))
	}
}

// TestSSEBucketKeySavesKMSCalls: with a bucket key, many PUTs cost one
// GenerateDataKey and reads open from cache; without, one call each.
func TestSSEBucketKeySavesKMSCalls(t *testing.T) {
	d, _, fk := newSSEDriver(t, false)
	ctx := context.Background()
	for _, bk := range []bool{false, true} {
		fk.calls = 0
		sctx := sseCtx(&driver.SSESpec{Mode: driver.SSEModeKMS, KMSKeyID: "testkey-1", BucketKey: bk}, nil, nil)
		for i := 0; i < 10; i++ {
			k := fmt.Sprintf("bk-%v-%d", bk, i)
			if _, err := d.PutObject(sctx, driver.PutObjectInput{Bucket: "bkt", Key: k, Body: bytes.NewReader([]byte(k)), Size: int64(len(k))}); err != nil {
				t.Fatal(err)
			}
			if got, err := readAll(t, ctx, d, k, nil); err != nil || string(got) != k {
				t.Fatalf("%s: %v", k, err)
			}
		}
		want := 20
		if bk {
			want = 1
		}
		if fk.calls != want {
			t.Fatalf("bucket key %v: %d KMS calls for 10 PUT+GET, want %d", bk, fk.calls, want)
		}
	}
	// Rewrap re-seals bucket keys too, and the objects still open.
	n, err := d.RewrapKeys(ctx, "bkt")
	if err != nil || n != 20 {
		t.Fatalf("rewrap: %d %v", n, err)
	}
	for i := 0; i < 10; i++ {
		k := fmt.Sprintf("bk-true-%d", i)
		if got, err := readAll(t, ctx, d, k, nil); err != nil || string(got) != k {
			t.Fatalf("%s after rewrap: %v", k, err)
		}
	}
}

// BenchmarkSSEPut is a 4 KiB and 4 MiB PUT + GET in process: clear,
// SSE-S3 (one KMS call each), SSE-S3 with a bucket key.
func BenchmarkSSEPutGet(b *testing.B) {
	for _, size := range []int{4 << 10, 4 << 20} {
		for _, tc := range []struct {
			name string
			spec *driver.SSESpec
		}{{"clear", nil}, {"s3", &driver.SSESpec{Mode: driver.SSEModeS3}}, {"s3-bucketkey", &driver.SSESpec{Mode: driver.SSEModeS3, BucketKey: true}}} {
			b.Run(fmt.Sprintf("%s/%d", tc.name, size), func(b *testing.B) {
				d, _, _ := newSSEDriver(b, false)
				body := payload(size, nil)
				ctx := sseCtx(tc.spec, nil, nil)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					k := fmt.Sprintf("k%d", i%64)
					if _, err := d.PutObject(ctx, driver.PutObjectInput{Bucket: "bkt", Key: k, Body: bytes.NewReader(body), Size: int64(size)}); err != nil {
						b.Fatal(err)
					}
					_, rd, err := d.GetObject(context.Background(), "bkt", k, nil)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, rd)
					rd.Close()
				}
			})
		}
	}
}
