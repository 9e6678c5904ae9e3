package s3api

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/ratelimit"
	"github.com/cairn-s3/cairn/internal/s3err"
	"github.com/cairn-s3/cairn/internal/usage"
)

// Limits is the quota and rate-limit service (the driver): settings
// behind the admin API, and the limits a request is held to.
type Limits interface {
	SetQuota(ctx context.Context, scope, uid, bucket string, fn func(*driver.Quota)) (driver.Quota, error)
	GetQuota(ctx context.Context, scope, uid, bucket string) (driver.Quota, error)
	SetRateLimit(ctx context.Context, scope, uid, bucket string, fn func(*ratelimit.Limit)) (ratelimit.Limit, error)
	GetRateLimit(ctx context.Context, scope, uid, bucket string) (ratelimit.Limit, error)
	// RateLimits returns the user's and the bucket's limits (cached).
	RateLimits(ctx context.Context, uid, bucket string) (ratelimit.Limit, ratelimit.Limit, error)
	// UserLimits returns a user's quotas (cached).
	UserLimits(ctx context.Context, uid string) (driver.UserLimits, error)
	// UserUsageStats sums the user's buckets' index stats now.
	UserUsageStats(ctx context.Context, uid string) (driver.UserStats, error)
}

// usageCategory is RGW's usage-log category of an operation (its op
// names); operations RGW has no name for use their own in snake case.
var usageCategory = map[string]string{
	"ListBuckets": "list_buckets", "CreateBucket": "create_bucket", "DeleteBucket": "delete_bucket",
	"HeadBucket": "stat_bucket", "ListObjects": "list_bucket", "ListObjectsV2": "list_bucket",
	"ListObjectVersions": "list_bucket", "GetObject": "get_obj", "HeadObject": "get_obj",
	"PutObject": "put_obj", "UploadPart": "put_obj", "PostObject": "post_obj", "CopyObject": "copy_obj",
	"UploadPartCopy": "copy_obj", "DeleteObject": "delete_obj", "DeleteObjects": "multi_object_delete",
	"CreateMultipartUpload": "init_multipart", "CompleteMultipartUpload": "complete_multipart",
	"AbortMultipartUpload": "abort_multipart", "ListParts": "list_multipart",
	"ListMultipartUploads": "list_bucket_multiparts", "GetBucketAcl": "get_acls", "GetObjectAcl": "get_acls",
	"PutBucketAcl": "put_acls", "PutObjectAcl": "put_acls", "GetUsage": "get_usage",
}

func categoryOf(op string) string {
	if c, ok := usageCategory[op]; ok {
		return c
	}
	var b strings.Builder
	for i, r := range op {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isWrite is RGW's rate-limit split: GET and HEAD read, the rest write.
func isWrite(method string) bool { return method != http.MethodGet && method != http.MethodHead }

// admitRate applies the user's and the bucket's rate limits to a request
// that passed authorization: SlowDown when either is spent. The keys are
// kept on rc so the bytes are charged when the request ends.
func (s *Server) admitRate(r *http.Request, rc *reqCtx) error {
	if s.cfg.RateLimiter == nil || s.cfg.Limits == nil {
		return nil
	}
	bucket := rc.bucket
	if rc.binfo.Name == "" {
		bucket = "" // not loaded: the bucket does not exist (yet)
	}
	ul, bl, err := s.cfg.Limits.RateLimits(r.Context(), rc.ident.User.ID, bucket)
	if err != nil {
		return err
	}
	if !ul.Active() && !bl.Active() {
		return nil
	}
	rc.rlKeys = rc.rlKeys[:0]
	if ul.Active() {
		rc.rlKeys = append(rc.rlKeys, ratelimit.Key{Name: "u/" + rc.ident.User.ID, Limit: ul})
	}
	if bl.Active() {
		rc.rlKeys = append(rc.rlKeys, ratelimit.Key{Name: "b/" + rc.binfo.ID, Limit: bl})
	}
	if !s.cfg.RateLimiter.Allow(isWrite(r.Method), rc.rlKeys...) {
		rc.rlKeys = nil // refused: nothing to charge
		return s3err.New(s3err.ErrSlowDown, "Rate limit exceeded; retry later.")
	}
	return nil
}

// account charges the rate limiter and records usage once a request is
// done: bytes received for writes, bytes sent for reads.
func (s *Server) account(r *http.Request, rc *reqCtx, kind routeKind, status int, sent, received int64) {
	write := isWrite(r.Method)
	if len(rc.rlKeys) > 0 {
		n := sent
		if write {
			n = received
		}
		s.cfg.RateLimiter.Charge(write, n, rc.rlKeys...)
	}
	if s.cfg.Usage == nil || kind != kindS3 || rc.op == "PreflightCors" {
		return
	}
	owner := rc.binfo.Owner // RGW logs under the bucket owner
	if owner == "" {
		owner = rc.ident.User.ID
	}
	bucket := rc.bucket
	if rc.binfo.Name == "" && rc.op != "CreateBucket" {
		bucket = "" // unknown bucket: logged as a service request
	}
	s.cfg.Usage.Record(owner, bucket, categoryOf(rc.op), sent, received, status > 0 && status < 400)
}

// countingBody counts the request body bytes a handler read, and notes
// when it hit the end (turn-around time of the access log).
type countingBody struct {
	io.ReadCloser
	n     int64
	now   func() time.Time
	eofAt time.Time
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n += int64(n)
	if err == io.EOF && c.eofAt.IsZero() && c.now != nil {
		c.eofAt = c.now()
	}
	return n, err
}

// quotaHeaders adds RGW's X-RGW-Quota-* headers to HeadBucket for the
// bucket owner: the owner's user quota, its max buckets and the bucket's
// effective quota.
func (s *Server) quotaHeaders(ctx context.Context, h http.Header, rc *reqCtx) {
	if s.cfg.Limits == nil || rc.ident.User.ID == "" || rc.ident.User.ID != rc.binfo.Owner {
		return
	}
	ul, err := s.cfg.Limits.UserLimits(ctx, rc.binfo.Owner)
	if err != nil {
		return
	}
	bq, err := s.cfg.Limits.GetQuota(ctx, driver.QuotaScopeBucket, "", rc.bucket)
	if err != nil {
		return
	}
	if !bq.Enabled {
		bq = ul.BucketQuota
	}
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	h.Set("X-Rgw-Quota-User-Size", i(ul.UserQuota.MaxSize))
	h.Set("X-Rgw-Quota-User-Objects", i(ul.UserQuota.MaxObjects))
	h.Set("X-Rgw-Quota-Bucket-Size", i(bq.MaxSize))
	h.Set("X-Rgw-Quota-Bucket-Objects", i(bq.MaxObjects))
	// RGW sends the user's max_buckets, which a new user gets from
	// rgw_user_max_buckets: here the gateway's default unless set.
	mb := s.cfg.MaxBuckets
	if rc.ident.User.MaxBuckets != nil {
		mb = *rc.ident.User.MaxBuckets
	}
	h.Set("X-Rgw-Quota-Max-Buckets", strconv.Itoa(mb))
}

// Admin API (RGW's admin ops):
//
//	GET|PUT /admin/user?quota&uid=U&quota-type=user|bucket   a user's quota or its bucket template
//	GET|PUT /admin/bucket?quota&bucket=B[&uid=U]             one bucket's quota
//	GET|POST /admin/ratelimit?ratelimit-scope=user|bucket&uid=U|&bucket=B
//	GET /admin/usage[?uid=U][&start=D][&end=D][&show-entries=false][&show-summary=false]
//	DELETE /admin/usage[?uid=U][&start=D][&end=D]            trim
//
// PUT/POST change only what they name: max-objects, max-size (bytes) or
// max-size-kb, enabled; or a JSON body {"enabled","max_size","max_size_kb",
// "max_objects"} (RGW's quota body).

func (s *Server) adminQuota(w http.ResponseWriter, r *http.Request, scope, bucket string) error {
	if s.cfg.Limits == nil {
		return s3err.New(s3err.ErrNotImplemented, "Quotas are not enabled on this gateway.")
	}
	q := r.URL.Query()
	uid := q.Get("uid")
	if bucket == "" && uid == "" {
		return missingParam("uid")
	}
	ctx := r.Context()
	switch r.Method {
	case http.MethodGet:
		qt, err := s.cfg.Limits.GetQuota(ctx, scope, uid, bucket)
		if err != nil {
			return err
		}
		return WriteJSON(w, http.StatusOK, qt)
	case http.MethodPut, http.MethodPost:
		set, err := quotaChange(r)
		if err != nil {
			return err
		}
		qt, err := s.cfg.Limits.SetQuota(ctx, scope, uid, bucket, set)
		if err != nil {
			return err
		}
		return WriteJSON(w, http.StatusOK, qt)
	}
	return s3err.New(s3err.ErrMethodNotAllowed, "")
}

func adminInt(q map[string][]string, name string) (int64, bool, error) {
	v, ok := q[name]
	if !ok || len(v) == 0 || v[0] == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil {
		return 0, false, s3err.New(s3err.ErrInvalidArgument, "%s must be an integer, not %q.", name, v[0])
	}
	return n, true, nil
}

func adminBool(q map[string][]string, name string) (bool, bool, error) {
	v, ok := q[name]
	if !ok || len(v) == 0 || v[0] == "" {
		return false, false, nil
	}
	b, err := strconv.ParseBool(v[0])
	if err != nil {
		return false, false, s3err.New(s3err.ErrInvalidArgument, "%s must be true or false, not %q.", name, v[0])
	}
	return b, true, nil
}

// quotaChange reads the change a quota PUT asks for.
func quotaChange(r *http.Request) (func(*driver.Quota), error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		var in struct {
			Enabled    *bool  `json:"enabled"`
			MaxSize    *int64 `json:"max_size"`
			MaxSizeKB  *int64 `json:"max_size_kb"`
			MaxObjects *int64 `json:"max_objects"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, s3err.New(s3err.ErrInvalidArgument, "Quota body: %v.", err)
		}
		return func(q *driver.Quota) {
			if in.Enabled != nil {
				q.Enabled = *in.Enabled
			}
			if in.MaxSizeKB != nil {
				q.MaxSize = *in.MaxSizeKB * 1024
			}
			if in.MaxSize != nil {
				q.MaxSize = *in.MaxSize
			}
			if in.MaxObjects != nil {
				q.MaxObjects = *in.MaxObjects
			}
		}, nil
	}
	qs := r.URL.Query()
	objs, hasObjs, err1 := adminInt(qs, "max-objects")
	size, hasSize, err2 := adminInt(qs, "max-size")
	kb, hasKB, err3 := adminInt(qs, "max-size-kb")
	en, hasEn, err4 := adminBool(qs, "enabled")
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			return nil, err
		}
	}
	return func(q *driver.Quota) {
		if hasObjs {
			q.MaxObjects = objs
		}
		if hasKB {
			q.MaxSize = kb * 1024
		}
		if hasSize {
			q.MaxSize = size
		}
		if hasEn {
			q.Enabled = en
		}
	}, nil
}

func (s *Server) adminRateLimit(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Limits == nil {
		return s3err.New(s3err.ErrNotImplemented, "Rate limits are not enabled on this gateway.")
	}
	q := r.URL.Query()
	scope, uid, bucket := q.Get("ratelimit-scope"), q.Get("uid"), q.Get("bucket")
	if scope == "" {
		return missingParam("ratelimit-scope")
	}
	if scope == driver.QuotaScopeUser && uid == "" {
		return missingParam("uid")
	}
	ctx := r.Context()
	switch r.Method {
	case http.MethodGet:
		l, err := s.cfg.Limits.GetRateLimit(ctx, scope, uid, bucket)
		if err != nil {
			return err
		}
		return WriteJSON(w, http.StatusOK, l)
	case http.MethodPost, http.MethodPut:
		var vals [4]int64
		var has [4]bool
		for i, name := range []string{"max-read-ops", "max-write-ops", "max-read-bytes", "max-write-bytes"} {
			n, ok, err := adminInt(q, name)
			if err != nil {
				return err
			}
			if n < 0 {
				return s3err.New(s3err.ErrInvalidArgument, "%s must be >= 0 (0 is unlimited).", name)
			}
			vals[i], has[i] = n, ok
		}
		en, hasEn, err := adminBool(q, "enabled")
		if err != nil {
			return err
		}
		l, err := s.cfg.Limits.SetRateLimit(ctx, scope, uid, bucket, func(l *ratelimit.Limit) {
			for i, p := range []*int64{&l.MaxReadOps, &l.MaxWriteOps, &l.MaxReadBytes, &l.MaxWriteBytes} {
				if has[i] {
					*p = vals[i]
				}
			}
			if hasEn {
				l.Enabled = en
			}
		})
		if err != nil {
			return err
		}
		return WriteJSON(w, http.StatusOK, l)
	}
	return s3err.New(s3err.ErrMethodNotAllowed, "")
}

// parseDate reads RGW's usage dates: "YYYY-MM-DD", "YYYY-MM-DD HH:MM:SS",
// RFC 3339 or Unix seconds.
func parseDate(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{"2006-01-02", "2006-01-02 15:04:05", time.RFC3339} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	return time.Time{}, s3err.New(s3err.ErrInvalidArgument, "%s: want YYYY-MM-DD[ HH:MM:SS], not %q.", name, v)
}

func usageQuery(q map[string][]string, uid string) (usage.Query, error) {
	get := func(names ...string) string {
		for _, n := range names {
			if v := q[n]; len(v) > 0 && v[0] != "" {
				return v[0]
			}
		}
		return ""
	}
	start, err := parseDate("start", get("start", "start-date"))
	if err != nil {
		return usage.Query{}, err
	}
	end, err := parseDate("end", get("end", "end-date"))
	if err != nil {
		return usage.Query{}, err
	}
	return usage.Query{UID: uid, Start: start, End: end}, nil
}

func (s *Server) adminUsage(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Usage == nil {
		return s3err.New(s3err.ErrNotImplemented, "The usage log is not enabled on this gateway.")
	}
	q := r.URL.Query()
	uq, err := usageQuery(q, q.Get("uid"))
	if err != nil {
		return err
	}
	switch r.Method {
	case http.MethodGet:
		rep, err := s.cfg.Usage.Show(r.Context(), uq)
		if err != nil {
			return err
		}
		if v, ok, err := adminBool(q, "show-entries"); err != nil {
			return err
		} else if ok && !v {
			rep.Entries = nil
		}
		if v, ok, err := adminBool(q, "show-summary"); err != nil {
			return err
		} else if ok && !v {
			rep.Summary = nil
		}
		if rep.Entries == nil {
			rep.Entries = []usage.UserEntries{}
		}
		if rep.Summary == nil {
			rep.Summary = []usage.UserSummary{}
		}
		return WriteJSON(w, http.StatusOK, rep)
	case http.MethodDelete:
		if uq.UID == "" {
			if v, _, err := adminBool(q, "remove-all"); err != nil || !v {
				return s3err.New(s3err.ErrInvalidArgument, "Trimming every user's usage needs remove-all=true.")
			}
		}
		if err := s.cfg.Usage.Trim(r.Context(), uq); err != nil {
			return err
		}
		w.WriteHeader(http.StatusOK)
		return nil
	}
	return s3err.New(s3err.ErrMethodNotAllowed, "")
}

// GET /?usage: RGW's S3 extension, the caller's own usage.
type usageXML struct {
	XMLName xml.Name        `xml:"Usage"`
	Entries usageEntriesXML `xml:"Entries"`
	Summary usageSummaryXML `xml:"Summary"`
}

type usageSummaryXML struct {
	Users []userSummaryXML `xml:"User"`
}

type usageEntriesXML struct {
	Users []userEntriesXML `xml:"User"`
}

type userEntriesXML struct {
	Owner   string           `xml:"Owner"`
	ID      string           `xml:"ID"`
	Buckets []bucketUsageXML `xml:"Buckets>Entry"`
}

type bucketUsageXML struct {
	Bucket     string        `xml:"Bucket"`
	Time       string        `xml:"Time"`
	Epoch      int64         `xml:"Epoch"`
	Owner      string        `xml:"Owner"`
	Categories []categoryXML `xml:"Categories>Entry"`
}

type countersXML struct {
	BytesSent     int64 `xml:"BytesSent"`
	BytesReceived int64 `xml:"BytesReceived"`
	Ops           int64 `xml:"Ops"`
	SuccessfulOps int64 `xml:"SuccessfulOps"`
}

type categoryXML struct {
	Category string `xml:"Category"`
	countersXML
}

type userSummaryXML struct {
	User       string        `xml:"User"`
	Categories []categoryXML `xml:"Categories>Entry"`
	Total      countersXML   `xml:"Total"`
}

func toCountersXML(c usage.Counters) countersXML {
	return countersXML{c.BytesSent, c.BytesReceived, c.Ops, c.SuccessfulOps}
}

func toCategoriesXML(cs []usage.CategoryEntry) []categoryXML {
	out := make([]categoryXML, 0, len(cs))
	for _, c := range cs {
		out = append(out, categoryXML{Category: c.Category, countersXML: toCountersXML(c.Counters)})
	}
	return out
}

func (s *Server) getUsage(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if s.cfg.Usage == nil {
		return s3err.New(s3err.ErrNotImplemented, "The usage log is not enabled on this gateway.")
	}
	uq, err := usageQuery(r.URL.Query(), rc.ident.User.ID)
	if err != nil {
		return err
	}
	rep, err := s.cfg.Usage.Show(r.Context(), uq)
	if err != nil {
		return err
	}
	var out usageXML
	for _, u := range rep.Entries {
		ue := userEntriesXML{Owner: u.User, ID: u.User}
		for _, b := range u.Buckets {
			ue.Buckets = append(ue.Buckets, bucketUsageXML{Bucket: b.Bucket, Time: b.Time, Epoch: b.Epoch, Owner: b.Owner, Categories: toCategoriesXML(b.Categories)})
		}
		out.Entries.Users = append(out.Entries.Users, ue)
	}
	for _, u := range rep.Summary {
		out.Summary.Users = append(out.Summary.Users, userSummaryXML{User: u.User, Categories: toCategoriesXML(u.Categories), Total: toCountersXML(u.Total)})
	}
	return writeXML(w, http.StatusOK, out)
}

// adminUserStats is radosgw-admin user stats: the user's usage summed over
// its buckets, read from the index stats now (every stored version).
func (s *Server) adminUserStats(w http.ResponseWriter, r *http.Request, uid string) error {
	if s.cfg.Limits == nil {
		return s3err.New(s3err.ErrNotImplemented, "User stats are not available on this gateway.")
	}
	if _, err := s.be.GetUser(r.Context(), uid); err != nil {
		return err
	}
	st, err := s.cfg.Limits.UserUsageStats(r.Context(), uid)
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, struct {
		Stats driver.UserStats `json:"stats"`
	}{st})
}
