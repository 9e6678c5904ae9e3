package s3api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	"github.com/cairn-s3/cairn/internal/driver"
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
	if err := s.checkStorageClasses(cfg.StorageClasses()); err != nil {
		return err
	}
	cfg.AssignIDs()
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

// storageClassChecker is a backend that configures storage classes.
type storageClassChecker interface {
	CheckStorageClass(class string) error
}

// checkStorageClasses refuses transitions to a class the gateway does not
// configure, as RGW refuses an unknown placement storage class.
func (s *Server) checkStorageClasses(classes []string) error {
	sc, ok := s.be.(storageClassChecker)
	for _, c := range classes {
		if !ok || sc.CheckStorageClass(c) != nil {
			return s3err.New(s3err.ErrInvalidStorageClass, "The storage class %s is not configured on this gateway (storage-classes).", c)
		}
	}
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

// lifecycleCache keeps parsed lifecycle documents by their text, so that
// x-amz-expiration costs a map lookup per GET/HEAD/PUT. The zero value is
// ready; it is emptied when it reaches lifecycleCacheSize documents.
type lifecycleCache struct {
	mu   sync.Mutex
	docs map[string]*lifecycle.Configuration
}

const lifecycleCacheSize = 1024

func (c *lifecycleCache) parse(doc []byte) (*lifecycle.Configuration, error) {
	c.mu.Lock()
	cfg := c.docs[string(doc)]
	c.mu.Unlock()
	if cfg != nil {
		return cfg, nil
	}
	cfg, err := lifecycle.Parse(doc)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.docs == nil || len(c.docs) >= lifecycleCacheSize {
		c.docs = map[string]*lifecycle.Configuration{}
	}
	c.docs[string(doc)] = cfg
	c.mu.Unlock()
	return cfg, nil
}

// setExpiration sets x-amz-expiration on the answer of PUT, GET and HEAD
// of a current object (vid "") that a lifecycle rule will expire, as AWS
// does: expiry-date="<HTTP date>", rule-id="<URL-encoded ID>".
func (s *Server) setExpiration(ctx context.Context, h http.Header, bucket, vid string, info driver.ObjectInfo) {
	lb, ok := s.be.(LifecycleBackend)
	if !ok || vid != "" {
		return
	}
	doc, err := lb.GetBucketLifecycle(ctx, bucket)
	if err != nil {
		return // none (or unreadable: the header is advisory)
	}
	cfg, err := s.lc.parse(doc)
	if err != nil {
		return
	}
	at, id, ok := cfg.Expiry(lifecycle.Version{Key: info.Key, Size: info.Size, ModTime: info.ModTime,
		Tags: info.Meta.Tags, IsLatest: true}, lifecycle.Day)
	if !ok {
		return
	}
	h.Set("X-Amz-Expiration", fmt.Sprintf(`expiry-date="%s", rule-id="%s"`, httpTime(at), url.PathEscape(id)))
}
