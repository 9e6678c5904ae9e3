package driver_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/cairn-s3/cairn/internal/checksum"
	"github.com/cairn-s3/cairn/internal/driver"
)

// Multipart checksums in the driver: FULL_OBJECT and COMPOSITE derived from
// the parts, declared values checked, part checksums computed when the
// client sends none, and read back for an upload created without an
// algorithm whose Complete declares one.
func TestMultipartChecksums(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t)
	if err := d.CreateBucket(ctx, "alice", "ckbkt", "", 0); err != nil {
		t.Fatal(err)
	}
	p1 := bytes.Repeat([]byte("first part "), driver.MinPartSize/11+1)
	p2 := []byte("second, short part")
	whole := append(append([]byte{}, p1...), p2...)

	upload := func(t *testing.T, meta driver.ObjectMeta, partSums func(i int, p []byte) map[string]string) (string, []driver.CompletePart) {
		t.Helper()
		id, err := d.CreateMultipartUpload(ctx, "ckbkt", "obj", meta)
		if err != nil {
			t.Fatal(err)
		}
		var parts []driver.CompletePart
		for i, p := range [][]byte{p1, p2} {
			pi, err := d.UploadPart(ctx, "ckbkt", "obj", id, i+1, bytes.NewReader(p), int64(len(p)), partSums(i, p))
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, driver.CompletePart{PartNumber: i + 1, ETag: pi.ETag})
		}
		return id, parts
	}
	none := func(int, []byte) map[string]string { return nil }

	t.Run("composite-computed", func(t *testing.T) {
		id, parts := upload(t, driver.ObjectMeta{Checksums: map[string]string{"SHA256": ""}, ChecksumType: "COMPOSITE"}, none)
		want := checksum.Composite(checksum.SHA256, [][]byte{sha(p1), sha(p2)})
		if _, err := d.CompleteMultipartUpload(ctx, "ckbkt", "obj", id, parts, driver.ObjectChecksum{Algorithm: "SHA256", Value: checksum.Encode(sha(p1))}); !errors.Is(err, driver.ErrBadDigest) {
			t.Fatalf("wrong declared value: %v", err)
		}
		if _, err := d.CompleteMultipartUpload(ctx, "ckbkt", "obj", id, parts, driver.ObjectChecksum{Algorithm: "CRC32"}); !errors.Is(err, driver.ErrInvalidRequest) {
			t.Fatalf("other algorithm: %v", err)
		}
		parts[0].Checksums = map[string]string{"SHA256": checksum.Encode(sha(p2))}
		if _, err := d.CompleteMultipartUpload(ctx, "ckbkt", "obj", id, parts, driver.ObjectChecksum{}); !errors.Is(err, driver.ErrInvalidPart) {
			t.Fatalf("wrong listed part checksum: %v", err)
		}
		parts[0].Checksums = map[string]string{"SHA256": checksum.Encode(sha(p1))}
		oi, err := d.CompleteMultipartUpload(ctx, "ckbkt", "obj", id, parts, driver.ObjectChecksum{Algorithm: "SHA256", Value: want[:len(want)-2]})
		if err != nil {
			t.Fatal(err)
		}
		if oi.Meta.Checksums["SHA256"] != want || oi.Meta.ChecksumType != "COMPOSITE" || len(oi.Meta.PartChecksums) != 2 {
			t.Fatalf("stored %+v", oi.Meta)
		}
	})

	t.Run("full-object-from-client-part-sums", func(t *testing.T) {
		id, parts := upload(t, driver.ObjectMeta{Checksums: map[string]string{"CRC64NVME": ""}, ChecksumType: "FULL_OBJECT"},
			func(_ int, p []byte) map[string]string {
				return map[string]string{"CRC64NVME": checksum.CRC64NVME.Sum(p)}
			})
		oi, err := d.CompleteMultipartUpload(ctx, "ckbkt", "obj", id, parts, driver.ObjectChecksum{Algorithm: "CRC64NVME", Value: checksum.CRC64NVME.Sum(whole), Type: "FULL_OBJECT"})
		if err != nil {
			t.Fatal(err)
		}
		if oi.Meta.Checksums["CRC64NVME"] != checksum.CRC64NVME.Sum(whole) {
			t.Fatalf("stored %+v", oi.Meta)
		}
	})

	t.Run("part-in-another-algorithm", func(t *testing.T) {
		id, err := d.CreateMultipartUpload(ctx, "ckbkt", "obj", driver.ObjectMeta{Checksums: map[string]string{"CRC32C": ""}, ChecksumType: "COMPOSITE"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.UploadPart(ctx, "ckbkt", "obj", id, 1, bytes.NewReader(p2), int64(len(p2)), map[string]string{"CRC32": checksum.CRC32.Sum(p2)}); !errors.Is(err, driver.ErrInvalidRequest) {
			t.Fatalf("part with another algorithm: %v", err)
		}
	})

	t.Run("no-algorithm-read-back", func(t *testing.T) {
		id, parts := upload(t, driver.ObjectMeta{}, none)
		if _, err := d.CompleteMultipartUpload(ctx, "ckbkt", "obj", id, parts, driver.ObjectChecksum{Algorithm: "CRC32C", Value: checksum.CRC32C.Sum(p1), Type: "FULL_OBJECT"}); !errors.Is(err, driver.ErrBadDigest) {
			t.Fatalf("wrong value: %v", err)
		}
		oi, err := d.CompleteMultipartUpload(ctx, "ckbkt", "obj", id, parts, driver.ObjectChecksum{Algorithm: "CRC32C", Value: checksum.CRC32C.Sum(whole)})
		if err != nil {
			t.Fatal(err)
		}
		if oi.Meta.Checksums["CRC32C"] != checksum.CRC32C.Sum(whole) || oi.Meta.ChecksumType != "FULL_OBJECT" {
			t.Fatalf("stored %+v", oi.Meta)
		}
	})

	t.Run("announced-but-missing", func(t *testing.T) {
		// A checksum announced ("") but never delivered: the part is kept
		// without it and Complete computes it from the data.
		id, parts := upload(t, driver.ObjectMeta{Checksums: map[string]string{"CRC32": ""}, ChecksumType: "FULL_OBJECT"},
			func(int, []byte) map[string]string { return map[string]string{"CRC32": ""} })
		oi, err := d.CompleteMultipartUpload(ctx, "ckbkt", "obj", id, parts, driver.ObjectChecksum{Algorithm: "CRC32", Value: checksum.CRC32.Sum(whole)})
		if err != nil {
			t.Fatal(err)
		}
		if oi.Meta.Checksums["CRC32"] != checksum.CRC32.Sum(whole) {
			t.Fatalf("stored %+v", oi.Meta)
		}
	})

	// Nobody asked for a checksum: S3's default full-object CRC64NVME,
	// with the parts' CRCs for GetObjectAttributes, none in the parts'
	// own records (ListParts shows what the client sent).
	t.Run("no-checksum-at-all", func(t *testing.T) {
		id, parts := upload(t, driver.ObjectMeta{}, none)
		lp, err := d.ListParts(ctx, "ckbkt", "obj", id, 0, 1000)
		if err != nil || len(lp.Parts) != 2 || len(lp.Parts[0].Checksums) != 0 {
			t.Fatalf("parts %+v %v", lp.Parts, err)
		}
		oi, err := d.CompleteMultipartUpload(ctx, "ckbkt", "obj", id, parts, driver.ObjectChecksum{})
		want := checksum.CRC64NVME.Sum(whole)
		if err != nil || len(oi.Meta.Checksums) != 1 || oi.Meta.Checksums["CRC64NVME"] != want || oi.Meta.ChecksumType != "FULL_OBJECT" {
			t.Fatalf("%+v %v, want CRC64NVME %s", oi.Meta, err, want)
		}
		if pc := oi.Meta.PartChecksums; len(pc) != 2 || pc[0] != checksum.CRC64NVME.Sum(p1) || pc[1] != checksum.CRC64NVME.Sum(p2) {
			t.Fatalf("part checksums %v", pc)
		}
	})
}

func sha(b []byte) []byte {
	h := checksum.SHA256.New()
	h.Write(b)
	return h.Sum(nil)
}
