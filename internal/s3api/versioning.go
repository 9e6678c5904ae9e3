package s3api

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// VersioningBackend is the versioning part of the gateway services. A
// Backend that does not implement it serves unversioned buckets only:
// versioning requests get NotImplemented and versionId is accepted only as
// "null" (the null gateway, handler-test fakes).
type VersioningBackend interface {
	// PutBucketVersioning sets "Enabled" or "Suspended" (never back to
	// unversioned); GetBucketVersioning returns "" for a never-versioned bucket.
	PutBucketVersioning(ctx context.Context, bucket, status string) error
	GetBucketVersioning(ctx context.Context, bucket string) (string, error)
	ListObjectVersions(ctx context.Context, in driver.ListVersionsInput) (driver.ListVersionsResult, error)
	// GetObjectVersion / HeadObjectVersion read version vid ("" = current).
	// A delete marker gives a *driver.DeleteMarkerError (NoSuchKey, or
	// MethodNotAllowed when asked for by id); an unknown id
	// driver.ErrNoSuchVersion, a malformed one driver.ErrInvalidVersionID.
	GetObjectVersion(ctx context.Context, bucket, key, vid string, rng *driver.Range) (driver.ObjectInfo, io.ReadCloser, error)
	HeadObjectVersion(ctx context.Context, bucket, key, vid string) (driver.ObjectInfo, error)
	// DeleteObjectVersion deletes with S3's versioning semantics (a marker
	// when versioned and no id given).
	DeleteObjectVersion(ctx context.Context, in driver.DeleteObjectInput) (driver.DeleteResult, error)
	// CompleteMultipartUploadCond checks If-None-Match: * / If-Match at link
	// time; a retry of a completed upload returns the object it linked.
	CompleteMultipartUploadCond(ctx context.Context, bucket, key, uploadID string, parts []driver.CompletePart, sum driver.ObjectChecksum, c driver.Conditions) (driver.ObjectInfo, error)
}

func (s *Server) versioning() (VersioningBackend, bool) {
	vb, ok := s.be.(VersioningBackend)
	return vb, ok
}

// versionParam returns the request's versionId ("" when absent). Without
// versioning support only "null" is accepted (and means the one object).
func (s *Server) versionParam(q url.Values) (string, error) {
	if !q.Has("versionId") {
		return "", nil
	}
	v := q.Get("versionId")
	if _, ok := s.versioning(); !ok {
		return "", checkVersionID(q)
	}
	if v == "" {
		return "", s3err.New(s3err.ErrInvalidArgument, "Version id cannot be the empty string")
	}
	return v, nil
}

// headVersion and getVersion read an object version through the
// versioning backend when there is one.
func (s *Server) headVersion(ctx context.Context, bucket, key, vid string) (driver.ObjectInfo, error) {
	if vb, ok := s.versioning(); ok {
		return vb.HeadObjectVersion(ctx, bucket, key, vid)
	}
	return s.be.HeadObject(ctx, bucket, key)
}

func (s *Server) getVersion(ctx context.Context, bucket, key, vid string, rng *driver.Range) (driver.ObjectInfo, io.ReadCloser, error) {
	if vb, ok := s.versioning(); ok {
		return vb.GetObjectVersion(ctx, bucket, key, vid, rng)
	}
	return s.be.GetObject(ctx, bucket, key, rng)
}

// markerHeaders adds what S3 says about a delete marker met by GET/HEAD to
// the error response.
func markerHeaders(h http.Header, err error) {
	var dm *driver.DeleteMarkerError
	if !errors.As(err, &dm) {
		return
	}
	h.Set("X-Amz-Delete-Marker", "true")
	if dm.VersionID != "" {
		h.Set("X-Amz-Version-Id", dm.VersionID)
	}
	if errors.Is(err, driver.ErrMethodNotAllowed) {
		h.Set("Allow", "DELETE")
		h.Set("Last-Modified", httpTime(dm.ModTime))
	}
}

func setVersionHeader(h http.Header, vid string) {
	if vid != "" {
		h.Set("X-Amz-Version-Id", vid)
	}
}

// setWriteVersionHeader is setVersionHeader for the answer of a write
// (PUT, copy, complete): a null version on a Suspended bucket is not
// named, as AWS answers such writes without x-amz-version-id.
func setWriteVersionHeader(h http.Header, vid string) {
	if vid != "null" {
		setVersionHeader(h, vid)
	}
}

// writeEmptyOK answers 200 with no body (subresource PUTs and the like),
// with x-amz-version-id when vid is set.
func writeEmptyOK(w http.ResponseWriter, vid string) {
	setVersionHeader(w.Header(), vid)
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}

type versioningConfiguration struct {
	XMLName   xml.Name `xml:"VersioningConfiguration"`
	Xmlns     string   `xml:"xmlns,attr,omitempty"`
	Status    string   `xml:"Status,omitempty"`
	MfaDelete string   `xml:"MfaDelete,omitempty"`
}

// getBucketVersioning is GetBucketVersioning: an empty configuration for a
// never-versioned bucket (which tools like warp and minio-go query).
func (s *Server) getBucketVersioning(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	status := ""
	if vb, ok := s.versioning(); ok {
		var err error
		if status, err = vb.GetBucketVersioning(r.Context(), rc.bucket); err != nil {
			return err
		}
	}
	return writeXML(w, http.StatusOK, versioningConfiguration{Xmlns: s3Namespace, Status: status})
}

// maxVersioningXML bounds a PutBucketVersioning body.
const maxVersioningXML = 4 << 10

// putBucketVersioning is PutBucketVersioning: Status Enabled or Suspended.
// MFA delete is not supported (RGW's default without MFA).
func (s *Server) putBucketVersioning(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	vb, ok := s.versioning()
	if !ok {
		return s3err.New(s3err.ErrNotImplemented, "PutBucketVersioning is not implemented.")
	}
	p, err := verifyBody(r, rc, -1)
	if err != nil {
		return err
	}
	data, err := readAllLimited(p.body, maxVersioningXML)
	if err != nil {
		return err
	}
	var cfg versioningConfiguration
	if err := decodeXML(data, &cfg); err != nil {
		return err
	}
	switch {
	case cfg.MfaDelete == "Enabled":
		return s3err.New(s3err.ErrNotImplemented, "MFA delete is not supported.")
	case cfg.MfaDelete != "" && cfg.MfaDelete != "Disabled":
		return s3err.New(s3err.ErrMalformedXML, "")
	case cfg.Status != driver.VersioningEnabled && cfg.Status != driver.VersioningSuspended:
		return s3err.New(s3err.ErrMalformedXML, "")
	}
	if err := vb.PutBucketVersioning(r.Context(), rc.bucket, cfg.Status); err != nil {
		return err
	}
	writeEmptyOK(w, "")
	return nil
}

type listVersionsResult struct {
	XMLName             xml.Name        `xml:"ListVersionsResult"`
	Xmlns               string          `xml:"xmlns,attr"`
	Name                string          `xml:"Name"`
	Prefix              string          `xml:"Prefix"`
	KeyMarker           string          `xml:"KeyMarker"`
	VersionIDMarker     string          `xml:"VersionIdMarker"`
	NextKeyMarker       string          `xml:"NextKeyMarker,omitempty"`
	NextVersionIDMarker string          `xml:"NextVersionIdMarker,omitempty"`
	MaxKeys             int             `xml:"MaxKeys"`
	Delimiter           string          `xml:"Delimiter,omitempty"`
	EncodingType        string          `xml:"EncodingType,omitempty"`
	IsTruncated         bool            `xml:"IsTruncated"`
	Entries             []versionEntry  // Version and DeleteMarker, interleaved in order
	CommonPrefixes      []commonPrefixV `xml:"CommonPrefixes"`
}

type commonPrefixV struct {
	Prefix string `xml:"Prefix"`
}

type ownerView struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName"`
}

// versionEntry is a <Version> or a <DeleteMarker> (XMLName picks which).
type versionEntry struct {
	XMLName      xml.Name
	Key          string    `xml:"Key"`
	VersionID    string    `xml:"VersionId"`
	IsLatest     bool      `xml:"IsLatest"`
	LastModified string    `xml:"LastModified"`
	ETag         string    `xml:"ETag,omitempty"`
	Size         *int64    `xml:"Size,omitempty"`
	StorageClass string    `xml:"StorageClass,omitempty"`
	Owner        ownerView `xml:"Owner"`
}

// listObjectVersions is ListObjectVersions (GET ?versions): every bucket
// has versions; on a never-versioned one each object is its null version.
func (s *Server) listObjectVersions(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	vb, ok := s.versioning()
	if !ok {
		return s3err.New(s3err.ErrNotImplemented, "ListObjectVersions is not implemented.")
	}
	q := r.URL.Query()
	maxKeys := 1000
	if v := q.Get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return s3err.New(s3err.ErrInvalidArgument, "Provided max-keys not an integer or within integer range")
		}
		maxKeys = min(n, 1000)
	}
	enc, err := newEncoder(q)
	if err != nil {
		return err
	}
	in := driver.ListVersionsInput{
		Bucket: rc.bucket, Prefix: q.Get("prefix"), Delimiter: q.Get("delimiter"),
		KeyMarker: q.Get("key-marker"), VersionIDMarker: q.Get("version-id-marker"), MaxKeys: maxKeys,
	}
	if in.VersionIDMarker != "" && in.KeyMarker == "" {
		return s3err.New(s3err.ErrInvalidArgument, "A version-id marker cannot be specified without a key marker.")
	}
	res, err := vb.ListObjectVersions(r.Context(), in)
	if err != nil {
		return err
	}
	encode := enc.enc
	out := listVersionsResult{
		Xmlns: s3Namespace, Name: rc.bucketName, Prefix: encode(in.Prefix), KeyMarker: encode(in.KeyMarker),
		VersionIDMarker: in.VersionIDMarker, MaxKeys: maxKeys, Delimiter: in.Delimiter,
		EncodingType: enc.typ(), IsTruncated: res.IsTruncated,
	}
	if res.IsTruncated {
		out.NextKeyMarker, out.NextVersionIDMarker = encode(res.NextKeyMarker), res.NextVersionIDMarker
	}
	for _, v := range res.Versions {
		vid := v.VersionID
		if vid == "" {
			vid = "null"
		}
		e := versionEntry{
			Key: encode(v.Key), VersionID: vid, IsLatest: v.IsLatest,
			LastModified: s3Time(v.ModTime), Owner: ownerView{ID: v.Owner, DisplayName: v.Owner},
		}
		if v.DeleteMarker {
			e.XMLName.Local = "DeleteMarker"
		} else {
			sz := v.Size
			e.XMLName.Local, e.ETag, e.Size, e.StorageClass = "Version", quoteETag(v.ETag), &sz, storageClass(v.StorageClass)
		}
		out.Entries = append(out.Entries, e)
	}
	for _, p := range res.CommonPrefixes {
		out.CommonPrefixes = append(out.CommonPrefixes, commonPrefixV{Prefix: encode(p)})
	}
	return writeXMLBytes(w, http.StatusOK, marshalListVersions(&out))
}

// completeUpload completes through the versioning backend when there is one,
// with If-None-Match / If-Match checked when the object is linked.
func (s *Server) completeUpload(ctx context.Context, r *http.Request, rc *reqCtx, id string, parts []driver.CompletePart, sum driver.ObjectChecksum) (driver.ObjectInfo, error) {
	vb, ok := s.versioning()
	if !ok {
		return s.be.CompleteMultipartUpload(ctx, rc.bucket, rc.key, id, parts, sum)
	}
	inm := strings.TrimSpace(r.Header.Get("If-None-Match")) // "*" or an ETag (RGW)
	return vb.CompleteMultipartUploadCond(ctx, rc.bucket, rc.key, id, parts, sum,
		driver.Conditions{IfNoneMatch: inm, IfMatch: r.Header.Get("If-Match")})
}
