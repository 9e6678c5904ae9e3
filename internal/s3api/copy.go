package s3api

import (
	"encoding/xml"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

type copySrc struct{ bucket, key, versionID string }

// parseCopySource parses x-amz-copy-source: "[/]bucket/key[?versionId=v]",
// URL-encoded. The version id is checked by the backend.
func parseCopySource(v string) (copySrc, error) {
	bad := s3err.New(s3err.ErrInvalidArgument, "Copy Source must mention the source bucket and key: sourcebucket/sourcekey")
	path, query, _ := strings.Cut(v, "?")
	var vid string
	if query != "" {
		vals, err := url.ParseQuery(query)
		if err != nil {
			return copySrc{}, bad
		}
		if vals.Has("versionId") {
			if vid = vals.Get("versionId"); vid == "" {
				return copySrc{}, s3err.New(s3err.ErrInvalidArgument, "Invalid version id specified")
			}
		}
	}
	path, err := url.PathUnescape(path)
	if err != nil {
		return copySrc{}, bad
	}
	path = strings.TrimPrefix(path, "/")
	b, k, ok := strings.Cut(path, "/")
	if !ok || b == "" || k == "" {
		return copySrc{}, bad
	}
	if len(k) > driver.MaxKeyLen {
		return copySrc{}, s3err.New(s3err.ErrKeyTooLong, "")
	}
	return copySrc{bucket: b, key: k, versionID: vid}, nil
}

// copySource parses the copy source and checks the caller may read that
// version: s3:GetObject on the current one, s3:GetObjectVersion on one
// named by id, each against the version's own ACL. It returns the version
// it decided on, and a check to run on the version the copy actually
// reads (on an unversioned bucket the object may be replaced meanwhile).
func (s *Server) copySource(r *http.Request, rc *reqCtx) (copySrc, driver.ObjectInfo, func(driver.ObjectInfo) error, error) {
	src, err := rc.parsedCopySource(r)
	if err != nil {
		return src, driver.ObjectInfo{}, nil, err
	}
	if _, ok := s.versioning(); !ok && src.versionID != "" && src.versionID != "null" {
		return src, driver.ObjectInfo{}, nil, s3err.New(s3err.ErrInvalidArgument, "Invalid version id specified")
	}
	act := authz.S3GetObject
	if src.versionID != "" {
		act = authz.S3GetObjectVersion
	}
	rc.missingDecided = true // about the source bucket, decided here
	info, check, err := s.allowedOn(r, rc, act, src.bucket, src.key, src.versionID)
	var dm *driver.DeleteMarkerError
	if errors.As(err, &dm) && src.versionID != "" {
		return src, info, nil, s3err.New(s3err.ErrInvalidRequest, "The source of a copy request may not specifically refer to a delete marker by version id.")
	}
	return src, info, check, err
}

// pinned is the version id to read a copy source by: the one authorized.
func pinned(src copySrc, info driver.ObjectInfo) string {
	if src.versionID != "" {
		return src.versionID
	}
	return info.VersionID // "" on an unversioned bucket: the one object
}

// copyConditions reads x-amz-copy-source-if-*, normalised to S3's
// precedence so that a plain conjunction gives S3's answer: a present
// if-match makes if-unmodified-since irrelevant, and a present
// if-none-match makes if-modified-since irrelevant.
func copyConditions(h http.Header) driver.Conditions {
	c := driver.Conditions{
		IfMatch:     h.Get("X-Amz-Copy-Source-If-Match"),
		IfNoneMatch: h.Get("X-Amz-Copy-Source-If-None-Match"),
	}
	if t, ok := parseHTTPTime(h.Get("X-Amz-Copy-Source-If-Unmodified-Since")); ok && c.IfMatch == "" {
		c.IfUnmodifiedSince = &t
	}
	if t, ok := parseHTTPTime(h.Get("X-Amz-Copy-Source-If-Modified-Since")); ok && c.IfNoneMatch == "" {
		c.IfModifiedSince = &t
	}
	return c
}

// checkCopyConditions evaluates c on the source; every failure is 412.
func checkCopyConditions(c driver.Conditions, info driver.ObjectInfo) error {
	mod := info.ModTime.Truncate(time.Second)
	ok := (c.IfMatch == "" || etagMatches(c.IfMatch, info.ETag)) &&
		(c.IfNoneMatch == "" || !etagMatches(c.IfNoneMatch, info.ETag)) &&
		(c.IfUnmodifiedSince == nil || !mod.After(*c.IfUnmodifiedSince)) &&
		(c.IfModifiedSince == nil || mod.After(*c.IfModifiedSince))
	if !ok {
		return s3err.New(s3err.ErrPreconditionFailed, "")
	}
	return nil
}

type copyObjectResult struct {
	XMLName      xml.Name `xml:"CopyObjectResult"`
	Xmlns        string   `xml:"xmlns,attr"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
	checksumXML
}

func (s *Server) copyObject(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if err := checkKey(rc.key); err != nil {
		return err
	}
	sp, err := s.parseSSE(r, sseWrite)
	if err != nil {
		return err
	}
	src, srcInfo, srcCheck, err := s.copySource(r, rc)
	if err != nil {
		return err
	}
	replace := false
	switch d := r.Header.Get("X-Amz-Metadata-Directive"); d {
	case "", "COPY":
	case "REPLACE":
		replace = true
	default:
		return s3err.New(s3err.ErrInvalidArgument, "Unknown metadata directive.")
	}
	class := r.Header.Get("X-Amz-Storage-Class")
	if src.bucket == rc.bucket && src.key == rc.key && src.versionID == "" && !replace && sp.req.Put == nil && class == "" {
		return s3err.New(s3err.ErrInvalidRequest, "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.")
	}
	replaceTags := false
	switch d := r.Header.Get("X-Amz-Tagging-Directive"); d {
	case "", "COPY":
	case "REPLACE":
		replaceTags = true
	default:
		return s3err.New(s3err.ErrInvalidArgument, "Unknown tagging directive.")
	}
	// Parsed whatever the directives: tags (REPLACE) and object lock
	// headers apply to the copy either way.
	meta, err := s.writeMeta(r, rc, replaceTags)
	if err != nil {
		return err
	}
	acl := meta.ACL // CopyObjectInput carries it apart from Meta
	meta.ACL = nil
	info, err := s.be.CopyObject(withSSE(r.Context(), sp), driver.CopyObjectInput{
		ACL:          acl,
		SrcBucket:    src.bucket,
		SrcKey:       src.key,
		SrcVersionID: pinned(src, srcInfo),
		DstBucket:    rc.bucket,
		DstKey:       rc.key,
		ReplaceMeta:  replace,
		Meta:         meta,
		SrcCond:      copyConditions(r.Header),
		ReplaceTags:  replaceTags,
		SrcCheck:     srcCheck,
		StorageClass: class,
	})
	if err != nil {
		return err
	}
	setWriteVersionHeader(w.Header(), info.VersionID)
	sseHeaders(w.Header(), info.Meta.SSE, sp.keyMD5)
	if info.SourceVersionID != "" {
		w.Header().Set("X-Amz-Copy-Source-Version-Id", info.SourceVersionID)
	}
	return writeXML(w, http.StatusOK, copyObjectResult{
		Xmlns:        s3Namespace,
		LastModified: s3Time(info.ModTime),
		ETag:         quoteETag(info.ETag),
		checksumXML:  newChecksumXML(info.Meta.Checksums),
	})
}
