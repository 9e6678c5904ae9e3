package s3api

import (
	"context"
	"net/http"

	"github.com/cairn-s3/cairn/internal/lifecycle"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// LifecycleBackend stores bucket lifecycle configurations (validated
// documents) and registers the bucket with the lifecycle worker.
type LifecycleBackend interface {
	PutBucketLifecycle(ctx context.Context, bucket string, doc []byte) error
	// GetBucketLifecycle returns driver.ErrNoSuchLifecycle when none.
	GetBucketLifecycle(ctx context.Context, bucket string) ([]byte, error)
	DeleteBucketLifecycle(ctx context.Context, bucket string) error
}

// maxLifecycleXML bounds a lifecycle document (1000 rules, as AWS allows).
const maxLifecycleXML = 1 << 20

func (s *Server) lifecycleBackend() (LifecycleBackend, error) {
	lb, ok := s.be.(LifecycleBackend)
	if !ok {
		return nil, s3err.New(s3err.ErrNotImplemented, "Lifecycle is not implemented by this backend.")
	}
	return lb, nil
}

func (s *Server) putBucketLifecycle(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	lb, err := s.lifecycleBackend()
	if err != nil {
		return err
	}
	data, err := readSmall(r, rc, maxLifecycleXML)
	if err != nil {
		return err
	}
	cfg, err := lifecycle.Parse(data)
	if err != nil {
		return err
	}
	// Stored re-marshalled: the canonical form, whatever the client sent.
	doc, err := cfg.Marshal()
	if err != nil {
		return err
	}
	if err := lb.PutBucketLifecycle(r.Context(), rc.bucket, doc); err != nil {
		return err
	}
	writeEmptyOK(w, "")
	return nil
}

func (s *Server) getBucketLifecycle(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	lb, err := s.lifecycleBackend()
	if err != nil {
		return err
	}
	doc, err := lb.GetBucketLifecycle(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	return writeDoc(w, doc)
}

func (s *Server) deleteBucketLifecycle(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	lb, err := s.lifecycleBackend()
	if err != nil {
		return err
	}
	if err := lb.DeleteBucketLifecycle(r.Context(), rc.bucket); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
