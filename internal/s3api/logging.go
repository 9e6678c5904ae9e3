package s3api

import (
	"context"
	"crypto/tls"
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/accesslog"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// AccessLogger is bucket logging (internal/accesslog.Logger).
type AccessLogger interface {
	// Enabled returns the source bucket's configuration (cached), nil if off.
	Enabled(ctx context.Context, bucket string) (*driver.BucketLogging, driver.Instance)
	// Log records one request; for journal configurations the record is
	// durable when Log returns nil.
	Log(ctx context.Context, inst driver.Instance, cfg *driver.BucketLogging, rs ...*accesslog.Record) error
	// DeferSyncs returns ctx for a journaled operation: its writes defer
	// their sync to the journal record's (Log must run, also with no
	// records, before the operation is acknowledged).
	DeferSyncs(ctx context.Context) context.Context
	Put(ctx context.Context, bucket string, cfg *driver.BucketLogging, hasGrants bool) error
	Flush(ctx context.Context, bucket string) ([]string, error)
}

type bucketLoggingStatus struct {
	XMLName        xml.Name           `xml:"BucketLoggingStatus"`
	Xmlns          string             `xml:"xmlns,attr,omitempty"`
	LoggingEnabled *loggingEnabledXML `xml:"LoggingEnabled"`
}

type loggingEnabledXML struct {
	TargetBucket string `xml:"TargetBucket"`
	TargetGrants *struct {
		Any []byte `xml:",innerxml"`
	} `xml:"TargetGrants"`
	TargetPrefix          string              `xml:"TargetPrefix"`
	TargetObjectKeyFormat *targetKeyFormatXML `xml:"TargetObjectKeyFormat"`
	// RGW's extensions.
	ObjectRollTime   int               `xml:"ObjectRollTime,omitempty"`
	LoggingType      string            `xml:"LoggingType,omitempty"`
	RecordsBatchSize int               `xml:"RecordsBatchSize,omitempty"`
	Filter           *loggingFilterXML `xml:"Filter"`
}

type targetKeyFormatXML struct {
	SimplePrefix      *struct{} `xml:"SimplePrefix"`
	PartitionedPrefix *struct {
		PartitionDateSource string `xml:"PartitionDateSource,omitempty"`
	} `xml:"PartitionedPrefix"`
}

type loggingFilterXML struct {
	S3Key struct {
		Rules []struct {
			Name  string `xml:"Name"`
			Value string `xml:"Value"`
		} `xml:"FilterRule"`
	} `xml:"S3Key"`
}

// putBucketLogging is PutBucketLogging (PUT ?logging): an empty
// BucketLoggingStatus disables logging.
func (s *Server) putBucketLogging(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if s.cfg.AccessLog == nil {
		return s3err.New(s3err.ErrNotImplemented, "Bucket logging is not enabled on this gateway.")
	}
	p, err := verifyBody(r, rc, -1)
	if err != nil {
		return err
	}
	var in bucketLoggingStatus
	if err := readXML(p.body, maxSmallXML, &in); err != nil {
		return err
	}
	if in.LoggingEnabled == nil {
		return s.cfg.AccessLog.Put(r.Context(), rc.bucket, nil, false)
	}
	le := in.LoggingEnabled
	cfg := &driver.BucketLogging{
		TargetBucket: le.TargetBucket, TargetPrefix: le.TargetPrefix, Type: le.LoggingType,
		RollTime: le.ObjectRollTime, BatchSize: le.RecordsBatchSize,
	}
	if f := le.TargetObjectKeyFormat; f != nil {
		switch {
		case f.SimplePrefix != nil && f.PartitionedPrefix != nil:
			return s3err.New(s3err.ErrMalformedXML, "TargetObjectKeyFormat takes SimplePrefix or PartitionedPrefix, not both.")
		case f.PartitionedPrefix != nil:
			cfg.KeyFormat, cfg.DateSource = driver.KeyFormatPartitioned, f.PartitionedPrefix.PartitionDateSource
		default:
			cfg.KeyFormat = driver.KeyFormatSimple
		}
	}
	if le.Filter != nil {
		for _, fr := range le.Filter.S3Key.Rules {
			cfg.Filter = append(cfg.Filter, driver.LoggingFilterRule{Name: strings.ToLower(fr.Name), Value: fr.Value})
		}
	}
	hasGrants := le.TargetGrants != nil && strings.TrimSpace(string(le.TargetGrants.Any)) != ""
	return s.cfg.AccessLog.Put(r.Context(), rc.bucket, cfg, hasGrants)
}

// getBucketLogging is GetBucketLogging (GET ?logging), with RGW's
// extension elements.
func (s *Server) getBucketLogging(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	out := bucketLoggingStatus{Xmlns: s3Namespace}
	if s.cfg.AccessLog != nil {
		if cfg, _ := s.cfg.AccessLog.Enabled(r.Context(), rc.bucket); cfg != nil {
			le := &loggingEnabledXML{
				TargetBucket: cfg.TargetBucket, TargetPrefix: cfg.TargetPrefix, ObjectRollTime: cfg.RollTime,
				LoggingType: cfg.Type, RecordsBatchSize: cfg.BatchSize, TargetObjectKeyFormat: &targetKeyFormatXML{},
			}
			if cfg.KeyFormat == driver.KeyFormatPartitioned {
				le.TargetObjectKeyFormat.PartitionedPrefix = &struct {
					PartitionDateSource string `xml:"PartitionDateSource,omitempty"`
				}{cfg.DateSource}
			} else {
				le.TargetObjectKeyFormat.SimplePrefix = &struct{}{}
			}
			if len(cfg.Filter) > 0 {
				le.Filter = &loggingFilterXML{}
				for _, f := range cfg.Filter {
					le.Filter.S3Key.Rules = append(le.Filter.S3Key.Rules, struct {
						Name  string `xml:"Name"`
						Value string `xml:"Value"`
					}{f.Name, f.Value})
				}
			}
			out.LoggingEnabled = le
		}
	}
	return writeXML(w, http.StatusOK, out)
}

// journalHook arms the response writer so a journal-mode write op's
// record is stored (synced) before its success response goes out; when
// storing fails the client gets InternalError instead (RGW fails the
// operation, too). Set after authorization. The request it returns runs
// the operation with its syncs deferred to the record's: the record's
// synced write is the operation's commit point, one sync per request.
func (s *Server) journalHook(w *statusWriter, r *http.Request, rc *reqCtx, start time.Time) *http.Request {
	if s.cfg.AccessLog == nil || !accesslog.Journaled(rc.op) {
		return r
	}
	cfg, inst := s.cfg.AccessLog.Enabled(r.Context(), rc.bucket)
	// Kept for the standard record (no journaled op changes logging).
	rc.logLooked, rc.logCfg = true, cfg
	if cfg == nil {
		return r
	}
	if cfg.Type != driver.LoggingJournal {
		rc.logInst = &inst
		return r
	}
	rc.logged = true
	r = r.WithContext(s.cfg.AccessLog.DeferSyncs(r.Context()))
	w.commit = func(status int) error {
		if status >= 300 {
			// Failed ops leave no journal record; Log still syncs what
			// the operation may have written (nothing is acknowledged, so
			// its error does not replace the operation's).
			_ = s.cfg.AccessLog.Log(context.WithoutCancel(r.Context()), inst, cfg)
			return nil
		}
		rec := s.accessRecord(r, rc, w, inst, start, status, 0)
		recs := []*accesslog.Record{rec}
		if rc.op == "DeleteObjects" {
			// One record per key deleted, as a journal of changes needs.
			recs = recs[:0]
			for _, d := range rc.deleted {
				kr := *rec
				kr.Key, kr.VersionID, kr.ETag, kr.ObjectSize = d.key, d.versionID, "", 0
				recs = append(recs, &kr)
			}
		}
		// The operation happened: its record is written even if the
		// client has gone.
		return s.cfg.AccessLog.Log(context.WithoutCancel(r.Context()), inst, cfg, recs...)
	}
	w.fail = func(err error) {
		s.log.Error("bucket logging: journal record not stored; request failed", "request_id", rc.id, "bucket", rc.bucket, "err", err)
		for k := range w.Header() {
			if k != "X-Amz-Request-Id" && k != "X-Amz-Id-2" && k != "Server" {
				w.Header().Del(k)
			}
		}
		s.writeError(w, r, rc, err)
	}
	return r
}

// logAccess records a finished request of a bucket with standard-mode
// logging.
func (s *Server) logAccess(r *http.Request, rc *reqCtx, w *statusWriter, start time.Time, lastIn time.Time) {
	if rc.logged || rc.bucket == "" || rc.kind != kindS3 || rc.op == "PreflightCors" {
		return
	}
	var cfg *driver.BucketLogging
	var inst driver.Instance
	switch {
	case !rc.logLooked:
		cfg, inst = s.cfg.AccessLog.Enabled(r.Context(), rc.bucket)
	case rc.logInst != nil:
		cfg, inst = rc.logCfg, *rc.logInst
	}
	if cfg == nil || cfg.Type != driver.LoggingStandard {
		return
	}
	rec := s.accessRecord(r, rc, w, inst, start, w.status, s.cfg.Now().Sub(start))
	if !w.firstOut.IsZero() && !lastIn.IsZero() && !w.firstOut.Before(lastIn) {
		rec.TurnAroundTime = w.firstOut.Sub(lastIn)
	}
	_ = s.cfg.AccessLog.Log(r.Context(), inst, cfg, rec) // standard: best effort, never fails the request
}

// accessRecord builds the AWS server access log record of a request to
// the source bucket inst.
func (s *Server) accessRecord(r *http.Request, rc *reqCtx, w *statusWriter, inst driver.Instance, start time.Time, status int, total time.Duration) *accesslog.Record {
	h := w.Header()
	var q url.Values // most object requests have no query: no map
	if r.URL.RawQuery != "" {
		q = r.URL.Query()
	}
	rec := &accesslog.Record{
		BucketOwner: rc.binfo.Owner, Bucket: rc.bucket, Time: start, RemoteIP: sourceIP(r),
		Requester: rc.ident.User.ID, RequestID: rc.id, Operation: awsOperation(r.Method, rc.op, q, rc.key),
		Key: rc.key, RequestURI: r.Method + " " + r.URL.RequestURI() + " " + r.Proto,
		HTTPStatus: status, ErrorCode: rc.errCode, BytesSent: w.bytes, TotalTime: total, TurnAroundTime: -1,
		Referer: r.Header.Get("Referer"), UserAgent: r.Header.Get("User-Agent"),
		VersionID: h.Get("X-Amz-Version-Id"), HostID: s.cfg.HostID, HostHeader: r.Host,
		ETag: h.Get("Etag"), ACLRequired: q.Has("acl"),
	}
	if rec.BucketOwner == "" {
		rec.BucketOwner = inst.Owner
	}
	if rec.VersionID == "" {
		rec.VersionID = q.Get("versionId")
	}
	if rc.etag != "" {
		rec.ETag = rc.etag
	}
	if total == 0 {
		rec.TotalTime = -1 // journal records are written before the response
	}
	rec.ObjectSize = objectSize(r, rc, h)
	switch a := r.Header.Get("Authorization"); {
	case strings.HasPrefix(a, "AWS4-"):
		rec.SigVersion, rec.AuthType = "SigV4", "AuthHeader"
	case strings.HasPrefix(a, "AWS "):
		rec.SigVersion, rec.AuthType = "SigV2", "AuthHeader"
	case q.Has("X-Amz-Signature"):
		rec.SigVersion, rec.AuthType = "SigV4", "QueryString"
	case q.Has("Signature"):
		rec.SigVersion, rec.AuthType = "SigV2", "QueryString"
	}
	if rc.op == "PostObject" {
		rec.SigVersion, rec.AuthType = "SigV4", "" // signed form fields, neither header nor query
	}
	if r.TLS != nil {
		rec.CipherSuite = tls.CipherSuiteName(r.TLS.CipherSuite)
		switch r.TLS.Version {
		case tls.VersionTLS12:
			rec.TLSVersion = "TLSv1.2"
		case tls.VersionTLS13:
			rec.TLSVersion = "TLSv1.3"
		default:
			rec.TLSVersion = tls.VersionName(r.TLS.Version)
		}
	}
	return rec
}

// objectSize is the record's object size: what a write stored, or the
// whole object a read returned (part of).
func objectSize(r *http.Request, rc *reqCtx, h http.Header) int64 {
	if rc.size > 0 {
		return rc.size
	}
	switch r.Method {
	case http.MethodPut, http.MethodPost:
		if rc.op == "PutObject" || rc.op == "UploadPart" || rc.op == "PostObject" {
			if rc.decodedLength >= 0 {
				return rc.decodedLength
			}
			return r.ContentLength
		}
		return 0
	case http.MethodGet, http.MethodHead:
		if rc.key == "" {
			return 0
		}
		if cr := h.Get("Content-Range"); cr != "" {
			if i := strings.LastIndexByte(cr, '/'); i >= 0 {
				n, _ := strconv.ParseInt(cr[i+1:], 10, 64)
				return n
			}
		}
		n, _ := strconv.ParseInt(h.Get("Content-Length"), 10, 64)
		return n
	}
	return 0
}

// awsOps names operations as AWS's access log does (REST.<METHOD>.<what>).
var awsOps = map[string]string{
	"ListObjects": "REST.GET.BUCKET", "ListObjectsV2": "REST.GET.BUCKET", "ListObjectVersions": "REST.GET.BUCKETVERSIONS",
	"HeadBucket": "REST.HEAD.BUCKET", "CreateBucket": "REST.PUT.BUCKET", "DeleteBucket": "REST.DELETE.BUCKET",
	"GetObject": "REST.GET.OBJECT", "HeadObject": "REST.HEAD.OBJECT", "PutObject": "REST.PUT.OBJECT",
	"CopyObject": "REST.COPY.OBJECT", "DeleteObject": "REST.DELETE.OBJECT", "DeleteObjects": "REST.POST.MULTI_OBJECT_DELETE",
	"PostObject": "REST.POST.OBJECT", "CreateMultipartUpload": "REST.POST.UPLOADS", "UploadPart": "REST.PUT.PART",
	"UploadPartCopy": "REST.COPY.PART", "CompleteMultipartUpload": "REST.POST.UPLOAD", "AbortMultipartUpload": "REST.DELETE.UPLOAD",
	"ListParts": "REST.GET.UPLOAD", "ListMultipartUploads": "REST.GET.UPLOADS",
	"GetBucketAcl": "REST.GET.ACL", "PutBucketAcl": "REST.PUT.ACL", "GetObjectAcl": "REST.GET.ACL", "PutObjectAcl": "REST.PUT.ACL",
	"GetObjectTagging": "REST.GET.OBJECT_TAGGING", "PutObjectTagging": "REST.PUT.OBJECT_TAGGING", "DeleteObjectTagging": "REST.DELETE.OBJECT_TAGGING",
	"GetBucketTagging": "REST.GET.TAGGING", "PutBucketTagging": "REST.PUT.TAGGING", "DeleteBucketTagging": "REST.DELETE.TAGGING",
	"GetBucketLogging": "REST.GET.LOGGING_STATUS", "PutBucketLogging": "REST.PUT.LOGGING_STATUS",
	"GetBucketVersioning": "REST.GET.VERSIONING", "PutBucketVersioning": "REST.PUT.VERSIONING",
	"PutObjectLegalHold": "REST.PUT.LEGAL_HOLD", "GetObjectLegalHold": "REST.GET.LEGAL_HOLD",
	"PutObjectRetention": "REST.PUT.RETENTION", "GetObjectRetention": "REST.GET.RETENTION",
	"GetBucketLocation": "REST.GET.LOCATION", "GetBucketPolicy": "REST.GET.BUCKETPOLICY", "PutBucketPolicy": "REST.PUT.BUCKETPOLICY",
	"DeleteBucketPolicy": "REST.DELETE.BUCKETPOLICY", "GetBucketCors": "REST.GET.CORS", "PutBucketCors": "REST.PUT.CORS",
	"DeleteBucketCors": "REST.DELETE.CORS", "GetBucketLifecycleConfiguration": "REST.GET.LIFECYCLE",
	"PutBucketLifecycleConfiguration": "REST.PUT.LIFECYCLE", "DeleteBucketLifecycle": "REST.DELETE.LIFECYCLE",
}

func awsOperation(method, op string, q map[string][]string, key string) string {
	if name, ok := awsOps[op]; ok {
		return name
	}
	what := "BUCKET"
	if key != "" {
		what = "OBJECT"
	}
	for k := range q {
		if unsupported[k] || k == "encryption" || k == "notification" || k == "object-lock" || k == "publicAccessBlock" || k == "ownershipControls" || k == "policyStatus" || k == "attributes" {
			what = strings.ToUpper(strings.ReplaceAll(k, "-", "_"))
			break
		}
	}
	return "REST." + method + "." + what
}

// adminBucketLogging is radosgw-admin's "bucket logging flush" (POST
// /admin/bucket?logging&bucket=B: writes the pending records of source
// bucket B now and returns the objects written) and "bucket logging
// info" (GET: the bucket's configuration).
func (s *Server) adminBucketLogging(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.AccessLog == nil {
		return s3err.New(s3err.ErrNotImplemented, "Bucket logging is not enabled on this gateway.")
	}
	b := r.URL.Query().Get("bucket")
	if b == "" {
		return missingParam("bucket")
	}
	switch r.Method {
	case http.MethodPost:
		keys, err := s.cfg.AccessLog.Flush(r.Context(), b)
		if err != nil {
			return err
		}
		cfg, _ := s.cfg.AccessLog.Enabled(r.Context(), b)
		target := ""
		if cfg != nil {
			target = cfg.TargetBucket
		}
		return WriteJSON(w, http.StatusOK, map[string]any{"bucket": b, "target_bucket": target, "flushed_objects": keys})
	case http.MethodGet:
		cfg, inst := s.cfg.AccessLog.Enabled(r.Context(), b)
		if inst.Name == "" {
			return driver.ErrNoSuchBucket
		}
		return WriteJSON(w, http.StatusOK, map[string]any{"bucket": b, "logging": cfg})
	}
	return s3err.New(s3err.ErrMethodNotAllowed, "")
}
