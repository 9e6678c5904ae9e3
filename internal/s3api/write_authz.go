package s3api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// Authorization of what a write or a delete does beyond its route's
// action: the headers of PutObject, CopyObject, CreateMultipartUpload and
// POST forms that AWS gates with their own actions, and the per-key,
// per-version checks every delete makes.

// deleteAction is the action a delete of one key needs: naming a version
// (even "null") deletes it permanently, s3:DeleteObjectVersion; otherwise
// s3:DeleteObject (a delete marker, or the object when unversioned).
func deleteAction(vid string) authz.Action {
	if vid != "" {
		return authz.S3DeleteObjectVersion
	}
	return authz.S3DeleteObject
}

// checkMFA refuses x-amz-mfa: MFA delete cannot be enabled (see
// putBucketVersioning), and a header we do not implement is not ignored.
func checkMFA(h http.Header) error {
	if h.Get("X-Amz-Mfa") != "" {
		return s3err.New(s3err.ErrNotImplemented, "MFA delete is not supported.")
	}
	return nil
}

// deleteGate is the one check both DeleteObject and each entry of
// DeleteObjects pass: the delete action for exactly this key and version
// (with s3:versionid set from vid), and whether
// x-amz-bypass-governance-retention may be used on it. Object lock
// itself is applied by the driver with that bypass.
func (s *Server) deleteGate(r *http.Request, rc *reqCtx, key, vid string) (bypass bool, err error) {
	if err := s.authorizeKey(r, rc, deleteAction(vid), key, vid); err != nil {
		return false, err
	}
	return s.mayBypass(r, rc, key, vid), nil
}

// mayBypass decides whether a request may use
// x-amz-bypass-governance-retention on key/vid: the authorizer's
// s3:BypassGovernanceRetention (the bucket owner, an admin, or whom the
// bucket policy allows).
func (s *Server) mayBypass(r *http.Request, rc *reqCtx, key, vid string) bool {
	if !strings.EqualFold(r.Header.Get("X-Amz-Bypass-Governance-Retention"), "true") {
		return false
	}
	return s.authorizeKey(r, rc, authz.S3BypassGovernanceRetention, key, vid) == nil
}

// hasACLHeaders reports whether a write names an ACL.
func hasACLHeaders(h http.Header) bool {
	return h.Get("X-Amz-Acl") != "" || authz.HasGrantHeaders(h)
}

// writeActions are the actions a write needs besides s3:PutObject, from
// what its parsed headers set (AWS PutObject "Permissions"; object lock
// headers set what PutObjectRetention / PutObjectLegalHold would):
// an ACL needs s3:PutObjectAcl, tags s3:PutObjectTagging, a retention
// s3:PutObjectRetention, a legal hold s3:PutObjectLegalHold.
func writeActions(meta driver.ObjectMeta, setsACL, setsTags bool) []authz.Action {
	var out []authz.Action
	if setsACL {
		out = append(out, authz.S3PutObjectAcl)
	}
	if setsTags && meta.Tags != nil {
		out = append(out, authz.S3PutObjectTagging)
	}
	if meta.LockMode != "" || !meta.RetainUntil().IsZero() {
		out = append(out, authz.S3PutObjectRetention)
	}
	if meta.LegalHold != "" {
		out = append(out, authz.S3PutObjectLegalHold)
	}
	return out
}

// writeMeta parses what a write's headers set besides the data
// (metadata, tags, object lock, the ACL, with ownership controls and
// BlockPublicAcls applied) and authorizes each part that AWS gates with
// its own action. PutObject, CreateMultipartUpload, CopyObject and POST
// forms (whose fields become r's headers) all come here, so what is
// authorized is what is stored. tagsApply is false for a copy that keeps
// the source's tags.
func (s *Server) writeMeta(r *http.Request, rc *reqCtx, tagsApply bool) (driver.ObjectMeta, error) {
	meta, err := objectMeta(r.Header)
	if err != nil {
		return meta, err
	}
	if meta.ACL, err = s.requestObjectACL(r, rc); err != nil {
		return meta, err
	}
	if rc.bauth == nil {
		return meta, nil
	}
	// Under BucketOwnerEnforced the accepted ACL headers set nothing.
	setsACL := hasACLHeaders(r.Header) && !rc.bauth.Ownership.ACLsDisabled()
	for _, act := range writeActions(meta, setsACL, tagsApply) {
		if err := s.authorizeNew(r, rc, act); err != nil {
			return meta, err
		}
	}
	return meta, nil
}

// authorizeNew decides act on the object a write creates (rc.key). The
// ACL consulted for s3:PutObjectAcl is the new object's before the
// request's grants: private, owned by its writer (the bucket owner for
// anonymous writes), so the writer may set the ACL of what it creates,
// a policy Deny still holds, and no request grants itself WRITE_ACP.
func (s *Server) authorizeNew(r *http.Request, rc *reqCtx, act authz.Action) error {
	ba := rc.bauth
	in := authz.Input{Request: authz.Request{Principal: rc.principal(), Action: act,
		Resource: authz.Resource{Bucket: rc.bucket, Key: rc.key}}}
	s.fillBucket(&in, ba)
	owner := authz.Owner{ID: ba.Info.Owner}
	if id := rc.ownerID(); id != "" {
		owner = authz.Owner{ID: id}
	}
	acl, _ := authz.CannedACL("private", owner, authz.Owner{ID: ba.Info.Owner})
	in.ObjectACL = &acl
	if in.Policy != nil {
		in.Context = s.conditionContext(r, rc, act, in.Policy)
	}
	if s.decide(r.Context(), rc, &in).Allowed() {
		return nil
	}
	return s3err.New(s3err.ErrAccessDenied, "")
}

// versionMissing reports whether a version lookup failed only because
// there is no such version to read (the delete then answers for itself).
func versionMissing(err error) bool {
	var dm *driver.DeleteMarkerError
	return errors.Is(err, driver.ErrNoSuchKey) || errors.Is(err, driver.ErrNoSuchVersion) ||
		errors.Is(err, driver.ErrInvalidVersionID) || errors.As(err, &dm)
}
