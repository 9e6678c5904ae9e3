package s3api

import (
	"context"
	"errors"
	"net/http"
	"sort"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/lifecycle"
	"github.com/cairn-s3/cairn/internal/objectlock"
	"github.com/cairn-s3/cairn/internal/s3err"
	"github.com/cairn-s3/cairn/internal/tagging"
)

// TaggingBackend is the tagging part of the gateway services. Object tags
// are per version (vid "" = current); a delete marker is
// driver.ErrMethodNotAllowed when named by id.
type TaggingBackend interface {
	GetObjectTagging(ctx context.Context, bucket, key, vid string) (driver.ObjectInfo, error)
	PutObjectTagging(ctx context.Context, bucket, key, vid string, tags map[string]string) (driver.ObjectInfo, error)
	DeleteObjectTagging(ctx context.Context, bucket, key, vid string) (driver.ObjectInfo, error)
	// GetBucketTagging returns driver.ErrNoSuchTagSet when none is set.
	GetBucketTagging(ctx context.Context, bucket string) (map[string]string, error)
	PutBucketTagging(ctx context.Context, bucket string, tags map[string]string) error
	DeleteBucketTagging(ctx context.Context, bucket string) error
}

// maxTaggingXML bounds a Tagging body (50 tags of 128+256 characters).
const maxTaggingXML = 64 << 10

func (s *Server) tagging() (TaggingBackend, error) {
	tb, ok := s.be.(TaggingBackend)
	if !ok {
		return nil, s3err.New(s3err.ErrNotImplemented, "Tagging is not implemented by this backend.")
	}
	return tb, nil
}

// parseTagging parses x-amz-tagging (URL-query encoded) with S3's limits.
func parseTagging(h string) (map[string]string, error) {
	set, err := tagging.ParseHeader(h)
	if err != nil {
		return nil, err
	}
	return set.Map(), nil
}

// tagSet orders a stored map for the response (stored tags carry no order).
func tagSet(m map[string]string) tagging.Set {
	s := make(tagging.Set, 0, len(m))
	for k, v := range m {
		s = append(s, tagging.Tag{Key: k, Value: v})
	}
	sort.Slice(s, func(i, j int) bool { return s[i].Key < s[j].Key })
	return s
}

func writeTagging(w http.ResponseWriter, m map[string]string, vid string) error {
	body, err := tagSet(m).MarshalDocument()
	if err != nil {
		return err
	}
	setVersionHeader(w.Header(), vid)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

// readTagging reads and validates a Tagging request body.
func readTagging(r *http.Request, rc *reqCtx, kind tagging.Kind) (map[string]string, error) {
	p, err := verifyBody(r, rc, -1)
	if err != nil {
		return nil, err
	}
	data, err := readAllLimited(p.body, maxTaggingXML)
	if err != nil {
		return nil, err
	}
	set, err := tagging.ParseXML(data, kind)
	if err != nil {
		return nil, err
	}
	return set.Map(), nil
}

func (s *Server) getObjectTagging(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	tb, err := s.tagging()
	if err != nil {
		return err
	}
	vid, err := s.versionParam(r.URL.Query())
	if err != nil {
		return err
	}
	info, err := tb.GetObjectTagging(r.Context(), rc.bucket, rc.key, vid)
	if err != nil {
		return err
	}
	if err := s.recheckObjectACL(r, rc, rc.act, info); err != nil {
		return err // READ on this version's ACL
	}
	return writeTagging(w, info.Meta.Tags, info.VersionID)
}

func (s *Server) putObjectTagging(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	tb, err := s.tagging()
	if err != nil {
		return err
	}
	vid, err := s.versionParam(r.URL.Query())
	if err != nil {
		return err
	}
	tags, err := readTagging(r, rc, tagging.Object)
	if err != nil {
		return err
	}
	info, err := tb.PutObjectTagging(r.Context(), rc.bucket, rc.key, vid, tags)
	if err != nil {
		return err
	}
	writeEmptyOK(w, info.VersionID)
	return nil
}

func (s *Server) deleteObjectTagging(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	tb, err := s.tagging()
	if err != nil {
		return err
	}
	vid, err := s.versionParam(r.URL.Query())
	if err != nil {
		return err
	}
	info, err := tb.DeleteObjectTagging(r.Context(), rc.bucket, rc.key, vid)
	if err != nil {
		return err
	}
	setVersionHeader(w.Header(), info.VersionID)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) getBucketTagging(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	tb, err := s.tagging()
	if err != nil {
		return err
	}
	tags, err := tb.GetBucketTagging(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	return writeTagging(w, tags, "")
}

func (s *Server) putBucketTagging(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	tb, err := s.tagging()
	if err != nil {
		return err
	}
	tags, err := readTagging(r, rc, tagging.Bucket)
	if err != nil {
		return err
	}
	if err := tb.PutBucketTagging(r.Context(), rc.bucket, tags); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) deleteBucketTagging(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	tb, err := s.tagging()
	if err != nil {
		return err
	}
	if err := tb.DeleteBucketTagging(r.Context(), rc.bucket); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// codedError maps the validation errors of the pure data-management
// packages (each carries its AWS error code) to wire errors.
func codedError(err error) (*s3err.Error, bool) {
	var code, msg string
	var te *tagging.Error
	var oe *objectlock.Error
	var le *lifecycle.Error
	switch {
	case errors.As(err, &te):
		code, msg = te.Code, te.Message
	case errors.As(err, &oe):
		code, msg = oe.Code, oe.Message
	case errors.As(err, &le):
		code, msg = le.Code, le.Message
	default:
		return nil, false
	}
	api := s3err.APIError{Code: code, HTTPStatus: http.StatusBadRequest, Description: msg}
	switch code {
	case "AccessDenied":
		api.HTTPStatus = http.StatusForbidden
	case "InvalidBucketState":
		api.HTTPStatus = http.StatusConflict
	}
	return &s3err.Error{APIError: api, Message: msg, Cause: err}, true
}
