package s3api

import (
	"cmp"
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// maxPartSize is S3's largest part (and largest UploadPartCopy range).
const maxPartSize = 5 << 30

const maxListParts = 1000

type initiateMultipartUploadResult struct {
	XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
	Xmlns    string   `xml:"xmlns,attr"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	UploadID string   `xml:"UploadId"`
}

func (s *Server) createMultipartUpload(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if err := checkKey(rc.key); err != nil {
		return err
	}
	sp, err := s.parseSSE(r, sseWrite)
	if err != nil {
		return err
	}
	meta, err := s.writeMeta(r, rc, true)
	if err != nil {
		return err
	}
	alg := strings.ToUpper(r.Header.Get("X-Amz-Checksum-Algorithm"))
	typ := strings.ToUpper(r.Header.Get("X-Amz-Checksum-Type"))
	if alg != "" && !validAlgorithm(alg) {
		return s3err.New(s3err.ErrInvalidRequest, "Checksum algorithm provided is unsupported.")
	}
	switch typ {
	case "", "COMPOSITE", "FULL_OBJECT":
	default:
		return s3err.New(s3err.ErrInvalidRequest, "Value for x-amz-checksum-type header is invalid.")
	}
	if typ != "" && alg == "" {
		return s3err.New(s3err.ErrInvalidRequest, "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.")
	}
	if alg != "" {
		if typ == "" {
			typ = "COMPOSITE"
			if alg == "CRC64NVME" {
				typ = "FULL_OBJECT" // the only type CRC64NVME supports
			}
		}
		if (typ == "FULL_OBJECT" && (alg == "SHA1" || alg == "SHA256")) || (typ == "COMPOSITE" && alg == "CRC64NVME") {
			return s3err.New(s3err.ErrInvalidRequest, "The %s checksum type is not supported for the %s algorithm.", typ, alg)
		}
		// The algorithm is recorded with an empty value; the backend fills
		// in the object's checksum at completion.
		meta.Checksums = map[string]string{alg: ""}
		meta.ChecksumType = typ
	}
	ctx := withSSE(r.Context(), sp)
	id, err := s.be.CreateMultipartUpload(ctx, rc.bucket, rc.key, meta)
	if err != nil {
		return err
	}
	// The upload's encryption (request or bucket default), as AWS reports it.
	if lp, err := s.be.ListParts(ctx, rc.bucket, rc.key, id, 0, 1); err == nil {
		sseHeaders(w.Header(), lp.Upload.Meta.SSE, sp.keyMD5)
	}
	if alg != "" {
		w.Header().Set("X-Amz-Checksum-Algorithm", alg)
		w.Header().Set("X-Amz-Checksum-Type", typ)
	}
	return writeXML(w, http.StatusOK, initiateMultipartUploadResult{
		Xmlns: s3Namespace, Bucket: rc.bucketName, Key: rc.key, UploadID: id,
	})
}

func parsePartNumber(q url.Values) (int, error) {
	n, err := strconv.Atoi(q.Get("partNumber"))
	if err != nil || n < 1 || n > driver.MaxPartNumber {
		return 0, s3err.New(s3err.ErrInvalidArgument, "Part number must be an integer between 1 and 10000, inclusive")
	}
	return n, nil
}

func uploadID(q url.Values) (string, error) {
	id := q.Get("uploadId")
	if id == "" {
		return "", s3err.New(s3err.ErrNoSuchUpload, "")
	}
	return id, nil
}

func (s *Server) uploadPart(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	q := r.URL.Query()
	if err := checkKey(rc.key); err != nil {
		return err
	}
	part, err := parsePartNumber(q)
	if err != nil {
		return err
	}
	id, err := uploadID(q)
	if err != nil {
		return err
	}
	sp, err := s.parseSSE(r, ssePart)
	if err != nil {
		return err
	}
	p, err := newPayload(r, rc, maxPartSize)
	if err != nil {
		return err
	}
	if p.alg != "" {
		// Tells the backend this checksum arrives with the body, so it
		// need not compute the upload's algorithm a second time.
		p.checksums[p.alg] = ""
	}
	info, err := s.be.UploadPart(withSSE(r.Context(), sp), rc.bucket, rc.key, id, part, p.body, p.size, p.checksums)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Etag", quoteETag(info.ETag))
	sseHeaders(h, info.SSE, sp.keyMD5)
	sums := pick(info.Checksums, p.checksums)
	for _, alg := range checksumAlgorithms {
		if v := sums[alg]; v != "" {
			h.Set(checksumHeaderKey[alg], v)
		}
	}
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

type copyPartResult struct {
	XMLName      xml.Name `xml:"CopyPartResult"`
	Xmlns        string   `xml:"xmlns,attr"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
	checksumXML
}

// parseCopyRange parses x-amz-copy-source-range, which S3 requires in
// the explicit form bytes=first-last.
func parseCopyRange(v string, size int64) (*driver.Range, error) {
	if v == "" {
		return nil, nil
	}
	bad := s3err.New(s3err.ErrInvalidArgument, "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy")
	spec, ok := strings.CutPrefix(v, "bytes=")
	if !ok {
		return nil, bad
	}
	a, b, ok := strings.Cut(spec, "-")
	if !ok {
		return nil, bad
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || first < 0 || last < first {
		return nil, bad
	}
	if last >= size {
		return nil, s3err.New(s3err.ErrInvalidRange, "Range specified is not valid for source object of size: %d", size)
	}
	return &driver.Range{Start: first, Length: last - first + 1}, nil
}

// uploadPartCopy reads the source range through Backend.GetObject and
// streams it into UploadPart.
func (s *Server) uploadPartCopy(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	q := r.URL.Query()
	if err := checkKey(rc.key); err != nil {
		return err
	}
	part, err := parsePartNumber(q)
	if err != nil {
		return err
	}
	id, err := uploadID(q)
	if err != nil {
		return err
	}
	src, info, check, err := s.copySource(r, rc)
	if err != nil {
		return err
	}
	sp, err := s.parseSSE(r, ssePart)
	if err != nil {
		return err
	}
	// The source opens with the copy-source key, the part with the
	// upload's.
	ctx := driver.WithSSE(r.Context(), driver.SSERequest{CustomerKey: sp.req.CopySourceKey})
	dstCtx := withSSE(r.Context(), sseParams{req: driver.SSERequest{CustomerKey: sp.req.CustomerKey}})
	if err := driver.CheckCustomerKey(info, sp.req.CopySourceKey); err != nil {
		return err
	}
	if err := checkCopyConditions(copyConditions(r.Header), info); err != nil {
		return err
	}
	rng, err := parseCopyRange(r.Header.Get("X-Amz-Copy-Source-Range"), info.Size)
	if err != nil {
		return err
	}
	length := info.Size
	if rng != nil {
		length = rng.Length
	}
	if length > maxPartSize {
		return s3err.New(s3err.ErrInvalidRequest, "The specified copy source is larger than the maximum allowable size for a copy source: %d", int64(maxPartSize))
	}
	got, body, err := s.getVersion(ctx, src.bucket, src.key, pinned(src, info), rng)
	if err != nil {
		return err
	}
	defer body.Close()
	if got.ETag != info.ETag || got.VersionID != info.VersionID {
		return s3err.New(s3err.ErrPreconditionFailed, "The copy source changed during the copy.")
	}
	if err := check(got); err != nil {
		return err // its ACL changed since the decision
	}
	pinfo, err := s.be.UploadPart(dstCtx, rc.bucket, rc.key, id, part, body, length, nil)
	if err != nil {
		return err
	}
	sseHeaders(w.Header(), pinfo.SSE, sp.keyMD5)
	return writeXML(w, http.StatusOK, copyPartResult{
		Xmlns:        s3Namespace,
		LastModified: s3Time(pinfo.ModTime),
		ETag:         quoteETag(pinfo.ETag),
		checksumXML:  newChecksumXML(pinfo.Checksums),
	})
}

type listPartsResult struct {
	XMLName              xml.Name  `xml:"ListPartsResult"`
	Xmlns                string    `xml:"xmlns,attr"`
	Bucket               string    `xml:"Bucket"`
	Key                  string    `xml:"Key"`
	UploadID             string    `xml:"UploadId"`
	Initiator            owner     `xml:"Initiator"`
	Owner                owner     `xml:"Owner"`
	StorageClass         string    `xml:"StorageClass"`
	PartNumberMarker     int       `xml:"PartNumberMarker"`
	NextPartNumberMarker int       `xml:"NextPartNumberMarker"`
	MaxParts             int       `xml:"MaxParts"`
	IsTruncated          bool      `xml:"IsTruncated"`
	ChecksumAlgorithm    string    `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType         string    `xml:"ChecksumType,omitempty"`
	Parts                []partXML `xml:"Part"`
}

type partXML struct {
	PartNumber   int    `xml:"PartNumber"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	checksumXML
}

func intParam(q url.Values, name string, def, max int) (int, error) {
	if !q.Has(name) {
		return def, nil
	}
	n, err := strconv.Atoi(q.Get(name))
	if err != nil || n < 0 {
		return 0, s3err.New(s3err.ErrInvalidArgument, "Argument %s must be an integer between 0 and 2147483647", name)
	}
	return min(n, max), nil
}

func (s *Server) listParts(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	q := r.URL.Query()
	id, err := uploadID(q)
	if err != nil {
		return err
	}
	marker, err := intParam(q, "part-number-marker", 0, driver.MaxPartNumber)
	if err != nil {
		return err
	}
	max, err := intParam(q, "max-parts", maxListParts, maxListParts)
	if err != nil {
		return err
	}
	res, err := s.be.ListParts(r.Context(), rc.bucket, rc.key, id, marker, max)
	if err != nil {
		return err
	}
	oc := &ownerCache{s: s, r: r}
	ow, init := oc.owner(res.Upload.Owner), oc.owner(cmp.Or(res.Upload.Initiator, res.Upload.Owner))
	out := listPartsResult{
		Xmlns:                s3Namespace,
		Bucket:               rc.bucketName,
		Key:                  rc.key,
		UploadID:             id,
		Initiator:            *init,
		Owner:                *ow,
		StorageClass:         storageClass(res.Upload.StorageClass),
		PartNumberMarker:     marker,
		NextPartNumberMarker: res.NextPartNumberMarker,
		MaxParts:             max,
		IsTruncated:          res.IsTruncated,
		ChecksumType:         res.Upload.Meta.ChecksumType,
	}
	for alg := range res.Upload.Meta.Checksums {
		out.ChecksumAlgorithm = alg
	}
	for _, p := range res.Parts {
		out.Parts = append(out.Parts, partXML{
			PartNumber:   p.PartNumber,
			LastModified: s3Time(p.ModTime),
			ETag:         quoteETag(p.ETag),
			Size:         p.Size,
			checksumXML:  newChecksumXML(p.Checksums),
		})
	}
	if res.IsTruncated && out.NextPartNumberMarker == 0 && len(res.Parts) > 0 {
		out.NextPartNumberMarker = res.Parts[len(res.Parts)-1].PartNumber
	}
	return writeXML(w, http.StatusOK, out)
}

type listMultipartUploadsResult struct {
	XMLName            xml.Name       `xml:"ListMultipartUploadsResult"`
	Xmlns              string         `xml:"xmlns,attr"`
	Bucket             string         `xml:"Bucket"`
	KeyMarker          string         `xml:"KeyMarker"`
	UploadIDMarker     string         `xml:"UploadIdMarker"`
	NextKeyMarker      string         `xml:"NextKeyMarker"`
	NextUploadIDMarker string         `xml:"NextUploadIdMarker"`
	Prefix             string         `xml:"Prefix"`
	Delimiter          string         `xml:"Delimiter,omitempty"`
	MaxUploads         int            `xml:"MaxUploads"`
	EncodingType       string         `xml:"EncodingType,omitempty"`
	IsTruncated        bool           `xml:"IsTruncated"`
	Uploads            []uploadXML    `xml:"Upload"`
	CommonPrefixes     []commonPrefix `xml:"CommonPrefixes"`
}

type uploadXML struct {
	Key          string `xml:"Key"`
	UploadID     string `xml:"UploadId"`
	Initiator    owner  `xml:"Initiator"`
	Owner        owner  `xml:"Owner"`
	StorageClass string `xml:"StorageClass"`
	Initiated    string `xml:"Initiated"`
}

func (s *Server) listMultipartUploads(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	q := r.URL.Query()
	enc, err := newEncoder(q)
	if err != nil {
		return err
	}
	max, err := intParam(q, "max-uploads", maxListKeys, maxListKeys)
	if err != nil {
		return err
	}
	in := driver.ListUploadsInput{
		Bucket:         rc.bucket,
		Prefix:         q.Get("prefix"),
		Delimiter:      q.Get("delimiter"),
		KeyMarker:      q.Get("key-marker"),
		UploadIDMarker: q.Get("upload-id-marker"),
		MaxUploads:     max,
	}
	var res driver.ListUploadsResult
	if max > 0 {
		if res, err = s.be.ListMultipartUploads(r.Context(), in); err != nil {
			return err
		}
	}
	out := listMultipartUploadsResult{
		Xmlns:              s3Namespace,
		Bucket:             rc.bucketName,
		KeyMarker:          enc.enc(in.KeyMarker),
		UploadIDMarker:     in.UploadIDMarker,
		NextKeyMarker:      enc.enc(res.NextKeyMarker),
		NextUploadIDMarker: res.NextUploadIDMarker,
		Prefix:             enc.enc(in.Prefix),
		Delimiter:          in.Delimiter, // as sent, like RGW
		MaxUploads:         max,
		EncodingType:       enc.typ(),
		IsTruncated:        res.IsTruncated,
	}
	oc := &ownerCache{s: s, r: r}
	for _, u := range res.Uploads {
		ow, init := oc.owner(u.Owner), oc.owner(cmp.Or(u.Initiator, u.Owner))
		out.Uploads = append(out.Uploads, uploadXML{
			Key:          enc.enc(u.Key),
			UploadID:     u.UploadID,
			Initiator:    *init,
			Owner:        *ow,
			StorageClass: storageClass(u.StorageClass),
			Initiated:    s3Time(u.Initiated),
		})
	}
	for _, p := range res.CommonPrefixes {
		out.CommonPrefixes = append(out.CommonPrefixes, commonPrefix{Prefix: enc.enc(p)})
	}
	return writeXML(w, http.StatusOK, out)
}

type completeMultipartUpload struct {
	XMLName xml.Name        `xml:"CompleteMultipartUpload"`
	Parts   []completedPart `xml:"Part"`
}

type completedPart struct {
	PartNumber int    `xml:"PartNumber"`
	ETag       string `xml:"ETag"`
	checksumXML
}

type completeMultipartUploadResult struct {
	XMLName  xml.Name `xml:"CompleteMultipartUploadResult"`
	Xmlns    string   `xml:"xmlns,attr"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
	checksumXML
	ChecksumType string `xml:"ChecksumType,omitempty"`
}

// parseCompleteParts parses and validates a CompleteMultipartUpload body:
// at least one part, part numbers in 1..10000 and strictly ascending.
func parseCompleteParts(data []byte) ([]driver.CompletePart, error) {
	var doc completeMultipartUpload
	if err := decodeXML(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Parts) == 0 {
		return nil, s3err.New(s3err.ErrMalformedXML, "")
	}
	if len(doc.Parts) > driver.MaxPartNumber {
		return nil, s3err.New(s3err.ErrInvalidArgument, "Too many parts.")
	}
	parts := make([]driver.CompletePart, len(doc.Parts))
	for i, p := range doc.Parts {
		if p.PartNumber < 1 || p.PartNumber > driver.MaxPartNumber {
			return nil, s3err.New(s3err.ErrInvalidArgument, "Part number must be an integer between 1 and 10000, inclusive")
		}
		if i > 0 && p.PartNumber <= doc.Parts[i-1].PartNumber {
			return nil, s3err.New(s3err.ErrInvalidPartOrder, "")
		}
		parts[i] = driver.CompletePart{
			PartNumber: p.PartNumber,
			ETag:       strings.Trim(strings.TrimSpace(p.ETag), `"`),
			Checksums:  p.checksumXML.toMap(),
		}
	}
	return parts, nil
}

func (s *Server) completeMultipartUpload(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	id, err := uploadID(r.URL.Query())
	if err != nil {
		return err
	}
	sum, err := declaredObjectChecksum(r.Header)
	if err != nil {
		return err
	}
	sp, err := s.parseSSE(r, ssePart)
	if err != nil {
		return err
	}
	p, err := verifyXMLBody(r, rc)
	if err != nil {
		return err
	}
	data, err := readAllLimited(p.body, maxCompleteXML)
	if err != nil {
		return err
	}
	parts, err := parseCompleteParts(data)
	if err != nil {
		return err
	}
	info, err := s.completeUpload(withSSE(r.Context(), sp), r, rc, id, parts, sum)
	if err != nil {
		return err
	}
	setWriteVersionHeader(w.Header(), info.VersionID)
	rc.etag, rc.size = info.ETag, info.Size
	sseHeaders(w.Header(), info.Meta.SSE, sp.keyMD5)
	out := completeMultipartUploadResult{
		Xmlns:       s3Namespace,
		Location:    objectURL(r, rc),
		Bucket:      rc.bucketName,
		Key:         rc.key,
		ETag:        quoteETag(info.ETag),
		checksumXML: newChecksumXML(info.Meta.Checksums),
	}
	if len(out.checksumXML.toMap()) > 0 {
		out.ChecksumType = info.Meta.ChecksumType
	}
	return writeXML(w, http.StatusOK, out)
}

func objectURL(r *http.Request, rc *reqCtx) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/" + rc.rawBucket + "/" + (&url.URL{Path: rc.key}).EscapedPath()
}

func (s *Server) abortMultipartUpload(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	id, err := uploadID(r.URL.Query())
	if err != nil {
		return err
	}
	if err := s.be.AbortMultipartUpload(r.Context(), rc.bucket, rc.key, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
