package s3api

import (
	"context"

	"net/http"
	"time"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objectlock"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// ObjectLockBackend is the object lock part of the gateway services.
// Refusals (a locked version) are *objectlock.Error with code AccessDenied.
type ObjectLockBackend interface {
	CreateBucketWith(ctx context.Context, owner, name, location string, numShards int, objectLock bool) error
	// PutObjectLockConfiguration: driver.ErrInvalidBucketState on a bucket
	// created without object lock.
	PutObjectLockConfiguration(ctx context.Context, bucket string, def *objectlock.DefaultRetention) error
	// GetObjectLockConfiguration: driver.ErrNoSuchLockConfig without it.
	GetObjectLockConfiguration(ctx context.Context, bucket string) (*objectlock.DefaultRetention, error)
	// The per-version calls return driver.ErrNoLockConfig on a bucket
	// without object lock and driver.ErrNoSuchObjectLock when unset.
	PutObjectRetention(ctx context.Context, bucket, key, vid string, r objectlock.Retention, bypass bool) (driver.ObjectInfo, error)
	GetObjectRetention(ctx context.Context, bucket, key, vid string) (objectlock.Retention, error)
	PutObjectLegalHold(ctx context.Context, bucket, key, vid string, on bool) (driver.ObjectInfo, error)
	GetObjectLegalHold(ctx context.Context, bucket, key, vid string) (bool, error)
}

var (
	errNoLockConfig     = s3err.APIError{Code: "InvalidRequest", HTTPStatus: http.StatusBadRequest, Description: "Bucket is missing Object Lock Configuration"}
	errNoSuchObjectLock = s3err.APIError{Code: "NoSuchObjectLockConfiguration", HTTPStatus: http.StatusNotFound, Description: "The specified object does not have a ObjectLock configuration"}
)

// maxLockXML bounds the object lock documents.
const maxLockXML = 4 << 10

func (s *Server) objectLock() (ObjectLockBackend, error) {
	lb, ok := s.be.(ObjectLockBackend)
	if !ok {
		return nil, s3err.New(s3err.ErrNotImplemented, "Object lock is not implemented by this backend.")
	}
	return lb, nil
}

// bypassGovernance decides whether a request may use
// x-amz-bypass-governance-retention: the authorizer's
// s3:BypassGovernanceRetention (the bucket owner, an admin, or whom the
// bucket policy allows).
func (s *Server) bypassGovernance(r *http.Request, rc *reqCtx) bool {
	return s.mayBypass(r, rc, rc.key, r.URL.Query().Get("versionId"))
}

// lockMeta reads the x-amz-object-lock-* headers of a write into m.
func lockMeta(h http.Header, m *driver.ObjectMeta) error {
	hs, present, err := objectlock.ParseHeaders(h, time.Now())
	if err != nil || !present {
		return err
	}
	m.LockMode, m.LockUntil = hs.Retention.Mode, driver.LockDate(hs.Retention.Until)
	if hs.LegalHold != nil {
		m.LegalHold = "OFF"
		if *hs.LegalHold {
			m.LegalHold = "ON"
		}
	}
	return nil
}

// lockHeaders adds a version's lock state to GET/HEAD responses.
func lockHeaders(h http.Header, m driver.ObjectMeta) {
	if m.LockMode != "" {
		h.Set("X-Amz-Object-Lock-Mode", m.LockMode)
		h.Set("X-Amz-Object-Lock-Retain-Until-Date", m.RetainUntil().UTC().Format(time.RFC3339))
	}
	if m.LegalHold != "" {
		h.Set("X-Amz-Object-Lock-Legal-Hold", m.LegalHold)
	}
}

func readSmall(r *http.Request, rc *reqCtx, limit int64) ([]byte, error) {
	p, err := verifyBody(r, rc, -1)
	if err != nil {
		return nil, err
	}
	return readAllLimited(p.body, limit)
}

func writeDoc(w http.ResponseWriter, body []byte) error {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

func (s *Server) putObjectLockConfiguration(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	lb, err := s.objectLock()
	if err != nil {
		return err
	}
	data, err := readSmall(r, rc, maxLockXML)
	if err != nil {
		return err
	}
	cfg, err := objectlock.ParseConfiguration(data)
	if err != nil {
		return err
	}
	var def *objectlock.DefaultRetention
	if cfg.Rule != nil {
		def = cfg.Rule.DefaultRetention
	}
	if err := lb.PutObjectLockConfiguration(r.Context(), rc.bucket, def); err != nil {
		return err
	}
	writeEmptyOK(w, "")
	return nil
}

func (s *Server) getObjectLockConfiguration(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	lb, err := s.objectLock()
	if err != nil {
		return err
	}
	def, err := lb.GetObjectLockConfiguration(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	cfg := objectlock.Configuration{ObjectLockEnabled: "Enabled"}
	if def != nil {
		cfg.Rule = &struct {
			DefaultRetention *objectlock.DefaultRetention `xml:"DefaultRetention"`
		}{DefaultRetention: def}
	}
	body, err := cfg.Marshal()
	if err != nil {
		return err
	}
	return writeDoc(w, body)
}

func (s *Server) putObjectRetention(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	lb, err := s.objectLock()
	if err != nil {
		return err
	}
	vid, err := s.versionParam(r.URL.Query())
	if err != nil {
		return err
	}
	data, err := readSmall(r, rc, maxLockXML)
	if err != nil {
		return err
	}
	ret, err := objectlock.ParseRetention(data, time.Now())
	if err != nil {
		return err
	}
	info, err := lb.PutObjectRetention(r.Context(), rc.bucket, rc.key, vid, ret, s.bypassGovernance(r, rc))
	if err != nil {
		return err
	}
	writeEmptyOK(w, info.VersionID)
	return nil
}

func (s *Server) getObjectRetention(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	lb, err := s.objectLock()
	if err != nil {
		return err
	}
	vid, err := s.versionParam(r.URL.Query())
	if err != nil {
		return err
	}
	ret, err := lb.GetObjectRetention(r.Context(), rc.bucket, rc.key, vid)
	if err != nil {
		return err
	}
	body, err := objectlock.MarshalRetention(ret)
	if err != nil {
		return err
	}
	return writeDoc(w, body)
}

func (s *Server) putObjectLegalHold(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	lb, err := s.objectLock()
	if err != nil {
		return err
	}
	vid, err := s.versionParam(r.URL.Query())
	if err != nil {
		return err
	}
	data, err := readSmall(r, rc, maxLockXML)
	if err != nil {
		return err
	}
	on, err := objectlock.ParseLegalHold(data)
	if err != nil {
		return err
	}
	info, err := lb.PutObjectLegalHold(r.Context(), rc.bucket, rc.key, vid, on)
	if err != nil {
		return err
	}
	writeEmptyOK(w, info.VersionID)
	return nil
}

func (s *Server) getObjectLegalHold(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	lb, err := s.objectLock()
	if err != nil {
		return err
	}
	vid, err := s.versionParam(r.URL.Query())
	if err != nil {
		return err
	}
	on, err := lb.GetObjectLegalHold(r.Context(), rc.bucket, rc.key, vid)
	if err != nil {
		return err
	}
	body, err := objectlock.MarshalLegalHold(on)
	if err != nil {
		return err
	}
	return writeDoc(w, body)
}
