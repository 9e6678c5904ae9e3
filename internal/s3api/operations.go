package s3api

import (
	"net/http"
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// subresourceOps names the S3 operation of each subresource request, by
// level ("bucket", "object") and method, so that requests Cairn does not
// serve answer NotImplemented naming the operation (and log and count
// under its name). docs/s3-compatibility.md has a row for each.
var subresourceOps = map[string]map[string]map[string]string{
	"bucket": {
		"accelerate":          {"GET": "GetBucketAccelerateConfiguration", "PUT": "PutBucketAccelerateConfiguration"},
		"acl":                 {"GET": "GetBucketAcl", "PUT": "PutBucketAcl"},
		"analytics":           {"GET": "GetBucketAnalyticsConfiguration", "PUT": "PutBucketAnalyticsConfiguration", "DELETE": "DeleteBucketAnalyticsConfiguration"},
		"cors":                {"GET": "GetBucketCors", "PUT": "PutBucketCors", "DELETE": "DeleteBucketCors"},
		"encryption":          {"GET": "GetBucketEncryption", "PUT": "PutBucketEncryption", "DELETE": "DeleteBucketEncryption"},
		"intelligent-tiering": {"GET": "GetBucketIntelligentTieringConfiguration", "PUT": "PutBucketIntelligentTieringConfiguration", "DELETE": "DeleteBucketIntelligentTieringConfiguration"},
		"inventory":           {"GET": "GetBucketInventoryConfiguration", "PUT": "PutBucketInventoryConfiguration", "DELETE": "DeleteBucketInventoryConfiguration"},
		"lifecycle":           {"GET": "GetBucketLifecycleConfiguration", "PUT": "PutBucketLifecycleConfiguration", "DELETE": "DeleteBucketLifecycle"},
		"logging":             {"GET": "GetBucketLogging", "PUT": "PutBucketLogging"},
		"metadataTable":       {"GET": "GetBucketMetadataTableConfiguration", "POST": "CreateBucketMetadataTableConfiguration", "DELETE": "DeleteBucketMetadataTableConfiguration"},
		"metrics":             {"GET": "GetBucketMetricsConfiguration", "PUT": "PutBucketMetricsConfiguration", "DELETE": "DeleteBucketMetricsConfiguration"},
		"notification":        {"GET": "GetBucketNotificationConfiguration", "PUT": "PutBucketNotificationConfiguration", "DELETE": "DeleteBucketNotificationConfiguration"},
		"object-lock":         {"GET": "GetObjectLockConfiguration", "PUT": "PutObjectLockConfiguration"},
		"ownershipControls":   {"GET": "GetBucketOwnershipControls", "PUT": "PutBucketOwnershipControls", "DELETE": "DeleteBucketOwnershipControls"},
		"policy":              {"GET": "GetBucketPolicy", "PUT": "PutBucketPolicy", "DELETE": "DeleteBucketPolicy"},
		"policyStatus":        {"GET": "GetBucketPolicyStatus"},
		"publicAccessBlock":   {"GET": "GetPublicAccessBlock", "PUT": "PutPublicAccessBlock", "DELETE": "DeletePublicAccessBlock"},
		"replication":         {"GET": "GetBucketReplication", "PUT": "PutBucketReplication", "DELETE": "DeleteBucketReplication"},
		"requestPayment":      {"GET": "GetBucketRequestPayment", "PUT": "PutBucketRequestPayment"},
		"session":             {"GET": "CreateSession"},
		"tagging":             {"GET": "GetBucketTagging", "PUT": "PutBucketTagging", "DELETE": "DeleteBucketTagging"},
		"versioning":          {"GET": "GetBucketVersioning", "PUT": "PutBucketVersioning"},
		"versions":            {"GET": "ListObjectVersions"},
		"website":             {"GET": "GetBucketWebsite", "PUT": "PutBucketWebsite", "DELETE": "DeleteBucketWebsite"},
	},
	"object": {
		"acl":          {"GET": "GetObjectAcl", "PUT": "PutObjectAcl"},
		"attributes":   {"GET": "GetObjectAttributes"},
		"legal-hold":   {"GET": "GetObjectLegalHold", "PUT": "PutObjectLegalHold"},
		"renameObject": {"PUT": "RenameObject"},
		"restore":      {"POST": "RestoreObject"},
		"retention":    {"GET": "GetObjectRetention", "PUT": "PutObjectRetention"},
		"select":       {"POST": "SelectObjectContent"},
		"tagging":      {"GET": "GetObjectTagging", "PUT": "PutObjectTagging", "DELETE": "DeleteObjectTagging"},
		"torrent":      {"GET": "GetObjectTorrent"},
	},
}

// subresourceOp names method on subresource sub at level, falling back to
// "<METHOD> ?<sub>" for combinations S3 does not define.
func subresourceOp(level, method, sub string) string {
	if op := subresourceOps[level][sub][method]; op != "" {
		return op
	}
	return method + " ?" + sub
}

// notImplementedSub is the route of a subresource request Cairn does not
// serve: 501 NotImplemented naming the operation.
func notImplementedSub(level, method, sub string) route {
	op := subresourceOp(level, method, sub)
	return route{op: op, err: s3err.New(s3err.ErrNotImplemented, "%s is not implemented.", op)}
}

// Operation reports the S3 operation r maps to and, when the router itself
// answers it (NotImplemented, MethodNotAllowed), that error. It does not
// authenticate or touch the backend: tools and the compatibility-table
// test (docs/s3-compatibility.md) use it.
func (s *Server) Operation(r *http.Request) (op string, err error) {
	rt := s.route(r, &reqCtx{decodedLength: -1})
	if rt.err == nil {
		return rt.op, rt.deferred
	}
	return rt.op, rt.err
}

// RouteAuthz says how the Server authorizes a request, for tests that walk
// the router and require every served route to name its action.
type RouteAuthz struct {
	Op   string
	Kind string // "s3", "admin", "sns", "iam" or "sts"
	// Served: a handler runs once the request is allowed (not an error
	// the router answers, not a missing admin route).
	Served bool
	// Action is what the request is decided as; ActionInvalid means the
	// route has none and is refused. SNS requests are decided per Action
	// form field by the SNS handler (notify/api), not here.
	Action authz.Action
	// Unauthenticated: answered without credentials (CORS preflight,
	// which serves no data).
	Unauthenticated bool
}

// Authorization reports how r would be authorized, without
// authenticating it or touching the backend.
func (s *Server) Authorization(r *http.Request) RouteAuthz {
	rt := s.route(r, &reqCtx{decodedLength: -1})
	switch rt.kind {
	case kindAdmin:
		path := strings.TrimSuffix(r.URL.Path, "/")
		s.mu.RLock()
		_, ok := s.admin[path]
		s.mu.RUnlock()
		act, mapped := adminAction(r.Method, path)
		if ok && !mapped {
			act = authz.ActionInvalid // refused, see serveAdmin
		}
		return RouteAuthz{Op: "Admin" + adminOpName(r.Method, path), Kind: "admin", Served: ok, Action: act}
	case kindSNS:
		s.mu.RLock()
		ok, okIAM, okSTS := s.sns != nil, s.iam != nil, s.sts != nil
		s.mu.RUnlock()
		switch signedService(r) {
		case "iam":
			// Each IAM action is decided in iamapi (iam:<Action>).
			return RouteAuthz{Op: "IAM", Kind: "iam", Served: okIAM}
		case "sts":
			// Each STS action is decided in iamapi (sts:<Action>).
			return RouteAuthz{Op: "STS", Kind: "sts", Served: okSTS}
		}
		return RouteAuthz{Op: rt.op, Kind: "sns", Served: ok}
	}
	ra := RouteAuthz{Op: rt.op, Kind: "s3", Served: rt.err == nil && rt.deferred == nil && rt.h != nil}
	if rt.err != nil {
		return ra
	}
	if rt.selfAuth && rt.op == "PreflightCors" {
		ra.Unauthenticated = true
		return ra
	}
	ra.Action, _ = routeAction(rt, r.URL.Query())
	return ra
}
