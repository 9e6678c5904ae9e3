package s3api

import (
	"context"
	"errors"
	"log/slog"
	"maps"
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
	"GetBucketLogging":                authz.S3GetBucketLogging,
	"PutBucketLogging":                authz.S3PutBucketLogging,
	"GetObjectAttributes":             authz.S3GetObjectAttributes,
	"GetObjectTorrent":                authz.S3GetObjectTorrent,
	"PostObject":                      authz.S3PutObject,
	// Extension subresources (HandleBucketSubresource), named by
	// subresourceOp. RGW's DeleteBucketNotification needs the Put action,
	// as in RGW (AWS deletes by putting an empty configuration).
	"GetBucketNotificationConfiguration":    authz.S3GetBucketNotification,
	"PutBucketNotificationConfiguration":    authz.S3PutBucketNotification,
	"DeleteBucketNotificationConfiguration": authz.S3PutBucketNotification,
	// RGW's GET /?usage: the caller's own usage log.
	"GetUsage": authz.CairnGetUsage,
}

// opAction returns the action of a route's op; with a versionId the
// object actions become their version forms (AWS: a request naming a
// version needs the version action, and the plain one is not required).
// ok=false: the op has no entry, and the route cannot be served
// (routeAction).
func opAction(op string, q map[string][]string) (authz.Action, bool) {
	a, ok := opActions[op]
	if ok && len(q["versionId"]) > 0 {
		if v, has := versionActions[a]; has {
			a = v
		}
	}
	return a, ok
}

// versionActions maps each object action to the one a request naming a
// version needs ("Actions, resources, and condition keys for Amazon S3").
var versionActions = map[authz.Action]authz.Action{
	authz.S3GetObject:           authz.S3GetObjectVersion, // GET and HEAD
	authz.S3GetObjectAcl:        authz.S3GetObjectVersionAcl,
	authz.S3PutObjectAcl:        authz.S3PutObjectVersionAcl,
	authz.S3DeleteObject:        authz.S3DeleteObjectVersion,
	authz.S3GetObjectTagging:    authz.S3GetObjectVersionTagging,
	authz.S3PutObjectTagging:    authz.S3PutObjectVersionTagging,
	authz.S3DeleteObjectTagging: authz.S3DeleteObjectVersionTagging,
	authz.S3GetObjectAttributes: authz.S3GetObjectVersionAttributes,
	authz.S3GetObjectTorrent:    authz.S3GetObjectVersionTorrent,
}

// principal is who the request is, for authz.
func (rc *reqCtx) principal() authz.Principal {
	return principalOf(rc.ident.User)
}

// authorize is the one decision point for S3 routes: it loads the bucket's
// access state (cached with the bucket instance), evaluates, and logs the
// decision at debug level. A missing bucket is NoSuchBucket for everyone,
// as in S3 (bucket names are global). Object actions are decided against
// the ACL of the version the request names (versionId, else the current
// one). A denied request for a missing key or version is NoSuchKey /
// NoSuchVersion only to callers who may list the bucket (hideMissing does
// the same for allowed requests).
func (s *Server) authorize(r *http.Request, rc *reqCtx, act authz.Action) error {
	ctx := r.Context()
	if act == authz.S3ListAllMyBuckets && rc.ident.User.ID == "" {
		return nil // anonymous ListBuckets: an empty list, nothing to decide (RGW)
	}
	vid := r.URL.Query().Get("versionId")
	in := authz.Input{Request: authz.Request{
		Principal: rc.principal(), Action: act,
		Resource: authz.Resource{Bucket: rc.bucket, Key: rc.key, VersionID: vid},
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
			// owner's). The handler re-checks once it read the version
			// (recheckObjectACL), so GET costs no extra index read.
			in.ObjectACL = defaultObjectACL(ba)
		}
	}
	if in.Policy == nil {
		// No bucket (CreateBucket, ListAllMyBuckets): the identity and
		// session policies' condition keys still need a context.
		in.Policy = authz.WithPrincipalKeys(nil, in.Principal)
	}
	if in.Policy != nil {
		in.Context = s.conditionContext(r, rc, act, in.Policy)
		if act.Scope() == authz.ScopeObject && in.Policy.NeedsPrefix("s3:existingobjecttag/") {
			// The stored tags decide: read the version before deciding.
			info, err := s.headVersion(ctx, rc.bucket, rc.key, vid)
			if err == nil {
				addObjectTags(in.Context, info)
				if in.ObjectACL != nil {
					in.ObjectACL = objectACL(info, rc.bauth)
					rc.objACLChecked = true
				}
			} else if !isMissing(err) {
				return err
			}
		}
	}
	d := s.decide(ctx, rc, &in)
	if d.Allowed() {
		return nil
	}
	if d.Effect == authz.ImplicitDeny && in.ObjectACL != nil && !rc.objACLChecked {
		// The version's own ACL may grant what the default does not.
		info, err := s.headVersion(ctx, rc.bucket, rc.key, vid)
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
		case isMissing(err):
			rc.missingDecided = true
			if s.mayList(r, rc, &in) {
				return err
			}
		case errors.Is(err, driver.ErrMethodNotAllowed), errors.Is(err, driver.ErrInvalidVersionID):
			// A delete marker has no ACL to grant anything.
		default:
			return err
		}
	}
	return s3err.New(s3err.ErrAccessDenied, "")
}

// isMissing reports whether err says a key or version does not exist (a
// current delete marker included): what only a caller allowed to list
// the bucket may learn.
func isMissing(err error) bool {
	return errors.Is(err, driver.ErrNoSuchKey) || errors.Is(err, driver.ErrNoSuchVersion) ||
		errors.Is(err, s3err.ErrNoSuchKey) || errors.Is(err, s3err.ErrNoSuchVersion)
}

// hideMissing turns a handler's "no such key/version" about the request's
// own bucket into AccessDenied for a caller who may not list the bucket
// (S3: "If you don't have the s3:ListBucket permission, Amazon S3 returns
// 403"), dropping the delete-marker headers that would tell the same.
// Writes keep their answer (a conditional PutObject's NoSuchKey): a caller
// allowed to write the key learns its existence from If-None-Match anyway.
func (s *Server) hideMissing(w http.ResponseWriter, r *http.Request, rc *reqCtx, err error) error {
	if rc.missingDecided || rc.key == "" || rc.bauth == nil || rc.act == authz.S3PutObject || !isMissing(err) {
		return err
	}
	in := authz.Input{Request: authz.Request{Principal: rc.principal(),
		Resource: authz.Resource{Bucket: rc.bucket, Key: rc.key}}}
	s.fillBucket(&in, rc.bauth)
	if s.mayList(r, rc, &in) {
		return err
	}
	h := w.Header()
	for _, k := range []string{"x-amz-delete-marker", "x-amz-version-id", "Allow", "Last-Modified"} {
		h.Del(k)
	}
	return s3err.New(s3err.ErrAccessDenied, "")
}

func (s *Server) fillBucket(in *authz.Input, ba *driver.BucketAuth) {
	in.Owner = ba.Info.Owner
	in.BucketACL = &ba.ACL
	// The identity policies' condition keys are built with the bucket
	// policy's (an empty policy carries them when the bucket has none).
	in.Policy = authz.WithPrincipalKeys(ba.Policy, in.Principal)
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

// mayList reports whether the caller may learn that a key is missing:
// s3:ListBucket on in's bucket.
func (s *Server) mayList(r *http.Request, rc *reqCtx, in *authz.Input) bool {
	l := *in
	l.Action = authz.S3ListBucket
	l.Resource = authz.Resource{Bucket: in.Resource.Bucket}
	l.ObjectACL = nil
	if l.Policy != nil {
		l.Context = s.conditionContext(r, rc, authz.S3ListBucket, l.Policy)
		// Whether the key exists is what a listing with the key as prefix
		// tells: a grant conditioned on s3:prefix decides with that.
		if l.Policy.Needs("s3:prefix") {
			l.Context["s3:prefix"] = []string{in.Resource.Key}
		}
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

// recheckObjectACL runs after a handler read the version it serves: when
// the request was allowed against the default object ACL but the version
// has its own, decide again with the real one.
func (s *Server) recheckObjectACL(r *http.Request, rc *reqCtx, act authz.Action, info driver.ObjectInfo) error {
	if rc.objACLChecked || info.Meta.ACL == nil || rc.bauth == nil {
		return nil
	}
	rc.objACLChecked = true
	return s.decideObject(r, rc, act, info)
}

// decideObject decides act on the request's object against the version
// info that was read (its ACL and tags).
func (s *Server) decideObject(r *http.Request, rc *reqCtx, act authz.Action, info driver.ObjectInfo) error {
	in := authz.Input{Request: authz.Request{
		Principal: rc.principal(), Action: act,
		Resource: authz.Resource{Bucket: rc.bucket, Key: rc.key, VersionID: r.URL.Query().Get("versionId")},
	}}
	s.fillBucket(&in, rc.bauth)
	in.ObjectACL = objectACL(info, rc.bauth)
	if in.Policy != nil {
		in.Context = s.conditionContext(r, rc, act, in.Policy)
		addObjectTags(in.Context, info)
	}
	if s.decide(r.Context(), rc, &in).Allowed() {
		return nil
	}
	return s3err.New(s3err.ErrAccessDenied, "")
}

// allowedOn decides act on another bucket/key than the request's (the copy
// source), version vid ("" = current), loading that bucket's state and
// the version's ACL, and returns the version it decided on and a check
// that decides again on a version read later (the one a copy reads). A
// missing key or version is NoSuchKey / NoSuchVersion only to a caller
// allowed to list that bucket, AccessDenied to anyone else.
func (s *Server) allowedOn(r *http.Request, rc *reqCtx, act authz.Action, bucket, key, vid string) (driver.ObjectInfo, func(driver.ObjectInfo) error, error) {
	ctx := r.Context()
	ba, err := s.be.BucketAuth(ctx, bucket)
	if err != nil {
		return driver.ObjectInfo{}, nil, err
	}
	in := authz.Input{Request: authz.Request{Principal: rc.principal(), Action: act,
		Resource: authz.Resource{Bucket: bucket, Key: key, VersionID: vid}}}
	s.fillBucket(&in, ba)
	var base authz.Context
	if in.Policy != nil {
		base = s.conditionContext(r, rc, act, in.Policy)
	}
	// check decides on a version that was read (ACL and tags are its own).
	check := func(info driver.ObjectInfo) error {
		d := in
		d.ObjectACL = objectACL(info, ba)
		if base != nil {
			d.Context = maps.Clone(base)
			addObjectTags(d.Context, info)
		}
		if s.decide(ctx, rc, &d).Allowed() {
			return nil
		}
		return s3err.New(s3err.ErrAccessDenied, "")
	}
	info, err := s.headVersion(ctx, bucket, key, vid)
	var dm *driver.DeleteMarkerError
	switch {
	case err == nil:
		return info, check, check(info)
	case !isMissing(err) && !errors.As(err, &dm):
		return info, check, err
	}
	// Missing, or a delete marker: decided with the default ACL; who may
	// not list learns nothing more.
	if cerr := check(driver.ObjectInfo{}); cerr != nil {
		return info, check, cerr
	}
	if isMissing(err) && !s.mayList(r, rc, &in) {
		return info, check, s3err.New(s3err.ErrAccessDenied, "")
	}
	return info, check, err
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
	c := authz.GlobalContext(p, authz.Global{SourceIP: sourceIP(r), Secure: r.TLS != nil, Now: s.cfg.Now(), UserID: rc.ident.User.ID, Principal: rc.principalRef()})
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
	if v := h.Get("X-Amz-Tagging"); v != "" {
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

// adminActions gives each admin route (HandleAdmin paths, the built-ins
// and those internal/server and notify register) its read and write
// action. A registered route missing here is refused (adminAction).
var adminActions = map[string][2]authz.Action{
	"/admin/user":          {authz.AdminUsersRead, authz.AdminUsersWrite},
	"/admin/metadata/user": {authz.AdminUsersRead, authz.AdminUsersWrite},
	"/admin/account":       {authz.AdminUsersRead, authz.AdminUsersWrite},
	"/admin/account/user":  {authz.AdminUsersRead, authz.AdminUsersWrite},
	"/admin/bucket":        {authz.AdminBucketsRead, authz.AdminBucketsWrite},
	"/admin/reshard":       {authz.AdminBucketsRead, authz.AdminBucketsWrite},
	"/admin/lc":            {authz.AdminBucketsRead, authz.AdminBucketsWrite},
	"/admin/gc":            {authz.AdminBucketsRead, authz.AdminBucketsWrite},
	"/admin/orphans":       {authz.AdminBucketsRead, authz.AdminBucketsWrite},
	"/admin/topic":         {authz.AdminTopicsRead, authz.AdminTopicsWrite},
	"/admin/notification":  {authz.AdminTopicsRead, authz.AdminTopicsWrite},
	"/admin/rados":         {authz.AdminRados, authz.AdminRados},
	"/admin/kms":           {authz.AdminKMS, authz.AdminKMS},
	"/admin/ratelimit":     {authz.AdminRateLimitRead, authz.AdminRateLimitWrite},
	"/admin/usage":         {authz.AdminUsageRead, authz.AdminUsageWrite},
}

// adminAction maps an admin API request to its action: GET and HEAD
// read, anything else writes. ok=false: the path has no entry; such a
// request is decided as AdminRados (the narrowest) and, if a handler is
// registered for the path anyway, refused.
func adminAction(method, path string) (authz.Action, bool) {
	rw, ok := adminActions[path]
	if !ok {
		return authz.AdminRados, false
	}
	if method == http.MethodGet || method == http.MethodHead {
		return rw[0], true
	}
	return rw[1], true
}

// authorizeKey decides act on one key and version of the request's
// bucket (deleteGate: each key of DeleteObjects, and DeleteObject), with
// the bucket state authorize loaded; s3:versionid is vid's, not the
// query's.
func (s *Server) authorizeKey(r *http.Request, rc *reqCtx, act authz.Action, key, vid string) error {
	in := authz.Input{Request: authz.Request{Principal: rc.principal(), Action: act,
		Resource: authz.Resource{Bucket: rc.bucket, Key: key, VersionID: vid}}}
	s.fillBucket(&in, rc.bauth)
	if in.Policy != nil {
		in.Context = s.conditionContext(r, rc, act, in.Policy)
		delete(in.Context, "s3:versionid")
		if vid != "" && in.Policy.Needs("s3:versionid") {
			in.Context["s3:versionid"] = []string{vid}
		}
		if in.Policy.NeedsPrefix("s3:existingobjecttag/") {
			// The tags of exactly this version decide.
			info, err := s.headVersion(r.Context(), rc.bucket, key, vid)
			if err == nil {
				addObjectTags(in.Context, info)
			} else if !versionMissing(err) {
				return err
			}
		}
	}
	if s.decide(r.Context(), rc, &in).Allowed() {
		return nil
	}
	return s3err.New(s3err.ErrAccessDenied, "")
}

// routeAction is the action serve decides a route with. A route that
// would run a handler but whose op has no action is refused (ok=false):
// an unmapped route fails closed, never falls back to a guess. Routes that
// only answer NotImplemented (deferred) and have no S3 action are the
// bucket owner's alone, so only the owner learns what is unimplemented.
func routeAction(rt route, q map[string][]string) (authz.Action, bool) {
	if a, ok := opAction(rt.op, q); ok {
		return a, true
	}
	if rt.deferred != nil && rt.h == nil {
		return authz.CairnBucketOwnerOnly, true
	}
	return authz.ActionInvalid, false
}
