package iamapi

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/iam"
	"github.com/cairn-s3/cairn/internal/sts"
)

// OIDC providers (IAM actions).

func (a *API) oidcProvider(q *request, act authz.Action) (iam.OIDCProvider, error) {
	acct, err := q.account()
	if err != nil {
		return iam.OIDCProvider{}, err
	}
	arn, err := q.required("OpenIDConnectProviderArn")
	if err != nil {
		return iam.OIDCProvider{}, err
	}
	pa, id, ok := iam.ParseOIDCProviderARN(arn)
	if !ok {
		return iam.OIDCProvider{}, errorf(http.StatusBadRequest, "InvalidInput", "%s is not an OpenID Connect provider ARN", arn)
	}
	// Another account's provider: authz refuses (IAM acts in one account).
	if err := a.authorize(q, act, pa, arn); err != nil {
		return iam.OIDCProvider{}, err
	}
	return a.opts.Store.GetOIDCProvider(q.r.Context(), acct, id)
}

func (q *request) members(name string) []string {
	var out []string
	for i := 1; ; i++ {
		k := name + ".member." + strconv.Itoa(i)
		if !q.form.Has(k) {
			return out
		}
		out = append(out, q.get(k))
	}
}

func (a *API) createOpenIDConnectProvider(q *request) (any, error) {
	acct, err := q.account()
	if err != nil {
		return nil, err
	}
	u, err := q.required("Url")
	if err != nil {
		return nil, err
	}
	arn := iam.OIDCProviderARN(acct, iam.OIDCProviderID(u))
	if err := a.authorize(q, authz.IAMCreateOpenIDConnectProvider, acct, arn); err != nil {
		return nil, err
	}
	if q.form.Has("Tags.member.1.Key") {
		return nil, errorf(http.StatusNotImplemented, "NotImplemented", "Provider tags are not implemented.")
	}
	p, err := a.opts.Store.CreateOIDCProvider(q.r.Context(), acct, u, q.members("ClientIDList"), q.members("ThumbprintList"))
	if err != nil {
		return nil, err
	}
	return struct {
		Arn string `xml:"OpenIDConnectProviderArn"`
	}{p.ARN()}, nil
}

func (a *API) getOpenIDConnectProvider(q *request) (any, error) {
	p, err := a.oidcProvider(q, authz.IAMGetOpenIDConnectProvider)
	if err != nil {
		return nil, err
	}
	return struct {
		URL         string   `xml:"Url"`
		ClientIDs   []string `xml:"ClientIDList>member"`
		Thumbprints []string `xml:"ThumbprintList>member"`
		CreateDate  string   `xml:"CreateDate"`
	}{p.ID(), p.ClientIDs, p.Thumbprints, isoTime(p.Created)}, nil
}

func (a *API) listOpenIDConnectProviders(q *request) (any, error) {
	acct, err := q.account()
	if err != nil {
		return nil, err
	}
	if err := a.authorize(q, authz.IAMListOpenIDConnectProviders, acct, "arn:aws:iam::"+acct+":oidc-provider/*"); err != nil {
		return nil, err
	}
	ps, err := a.opts.Store.ListOIDCProviders(q.r.Context(), acct)
	if err != nil {
		return nil, err
	}
	type entry struct {
		Arn string `xml:"Arn"`
	}
	out := struct {
		List []entry `xml:"OpenIDConnectProviderList>member"`
	}{List: []entry{}}
	for _, p := range ps {
		out.List = append(out.List, entry{p.ARN()})
	}
	return out, nil
}

func (a *API) deleteOpenIDConnectProvider(q *request) (any, error) {
	p, err := a.oidcProvider(q, authz.IAMDeleteOpenIDConnectProvider)
	if err != nil {
		return nil, err
	}
	return nil, a.opts.Store.DeleteOIDCProvider(q.r.Context(), p.Account, p.ID())
}

func (a *API) updateOpenIDConnectProviderThumbprint(q *request) (any, error) {
	if !q.form.Has("ThumbprintList") && !q.form.Has("ThumbprintList.member.1") {
		if _, err := q.required("ThumbprintList"); err != nil {
			return nil, err
		}
	}
	p, err := a.oidcProvider(q, authz.IAMUpdateOpenIDConnectProviderThumbprint)
	if err != nil {
		return nil, err
	}
	return nil, a.opts.Store.UpdateOIDCThumbprints(q.r.Context(), p.Account, p.ID(), q.members("ThumbprintList"))
}

func (a *API) addClientIDToOpenIDConnectProvider(q *request) (any, error) {
	c, err := q.required("ClientID")
	if err != nil {
		return nil, err
	}
	p, err := a.oidcProvider(q, authz.IAMAddClientIDToOpenIDConnectProvider)
	if err != nil {
		return nil, err
	}
	return nil, a.opts.Store.AddOIDCClientID(q.r.Context(), p.Account, p.ID(), c)
}

func (a *API) removeClientIDFromOpenIDConnectProvider(q *request) (any, error) {
	c, err := q.required("ClientID")
	if err != nil {
		return nil, err
	}
	p, err := a.oidcProvider(q, authz.IAMRemoveClientIDFromOpenIDConnectProvider)
	if err != nil {
		return nil, err
	}
	return nil, a.opts.Store.RemoveOIDCClientID(q.r.Context(), p.Account, p.ID(), c)
}

// AssumeRoleWithWebIdentity (STS, unsigned).

func webIdentityError(err error) error {
	msg := err.Error()
	if _, rest, ok := strings.Cut(msg, ": "); ok {
		msg = rest
	}
	switch {
	case errors.Is(err, sts.ErrExpiredIdentityToken):
		return errorf(http.StatusBadRequest, "ExpiredTokenException", "%s", msg)
	case errors.Is(err, sts.ErrIDPCommunication):
		return errorf(http.StatusBadRequest, "IDPCommunicationError", "%s", msg)
	case errors.Is(err, sts.ErrInvalidIdentityToken):
		return errorf(http.StatusBadRequest, "InvalidIdentityToken", "%s", msg)
	}
	return err
}

func (a *API) assumeRoleWithWebIdentity(q *request) (any, error) {
	ctx := q.r.Context()
	tok, err := q.required("WebIdentityToken")
	if err != nil {
		return nil, err
	}
	if q.form.Has("ProviderId") {
		return nil, errorf(http.StatusNotImplemented, "NotImplemented", "ProviderId (OAuth 2.0 providers) is not implemented; use an OpenID Connect provider.")
	}
	arn, err := q.required("RoleArn")
	if err != nil {
		return nil, err
	}
	acct, _, _, ok := sts.ParseRoleARN(arn)
	if !ok {
		return nil, errorf(http.StatusBadRequest, "ValidationError", "%s is not a role ARN", arn)
	}
	iss, err := sts.UnverifiedIssuer(tok)
	if err != nil {
		return nil, webIdentityError(err)
	}
	prov, err := a.opts.Store.GetOIDCProvider(ctx, acct, iam.OIDCProviderID(iss))
	if errors.Is(err, iam.ErrNoSuchEntity) {
		return nil, errorf(http.StatusBadRequest, "InvalidIdentityToken", "No OpenIDConnect provider found in your account for %s", iss)
	}
	if err != nil {
		return nil, err
	}
	w, err := a.opts.STS.VerifyWebIdentity(ctx, prov, tok)
	if err != nil {
		return nil, webIdentityError(err)
	}
	p := authz.Principal{Federated: prov.ARN()}
	id := prov.ID()
	extra := map[string][]string{id + ":sub": {w.Subject}, id + ":aud": {w.Audience}}
	for _, c := range []string{"azp", "email", "amr"} {
		if v, ok := w.Claims[c]; ok {
			extra[id+":"+c] = []string{v}
		}
	}
	in, err := a.assumeCommon(q, p, authz.STSAssumeRoleWithWebIdentity, extra)
	if err != nil {
		return nil, err
	}
	c, err := a.opts.STS.Mint(sts.Claims{Account: in.role.Account, RoleID: in.role.ID, RoleName: in.role.Name,
		Session: in.session, Policy: in.policy, PolicyArns: in.policyArns, Tags: in.tags, Provider: prov.ARN(), Subject: w.Subject, Tenant: in.tenant}, in.dur)
	if err != nil {
		return nil, err
	}
	a.opts.Logger.Info("sts: role assumed with web identity", "request_id", a.opts.RequestID(ctx), "provider", prov.ARN(),
		"sub", w.Subject, "role", in.role.ARN(), "session", in.session, "access_key", c.AccessKeyID)
	return struct {
		Credentials     credentialsXML `xml:"Credentials"`
		Subject         string         `xml:"SubjectFromWebIdentityToken"`
		AssumedRoleUser assumedRoleXML `xml:"AssumedRoleUser"`
		Provider        string         `xml:"Provider"`
		Audience        string         `xml:"Audience"`
		PackedSize      int            `xml:"PackedPolicySize,omitempty"`
	}{credsOut(c), w.Subject, assumedRoleXML{in.role.ID + ":" + in.session,
		authz.AssumedRoleARN(in.role.Account, in.role.Name, in.session)}, url.PathEscape(prov.ID()), w.Audience, in.packedSize()}, nil
}
