package s3api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// opActions gives each route's operation its authz action (AWS's S3
// authorization reference). An op missing here is refused: every route
// must say what it needs.
var opActions = map[string]authz.Action{
	"ListBuckets":                   authz.S3ListAllMyBuckets,
	"CreateBucket":                  authz.S3CreateBucket,
	"DeleteBucket":                  authz.S3DeleteBucket,
	"HeadBucket":                    authz.S3ListBucket,
	"ListObjects":                   authz.S3ListBucket,
	"ListObjectsV2":                 authz.S3ListBucket,
	"ListMultipartUploads":          authz.S3ListBucketMultipartUploads,
	"GetBucketLocation":             authz.S3GetBucketLocation,
	"GetBucketVersioning":           authz.S3GetBucketVersioning,
	"PutBucketVersioning":           authz.S3PutBucketVersioning,
	"GetBucketAcl":                  authz.S3GetBucketAcl,
	"PutBucketAcl":                  authz.S3PutBucketAcl,
	"GetBucketPolicy":               authz.S3GetBucketPolicy,
	"PutBucketPolicy":               authz.S3PutBucketPolicy,
	"DeleteBucketPolicy":            authz.S3DeleteBucketPolicy,
	"GetBucketPolicyStatus":         authz.S3GetBucketPolicyStatus,
	"GetPublicAccessBlock":          authz.S3GetBucketPublicAccessBlock,
	"PutPublicAccessBlock":          authz.S3PutBucketPublicAccessBlock,
	"DeletePublicAccessBlock":       authz.S3PutBucketPublicAccessBlock,
	"GetBucketOwnershipControls":    authz.S3GetBucketOwnershipControls,
	"PutBucketOwnershipControls":    authz.S3PutBucketOwnershipControls,
	"DeleteBucketOwnershipControls": authz.S3PutBucketOwnershipControls,
	"DeleteObjects":                 authz.S3DeleteObject,
	"GetObject":                     authz.S3GetObject,
	"HeadObject":                    authz.S3GetObject,
	"GetObjectAcl":                  authz.S3GetObjectAcl,
	"PutObjectAcl":                  authz.S3PutObjectAcl,
	"PutObject":                     authz.S3PutObject,
	"CopyObject":                    authz.S3PutObject,
	"UploadPart":                    authz.S3PutObject,
	"UploadPartCopy":                authz.S3PutObject,
	"CreateMultipartUpload":         authz.S3PutObject,
	"CompleteMultipartUpload":       authz.S3PutObject,
	"AbortMultipartUpload":          authz.S3AbortMultipartUpload,
	"ListParts":                     authz.S3ListMultipartUploadParts,
	"DeleteObject":                  authz.S3DeleteObject,
	// Names other routes use or may use (versioning, tagging, CORS,
	// lifecycle, POST uploads).
	"ListObjectVersions":              authz.S3ListBucketVersions,
	"GetObjectTagging":                authz.S3GetObjectTagging,
	"GetObjectRetention":              authz.S3GetObjectRetention,
	"PutObjectRetention":              authz.S3PutObjectRetention,
	"GetObjectLegalHold":              authz.S3GetObjectLegalHold,
	"PutObjectLegalHold":              authz.S3PutObjectLegalHold,
	"GetObjectLockConfiguration":      authz.S3GetBucketObjectLockConfiguration,
	"PutObjectLockConfiguration":      authz.S3PutBucketObjectLockConfiguration,
	"PutObjectTagging":                authz.S3PutObjectTagging,
	"DeleteObjectTagging":             authz.S3DeleteObjectTagging,
	"GetBucketTagging":                authz.S3GetBucketTagging,
	"PutBucketTagging":                authz.S3PutBucketTagging,
	"DeleteBucketTagging":             authz.S3PutBucketTagging,
	"GetBucketCors":                   authz.S3GetBucketCORS,
	"PutBucketCors":                   authz.S3PutBucketCORS,
	"DeleteBucketCors":                authz.S3PutBucketCORS,
	"GetBucketLifecycleConfiguration": authz.S3GetLifecycleConfiguration,
	"PutBucketLifecycleConfiguration": authz.S3PutLifecycleConfiguration,
	"DeleteBucketLifecycle":           authz.S3PutLifecycleConfiguration,
	"GetBucketEncryption":             authz.S3GetEncryptionConfiguration,
	"PutBucketEncryption":             authz.S3PutEncryptionConfiguration,
	"DeleteBucketEncryption":          authz.S3PutEncryptionConfiguration,
	"GetObjectAttributes":             authz.S3GetObjectAttributes,
	"PostObject":                      authz.S3PutObject,
	// Extension subresources (HandleBucketSubresource).
	"GET_notification":    authz.S3GetBucketNotification,
	"PUT_notification":    authz.S3PutBucketNotification,
	"DELETE_notification": authz.S3PutBucketNotification,
	// RGW's GET /?usage: the caller's own usage log.
	"GetUsage": authz.CairnGetUsage,
}

// opAction returns the action of a route's op; with a versionId the
// object actions become their version forms. ok=false: the op has no
// entry (use fallbackAction).
func opAction(op string, q map[string][]string) (authz.Action, bool) {
	a, ok := opActions[op]
	if ok && len(q["versionId"]) > 0 {
		switch a {
		case authz.S3GetObject:
			a = authz.S3GetObjectVersion
		case authz.S3GetObjectAcl:
			a = authz.S3GetObjectVersionAcl
		case authz.S3PutObjectAcl:
			a = authz.S3PutObjectVersionAcl
		case authz.S3DeleteObject:
			a = authz.S3DeleteObjectVersion
		}
	}
	return a, ok
}

// principal is who the request is, for authz.
func (rc *reqCtx) principal() authz.Principal {
	return authz.Principal{ID: rc.ident.User.ID, Admin: rc.ident.User.Admin}
}

// authorize is the one decision point for S3 routes: it loads the bucket's
// access state (cached with the bucket instance), evaluates, and logs the
// decision at debug level. A missing bucket is NoSuchBucket for everyone,
// as in S3 (bucket names are global). A denied object read of a missing
// key is NoSuchKey only to callers who may list the bucket.
func (s *Server) authorize(r *http.Request, rc *reqCtx, act authz.Action) error {
	ctx := r.Context()
	in := authz.Input{Request: authz.Request{
		Principal: rc.principal(), Action: act,
		Resource: authz.Resource{Bucket: rc.bucket, Key: rc.key, VersionID: r.URL.Query().Get("versionId")},
	}}
	if sc := act.Scope(); (sc == authz.ScopeBucket || sc == authz.ScopeObject) && act != authz.S3CreateBucket {
		ba, err := s.be.BucketAuth(ctx, rc.bucket)
		if err != nil {
			return err
		}
		rc.binfo, rc.bauth = ba.Info, ba
		if rc.op == "DeleteObjects" {
			return nil // decided per key (authorizeKey), as S3 does
		}
		s.fillBucket(&in, ba)
		if _, where := act.ACLPermission(); where == authz.ScopeObject {
			// Provisional: most objects have no stored ACL (private, bucket
			// owner's). The handler re-checks once it read the object
			// (recheckObjectACL), so GET costs no extra index read.
			in.ObjectACL = defaultObjectACL(ba)
		}
	}
	if in.Policy != nil {
		in.Context = s.conditionContext(r, rc, act, in.Policy)
		if act.Scope() == authz.ScopeObject && in.Policy.NeedsPrefix("s3:existingobjecttag/") {
			// The stored tags decide: read the object before deciding.
			info, err := s.be.HeadObject(ctx, rc.bucket, rc.key)
			if err == nil {
				addObjectTags(in.Context, info)
				if in.ObjectACL != nil {
					in.ObjectACL = objectACL(info, rc.bauth)
					rc.objACLChecked = true
				}
			} else if !errors.Is(err, driver.ErrNoSuchKey) {
				return err
			}
		}
	}
	d := s.decide(ctx, rc, &in)
	if d.Allowed() {
		return nil
	}
	if d.Effect == authz.ImplicitDeny && in.ObjectACL != nil && !rc.objACLChecked {
		// The object's own ACL may grant what the default does not.
		info, err := s.be.HeadObject(ctx, rc.bucket, rc.key)
		switch {
		case err == nil:
			rc.objACLChecked = true
			in.ObjectACL = objectACL(info, rc.bauth)
			if in.Policy != nil {
				addObjectTags(in.Context, info)
			}
			if d = s.decide(ctx, rc, &in); d.Allowed() {
				return nil
			}
		case errors.Is(err, driver.ErrNoSuchKey):
			if s.mayList(r, rc, &in) {
				return err
			}
		default:
			return err
		}
	}
	return s3err.New(s3err.ErrAccessDenied, "")
}

func (s *Server) fillBucket(in *authz.Input, ba *driver.BucketAuth) {
	in.Owner = ba.Info.Owner
	in.BucketACL = &ba.ACL
	in.Policy = ba.Policy
	in.PublicAccessBlock = ba.PublicAccessBlock
	in.Ownership = ba.Ownership
}

func (s *Server) decide(ctx context.Context, rc *reqCtx, in *authz.Input) authz.Decision {
	d := authz.Evaluate(in)
	if s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.LogAttrs(ctx, slog.LevelDebug, "authz",
			slog.String("request_id", rc.id), slog.String("principal", in.Principal.ID),
			slog.String("action", in.Action.String()), slog.String("resource", in.Resource.ARN(in.Action)),
			slog.String("effect", d.Effect.String()), slog.String("reason", d.Reason))
	}
	return d
}

// mayList reports whether the caller may learn that a key is missing.
func (s *Server) mayList(r *http.Request, rc *reqCtx, in *authz.Input) bool {
	l := *in
	l.Action = authz.S3ListBucket
	l.ObjectACL = nil
	if l.Policy != nil {
		l.Context = s.conditionContext(r, rc, authz.S3ListBucket, l.Policy)
	}
	return s.decide(r.Context(), rc, &l).Allowed()
}

// defaultObjectACL is the ACL of an object without a stored one.
func defaultObjectACL(ba *driver.BucketAuth) *authz.ACL {
	return &ba.DefaultObjectACL
}

func objectACL(info driver.ObjectInfo, ba *driver.BucketAuth) *authz.ACL {
	if info.Meta.ACL != nil {
		return info.Meta.ACL
	}
	return defaultObjectACL(ba)
}

// recheckObjectACL runs after a handler read the object: when the request
// was allowed against the default object ACL but the object has its own,
// decide again with the real one.
func (s *Server) recheckObjectACL(r *http.Request, rc *reqCtx, act authz.Action, info driver.ObjectInfo) error {
	if rc.objACLChecked || info.Meta.ACL == nil || rc.bauth == nil {
		return nil
	}
	in := authz.Input{Request: authz.Request{
		Principal: rc.principal(), Action: act,
		Resource: authz.Resource{Bucket: rc.bucket, Key: rc.key, VersionID: r.URL.Query().Get("versionId")},
	}}
	s.fillBucket(&in, rc.bauth)
	in.ObjectACL = info.Meta.ACL
	if in.Policy != nil {
		in.Context = s.conditionContext(r, rc, act, in.Policy)
		addObjectTags(in.Context, info)
	}
	rc.objACLChecked = true
	if s.decide(r.Context(), rc, &in).Allowed() {
		return nil
	}
	return s3err.New(s3err.ErrAccessDenied, "")
}

// allowedOn decides act on another bucket/key than the request's (the copy
// source), loading that bucket's state.
func (s *Server) allowedOn(r *http.Request, rc *reqCtx, act authz.Action, bucket, key string) error {
	ctx := r.Context()
	ba, err := s.be.BucketAuth(ctx, bucket)
	if err != nil {
		return err
	}
	in := authz.Input{Request: authz.Request{Principal: rc.principal(), Action: act,
		Resource: authz.Resource{Bucket: bucket, Key: key}}}
	s.fillBucket(&in, ba)
	if in.Policy != nil {
		in.Context = s.conditionContext(r, rc, act, in.Policy)
	}
	info, err := s.be.HeadObject(ctx, bucket, key)
	if err != nil && !errors.Is(err, driver.ErrNoSuchKey) {
		return err
	}
	in.ObjectACL = objectACL(info, ba)
	if err == nil && in.Policy != nil {
		addObjectTags(in.Context, info)
	}
	if s.decide(ctx, rc, &in).Allowed() {
		return err // NoSuchKey once the caller may read
	}
	return s3err.New(s3err.ErrAccessDenied, "")
}

// headerKeys are the condition keys copied from one request header each,
// with the header's canonical name.
var headerKeys = func() []struct{ key, header string } {
	var out []struct{ key, header string }
	add := func(key, header string) {
		out = append(out, struct{ key, header string }{key, http.CanonicalHeaderKey(header)})
	}
	add("aws:referer", "Referer")
	add("aws:useragent", "User-Agent")
	for _, h := range []string{"x-amz-acl", "x-amz-server-side-encryption", "x-amz-copy-source",
		"x-amz-metadata-directive", "x-amz-storage-class", "x-amz-content-sha256",
		"x-amz-server-side-encryption-aws-kms-key-id", "x-amz-object-ownership",
		"x-amz-grant-read", "x-amz-grant-write", "x-amz-grant-read-acp", "x-amz-grant-write-acp",
		"x-amz-grant-full-control"} {
		add("s3:"+h, h)
	}
	return out
}()

// conditionContext builds the condition keys S3 defines for a request,
// only those policy p reads. Values come from the connection and the
// parsed request, never from a blanket copy of headers (aws:SourceIp is
// the peer address).
func (s *Server) conditionContext(r *http.Request, rc *reqCtx, act authz.Action, p *authz.Policy) authz.Context {
	c := authz.GlobalContext(p, authz.Global{SourceIP: sourceIP(r), Secure: r.TLS != nil, Now: s.cfg.Now(), UserID: rc.ident.User.ID})
	set := func(k string, v func() []string) {
		if p.Needs(k) {
			c[k] = v()
		}
	}
	one := func(v string) func() []string { return func() []string { return []string{v} } }
	h := r.Header
	for _, kv := range headerKeys {
		if p.Needs(kv.key) {
			if v := h[kv.header]; len(v) > 0 && v[0] != "" {
				c[kv.key] = v[:1]
			}
		}
	}
	q := r.URL.Query()
	switch act {
	case authz.S3ListBucket, authz.S3ListBucketVersions:
		set("s3:prefix", one(q.Get("prefix")))
		if q.Has("delimiter") {
			set("s3:delimiter", one(q.Get("delimiter")))
		}
		set("s3:max-keys", func() []string {
			if mk := q.Get("max-keys"); mk != "" {
				return []string{mk}
			}
			return []string{"1000"}
		})
	}
	if v := q.Get("versionId"); v != "" {
		set("s3:versionid", one(v))
	}
	if v := h.Get("x-amz-tagging"); v != "" {
		if tags, err := parseTagging(v); err == nil {
			keys := make([]string, 0, len(tags))
			for k, val := range tags {
				set("s3:requestobjecttag/"+strings.ToLower(k), one(val))
				keys = append(keys, k)
			}
			set("s3:requestobjecttagkeys", func() []string { return keys })
		}
	}
	if strings.HasPrefix(h.Get("Authorization"), "AWS4-") || q.Has("X-Amz-Signature") {
		set("s3:signatureversion", one("AWS4-HMAC-SHA256"))
		if q.Has("X-Amz-Signature") {
			set("s3:authtype", one("REST-QUERY-STRING"))
		} else {
			set("s3:authtype", one("REST-HEADER"))
		}
	}
	return c
}

// addObjectTags adds s3:ExistingObjectTag/<key> from a stored object.
func addObjectTags(c authz.Context, info driver.ObjectInfo) {
	for k, v := range info.Meta.Tags {
		c["s3:existingobjecttag/"+strings.ToLower(k)] = []string{v}
	}
}

// adminAction maps an admin API request to its action: the first path
// element after /admin names the resource, GET reads, anything else
// writes.
func adminAction(method, path string) authz.Action {
	res, _, _ := strings.Cut(strings.TrimPrefix(path, "/admin/"), "/")
	read := method == http.MethodGet || method == http.MethodHead
	pick := func(r, w authz.Action) authz.Action {
		if read {
			return r
		}
		return w
	}
	switch res {
	case "user", "metadata":
		return pick(authz.AdminUsersRead, authz.AdminUsersWrite)
	case "bucket", "reshard":
		return pick(authz.AdminBucketsRead, authz.AdminBucketsWrite)
	case "topic", "notification":
		return pick(authz.AdminTopicsRead, authz.AdminTopicsWrite)
	case "ratelimit":
		return pick(authz.AdminRateLimitRead, authz.AdminRateLimitWrite)
	case "usage":
		return pick(authz.AdminUsageRead, authz.AdminUsageWrite)
	}
	return authz.AdminRados
}

// authorizeKey decides act on one key of the request's bucket (the keys
// of DeleteObjects), with the bucket state authorize loaded.
func (s *Server) authorizeKey(r *http.Request, rc *reqCtx, act authz.Action, key string) error {
	in := authz.Input{Request: authz.Request{Principal: rc.principal(), Action: act,
		Resource: authz.Resource{Bucket: rc.bucket, Key: key}}}
	s.fillBucket(&in, rc.bauth)
	if in.Policy != nil {
		in.Context = s.conditionContext(r, rc, act, in.Policy)
	}
	if s.decide(r.Context(), rc, &in).Allowed() {
		return nil
	}
	return s3err.New(s3err.ErrAccessDenied, "")
}

// fallbackAction authorizes a route whose op has no entry in opActions
// (e.g. one added on another branch): object reads and writes as
// GetObject / PutObject / DeleteObject, anything on the bucket as the
// owner's alone. Never more open than S3's own default.
func fallbackAction(method string, hasKey bool) authz.Action {
	if !hasKey {
		return authz.CairnBucketOwnerOnly
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		return authz.S3GetObject
	case http.MethodDelete:
		return authz.S3DeleteObject
	}
	return authz.S3PutObject
}
