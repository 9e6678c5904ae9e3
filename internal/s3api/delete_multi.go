package s3api

import (
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

const (
	maxDeleteKeys = 1000
	// deleteParallelism bounds the concurrent backend deletes of one
	// DeleteObjects request.
	deleteParallelism = 16
)

type deleteRequest struct {
	XMLName xml.Name         `xml:"Delete"`
	Quiet   bool             `xml:"Quiet"`
	Objects []deleteObjectID `xml:"Object"`
}

type deleteObjectID struct {
	Key       string `xml:"Key"`
	VersionID string `xml:"VersionId"`
	ETag      string `xml:"ETag"` // delete only if the object has this ETag
	// Delete only if the object has this modification time / size.
	LastModifiedTime *objectIDTime `xml:"LastModifiedTime"`
	Size             *int64        `xml:"Size"`
}

// objectIDTime is ObjectIdentifier's LastModifiedTime: an HTTP date in
// AWS's model (the SDKs send that), ISO 8601 taken too.
type objectIDTime time.Time

func (t *objectIDTime) UnmarshalText(b []byte) error {
	v, ok := parseHTTPTime(string(b))
	if !ok {
		var err error
		if v, err = time.Parse(time.RFC3339, string(b)); err != nil {
			return err
		}
	}
	*t = objectIDTime(v)
	return nil
}

func (t *objectIDTime) time() *time.Time {
	if t == nil {
		return nil
	}
	v := time.Time(*t)
	return &v
}

// deleteConditions reads DeleteObject's x-amz-if-match-last-modified-time
// (an HTTP date, as the SDKs send it; ISO 8601 is taken too) and
// x-amz-if-match-size.
func deleteConditions(h http.Header) (*time.Time, *int64, error) {
	var mtime *time.Time
	if v := h.Get("X-Amz-If-Match-Last-Modified-Time"); v != "" {
		t, ok := parseHTTPTime(v)
		if !ok {
			var err error
			if t, err = time.Parse(time.RFC3339, v); err != nil {
				return nil, nil, s3err.New(s3err.ErrInvalidArgument, "Invalid x-amz-if-match-last-modified-time.")
			}
		}
		mtime = &t
	}
	var size *int64
	if v := h.Get("X-Amz-If-Match-Size"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, nil, s3err.New(s3err.ErrInvalidArgument, "Invalid x-amz-if-match-size.")
		}
		size = &n
	}
	return mtime, size, nil
}

type deleteResult struct {
	XMLName xml.Name      `xml:"DeleteResult"`
	Xmlns   string        `xml:"xmlns,attr"`
	Deleted []deletedXML  `xml:"Deleted"`
	Errors  []deleteError `xml:"Error"`
}

type deletedXML struct {
	Key                   string `xml:"Key"`
	VersionID             string `xml:"VersionId,omitempty"`
	DeleteMarker          bool   `xml:"DeleteMarker,omitempty"`
	DeleteMarkerVersionID string `xml:"DeleteMarkerVersionId,omitempty"`
}

type deleteError struct {
	Key       string `xml:"Key"`
	VersionID string `xml:"VersionId,omitempty"`
	Code      string `xml:"Code"`
	Message   string `xml:"Message"`
}

// parseDelete parses and validates a Delete document.
func parseDelete(data []byte) (deleteRequest, error) {
	var req deleteRequest
	if err := decodeXML(data, &req); err != nil {
		return req, err
	}
	if len(req.Objects) == 0 || len(req.Objects) > maxDeleteKeys {
		return req, s3err.New(s3err.ErrMalformedXML, "")
	}
	return req, nil
}

// deleteObjects is DeleteObjects (POST ?delete). As in S3, the body must
// carry an integrity check: Content-MD5, an x-amz-checksum-* (header or
// trailer) or x-amz-sdk-checksum-algorithm; whichever is sent is verified
// (an algorithm alone is only computed).
func (s *Server) deleteObjects(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if err := checkMFA(r.Header); err != nil {
		return err
	}
	if !hasBodyDigest(r.Header) {
		return s3err.New(s3err.ErrMissingContentMD5, "Missing required header for this request: Content-MD5 (or an x-amz-checksum-* header or trailer).")
	}
	p, err := verifyBody(r, rc, -1)
	if err != nil {
		return err
	}
	data, err := readAllLimited(p.body, maxDeleteXML)
	if err != nil {
		return err
	}
	req, err := parseDelete(data)
	if err != nil {
		return err
	}

	// Results keep request order; deletes run with bounded parallelism and
	// all finish before the response is written.
	errs := make([]error, len(req.Objects))
	results := make([]driver.DeleteResult, len(req.Objects))
	vb, versioned := s.versioning()
	sem := make(chan struct{}, deleteParallelism)
	var wg sync.WaitGroup
	for i, o := range req.Objects {
		switch {
		case o.Key == "":
			errs[i] = s3err.New(s3err.ErrInvalidArgument, "Invalid object key")
			continue
		case len(o.Key) > driver.MaxKeyLen:
			errs[i] = s3err.New(s3err.ErrKeyTooLong, "")
			continue
		case !versioned && o.VersionID != "" && o.VersionID != "null":
			errs[i] = s3err.New(s3err.ErrNoSuchVersion, "")
			continue
		}
		bypass, err := s.deleteGate(r, rc, o.Key, o.VersionID)
		if err != nil {
			errs[i] = err
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if !versioned {
				errs[i] = s.be.DeleteObject(r.Context(), rc.bucket, o.Key)
				return
			}
			results[i], errs[i] = vb.DeleteObjectVersion(r.Context(), driver.DeleteObjectInput{
				Bucket: rc.bucket, Key: o.Key, VersionID: o.VersionID, IfMatch: o.ETag,
				IfMatchModTime: o.LastModifiedTime.time(), IfMatchSize: o.Size, BypassGovernance: bypass,
			})
		}()
	}
	wg.Wait()

	out := deleteResult{Xmlns: s3Namespace}
	for i, o := range req.Objects {
		if errs[i] == nil {
			if rc.logged {
				vid := o.VersionID
				if vid == "" && results[i].DeleteMarker {
					vid = results[i].VersionID
				}
				rc.deleted = append(rc.deleted, deletedKey{o.Key, vid})
			}
			if !req.Quiet {
				d := deletedXML{Key: o.Key, VersionID: o.VersionID}
				if res := results[i]; res.DeleteMarker {
					// A marker created (no version asked) or removed.
					d.DeleteMarker = true
					if o.VersionID == "" {
						d.DeleteMarkerVersionID = res.VersionID
					} else {
						d.DeleteMarkerVersionID = o.VersionID
					}
				}
				out.Deleted = append(out.Deleted, d)
			}
			continue
		}
		e := s.mapError(errs[i])
		if e.HTTPStatus >= 500 {
			s.log.ErrorContext(r.Context(), "delete objects: key failed",
				"request_id", rc.id, "bucket", rc.bucket, "key", o.Key, "err", errs[i])
		}
		out.Errors = append(out.Errors, deleteError{Key: o.Key, VersionID: o.VersionID, Code: e.Code, Message: e.WireMessage()})
	}
	return writeXML(w, http.StatusOK, out)
}

// hasBodyDigest reports whether the request declares a body digest that
// verifyBody (or the authenticator) checks.
func hasBodyDigest(h http.Header) bool {
	if h.Get("Content-Md5") != "" {
		return true
	}
	for _, alg := range checksumAlgorithms {
		if h.Get(checksumHeaderKey[alg]) != "" {
			return true
		}
	}
	// AWS: "The Content-MD5 or x-amz-sdk-checksum-algorithm header is
	// required"; SDKs send the value too, as a header or a trailer.
	return h.Get("X-Amz-Sdk-Checksum-Algorithm") != "" ||
		strings.HasPrefix(strings.ToLower(strings.TrimSpace(h.Get("X-Amz-Trailer"))), "x-amz-checksum-")
}
