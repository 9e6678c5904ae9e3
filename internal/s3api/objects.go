package s3api

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// defaultContentType is what S3 reports for objects stored without one.
const defaultContentType = "binary/octet-stream"

func checkKey(key string) error {
	if len(key) > driver.MaxKeyLen {
		return s3err.New(s3err.ErrKeyTooLong, "")
	}
	return nil
}

// checkVersionID accepts only the "null" version: buckets are unversioned.
func checkVersionID(q url.Values) error {
	if q.Has("versionId") && q.Get("versionId") != "null" {
		return s3err.New(s3err.ErrInvalidArgument, "Invalid version id specified")
	}
	return nil
}

// objectMeta reads the client-settable metadata of PutObject,
// CreateMultipartUpload and CopyObject (REPLACE).
func objectMeta(h http.Header) (driver.ObjectMeta, error) {
	m := driver.ObjectMeta{
		ContentType:        h.Get("Content-Type"),
		ContentEncoding:    stripAWSChunked(h.Get("Content-Encoding")),
		ContentDisposition: h.Get("Content-Disposition"),
		ContentLanguage:    h.Get("Content-Language"),
		CacheControl:       h.Get("Cache-Control"),
		Expires:            h.Get("Expires"),
		StorageClass:       h.Get("X-Amz-Storage-Class"),
	}
	size := 0
	for k, vs := range h {
		lk := strings.ToLower(k)
		if !strings.HasPrefix(lk, "x-amz-meta-") {
			continue
		}
		name, v := lk[len("x-amz-meta-"):], strings.Join(vs, ",")
		if m.UserMeta == nil {
			m.UserMeta = map[string]string{}
		}
		m.UserMeta[name] = v
		size += len(name) + len(v)
	}
	if size > driver.MaxUserMetaSize {
		return m, s3err.New(s3err.ErrMetadataTooLarge, "Your metadata headers exceed the maximum allowed metadata size (%d > %d bytes).", size, driver.MaxUserMetaSize)
	}
	if t := h.Get("X-Amz-Tagging"); t != "" {
		tags, err := parseTagging(t)
		if err != nil {
			return m, err
		}
		m.Tags = tags
	}
	if err := lockMeta(h, &m); err != nil {
		return m, err
	}
	return m, nil
}

// stripAWSChunked removes the transfer coding "aws-chunked" that streaming
// uploads add to Content-Encoding; it is not part of the stored object.
func stripAWSChunked(ce string) string {
	if ce == "" || !strings.Contains(ce, "aws-chunked") {
		return ce
	}
	var keep []string
	for _, c := range strings.Split(ce, ",") {
		if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "aws-chunked") {
			keep = append(keep, c)
		}
	}
	return strings.Join(keep, ",")
}

func (s *Server) putObject(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if err := checkKey(rc.key); err != nil {
		return err
	}
	sp, err := s.parseSSE(r, sseWrite)
	if err != nil {
		return err
	}
	inm := strings.TrimSpace(r.Header.Get("If-None-Match")) // "*" or an ETag (RGW)
	meta, err := s.writeMeta(r, rc, true)
	if err != nil {
		return err
	}
	p, err := newPayload(r, rc, driver.MaxPutSize)
	if err != nil {
		return err
	}
	p.defaultChecksum()
	meta.Checksums = p.checksums
	info, err := s.be.PutObject(withSSE(r.Context(), sp), driver.PutObjectInput{
		Bucket:      rc.bucket,
		Key:         rc.key,
		Body:        p.body,
		Size:        p.size,
		Meta:        meta,
		IfNoneMatch: inm,
		IfMatch:     r.Header.Get("If-Match"),
	})
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Etag", quoteETag(info.ETag))
	setWriteVersionHeader(h, info.VersionID)
	s.setExpiration(r.Context(), h, rc.bucket, "", info)
	setChecksumHeaders(h, pick(info.Meta.Checksums, p.checksums), info.Meta.ChecksumType)
	sseHeaders(h, info.Meta.SSE, sp.keyMD5)
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

func pick(a, b map[string]string) map[string]string {
	if len(a) > 0 {
		return a
	}
	return b
}

// setChecksumHeaders returns stored checksums as x-amz-checksum-* headers.
func setChecksumHeaders(h http.Header, sums map[string]string, typ string) {
	n := 0
	for _, alg := range checksumAlgorithms {
		if v := sums[alg]; v != "" {
			h.Set(checksumHeaderKey[alg], v)
			if strings.Contains(v, "-") {
				typ = "COMPOSITE"
			}
			n++
		}
	}
	if n > 0 {
		if typ == "" {
			typ = "FULL_OBJECT"
		}
		h.Set("X-Amz-Checksum-Type", typ)
	}
}

// setPartChecksumHeaders answers GET/HEAD ?partNumber=n of a multipart
// object with that part's checksum, as S3 does (the SDKs validate the
// part's bytes against it), and the object's checksum type.
func setPartChecksumHeaders(h http.Header, info driver.ObjectInfo, n int) {
	if n > len(info.Meta.PartChecksums) || info.Meta.PartChecksums[n-1] == "" {
		return
	}
	for alg := range info.Meta.Checksums { // one algorithm per multipart object
		setChecksumHeaders(h, map[string]string{alg: info.Meta.PartChecksums[n-1]}, info.Meta.ChecksumType)
	}
}

func (s *Server) deleteObject(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	vid, err := s.versionParam(r.URL.Query())
	if err != nil {
		return err
	}
	if err := checkKey(rc.key); err != nil {
		return err
	}
	if err := checkMFA(r.Header); err != nil {
		return err
	}
	// The query's version (even "null" on an unversioned backend) decides
	// the action, as in DeleteObjects.
	bypass, err := s.deleteGate(r, rc, rc.key, r.URL.Query().Get("versionId"))
	if err != nil {
		return err
	}
	mtime, size, err := deleteConditions(r.Header)
	if err != nil {
		return err
	}
	vb, ok := s.versioning()
	if !ok {
		if err := s.be.DeleteObject(r.Context(), rc.bucket, rc.key); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	res, err := vb.DeleteObjectVersion(r.Context(), driver.DeleteObjectInput{
		Bucket: rc.bucket, Key: rc.key, VersionID: vid, IfMatch: r.Header.Get("If-Match"),
		IfMatchModTime: mtime, IfMatchSize: size, BypassGovernance: bypass,
	})
	if err != nil {
		return err
	}
	setVersionHeader(w.Header(), res.VersionID)
	if res.DeleteMarker {
		w.Header().Set("X-Amz-Delete-Marker", "true")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// responseOverrides are the response-* query parameters of GetObject.
var responseOverrides = map[string]string{
	"response-content-type":        "Content-Type",
	"response-content-language":    "Content-Language",
	"response-expires":             "Expires",
	"response-cache-control":       "Cache-Control",
	"response-content-disposition": "Content-Disposition",
	"response-content-encoding":    "Content-Encoding",
}

// storageClass is the class a listing reports ("" is STANDARD).
func storageClass(c string) string {
	if c == "" {
		return driver.StandardClass
	}
	return c
}

// writeObjectHeaders sets the representation headers of GET/HEAD.
func writeObjectHeaders(h http.Header, info driver.ObjectInfo, q url.Values, withChecksums bool) {
	ct := info.Meta.ContentType
	if ct == "" {
		ct = defaultContentType
	}
	h.Set("Content-Type", ct)
	h.Set("Etag", quoteETag(info.ETag))
	h.Set("Last-Modified", httpTime(info.ModTime))
	h.Set("Accept-Ranges", "bytes")
	for name, v := range map[string]string{
		"Content-Encoding":    info.Meta.ContentEncoding,
		"Content-Disposition": info.Meta.ContentDisposition,
		"Content-Language":    info.Meta.ContentLanguage,
		"Cache-Control":       info.Meta.CacheControl,
		"Expires":             info.Meta.Expires,
	} {
		if v != "" {
			h.Set(name, v)
		}
	}
	for k, v := range info.Meta.UserMeta {
		// Non-ASCII values go out RFC 2047-encoded, as AWS sends them
		// (clients read header bytes as Latin-1); ASCII ones unchanged.
		h["X-Amz-Meta-"+k] = []string{mime.BEncoding.Encode("UTF-8", v)} // keep the stored (lower-case) name
	}
	lockHeaders(h, info.Meta)
	if info.StorageClass != "" && info.StorageClass != driver.StandardClass {
		h.Set("X-Amz-Storage-Class", info.StorageClass) // AWS omits STANDARD
	}
	if n := len(info.Meta.Tags); n > 0 {
		h.Set("X-Amz-Tagging-Count", strconv.Itoa(n))
	}
	if info.Parts > 0 {
		h.Set("X-Amz-Mp-Parts-Count", strconv.Itoa(info.Parts))
	}
	if withChecksums {
		setChecksumHeaders(h, info.Meta.Checksums, info.Meta.ChecksumType)
	}
	for p, name := range responseOverrides {
		if q.Has(p) {
			h.Set(name, q.Get(p))
		}
	}
}

// errRangeNotSatisfiable is returned by parseRange; the caller adds
// Content-Range: bytes */size.
var errRangeNotSatisfiable = errors.New("range not satisfiable")

// parseRange resolves a Range header against size. Syntactically invalid
// or multi-range headers are ignored (nil, nil): S3 then sends the whole
// object. Unsatisfiable ranges give errRangeNotSatisfiable.
func parseRange(h string, size int64) (*driver.Range, error) {
	spec, ok := strings.CutPrefix(strings.TrimSpace(h), "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return nil, nil
	}
	a, b, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return nil, nil
	}
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if a == "" { // suffix: the last b bytes
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 0 {
			return nil, nil
		}
		if n == 0 || size == 0 {
			return nil, errRangeNotSatisfiable
		}
		n = min(n, size)
		return &driver.Range{Start: size - n, Length: n}, nil
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 {
		return nil, nil
	}
	end := size - 1
	if b != "" {
		e, err := strconv.ParseInt(b, 10, 64)
		if err != nil || e < start {
			return nil, nil
		}
		end = min(e, size-1)
	}
	if start >= size {
		return nil, errRangeNotSatisfiable
	}
	return &driver.Range{Start: start, Length: end - start + 1}, nil
}

// etagMatches implements If-Match/If-None-Match list matching.
func etagMatches(list, etag string) bool {
	for _, c := range strings.Split(list, ",") {
		c = strings.TrimSpace(c)
		c = strings.TrimPrefix(c, "W/")
		if c == "*" || strings.Trim(c, `"`) == etag {
			return true
		}
	}
	return false
}

func parseHTTPTime(v string) (time.Time, bool) {
	if v == "" {
		return time.Time{}, false
	}
	t, err := http.ParseTime(v)
	return t, err == nil
}

// checkConditions evaluates GET/HEAD preconditions with S3's precedence:
// If-Match wins over If-Unmodified-Since (412), If-None-Match over
// If-Modified-Since (304); 412 is decided before 304.
func checkConditions(h http.Header, info driver.ObjectInfo) error {
	mod := info.ModTime.Truncate(time.Second)
	if im := h.Get("If-Match"); im != "" {
		if !etagMatches(im, info.ETag) {
			return s3err.New(s3err.ErrPreconditionFailed, "")
		}
	} else if t, ok := parseHTTPTime(h.Get("If-Unmodified-Since")); ok && mod.After(t) {
		return s3err.New(s3err.ErrPreconditionFailed, "")
	}
	if inm := h.Get("If-None-Match"); inm != "" {
		if etagMatches(inm, info.ETag) {
			return s3err.New(s3err.ErrNotModified, "")
		}
	} else if t, ok := parseHTTPTime(h.Get("If-Modified-Since")); ok && !mod.After(t) {
		return s3err.New(s3err.ErrNotModified, "")
	}
	return nil
}

// getObject serves GetObject and HeadObject. Without a Range it makes one
// backend call; with one it reads the size first (HeadObject), then opens
// the range and checks that the object did not change in between.
func (s *Server) getObject(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	head := r.Method == http.MethodHead
	q := r.URL.Query()
	vid, err := s.versionParam(q)
	if err != nil {
		return err
	}
	if err := checkKey(rc.key); err != nil {
		return err
	}
	partNumber := 0
	if q.Has("partNumber") {
		n, err := strconv.Atoi(q.Get("partNumber"))
		if err != nil || n < 1 || n > driver.MaxPartNumber {
			return s3err.New(s3err.ErrInvalidArgument, "Part number must be an integer between 1 and 10000, inclusive")
		}
		partNumber = n
	}
	rangeHdr := r.Header.Get("Range")
	if partNumber > 0 && rangeHdr != "" {
		return s3err.New(s3err.ErrInvalidRequest, "Cannot specify both Range header and partNumber query parameter.")
	}
	withChecksums := strings.EqualFold(r.Header.Get("X-Amz-Checksum-Mode"), "ENABLED")
	sp, err := s.parseSSE(r, sseRead)
	if err != nil {
		return err
	}
	ctx := withSSE(r.Context(), sp)

	for attempt := 0; ; attempt++ {
		var (
			info driver.ObjectInfo
			body io.ReadCloser
			rng  *driver.Range
			err  error
		)
		twoStep := head || rangeHdr != "" || partNumber > 0
		if twoStep {
			info, err = s.headVersion(ctx, rc.bucket, rc.key, vid)
		} else {
			info, body, err = s.getVersion(ctx, rc.bucket, rc.key, vid, nil)
		}
		if err == nil {
			err = s.recheckObjectACL(r, rc, rc.act, info)
			if err == nil {
				// HEAD reads no data: the key is checked here.
				err = driver.CheckCustomerKey(info, sp.req.CustomerKey)
			}
			if err != nil && body != nil {
				body.Close()
			}
		}
		if err != nil {
			markerHeaders(w.Header(), err)
			return err
		}
		closeBody := func() {
			if body != nil {
				body.Close()
			}
		}
		if err := checkConditions(r.Header, info); err != nil {
			closeBody()
			if errors.Is(err, s3err.ErrNotModified) {
				w.Header().Set("Etag", quoteETag(info.ETag))
				w.Header().Set("Last-Modified", httpTime(info.ModTime))
			}
			return err
		}
		if partNumber > 0 {
			switch {
			case info.Parts > 0 && len(info.PartSizes) != info.Parts:
				closeBody() // an entry without per-part runs: cannot happen for ours
				return s3err.New(s3err.ErrNotImplemented, "GET with partNumber on this object is not supported.")
			case info.Parts > 0 && partNumber > info.Parts, info.Parts == 0 && partNumber > 1:
				closeBody()
				return s3err.New(s3err.ErrInvalidPartNumber, "")
			case info.Parts > 0:
				// The part's bytes, as a ranged GET of its offset in the object.
				var start int64
				for _, sz := range info.PartSizes[:partNumber-1] {
					start += sz
				}
				w.Header().Set("X-Amz-Mp-Parts-Count", strconv.Itoa(info.Parts))
				l := info.PartSizes[partNumber-1]
				if l == 0 { // an empty last part: no range to name
					closeBody()
					writeObjectHeaders(w.Header(), info, q, false)
					if withChecksums {
						setPartChecksumHeaders(w.Header(), info, partNumber)
					}
					w.Header().Set("Content-Length", "0")
					w.WriteHeader(http.StatusOK)
					return nil
				}
				rng = &driver.Range{Start: start, Length: l}
			case info.Size > 0:
				// Part 1 of a single-part object is all of it, answered
				// as S3 does: 206 with a Content-Range of the whole.
				rng = &driver.Range{Start: 0, Length: info.Size}
			}
		}
		if rangeHdr != "" {
			rng, err = parseRange(rangeHdr, info.Size)
			if err != nil {
				w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(info.Size, 10))
				return s3err.New(s3err.ErrInvalidRange, "")
			}
		}
		if twoStep && !head {
			var got driver.ObjectInfo
			got, body, err = s.getVersion(ctx, rc.bucket, rc.key, vid, rng)
			if err != nil {
				markerHeaders(w.Header(), err)
				return err
			}
			if got.ETag != info.ETag || got.Size != info.Size || got.VersionID != info.VersionID {
				// Overwritten between the two calls: start over.
				body.Close()
				if attempt < 3 {
					continue
				}
				return s3err.New(s3err.ErrServiceUnavailable, "The object is being modified; retry.")
			}
			info = got
		}

		h := w.Header()
		// A part of a single-part object is all of it: its checksums hold.
		writeObjectHeaders(h, info, q, withChecksums && (rng == nil || partNumber > 0 && info.Parts == 0))
		if withChecksums && partNumber > 0 && info.Parts > 0 {
			setPartChecksumHeaders(h, info, partNumber)
		}
		sseHeaders(h, info.Meta.SSE, sp.keyMD5)
		setVersionHeader(h, info.VersionID)
		s.setExpiration(ctx, h, rc.bucket, vid, info)
		status, length := http.StatusOK, info.Size
		if rng != nil {
			status, length = http.StatusPartialContent, rng.Length
			h.Set("Content-Range", "bytes "+strconv.FormatInt(rng.Start, 10)+"-"+
				strconv.FormatInt(rng.Start+rng.Length-1, 10)+"/"+strconv.FormatInt(info.Size, 10))
		}
		h.Set("Content-Length", strconv.FormatInt(length, 10))
		w.WriteHeader(status)
		if head {
			return nil
		}
		defer body.Close()
		n, err := io.Copy(w, body)
		if err == nil && n != length {
			err = io.ErrUnexpectedEOF
		}
		return err // after the header: logged, not written
	}
}
