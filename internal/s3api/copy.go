package s3api

import (
	"encoding/xml"
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

// copySource parses the copy source and checks the caller may read it.
func (s *Server) copySource(r *http.Request, rc *reqCtx) (copySrc, error) {
	src, err := parseCopySource(r.Header.Get("x-amz-copy-source"))
	if err != nil {
		return src, err
	}
	if _, ok := s.versioning(); !ok && src.versionID != "" && src.versionID != "null" {
		return src, s3err.New(s3err.ErrInvalidArgument, "Invalid version id specified")
	}
	return src, s.allowedOn(r, rc, authz.S3GetObject, src.bucket, src.key)
}

// copyConditions reads x-amz-copy-source-if-*, normalised to S3's
// precedence so that a plain conjunction gives S3's answer: a present
// if-match makes if-unmodified-since irrelevant, and a present
// if-none-match makes if-modified-since irrelevant.
func copyConditions(h http.Header) driver.Conditions {
	c := driver.Conditions{
		IfMatch:     h.Get("x-amz-copy-source-if-match"),
		IfNoneMatch: h.Get("x-amz-copy-source-if-none-match"),
	}
	if t, ok := parseHTTPTime(h.Get("x-amz-copy-source-if-unmodified-since")); ok && c.IfMatch == "" {
		c.IfUnmodifiedSince = &t
	}
	if t, ok := parseHTTPTime(h.Get("x-amz-copy-source-if-modified-since")); ok && c.IfNoneMatch == "" {
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
	src, err := s.copySource(r, rc)
	if err != nil {
		return err
	}
	replace := false
	switch d := r.Header.Get("x-amz-metadata-directive"); d {
	case "", "COPY":
	case "REPLACE":
		replace = true
	default:
		return s3err.New(s3err.ErrInvalidArgument, "Unknown metadata directive.")
	}
	if src.bucket == rc.bucket && src.key == rc.key && src.versionID == "" && !replace && sp.req.Put == nil {
		return s3err.New(s3err.ErrInvalidRequest, "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.")
	}
	replaceTags := false
	switch d := r.Header.Get("x-amz-tagging-directive"); d {
	case "", "COPY":
	case "REPLACE":
		replaceTags = true
	default:
		return s3err.New(s3err.ErrInvalidArgument, "Unknown tagging directive.")
	}
	// Parsed whatever the directives: tags (REPLACE) and object lock
	// headers apply to the copy either way.
	meta, err := objectMeta(r.Header)
	if err != nil {
		return err
	}
	acl, err := s.requestObjectACL(r, rc)
	if err != nil {
		return err
	}
	info, err := s.be.CopyObject(withSSE(r.Context(), sp), driver.CopyObjectInput{
		ACL:          acl,
		SrcBucket:    src.bucket,
		SrcKey:       src.key,
		SrcVersionID: src.versionID,
		DstBucket:    rc.bucket,
		DstKey:       rc.key,
		ReplaceMeta:  replace,
		Meta:         meta,
		SrcCond:      copyConditions(r.Header),
		ReplaceTags:  replaceTags,
	})
	if err != nil {
		return err
	}
	setVersionHeader(w.Header(), info.VersionID)
	sseHeaders(w.Header(), info.Meta.SSE, sp.keyMD5)
	if info.SourceVersionID != "" {
		w.Header().Set("x-amz-copy-source-version-id", info.SourceVersionID)
	}
	return writeXML(w, http.StatusOK, copyObjectResult{
		Xmlns:        s3Namespace,
		LastModified: s3Time(info.ModTime),
		ETag:         quoteETag(info.ETag),
		checksumXML:  newChecksumXML(info.Meta.Checksums),
	})
}
