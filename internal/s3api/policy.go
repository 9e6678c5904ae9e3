package s3api

import (
	"encoding/xml"
	"errors"
	"net/http"
	"strconv"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// Bucket policy, policy status, public access block and ownership
// controls. The documents live in the bucket instance (driver.BucketAccess)
// and are parsed once per cached instance version (driver.BucketAuth).

func (s *Server) getBucketPolicy(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if err := policyOwnerOnly(rc); err != nil {
		return err
	}
	if rc.bauth.PolicyText == "" {
		return s3err.New(s3err.ErrNoSuchBucketPolicy, "")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(rc.bauth.PolicyText)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(rc.bauth.PolicyText))
	return nil
}

func (s *Server) putBucketPolicy(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if err := policyOwnerOnly(rc); err != nil {
		return err
	}
	// Read past the limit so the parser names it.
	body, err := readAllLimited(r.Body, 4*authz.MaxBucketPolicySize)
	if err != nil {
		return err
	}
	p, err := authz.ParseBucketPolicy(body, rc.bucket)
	if err != nil {
		var m *authz.MalformedPolicyError
		if errors.As(err, &m) {
			return s3err.New(s3err.ErrMalformedPolicy, "%s", m.Reason)
		}
		return err
	}
	if rc.bauth.PublicAccessBlock.BlockPublicPolicy && p.IsPublic() {
		return s3err.New(s3err.ErrAccessDenied, "Public policies are blocked for this bucket (BlockPublicPolicy).")
	}
	err = s.be.UpdateBucketAccess(r.Context(), rc.bucket, func(_ driver.Instance, a *driver.BucketAccess) error {
		a.Policy = string(body)
		return nil
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) deleteBucketPolicy(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if err := policyOwnerOnly(rc); err != nil {
		return err
	}
	err := s.be.UpdateBucketAccess(r.Context(), rc.bucket, func(_ driver.Instance, a *driver.BucketAccess) error {
		a.Policy = ""
		return nil
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type policyStatus struct {
	XMLName  xml.Name `xml:"PolicyStatus"`
	Xmlns    string   `xml:"xmlns,attr"`
	IsPublic bool     `xml:"IsPublic"`
}

func (s *Server) getBucketPolicyStatus(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if rc.bauth.Policy == nil {
		return s3err.New(s3err.ErrNoSuchBucketPolicy, "")
	}
	return writeXML(w, http.StatusOK, policyStatus{Xmlns: s3Namespace, IsPublic: rc.bauth.Policy.IsPublic()})
}

func (s *Server) getPublicAccessBlock(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if !rc.bauth.HasPAB {
		return s3err.New(s3err.ErrNoSuchPublicAccessBlock, "")
	}
	return writeRawXML(w, rc.bauth.PublicAccessBlock.AppendXML(nil))
}

func (s *Server) putPublicAccessBlock(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	body, err := readAllLimited(r.Body, maxSmallXML)
	if err != nil {
		return err
	}
	p, err := authz.ParsePublicAccessBlock(body)
	if err != nil {
		return s3err.Wrap(s3err.ErrMalformedXML, err)
	}
	err = s.be.UpdateBucketAccess(r.Context(), rc.bucket, func(_ driver.Instance, a *driver.BucketAccess) error {
		a.PublicAccessBlock = &p
		return nil
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) deletePublicAccessBlock(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	err := s.be.UpdateBucketAccess(r.Context(), rc.bucket, func(_ driver.Instance, a *driver.BucketAccess) error {
		a.PublicAccessBlock = nil
		return nil
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) getOwnershipControls(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if !rc.bauth.HasOwnership {
		return s3err.New(s3err.ErrOwnershipControlsNotFound, "")
	}
	return writeRawXML(w, rc.bauth.Ownership.AppendXML(nil))
}

func (s *Server) putOwnershipControls(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	body, err := readAllLimited(r.Body, maxSmallXML)
	if err != nil {
		return err
	}
	o, err := authz.ParseOwnershipControls(body)
	if err != nil {
		return s3err.Wrap(s3err.ErrMalformedXML, err)
	}
	err = s.be.UpdateBucketAccess(r.Context(), rc.bucket, func(_ driver.Instance, a *driver.BucketAccess) error {
		a.Ownership = o
		return nil
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) deleteOwnershipControls(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	err := s.be.UpdateBucketAccess(r.Context(), rc.bucket, func(_ driver.Instance, a *driver.BucketAccess) error {
		a.Ownership = ""
		return nil
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// policyOwnerOnly: AWS serves Get/Put/DeleteBucketPolicy only to the
// bucket owner's account; another principal, even one a policy allows,
// gets 405 MethodNotAllowed (after the authorizer, so an unallowed caller
// still gets 403 and learns nothing).
func policyOwnerOnly(rc *reqCtx) error {
	if rc.ident.User.Admin || rc.ownerID() == rc.binfo.Owner { // an account's users are its
		return nil
	}
	return s3err.New(s3err.ErrMethodNotAllowed, "Only the bucket owner may manage the bucket policy.")
}

func writeRawXML(w http.ResponseWriter, body []byte) error {
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}
