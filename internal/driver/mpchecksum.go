package driver

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/checksum"
)

// Multipart checksums (AWS "Checking object integrity"). An upload created
// with x-amz-checksum-algorithm records {alg: ""} and its type in
// UploadInfo.Meta; every part then gets that algorithm's checksum (the
// client's, verified upstream, or computed here while the part streams),
// and CompleteMultipartUpload derives the object's checksum from the
// parts': the CRC of the whole data for FULL_OBJECT (CRC combination, no
// data read), the checksum of the concatenated raw part checksums with a
// "-N" suffix for COMPOSITE.

// uploadChecksum is the algorithm and type an upload was created with, or
// "" when it was created without one.
func uploadChecksum(m ObjectMeta) (alg, typ string) {
	for a := range m.Checksums {
		return a, m.ChecksumType
	}
	return "", ""
}

// defaultChecksumType is S3's type when a client names only the algorithm.
func defaultChecksumType(alg string) string {
	if alg == string(checksum.CRC64NVME) {
		return "FULL_OBJECT"
	}
	return "COMPOSITE"
}

// partHasher tees a part's bytes into the upload's algorithm unless the
// caller's checksums map already names it (a value, or "" for one that
// arrives verified at EOF, e.g. in a trailer): CRC64NVME and SHA run at a
// few hundred MB/s, too slow to compute twice.
type partHasher struct {
	alg  checksum.Algorithm
	h    interface{ Sum([]byte) []byte } // nil: the caller supplies alg
	body io.Reader
	// dflt hashes S3's default CRC64NVME for a part of an upload created
	// without an algorithm (nil when the client sends that CRC itself).
	dflt interface{ Sum([]byte) []byte }
}

func newPartHasher(ui UploadInfo, body io.Reader, client map[string]string) *partHasher {
	alg, _ := uploadChecksum(ui.Meta)
	a := checksum.Algorithm(alg)
	if a.Size() == 0 {
		if _, promised := client[string(checksum.CRC64NVME)]; promised {
			return &partHasher{body: body}
		}
		h := checksum.CRC64NVME.New()
		return &partHasher{dflt: h, body: io.TeeReader(body, h)}
	}
	if _, promised := client[alg]; promised {
		return &partHasher{alg: a, body: body}
	}
	h := a.New()
	return &partHasher{alg: a, h: h, body: io.TeeReader(body, h)}
}

// partChecksums returns what to record for a part: the client's verified
// checksums (filled by the verifying reader at EOF) plus the upload's
// algorithm computed here. A part checksummed only with another algorithm
// than the upload's is InvalidRequest, as S3 answers it.
func (p *partHasher) partChecksums(client map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(client)+1)
	for a, v := range client {
		if v != "" {
			out[a] = v
		}
	}
	if p.alg == "" {
		return out, nil
	}
	if p.h == nil {
		// Supplied by the caller. Should it be missing after all, Complete
		// reads the part back to compute it (partSum).
		return out, nil
	}
	got := checksum.Encode(p.h.Sum(nil))
	if v, ok := out[string(p.alg)]; ok && v != got {
		// The verifying reader checked the client's value against the same
		// bytes; a difference means the data changed in between.
		return nil, fmt.Errorf("%w: The %s you specified did not match the calculated checksum.", ErrBadDigest, p.alg)
	}
	if len(out) > 0 && out[string(p.alg)] == "" {
		for a := range out {
			return nil, fmt.Errorf("%w: Checksum Type mismatch occurred, expected checksum Type: %s, actual checksum Type: %s",
				ErrInvalidRequest, strings.ToLower(string(p.alg)), strings.ToLower(a))
		}
	}
	out[string(p.alg)] = got
	return out, nil
}

// defaultCRC is the part's CRC64NVME for S3's default object checksum,
// when its upload has no algorithm; sums are the part's recorded checksums.
func (p *partHasher) defaultCRC(sums map[string]string) string {
	if p.alg != "" {
		return ""
	}
	if p.dflt != nil {
		return checksum.Encode(p.dflt.Sum(nil))
	}
	return sums[string(checksum.CRC64NVME)]
}

// checkListedPartChecksums compares the checksums a client listed for a
// part in the Complete XML with the part's recorded ones.
func checkListedPartChecksums(cp CompletePart, p partRecord) error {
	for a, v := range cp.Checksums {
		if v == "" {
			continue
		}
		if have := p.Checksums[a]; have == "" || strings.TrimSpace(v) != have {
			return fmt.Errorf("%w: the %s checksum listed for part %d does not match the part's", ErrInvalidPart, a, cp.PartNumber)
		}
	}
	return nil
}

// completeChecksum derives the object checksum from the listed parts (in
// order) and checks the client's declared one. It returns the algorithm,
// type and stored value, all "" when neither the upload nor the client
// asked for a checksum.
func (d *Driver) completeChecksum(ctx context.Context, ui UploadInfo, parts []partRecord, want ObjectChecksum) (alg, typ, value string, err error) {
	alg, typ = uploadChecksum(ui.Meta)
	wantAlg, wantTyp := strings.ToUpper(want.Algorithm), strings.ToUpper(want.Type)
	switch {
	case alg != "":
		if wantAlg != "" && wantAlg != alg {
			return "", "", "", fmt.Errorf("%w: The upload was created using a %s checksum. The complete request specified a %s checksum.",
				ErrInvalidRequest, strings.ToLower(alg), strings.ToLower(wantAlg))
		}
		if wantTyp != "" && wantTyp != typ {
			return "", "", "", fmt.Errorf("%w: The upload was created using the %s checksum mode. The complete request must use the same checksum mode.",
				ErrInvalidRequest, typ)
		}
		if typ == "" {
			typ = defaultChecksumType(alg)
		}
	case wantAlg != "":
		alg, typ = wantAlg, wantTyp
	case wantTyp != "":
		return "", "", "", fmt.Errorf("%w: The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header or an x-amz-checksum-<algorithm> header.", ErrInvalidRequest)
	default:
		// Neither asked: S3's default full-object CRC64NVME, combined from
		// the parts' CRCs. Parts recorded without one (written before this
		// existed) leave the object without a checksum rather than being
		// read back.
		sums := make([]checksum.Part, len(parts))
		for i, p := range parts {
			raw, err := base64.StdEncoding.DecodeString(p.DefaultCRC)
			if err != nil || len(raw) != checksum.CRC64NVME.Size() {
				return "", "", "", nil
			}
			sums[i] = checksum.Part{Sum: raw, Size: p.Size}
		}
		raw, err := checksum.FullObject(checksum.CRC64NVME, sums)
		if err != nil {
			return "", "", "", err
		}
		return string(checksum.CRC64NVME), "FULL_OBJECT", checksum.Encode(raw), nil
	}
	a := checksum.Algorithm(alg)
	if a.Size() == 0 {
		return "", "", "", fmt.Errorf("%w: Checksum algorithm provided is unsupported.", ErrInvalidRequest)
	}
	sums := make([]checksum.Part, len(parts))
	for i, p := range parts {
		raw, err := d.partSum(ctx, a, p, ui)
		if err != nil {
			return "", "", "", err
		}
		sums[i] = checksum.Part{Sum: raw, Size: p.Size}
	}
	compute := func(typ string) (string, error) {
		switch typ {
		case "FULL_OBJECT":
			raw, err := checksum.FullObject(a, sums)
			if err != nil {
				return "", fmt.Errorf("%w: The FULL_OBJECT checksum type is not supported for the %s algorithm.", ErrInvalidRequest, alg)
			}
			return checksum.Encode(raw), nil
		case "COMPOSITE":
			if a == checksum.CRC64NVME {
				return "", fmt.Errorf("%w: The COMPOSITE checksum type is not supported for the %s algorithm.", ErrInvalidRequest, alg)
			}
			raws := make([][]byte, len(sums))
			for i, s := range sums {
				raws[i] = s.Sum
			}
			return checksum.Composite(a, raws), nil
		}
		return "", fmt.Errorf("%w: Value for x-amz-checksum-type header is invalid.", ErrInvalidRequest)
	}
	types := []string{typ}
	if typ == "" {
		// A value without a declared type: S3's default for the algorithm,
		// and for CRCs the other type too (clients differ in what they send).
		typ = defaultChecksumType(alg)
		types = []string{typ}
		if _, err := checksum.FullObject(a, nil); err == nil && typ == "COMPOSITE" {
			types = append(types, "FULL_OBJECT")
		}
	}
	for _, t := range types {
		v, err := compute(t)
		if err != nil {
			return "", "", "", err
		}
		if want.Value == "" || matchesDeclared(v, want.Value) {
			return alg, t, v, nil
		}
	}
	return "", "", "", fmt.Errorf("%w: The %s you specified did not match the calculated checksum.", ErrBadDigest, alg)
}

// matchesDeclared compares a computed object checksum with the client's:
// a COMPOSITE value may be declared with or without its "-N" suffix.
func matchesDeclared(computed, declared string) bool {
	declared = strings.TrimSpace(declared)
	if computed == declared {
		return true
	}
	base, _, ok := strings.Cut(computed, "-")
	return ok && base == declared
}

// partSum is a part's raw checksum with algorithm a: the recorded one, or,
// for a part uploaded without it (an upload created without an algorithm
// whose Complete declares one), computed by reading the part's data.
func (d *Driver) partSum(ctx context.Context, a checksum.Algorithm, p partRecord, ui UploadInfo) ([]byte, error) {
	if v := p.Checksums[string(a)]; v != "" {
		raw, err := base64.StdEncoding.DecodeString(v)
		if err == nil && len(raw) == a.Size() {
			return raw, nil
		}
	}
	h := a.New()
	var oek []byte
	if p.Run.Enc {
		// An encrypted part: its checksum is the plaintext's.
		k, err := d.openSSE(ctx, ui.Meta.SSE, ui.Key, sseFrom(ctx).CustomerKey)
		if err != nil {
			return nil, err
		}
		oek = k
	}
	r := d.newDataReader(ctx, bucketindex.Manifest{Runs: []bucketindex.Run{p.Run}}, oek, 0, p.Run.DataSize())
	defer r.Close()
	if _, err := io.Copy(h, r); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// wholeChecksum recomputes a multipart object's checksum algorithm over
// its data as it is copied into a single-part object: the returned map is
// filled when body reaches EOF (PutObject serialises Meta after that).
func wholeChecksum(m ObjectMeta, r io.Reader) (map[string]string, string, io.Reader) {
	alg, _ := uploadChecksum(m)
	a := checksum.Algorithm(alg)
	if a.Size() == 0 {
		return nil, "", r
	}
	out := map[string]string{}
	h := a.New()
	return out, "FULL_OBJECT", &eofHook{r: io.TeeReader(r, h), done: func() { out[alg] = checksum.Encode(h.Sum(nil)) }}
}

type eofHook struct {
	r    io.Reader
	done func()
}

func (e *eofHook) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF && e.done != nil {
		e.done()
		e.done = nil
	}
	return n, err
}
