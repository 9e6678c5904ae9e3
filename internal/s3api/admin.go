package s3api

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// Admin REST API, in the spirit of RGW's /admin/ ops (admin users only,
// SigV4-signed like S3, JSON responses):
//
//	PUT    /admin/user?uid=U[&display-name=N][&email=E][&access-key=K&secret-key=S][&admin=true][&max-buckets=N]  create
//	GET    /admin/user?uid=U                    user info
//	GET    /admin/user?list  (or /admin/metadata/user)   ["uid", ...]
//	DELETE /admin/user?uid=U                    remove (BucketNotEmpty while it owns buckets)
//	GET    /admin/bucket[?uid=U]                ["bucket", ...]
//	GET    /admin/bucket?stats[&uid=U]          [{stats}, ...]
//	GET    /admin/bucket?stats&bucket=B         {stats}
//	GET    /admin/bucket?objects&bucket=B[&max-entries=N][&marker=K][&version-id-marker=V][&prefix=P]
//	                                            one page of index entries (every version)
//	GET    /admin/bucket?check&bucket=B         the ordered index view against the shards
//	POST   /admin/bucket?check&fix=true&bucket=B  repair (or build) the view
//	quota, ratelimit and usage routes: see limits.go
//
// Errors are JSON {"Code", "Message", "RequestId", "HostId"} with the
// registry's HTTP status. Other packages add routes with HandleAdmin.

// AdminHandlerFunc serves one admin route. The caller is an authenticated
// admin (IdentityFrom(r.Context())); r.Body is the verified body. A
// returned error is written as a JSON admin error (domain errors mapped as
// for S3, see MapError) unless the handler already wrote a response.
type AdminHandlerFunc func(w http.ResponseWriter, r *http.Request) error

// BucketHandlerFunc serves a bucket subresource registered with
// HandleBucketSubresource. The bucket exists and the caller is allowed the
// route's action (opActions, by its operation name from subresourceOp; a
// route without one is refused); r.Body is the verified body. A returned error is written as
// an S3 XML error unless the handler already wrote a response.
type BucketHandlerFunc func(w http.ResponseWriter, r *http.Request, bucket driver.BucketInfo) error

// HandleAdmin registers h for the admin path ("/admin/reshard" or just
// "reshard"), all methods; h dispatches on r.Method itself. A later
// registration replaces an earlier one, built-ins included. Safe to call
// while serving.
func (s *Server) HandleAdmin(path string, h AdminHandlerFunc) {
	path = "/admin/" + strings.Trim(strings.TrimPrefix(strings.TrimPrefix(path, "/"), "admin/"), "/")
	s.mu.Lock()
	s.admin[path] = h
	s.mu.Unlock()
}

// AdminRoutes returns the registered admin paths ("/admin/user", ...),
// sorted, for tests that check each has an action.
func (s *Server) AdminRoutes() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.admin))
	for p := range s.admin {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// AuthorizeAdmin authenticates r as an admin-API request (SigV4; SigV2
// is refused) and decides act, an admin action, for the caller: nil when
// allowed, else an s3err error (AccessDenied for anonymous and non-admin
// callers). The gateway guards /metrics with it.
func (s *Server) AuthorizeAdmin(r *http.Request, act authz.Action) error {
	rc := &reqCtx{id: s.newRequestID(), op: "Admin", decodedLength: -1}
	ident, err := s.authenticate(r, rc, kindAdmin)
	if err != nil {
		return err
	}
	rc.ident = ident
	in := authz.Input{Request: authz.Request{Principal: rc.principal(), Action: act}}
	if act.Scope() != authz.ScopeAdmin || !s.decide(r.Context(), rc, &in).Allowed() {
		return s3err.New(s3err.ErrAccessDenied, "")
	}
	return nil
}

// HandleBucketSubresource routes method requests on a bucket that carry the
// query parameter subresource (e.g. "PUT", "notification" for
// PutBucketNotificationConfiguration) to h, ahead of the built-in routes.
func (s *Server) HandleBucketSubresource(method, subresource string, h BucketHandlerFunc) {
	s.mu.Lock()
	s.bucketSubres[strings.ToUpper(method)+" "+subresource] = h
	s.mu.Unlock()
}

// SetSNSHandler serves the SNS query API: POST requests to the service
// root "/". The request is authenticated first (SigV4 with a signed
// payload; the verifier must accept the "sns" service in the credential
// scope); r.Body is the verified form body, the only place the handler
// may read the action from, and IdentityFrom(r.Context()) the caller. Without a
// handler such requests get NotImplemented.
func (s *Server) SetSNSHandler(h http.Handler) {
	s.mu.Lock()
	s.sns = h
	s.mu.Unlock()
}

func (s *Server) extBucketHandler(h BucketHandlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
		return h(w, r, rc.binfo)
	}
}

// WriteJSON writes v as a JSON response with status.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	out, err := json.Marshal(v)
	if err != nil {
		return err
	}
	out = append(out, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(status)
	_, _ = w.Write(out)
	return nil
}

type adminError struct {
	Code      string `json:"Code"`
	Message   string `json:"Message"`
	RequestID string `json:"RequestId"`
	HostID    string `json:"HostId"`
}

// writeAdminError writes err in the admin API's one error shape (JSON).
func (s *Server) writeAdminError(w *statusWriter, rc *reqCtx, err error) {
	e := s.mapError(err)
	rc.errCode = e.Code
	if e.HTTPStatus >= 500 {
		rc.cause = err
	}
	if w.status == 0 {
		_ = WriteJSON(w, e.HTTPStatus, adminError{Code: e.Code, Message: e.WireMessage(), RequestID: rc.id, HostID: s.cfg.HostID})
	}
}

func (s *Server) serveAdmin(w *statusWriter, r *http.Request, rc *reqCtx) {
	writeErr := func(err error) { s.writeAdminError(w, rc, err) }
	if err := qualifyAdminTenant(r); err != nil {
		writeErr(err)
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	act, mapped := adminAction(r.Method, path)
	in := authz.Input{Request: authz.Request{Principal: rc.principal(), Action: act}}
	if !s.decide(r.Context(), rc, &in).Allowed() {
		writeErr(s3err.New(s3err.ErrAccessDenied, "The admin API is for admin users only."))
		return
	}
	s.mu.RLock()
	h, ok := s.admin[path]
	s.mu.RUnlock()
	rc.op = "Admin" + adminOpName(r.Method, path)
	if !ok {
		writeErr(s3err.New(s3err.ErrNotImplemented, "No admin route %s.", path))
		return
	}
	if !mapped {
		// Registered without an action in adminActions: refuse.
		writeErr(fmt.Errorf("s3api: admin route %s has no authz action", path))
		return
	}
	if err := h(w, r); err != nil {
		writeErr(err)
	}
}

// adminOpName names admin operations for metrics, e.g. "GET /admin/user"
// → "GetUser".
func adminOpName(method, path string) string {
	name := strings.TrimPrefix(path, "/admin/")
	var b strings.Builder
	b.WriteString(strings.ToUpper(method[:1]) + strings.ToLower(method[1:]))
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '-' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func (s *Server) registerBuiltinAdmin() {
	s.HandleAdmin("user", s.adminUser)
	s.HandleAdmin("metadata/user", func(w http.ResponseWriter, r *http.Request) error {
		if r.Method != http.MethodGet {
			return s3err.New(s3err.ErrMethodNotAllowed, "")
		}
		return s.adminListUsers(w, r)
	})
	s.HandleAdmin("bucket", s.adminBucket)
	s.HandleAdmin("ratelimit", s.adminRateLimit)
	s.HandleAdmin("usage", s.adminUsage)
}

func missingParam(name string) error {
	return s3err.New(s3err.ErrInvalidArgument, "Missing required parameter %q.", name)
}

func (s *Server) adminUser(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ctx := r.Context()
	uid := q.Get("uid")
	switch r.Method {
	case http.MethodGet:
		if q.Has("quota") {
			return s.adminQuota(w, r, q.Get("quota-type"), "")
		}
		if q.Has("stats") && uid != "" {
			return s.adminUserStats(w, r, uid)
		}
		if uid == "" || q.Has("list") {
			return s.adminListUsers(w, r)
		}
		u, err := s.be.GetUser(ctx, uid)
		if err != nil {
			return err
		}
		return WriteJSON(w, http.StatusOK, u)
	case http.MethodPut, http.MethodPost:
		if q.Has("quota") {
			return s.adminQuota(w, r, q.Get("quota-type"), "")
		}
		if uid == "" {
			return missingParam("uid")
		}
		if q.Get("account-id") != "" || q.Has("account-root") {
			return s.delegateAdmin("account/user", w, r)
		}
		u := driver.User{ID: uid, DisplayName: q.Get("display-name"), Email: q.Get("email"), Admin: q.Get("admin") == "true"}
		ak, sk := q.Get("access-key"), q.Get("secret-key")
		if (ak == "") != (sk == "") {
			return s3err.New(s3err.ErrInvalidArgument, "access-key and secret-key must be given together.")
		}
		if ak != "" {
			u.Keys = []driver.Key{{User: uid, AccessKey: ak, SecretKey: sk}}
		}
		if v := q.Get("max-buckets"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return s3err.New(s3err.ErrInvalidArgument, "max-buckets must be an integer (0 unlimited, negative: no bucket creation), not %q.", v)
			}
			u.MaxBuckets = &n
		}
		created, err := s.be.CreateUser(ctx, u)
		if err != nil {
			return err
		}
		return WriteJSON(w, http.StatusOK, created)
	case http.MethodDelete:
		if uid == "" {
			return missingParam("uid")
		}
		if u, err := s.be.GetUser(ctx, uid); err == nil && u.Account != "" {
			return s.delegateAdmin("account/user", w, r) // its name claim goes too
		}
		if err := s.be.RemoveUser(ctx, uid); err != nil {
			return err
		}
		w.WriteHeader(http.StatusOK)
		return nil
	}
	return s3err.New(s3err.ErrMethodNotAllowed, "")
}

// delegateAdmin serves r with the admin handler registered at path (an
// account's users belong to the IAM store when one is mounted).
func (s *Server) delegateAdmin(path string, w http.ResponseWriter, r *http.Request) error {
	s.mu.RLock()
	h, ok := s.admin["/admin/"+path]
	s.mu.RUnlock()
	if !ok {
		return s3err.New(s3err.ErrNotImplemented, "IAM accounts are not enabled.")
	}
	return h(w, r)
}

func (s *Server) adminListUsers(w http.ResponseWriter, r *http.Request) error {
	all, err := s.be.ListUsers(r.Context())
	if err != nil {
		return err
	}
	ids := []string{}
	tenant, only := r.URL.Query().Get("tenant"), r.URL.Query().Has("tenant")
	for _, id := range all {
		if t, _ := driver.SplitUserID(id); !only || t == tenant {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return WriteJSON(w, http.StatusOK, ids)
}

// bucketStatsJSON is BucketStats with RGW's "bucket" and "tenant" fields
// (the S3 name and its tenant; "name" is the internal "tenant/bucket").
type bucketStatsJSON struct {
	Bucket string `json:"bucket"`
	Tenant string `json:"tenant"`
	driver.BucketStats
}

func statsJSON(st driver.BucketStats) bucketStatsJSON {
	t, b := driver.SplitBucket(st.Name)
	return bucketStatsJSON{Bucket: b, Tenant: t, BucketStats: st}
}

func (s *Server) adminBucket(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ctx := r.Context()
	if q.Has("quota") {
		if q.Get("bucket") == "" {
			return missingParam("bucket")
		}
		return s.adminQuota(w, r, driver.QuotaScopeBucket, q.Get("bucket"))
	}
	if q.Has("logging") {
		return s.adminBucketLogging(w, r)
	}
	if r.Method == http.MethodPut {
		return s.adminCreateBucket(w, r)
	}
	if r.Method == http.MethodPost && q.Has("check") && q.Get("fix") == "true" {
		return s.adminBucketFix(w, r)
	}
	if r.Method != http.MethodGet {
		return s3err.New(s3err.ErrMethodNotAllowed, "")
	}
	if q.Has("objects") {
		return s.adminBucketObjects(w, r)
	}
	if q.Has("check") {
		return s.adminBucketCheck(w, r)
	}
	stats := q.Has("stats") && q.Get("stats") != "false"
	if b := q.Get("bucket"); b != "" {
		st, err := s.be.BucketStats(ctx, b)
		if err != nil {
			return err
		}
		if !stats {
			return WriteJSON(w, http.StatusOK, st.BucketInfo)
		}
		return WriteJSON(w, http.StatusOK, statsJSON(st))
	}
	buckets, err := s.be.ListBuckets(ctx, q.Get("uid"))
	if err != nil {
		return err
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].Name < buckets[j].Name })
	if !stats {
		names := make([]string, 0, len(buckets))
		for _, b := range buckets {
			names = append(names, b.Name)
		}
		return WriteJSON(w, http.StatusOK, names)
	}
	out := make([]bucketStatsJSON, 0, len(buckets))
	for _, b := range buckets {
		st, err := s.be.BucketStats(ctx, b.Name)
		if err != nil {
			return err
		}
		out = append(out, statsJSON(st))
	}
	return WriteJSON(w, http.StatusOK, out)
}

// adminObjectEntry is one index entry of `bucket list --bucket B`, in
// radosgw-admin's shape (the fields Cairn keeps).
type adminObjectEntry struct {
	Name     string `json:"name"`
	Instance string `json:"instance"`
	Exists   bool   `json:"exists"`
	Latest   bool   `json:"is_latest"`
	Meta     struct {
		Size         int64  `json:"size"`
		Mtime        string `json:"mtime"`
		ETag         string `json:"etag"`
		StorageClass string `json:"storage_class"`
		Owner        string `json:"owner"`
		ContentType  string `json:"content_type"`
	} `json:"meta"`
}

// adminBucketObjects serves GET /admin/bucket?objects&bucket=B: one page
// of the bucket's index entries, every version, in key order (the CLI
// pages through them as radosgw-admin's `bucket list --bucket` prints).
func (s *Server) adminBucketObjects(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	b := q.Get("bucket")
	if b == "" {
		return missingParam("bucket")
	}
	max := 1000
	if v := q.Get("max-entries"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return s3err.New(s3err.ErrInvalidArgument, "max-entries must be an integer from 1 to 10000, not %q.", v)
		}
		max = n
	}
	vb, ok := s.versioning()
	if !ok {
		return s3err.New(s3err.ErrNotImplemented, "listing index entries needs a versioning backend.")
	}
	res, err := vb.ListObjectVersions(r.Context(), driver.ListVersionsInput{
		Bucket: b, Prefix: q.Get("prefix"), KeyMarker: q.Get("marker"), VersionIDMarker: q.Get("version-id-marker"), MaxKeys: max,
	})
	if err != nil {
		return err
	}
	out := struct {
		Entries             []adminObjectEntry `json:"entries"`
		IsTruncated         bool               `json:"is_truncated"`
		NextMarker          string             `json:"next_marker,omitempty"`
		NextVersionIDMarker string             `json:"next_version_id_marker,omitempty"`
	}{Entries: make([]adminObjectEntry, 0, len(res.Versions)), IsTruncated: res.IsTruncated}
	if res.IsTruncated {
		out.NextMarker, out.NextVersionIDMarker = res.NextKeyMarker, res.NextVersionIDMarker
	}
	for _, v := range res.Versions {
		e := adminObjectEntry{Name: v.Key, Instance: v.VersionID, Exists: !v.DeleteMarker, Latest: v.IsLatest}
		if e.Instance == "null" {
			e.Instance = ""
		}
		e.Meta.Size, e.Meta.ETag, e.Meta.Owner = v.Size, v.ETag, v.Owner
		e.Meta.Mtime = v.ModTime.UTC().Format(time.RFC3339Nano)
		e.Meta.StorageClass = cmp.Or(v.StorageClass, "STANDARD")
		e.Meta.ContentType = v.Meta.ContentType
		out.Entries = append(out.Entries, e)
	}
	return WriteJSON(w, http.StatusOK, out)
}

// adminCreateBucket is `cairn admin bucket create --bucket B --uid OWNER
// [--num-shards N]`: pre-sharding on behalf of a user.
func (s *Server) adminCreateBucket(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ctx := r.Context()
	name, uid := q.Get("bucket"), q.Get("uid")
	if name == "" {
		return missingParam("bucket")
	}
	if uid == "" {
		return missingParam("uid")
	}
	n := 0
	if v := q.Get("num-shards"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			return s3err.New(s3err.ErrInvalidArgument, "num-shards must be a positive integer, not %q.", v)
		}
	}
	if _, err := s.be.GetUser(ctx, uid); err != nil {
		return err
	}
	// The bucket is in its owner's tenant, as S3 CreateBucket makes it.
	ut, _ := driver.SplitUserID(uid)
	switch bt, bare := driver.SplitBucket(name); {
	case bt == "" && ut != "":
		name = driver.TenantBucket(ut, bare)
	case bt != ut:
		return s3err.New(s3err.ErrInvalidArgument, "bucket %q is not in the tenant of its owner %q.", name, uid)
	}
	if err := s.be.CreateBucket(ctx, uid, name, "", n); err != nil {
		return err
	}
	st, err := s.be.BucketStats(ctx, name)
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, statsJSON(st))
}

// adminBucketCheck serves GET /admin/bucket?check&bucket=B (`cairn admin
// bucket check`, after radosgw-admin bucket check): compares the bucket's
// ordered index view with its shards and lists up to 1,000 keys where
// they differ. A bucket without a view has nothing to check.
func (s *Server) adminBucketCheck(w http.ResponseWriter, r *http.Request) error {
	b := r.URL.Query().Get("bucket")
	if b == "" {
		return missingParam("bucket")
	}
	view, diff, err := s.be.CheckIndexView(r.Context(), b, 1000)
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, struct {
		Bucket     string   `json:"bucket"`
		IndexView  bool     `json:"index_view"`
		Consistent bool     `json:"consistent"`
		Mismatches []string `json:"view_mismatches"`
	}{b, view, len(diff) == 0, append([]string{}, diff...)})
}

// adminBucketFix serves POST /admin/bucket?check&fix=true&bucket=B
// (`cairn admin bucket check --fix`): the view repaired from the shards,
// or built for a bucket that has none, then checked again.
func (s *Server) adminBucketFix(w http.ResponseWriter, r *http.Request) error {
	b := r.URL.Query().Get("bucket")
	if b == "" {
		return missingParam("bucket")
	}
	fix, err := s.be.FixIndexView(r.Context(), b)
	if err != nil {
		return err
	}
	view, diff, err := s.be.CheckIndexView(r.Context(), b, 1000)
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, struct {
		Bucket string `json:"bucket"`
		driver.IndexViewFix
		IndexView  bool     `json:"index_view"`
		Consistent bool     `json:"consistent"`
		Mismatches []string `json:"view_mismatches"`
	}{b, fix, view, len(diff) == 0, append([]string{}, diff...)})
}
