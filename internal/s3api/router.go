package s3api

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/cairn-s3/cairn/internal/s3err"
)

type routeKind int

const (
	kindS3 routeKind = iota
	kindAdmin
	kindSNS
)

// handlerFunc serves one S3 operation. A returned error is mapped and
// written by the Server unless the handler already started the response.
type handlerFunc func(w http.ResponseWriter, r *http.Request, rc *reqCtx) error

type route struct {
	kind         routeKind
	op           string // operation name for logs and metrics
	h            handlerFunc
	bucketScoped bool // load the bucket and check ownership first
	// selfAuth: the handler authenticates the request itself (browser POST
	// forms carry their signature in the body) or needs none (CORS
	// preflights carry no credentials). The Server skips its own checks.
	selfAuth bool
	// deferred is the route's answer once the bucket check passed
	// (NotImplemented, MethodNotAllowed): only the owner may learn it.
	deferred error
	err      error // set when the request cannot be served
}

// unsupported lists subresources S3 defines that Cairn does not implement;
// requests naming them get NotImplemented rather than being mistaken for a
// plain GET/PUT of the bucket or object.
var unsupported = map[string]bool{
	"accelerate": true, "analytics": true, "attributes": true,
	"encryption": true, "intelligent-tiering": true, "inventory": true,
	"logging": true, "metrics": true, "notification": true,
	"replication": true, "requestPayment": true, "restore": true,
	"select": true, "session": true,
	"website": true, "renameObject": true,
	"metadataTable": true,
}

// target splits the request into bucket and key, honouring
// virtual-host-style addressing for the configured domains.
func (s *Server) target(r *http.Request) (bucket, key string, vhost bool) {
	host := strings.ToLower(r.Host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(host, ".")
	for _, d := range s.cfg.DomainNames {
		if len(host) > len(d)+1 && strings.HasSuffix(host, d) && host[len(host)-len(d)-1] == '.' {
			return host[:len(host)-len(d)-1], strings.TrimPrefix(r.URL.Path, "/"), true
		}
	}
	bucket, key, _ = strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	return bucket, key, false
}

func isAdminPath(p string) bool { return p == "/admin" || strings.HasPrefix(p, "/admin/") }

// route decides the operation. It never touches the backend.
func (s *Server) route(r *http.Request, rc *reqCtx) route {
	bucket, key, vhost := s.target(r)
	rc.bucket, rc.key = bucket, key
	rc.rawBucket, rc.bucketName, rc.vhost = bucket, bucket, vhost
	q := r.URL.Query()

	if !vhost && isAdminPath(r.URL.Path) {
		rc.bucket, rc.key, rc.rawBucket, rc.bucketName = "", "", "", ""
		return route{kind: kindAdmin, op: "Admin"}
	}
	if bucket == "" {
		switch {
		case r.Method == http.MethodPost:
			// SNS query API: form-encoded POST to "/" (RGW serves it there).
			// Only the body counts, never the query (see notify/api).
			return route{kind: kindSNS, op: "SNS"}
		case r.Method == http.MethodGet && q.Has("Action"):
			return route{op: "SNS", err: s3err.New(s3err.ErrMethodNotAllowed, "The SNS API takes a form-encoded POST.")}
		case r.Method == http.MethodGet && q.Has("usage"):
			return route{op: "GetUsage", h: s.getUsage}
		case r.Method == http.MethodGet:
			return route{op: "ListBuckets", h: s.listBuckets}
		}
		return route{op: "Service", err: s3err.New(s3err.ErrMethodNotAllowed, "")}
	}
	if r.Method == http.MethodOptions {
		return route{op: "PreflightCors", h: s.preflight, selfAuth: true}
	}
	rt := s.objectRoute
	if key == "" {
		rt = s.bucketRoute
	}
	return s.expectBucketOwner(rt(r, q))
}

// expectBucketOwner makes a bucket-scoped route check
// x-amz-expected-bucket-owner (and, on copies, the source bucket's
// x-amz-source-expected-bucket-owner) once authorize loaded the bucket:
// another owner is 403 AccessDenied, as AWS answers on every operation
// that takes the header.
func (s *Server) expectBucketOwner(rt route) route {
	h := rt.h
	if h == nil || !rt.bucketScoped {
		return rt
	}
	rt.h = func(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
		denied := s3err.New(s3err.ErrAccessDenied, "The bucket is not owned by the expected bucket owner.")
		if v := r.Header.Get("X-Amz-Expected-Bucket-Owner"); v != "" && v != rc.binfo.Owner {
			return denied
		}
		if v := r.Header.Get("X-Amz-Source-Expected-Bucket-Owner"); v != "" && r.Header.Get("X-Amz-Copy-Source") != "" {
			src, err := rc.parsedCopySource(r)
			if err != nil {
				return err
			}
			// Checked before the copy's own read check: any failure is the
			// same AccessDenied, so nothing is learnt of other buckets.
			if ba, err := s.be.BucketAuth(r.Context(), src.bucket); err != nil || ba.Info.Owner != v {
				return denied
			}
		}
		return h(w, r, rc)
	}
	return rt
}

// notImplemented answers 501 NotImplemented, only after the bucket check,
// so a missing bucket is NoSuchBucket and someone else's is AccessDenied,
// as for any other request: only the owner learns what is unimplemented.
// A subresource request ("GET ?policy" on a "Bucket") is named by its S3
// operation (GetBucketPolicy, see operations.go) in the message, logs and
// metrics.
func notImplemented(op, what string) route {
	if method, sub, ok := strings.Cut(what, " ?"); ok {
		rt := notImplementedSub(strings.ToLower(op), method, sub)
		return deferredError(rt.op, rt.err)
	}
	return deferredError(op, s3err.New(s3err.ErrNotImplemented, "%s is not implemented.", what))
}

// deferredError is a bucket-scoped route that fails with err once the
// bucket check passed.
func deferredError(op string, err error) route {
	return route{op: op, bucketScoped: true, deferred: err}
}

// subresource returns the first query parameter that names an unsupported
// subresource, or "".
func subresource(q url.Values) string {
	for k := range q {
		if unsupported[k] {
			return k
		}
	}
	return ""
}

// wrongLevel names a data-management subresource asked of the wrong level
// (?retention on a bucket, ?lifecycle on an object), which S3 does not
// define: answered NotImplemented rather than served as a plain request.
func wrongLevel(q url.Values, names ...string) string {
	for _, n := range names {
		if q.Has(n) {
			return n
		}
	}
	return ""
}

func (s *Server) bucketRoute(r *http.Request, q url.Values) route {
	// Extension handlers (e.g. ?notification) win over built-ins.
	s.mu.RLock()
	for k := range q {
		if h, ok := s.bucketSubres[r.Method+" "+k]; ok {
			s.mu.RUnlock()
			return route{op: subresourceOp("bucket", r.Method, k), h: s.extBucketHandler(h), bucketScoped: true}
		}
	}
	s.mu.RUnlock()

	scoped := func(op string, h handlerFunc) route { return route{op: op, h: h, bucketScoped: true} }
	if n := wrongLevel(q, "retention", "legal-hold"); n != "" {
		return notImplemented("Bucket", r.Method+" ?"+n)
	}
	switch r.Method {
	case http.MethodGet:
		switch {
		case q.Has("location"):
			return scoped("GetBucketLocation", s.getBucketLocation)
		case q.Has("versioning"):
			return scoped("GetBucketVersioning", s.getBucketVersioning)
		case q.Has("versions"):
			return scoped("ListObjectVersions", s.listObjectVersions)
		case q.Has("acl"):
			return scoped("GetBucketAcl", s.getBucketACL)
		case q.Has("policy"):
			return scoped("GetBucketPolicy", s.getBucketPolicy)
		case q.Has("policyStatus"):
			return scoped("GetBucketPolicyStatus", s.getBucketPolicyStatus)
		case q.Has("publicAccessBlock"):
			return scoped("GetPublicAccessBlock", s.getPublicAccessBlock)
		case q.Has("ownershipControls"):
			return scoped("GetBucketOwnershipControls", s.getOwnershipControls)
		case q.Has("uploads"):
			return scoped("ListMultipartUploads", s.listMultipartUploads)
		case q.Has("cors"):
			return scoped("GetBucketCors", s.getBucketCors)
		case q.Has("tagging"):
			return scoped("GetBucketTagging", s.getBucketTagging)
		case q.Has("object-lock"):
			return scoped("GetObjectLockConfiguration", s.getObjectLockConfiguration)
		case q.Has("lifecycle"):
			return scoped("GetBucketLifecycleConfiguration", s.getBucketLifecycle)
		case q.Has("encryption"):
			return scoped("GetBucketEncryption", s.getBucketEncryption)
		case q.Has("logging"):
			return scoped("GetBucketLogging", s.getBucketLogging)
		case subresource(q) != "":
			return notImplemented("Bucket", "GET ?"+subresource(q))
		case q.Get("list-type") == "2":
			return scoped("ListObjectsV2", s.listObjectsV2)
		default:
			return scoped("ListObjects", s.listObjectsV1)
		}
	case http.MethodHead:
		return scoped("HeadBucket", s.headBucket)
	case http.MethodPut:
		switch {
		case q.Has("versioning"):
			return scoped("PutBucketVersioning", s.putBucketVersioning)
		case q.Has("cors"):
			return scoped("PutBucketCors", s.putBucketCors)
		case q.Has("acl"):
			return scoped("PutBucketAcl", s.putBucketACL)
		case q.Has("policy"):
			return scoped("PutBucketPolicy", s.putBucketPolicy)
		case q.Has("publicAccessBlock"):
			return scoped("PutPublicAccessBlock", s.putPublicAccessBlock)
		case q.Has("ownershipControls"):
			return scoped("PutBucketOwnershipControls", s.putOwnershipControls)
		case q.Has("tagging"):
			return scoped("PutBucketTagging", s.putBucketTagging)
		case q.Has("object-lock"):
			return scoped("PutObjectLockConfiguration", s.putObjectLockConfiguration)
		case q.Has("lifecycle"):
			return scoped("PutBucketLifecycleConfiguration", s.putBucketLifecycle)
		case q.Has("encryption"):
			return scoped("PutBucketEncryption", s.putBucketEncryption)
		case q.Has("logging"):
			return scoped("PutBucketLogging", s.putBucketLogging)
		}
		if sr := subresource(q); sr != "" {
			return notImplemented("Bucket", "PUT ?"+sr)
		}
		// Not scoped: the bucket need not exist, and the backend decides
		// between BucketAlreadyExists and BucketAlreadyOwnedByYou.
		return route{op: "CreateBucket", h: s.createBucket}
	case http.MethodDelete:
		switch {
		case q.Has("cors"):
			return scoped("DeleteBucketCors", s.deleteBucketCors)
		case q.Has("policy"):
			return scoped("DeleteBucketPolicy", s.deleteBucketPolicy)
		case q.Has("publicAccessBlock"):
			return scoped("DeletePublicAccessBlock", s.deletePublicAccessBlock)
		case q.Has("ownershipControls"):
			return scoped("DeleteBucketOwnershipControls", s.deleteOwnershipControls)
		case q.Has("tagging"):
			return scoped("DeleteBucketTagging", s.deleteBucketTagging)
		case q.Has("lifecycle"):
			return scoped("DeleteBucketLifecycle", s.deleteBucketLifecycle)
		case q.Has("encryption"):
			return scoped("DeleteBucketEncryption", s.deleteBucketEncryption)
		}
		if sr := subresource(q); sr != "" {
			return notImplemented("Bucket", "DELETE ?"+sr)
		}
		return scoped("DeleteBucket", s.deleteBucket)
	case http.MethodPost:
		if q.Has("delete") {
			return scoped("DeleteObjects", s.deleteObjects)
		}
		if isPostForm(r) {
			return route{op: "PostObject", h: s.postObject, selfAuth: true}
		}
		return notImplemented("Bucket", "this POST request")
	}
	return deferredError("Bucket", s3err.New(s3err.ErrMethodNotAllowed, ""))
}

func (s *Server) objectRoute(r *http.Request, q url.Values) route {
	scoped := func(op string, h handlerFunc) route { return route{op: op, h: h, bucketScoped: true} }
	sr := subresource(q)
	if n := wrongLevel(q, "lifecycle", "object-lock"); n != "" {
		return notImplemented("Object", r.Method+" ?"+n)
	}
	switch r.Method {
	case http.MethodGet:
		switch {
		case q.Has("acl"):
			return scoped("GetObjectAcl", s.getObjectACL)
		case q.Has("attributes"):
			return scoped("GetObjectAttributes", s.getObjectAttributes)
		case q.Has("tagging"):
			return scoped("GetObjectTagging", s.getObjectTagging)
		case q.Has("retention"):
			return scoped("GetObjectRetention", s.getObjectRetention)
		case q.Has("legal-hold"):
			return scoped("GetObjectLegalHold", s.getObjectLegalHold)
		case q.Has("torrent"):
			return scoped("GetObjectTorrent", s.getObjectTorrent)
		case sr != "":
			return notImplemented("Object", "GET ?"+sr)
		case q.Has("uploadId"):
			return scoped("ListParts", s.listParts)
		}
		return scoped("GetObject", s.getObject)
	case http.MethodHead:
		return scoped("HeadObject", s.getObject)
	case http.MethodPut:
		switch {
		case q.Has("acl"):
			return scoped("PutObjectAcl", s.putObjectACL)
		case q.Has("tagging"):
			return scoped("PutObjectTagging", s.putObjectTagging)
		case q.Has("retention"):
			return scoped("PutObjectRetention", s.putObjectRetention)
		case q.Has("legal-hold"):
			return scoped("PutObjectLegalHold", s.putObjectLegalHold)
		case sr != "":
			return notImplemented("Object", "PUT ?"+sr)
		case q.Has("uploadId") || q.Has("partNumber"):
			if r.Header.Get("X-Amz-Copy-Source") != "" {
				return scoped("UploadPartCopy", s.uploadPartCopy)
			}
			return scoped("UploadPart", s.uploadPart)
		case r.Header.Get("X-Amz-Copy-Source") != "":
			return scoped("CopyObject", s.copyObject)
		}
		return scoped("PutObject", s.putObject)
	case http.MethodPost:
		switch {
		case q.Has("uploads"):
			return scoped("CreateMultipartUpload", s.createMultipartUpload)
		case q.Has("uploadId"):
			return scoped("CompleteMultipartUpload", s.completeMultipartUpload)
		case sr != "":
			return notImplemented("Object", "POST ?"+sr)
		}
		return notImplemented("Object", "this POST request")
	case http.MethodDelete:
		switch {
		case q.Has("tagging"):
			return scoped("DeleteObjectTagging", s.deleteObjectTagging)
		case sr != "":
			return notImplemented("Object", "DELETE ?"+sr)
		case q.Has("uploadId"):
			return scoped("AbortMultipartUpload", s.abortMultipartUpload)
		}
		return scoped("DeleteObject", s.deleteObject)
	}
	return deferredError("Object", s3err.New(s3err.ErrMethodNotAllowed, ""))
}
