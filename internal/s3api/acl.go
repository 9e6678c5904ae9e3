package s3api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// ACL operations: Get/PutBucketAcl, Get/PutObjectAcl, and the ACL a
// CreateBucket, PutObject, CopyObject or CreateMultipartUpload sets with
// x-amz-acl / x-amz-grant-* (S3's ACL model, evaluated by internal/authz).

// userResolver resolves grantees through the backend within one request.
type userResolver struct {
	ctx context.Context
	be  Backend
	err error // a backend failure other than "no such user"
}

func (u *userResolver) UserByEmail(email string) (authz.Owner, bool) {
	usr, err := u.be.UserByEmail(u.ctx, email)
	return u.owner(usr, err)
}

func (u *userResolver) UserByID(id string) (authz.Owner, bool) {
	usr, err := u.be.GetUser(u.ctx, id)
	return u.owner(usr, err)
}

func (u *userResolver) owner(usr driver.User, err error) (authz.Owner, bool) {
	if err != nil {
		if !errors.Is(err, driver.ErrNoSuchUser) && u.err == nil {
			u.err = err
		}
		return authz.Owner{}, false
	}
	return authz.Owner{ID: usr.ID, DisplayName: displayName(usr)}, true
}

// aclError maps authz's ACL errors to S3 errors.
func aclError(err error) error {
	switch {
	case errors.Is(err, authz.ErrInvalidCannedACL):
		return s3err.New(s3err.ErrInvalidArgument, "Invalid canned ACL.")
	case errors.Is(err, authz.ErrUnresolvable):
		return s3err.Wrap(s3err.ErrUnresolvableGrantByEmail, err)
	case errors.Is(err, authz.ErrInvalidGrant):
		return s3err.New(s3err.ErrInvalidArgument, "%v", err)
	case errors.Is(err, authz.ErrMalformedACL):
		return s3err.Wrap(s3err.ErrMalformedACL, err)
	case errors.Is(err, authz.ErrInvalidOwner):
		return s3err.New(s3err.ErrAccessDenied, "An ACL cannot change the owner.")
	}
	return err
}

// ownerOf returns the Owner element of a user id, with its display name.
func (s *Server) ownerOf(ctx context.Context, id string) authz.Owner {
	if u, err := s.be.GetUser(ctx, id); err == nil {
		return authz.Owner{ID: id, DisplayName: displayName(u)}
	}
	return authz.Owner{ID: id, DisplayName: id}
}

// headerACL builds the ACL of x-amz-acl or x-amz-grant-* for a resource
// owned by owner in a bucket owned by bucketOwner; ok=false when the
// request has neither. Grantees are resolved.
func (s *Server) headerACL(r *http.Request, owner, bucketOwner authz.Owner) (acl authz.ACL, ok bool, err error) {
	canned := r.Header.Get("X-Amz-Acl")
	grants := authz.HasGrantHeaders(r.Header)
	switch {
	case canned != "" && grants:
		return acl, false, s3err.New(s3err.ErrInvalidRequest, "Specifying both Canned ACLs and Header Grants is not allowed")
	case canned != "":
		acl, err = authz.CannedACL(canned, owner, bucketOwner)
		if err != nil {
			return acl, false, aclError(err)
		}
		return acl, true, nil
	case grants:
		gs, err := authz.ParseGrantHeaders(r.Header)
		if err != nil {
			return acl, false, aclError(err)
		}
		acl = authz.ACL{Owner: owner, Grants: gs}
		if err := s.resolve(r.Context(), &acl); err != nil {
			return acl, false, err
		}
		return acl, true, nil
	}
	return acl, false, nil
}

func (s *Server) resolve(ctx context.Context, acl *authz.ACL) error {
	ur := &userResolver{ctx: ctx, be: s.be}
	err := acl.Resolve(ur)
	if ur.err != nil {
		return ur.err
	}
	return aclError(err)
}

// requestObjectACL is the ACL a write (PutObject, CopyObject,
// CreateMultipartUpload) stores with the new object: nil for the default
// (private, owned by the bucket owner). It applies object ownership and
// BlockPublicAcls.
func (s *Server) requestObjectACL(r *http.Request, rc *reqCtx) (*authz.ACL, error) {
	ba := rc.bauth
	if ba == nil {
		return nil, nil
	}
	canned := r.Header.Get("X-Amz-Acl")
	if ba.Ownership.ACLsDisabled() {
		if !authz.ACLAllowedWhenEnforced(canned, authz.HasGrantHeaders(r.Header)) {
			return nil, s3err.New(s3err.ErrAccessControlListNotSupported, "")
		}
		return nil, nil
	}
	bucketOwner := authz.Owner{ID: ba.Info.Owner}
	writer := bucketOwner
	if id := rc.ownerID(); id != "" { // anonymous writes belong to the bucket owner
		writer = authz.Owner{ID: id}
	}
	owner := authz.ObjectOwner(ba.Ownership, bucketOwner, writer, canned)
	acl, ok, err := s.headerACL(r, owner, bucketOwner)
	if err != nil {
		return nil, err
	}
	if !ok {
		if owner.ID == bucketOwner.ID {
			return nil, nil
		}
		acl, _ = authz.CannedACL("private", owner, bucketOwner)
	}
	if ba.PublicAccessBlock.BlockPublicAcls && acl.IsPublic() {
		return nil, s3err.New(s3err.ErrAccessDenied, "Public ACLs are blocked for this bucket (BlockPublicAcls).")
	}
	return &acl, nil
}

// aclBody reads the ACL of PutBucketAcl/PutObjectAcl: headers or an
// AccessControlPolicy body, not both.
func (s *Server) aclBody(r *http.Request, owner, bucketOwner authz.Owner) (authz.ACL, error) {
	body, err := readAllLimited(r.Body, maxSmallXML)
	if err != nil {
		return authz.ACL{}, err
	}
	acl, ok, err := s.headerACL(r, owner, bucketOwner)
	if err != nil {
		return acl, err
	}
	hasBody := strings.TrimSpace(string(body)) != ""
	switch {
	case ok && hasBody:
		return acl, s3err.New(s3err.ErrUnexpectedContent, "This request does not support content with ACL headers.")
	case ok:
		return acl, nil
	case !hasBody:
		return acl, s3err.New(s3err.ErrMissingSecurityHeader, "Your request was missing a required header: x-amz-acl.")
	}
	acl, err = authz.ParseACLXML(body, owner)
	if err != nil {
		return acl, aclError(err)
	}
	return acl, s.resolve(r.Context(), &acl)
}

func (s *Server) writeACL(w http.ResponseWriter, r *http.Request, acl authz.ACL) error {
	acl.Owner = s.ownerOf(r.Context(), acl.Owner.ID)
	// CanonicalUser grantees carry DisplayName, as AWS and RGW list them
	// (canned ACLs are stored without it). A copy: acl may be shared.
	acl.Grants = append([]authz.Grant(nil), acl.Grants...)
	for i := range acl.Grants {
		if g := &acl.Grants[i].Grantee; g.Type == authz.GranteeCanonicalUser && g.DisplayName == "" {
			if g.ID == acl.Owner.ID {
				g.DisplayName = acl.Owner.DisplayName
			} else {
				g.DisplayName = s.ownerOf(r.Context(), g.ID).DisplayName
			}
		}
	}
	out, err := acl.AppendXML(nil)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	return nil
}

// enforcedACL is what Get*Acl shows with ACLs disabled: the bucket owner
// with FULL_CONTROL.
func enforcedACL(ba *driver.BucketAuth) authz.ACL {
	acl, _ := authz.CannedACL("private", authz.Owner{ID: ba.Info.Owner}, authz.Owner{ID: ba.Info.Owner})
	return acl
}

func (s *Server) getBucketACL(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if rc.bauth.Ownership.ACLsDisabled() {
		return s.writeACL(w, r, enforcedACL(rc.bauth))
	}
	return s.writeACL(w, r, rc.bauth.ACL)
}

func (s *Server) putBucketACL(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ba := rc.bauth
	if ba.Ownership.ACLsDisabled() {
		return s3err.New(s3err.ErrAccessControlListNotSupported, "")
	}
	owner := authz.Owner{ID: ba.Info.Owner}
	acl, err := s.aclBody(r, owner, owner)
	if err != nil {
		return err
	}
	if ba.PublicAccessBlock.BlockPublicAcls && acl.IsPublic() {
		return s3err.New(s3err.ErrAccessDenied, "Public ACLs are blocked for this bucket (BlockPublicAcls).")
	}
	err = s.be.UpdateBucketAccess(r.Context(), rc.bucket, func(_ driver.Instance, a *driver.BucketAccess) error {
		a.ACL = &acl
		return nil
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// objectForACL reads the version the request names (versionId, else the
// current one) and re-checks the request against that version's own ACL.
func (s *Server) objectForACL(w http.ResponseWriter, r *http.Request, rc *reqCtx) (driver.ObjectInfo, error) {
	vid, err := s.versionParam(r.URL.Query())
	if err != nil {
		return driver.ObjectInfo{}, err
	}
	info, err := s.headVersion(r.Context(), rc.bucket, rc.key, vid)
	if err != nil {
		markerHeaders(w.Header(), err)
		return info, err
	}
	setVersionHeader(w.Header(), info.VersionID)
	return info, s.recheckObjectACL(r, rc, rc.act, info)
}

func (s *Server) getObjectACL(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	info, err := s.objectForACL(w, r, rc)
	if err != nil {
		return err
	}
	if rc.bauth.Ownership.ACLsDisabled() {
		return s.writeACL(w, r, enforcedACL(rc.bauth))
	}
	return s.writeACL(w, r, *objectACL(info, rc.bauth))
}

// putObjectACL sets the ACL of one version: each version has its own, so
// making the current one public leaves older ones as they were.
func (s *Server) putObjectACL(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	info, err := s.objectForACL(w, r, rc)
	if err != nil {
		return err
	}
	ba := rc.bauth
	if ba.Ownership.ACLsDisabled() {
		return s3err.New(s3err.ErrAccessControlListNotSupported, "")
	}
	owner := objectACL(info, ba).Owner
	acl, err := s.aclBody(r, owner, authz.Owner{ID: ba.Info.Owner})
	if err != nil {
		return err
	}
	if ba.PublicAccessBlock.BlockPublicAcls && acl.IsPublic() {
		return s3err.New(s3err.ErrAccessDenied, "Public ACLs are blocked for this bucket (BlockPublicAcls).")
	}
	// The version decided on, not whatever is current by now.
	if err := s.be.SetObjectACL(r.Context(), rc.bucket, rc.key, info.VersionID, acl); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// createBucketAccess applies x-amz-acl / x-amz-grant-* and
// x-amz-object-ownership of a CreateBucket. It validates before the bucket
// exists (validate=true returns the access to store) so a bad header
// creates nothing.
func (s *Server) createBucketAccess(r *http.Request, owner string) (*driver.BucketAccess, error) {
	var a driver.BucketAccess
	if v := r.Header.Get("X-Amz-Object-Ownership"); v != "" {
		o, ok := authz.ParseOwnership(v)
		if !ok {
			return nil, s3err.New(s3err.ErrInvalidArgument, "Invalid x-amz-object-ownership header: %s", v)
		}
		a.Ownership = o
	}
	o := authz.Owner{ID: owner}
	acl, ok, err := s.headerACL(r, o, o)
	if err != nil {
		return nil, err
	}
	if ok {
		if a.Ownership.ACLsDisabled() && !authz.ACLAllowedWhenEnforced(r.Header.Get("X-Amz-Acl"), authz.HasGrantHeaders(r.Header)) {
			return nil, s3err.New(s3err.ErrInvalidBucketAclWithOwnership, "")
		}
		if !a.Ownership.ACLsDisabled() {
			a.ACL = &acl
		}
	}
	if a.ACL == nil && a.Ownership == "" {
		return nil, nil
	}
	return &a, nil
}
