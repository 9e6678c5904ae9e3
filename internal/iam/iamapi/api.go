// Package iamapi serves the IAM query API (form-encoded POST to "/",
// SigV4 service "iam", XML answers as AWS's IAM) and the admin API's
// account routes, over internal/iam. Every IAM action is decided by
// internal/authz.
package iamapi

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/iam"
	"github.com/cairn-s3/cairn/internal/sts"
)

// Namespace is the IAM API's XML namespace.
const Namespace = "https://iam.amazonaws.com/doc/2010-05-08/"

// maxForm bounds a request body (policy documents are at most 6 KiB,
// three times that URL-encoded).
const maxForm = 64 << 10

// Options configure the API.
type Options struct {
	Store  *iam.Store
	Driver *driver.Driver
	// STS mints and verifies temporary credentials; nil: the STS API
	// answers NotImplemented.
	STS *sts.Service
	// Caller returns the authenticated user of a request (the server
	// wires it to s3api.IdentityFrom). Required.
	Caller func(ctx context.Context) (driver.User, bool)
	// RequestID returns the request's id for responses.
	RequestID func(ctx context.Context) string
	Logger    *slog.Logger
}

// API serves the IAM query API.
type API struct{ opts Options }

// New returns the API.
func New(opts Options) (*API, error) {
	if opts.Store == nil || opts.Driver == nil || opts.Caller == nil {
		return nil, errors.New("iamapi: Options.Store, Driver and Caller are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.RequestID == nil {
		opts.RequestID = func(context.Context) string { return "" }
	}
	return &API{opts: opts}, nil
}

// apiError is an IAM error response.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.code + ": " + e.msg }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status, code, fmt.Sprintf(format, args...)}
}

func accessDenied(p authz.Principal, a authz.Action, arn string) *apiError {
	return errorf(http.StatusForbidden, "AccessDenied", "User: %s is not authorized to perform: %s on resource: %s", p.ARN(), a, arn)
}

// mapError is the one table from iam errors to IAM error codes.
func mapError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	msg := err.Error()
	if _, rest, ok := strings.Cut(msg, ": "); ok {
		msg = rest
	}
	for _, m := range []struct {
		err    error
		status int
	}{
		{iam.ErrNoSuchEntity, http.StatusNotFound},
		{iam.ErrEntityAlreadyExists, http.StatusConflict},
		{iam.ErrLimitExceeded, http.StatusConflict},
		{iam.ErrDeleteConflict, http.StatusConflict},
		{iam.ErrMalformedPolicy, http.StatusBadRequest},
		{iam.ErrInvalidInput, http.StatusBadRequest},
	} {
		if errors.Is(err, m.err) {
			return &apiError{m.status, m.err.Error(), msg}
		}
	}
	switch {
	case errors.Is(err, driver.ErrKeyExists):
		return errorf(http.StatusConflict, "EntityAlreadyExists", "access key in use")
	case errors.Is(err, driver.ErrNotEmptyUserBuckets):
		return errorf(http.StatusConflict, "DeleteConflict", "the user still owns buckets")
	}
	return errorf(http.StatusInternalServerError, "ServiceFailure", "internal error")
}

func (a *API) writeError(w http.ResponseWriter, r *http.Request, err error) {
	a.writeErrorNS(w, r, Namespace, err)
}

func (a *API) writeErrorNS(w http.ResponseWriter, r *http.Request, ns string, err error) {
	e := mapError(err)
	if e.status >= 500 {
		a.opts.Logger.Error("iam", "request_id", a.opts.RequestID(r.Context()), "err", err)
	}
	typ := "Sender"
	if e.status >= 500 {
		typ = "Receiver"
	}
	var b strings.Builder
	b.WriteString(xml.Header)
	b.WriteString(`<ErrorResponse xmlns="` + ns + `"><Error><Type>` + typ + `</Type><Code>`)
	_ = xml.EscapeText(&b, []byte(e.code))
	b.WriteString(`</Code><Message>`)
	_ = xml.EscapeText(&b, []byte(e.msg))
	b.WriteString(`</Message></Error><RequestId>`)
	_ = xml.EscapeText(&b, []byte(a.opts.RequestID(r.Context())))
	b.WriteString(`</RequestId></ErrorResponse>`)
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(e.status)
	_, _ = io.WriteString(w, b.String())
}

// writeResult writes <ActionResponse><ActionResult>result</ActionResult>
// <ResponseMetadata/></ActionResponse>; a nil result has no Result element.
func (a *API) writeResult(w http.ResponseWriter, r *http.Request, action string, result any) {
	a.writeResultNS(w, r, Namespace, action, result)
}

func (a *API) writeResultNS(w http.ResponseWriter, r *http.Request, ns, action string, result any) {
	type meta struct {
		RequestID string `xml:"RequestId"`
	}
	type resp struct {
		XMLName xml.Name
		Xmlns   string `xml:"xmlns,attr"`
		Result  any    `xml:",omitempty"`
		Meta    meta   `xml:"ResponseMetadata"`
	}
	v := resp{XMLName: xml.Name{Local: action + "Response"}, Xmlns: ns,
		Meta: meta{a.opts.RequestID(r.Context())}}
	if result != nil {
		v.Result = wrapped{name: action + "Result", v: result}
	}
	out, err := xml.Marshal(v)
	if err != nil {
		a.writeErrorNS(w, r, ns, err)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("Content-Length", strconv.Itoa(len(xml.Header)+len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, xml.Header)
	_, _ = w.Write(out)
}

// wrapped marshals v as an element named name.
type wrapped struct {
	name string
	v    any
}

func (x wrapped) MarshalXML(e *xml.Encoder, _ xml.StartElement) error {
	return e.EncodeElement(x.v, xml.StartElement{Name: xml.Name{Local: x.name}})
}

// request is one parsed IAM call.
type request struct {
	r      *http.Request
	form   url.Values
	caller driver.User
	p      authz.Principal
}

func (q *request) get(name string) string { return q.form.Get(name) }

func (q *request) required(name string) (string, error) {
	v := q.form.Get(name)
	if v == "" {
		return "", errorf(http.StatusBadRequest, "ValidationError", "1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", lowerFirst(name))
	}
	return v, nil
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

type handler func(a *API, q *request) (any, error)

// actions maps each served Action to its handler.
var actions = map[string]handler{
	"CreateUser":               (*API).createUser,
	"GetUser":                  (*API).getUser,
	"ListUsers":                (*API).listUsers,
	"UpdateUser":               (*API).updateUser,
	"DeleteUser":               (*API).deleteUser,
	"CreateAccessKey":          (*API).createAccessKey,
	"ListAccessKeys":           (*API).listAccessKeys,
	"UpdateAccessKey":          (*API).updateAccessKey,
	"DeleteAccessKey":          (*API).deleteAccessKey,
	"PutUserPolicy":            (*API).putUserPolicy,
	"GetUserPolicy":            (*API).getUserPolicy,
	"ListUserPolicies":         (*API).listUserPolicies,
	"DeleteUserPolicy":         (*API).deleteUserPolicy,
	"AttachUserPolicy":         (*API).attachUserPolicy,
	"DetachUserPolicy":         (*API).detachUserPolicy,
	"ListAttachedUserPolicies": (*API).listAttachedUserPolicies,
	"GetAccountSummary":        (*API).getAccountSummary,
	// Groups (groups.go).
	"CreateGroup":               (*API).createGroup,
	"GetGroup":                  (*API).getGroup,
	"ListGroups":                (*API).listGroups,
	"DeleteGroup":               (*API).deleteGroup,
	"UpdateGroup":               (*API).updateGroup,
	"AddUserToGroup":            (*API).addUserToGroup,
	"RemoveUserFromGroup":       (*API).removeUserFromGroup,
	"ListGroupsForUser":         (*API).listGroupsForUser,
	"PutGroupPolicy":            (*API).putGroupPolicy,
	"GetGroupPolicy":            (*API).getGroupPolicy,
	"ListGroupPolicies":         (*API).listGroupPolicies,
	"DeleteGroupPolicy":         (*API).deleteGroupPolicy,
	"AttachGroupPolicy":         (*API).attachGroupPolicy,
	"DetachGroupPolicy":         (*API).detachGroupPolicy,
	"ListAttachedGroupPolicies": (*API).listAttachedGroupPolicies,
	"CreateRole":                (*API).createRole,
	"GetRole":                   (*API).getRole,
	"ListRoles":                 (*API).listRoles,
	"DeleteRole":                (*API).deleteRole,
	"UpdateRole":                (*API).updateRole,
	"UpdateAssumeRolePolicy":    (*API).updateAssumeRolePolicy,
	"PutRolePolicy":             (*API).putRolePolicy,
	"GetRolePolicy":             (*API).getRolePolicy,
	"ListRolePolicies":          (*API).listRolePolicies,
	"DeleteRolePolicy":          (*API).deleteRolePolicy,
	"AttachRolePolicy":          (*API).attachRolePolicy,
	"DetachRolePolicy":          (*API).detachRolePolicy,
	"ListAttachedRolePolicies":  (*API).listAttachedRolePolicies,

	"CreateOpenIDConnectProvider": (*API).createOpenIDConnectProvider,
	"GetOpenIDConnectProvider":    (*API).getOpenIDConnectProvider,
	"ListOpenIDConnectProviders":  (*API).listOpenIDConnectProviders,
	"DeleteOpenIDConnectProvider": (*API).deleteOpenIDConnectProvider,

	"UpdateOpenIDConnectProviderThumbprint":   (*API).updateOpenIDConnectProviderThumbprint,
	"AddClientIDToOpenIDConnectProvider":      (*API).addClientIDToOpenIDConnectProvider,
	"RemoveClientIDFromOpenIDConnectProvider": (*API).removeClientIDFromOpenIDConnectProvider,
}

// notYet are IAM actions AWS has and Cairn does not serve yet.
var notYet = map[string]bool{
	"TagRole": true, "UntagRole": true, "ListRoleTags": true,
	"TagUser": true, "UntagUser": true,
	"ListUserTags": true, "CreatePolicy": true, "GetPolicy": true, "ListPolicies": true,
}

// ServeHTTP implements http.Handler.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	caller, ok := a.opts.Caller(r.Context())
	if !ok || caller.ID == "" {
		a.writeError(w, r, errorf(http.StatusForbidden, "AccessDenied", "Anonymous access is not allowed."))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxForm+1))
	if err != nil {
		a.writeError(w, r, errorf(http.StatusBadRequest, "InvalidInput", "could not read the request body"))
		return
	}
	if len(body) > maxForm {
		a.writeError(w, r, errorf(http.StatusBadRequest, "InvalidInput", "the request body exceeds %d bytes", maxForm))
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		a.writeError(w, r, errorf(http.StatusBadRequest, "InvalidInput", "malformed form body"))
		return
	}
	action := form.Get("Action")
	h, ok := actions[action]
	if !ok {
		if notYet[action] {
			a.writeError(w, r, errorf(http.StatusNotImplemented, "NotImplemented", "%s is not implemented yet.", action))
			return
		}
		a.writeError(w, r, errorf(http.StatusBadRequest, "InvalidAction", "Could not find operation %s.", action))
		return
	}
	if v := form.Get("Version"); v != "" && v != "2010-05-08" {
		a.writeError(w, r, errorf(http.StatusBadRequest, "InvalidInput", "Version %s is not supported.", v))
		return
	}
	q := &request{r: r, form: form, caller: caller, p: caller.Principal()}
	res, err := h(a, q)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.writeResult(w, r, action, res)
}

// account returns the account the caller administers.
func (q *request) account() (string, error) {
	if q.caller.Account == "" {
		return "", errorf(http.StatusForbidden, "AccessDenied", "User: %s belongs to no IAM account.", q.p.ARN())
	}
	return q.caller.Account, nil
}

// authorize decides act on arn in account through authz.
func (a *API) authorize(q *request, act authz.Action, account, arn string) error {
	in := authz.Input{Owner: account, Request: authz.Request{Principal: q.p, Action: act,
		Resource: authz.Resource{IAM: arn}}}
	if q.p.Identity != nil || q.p.Session != nil {
		rm := driver.RequestFrom(q.r.Context())
		in.Context = authz.GlobalContext(authz.WithPrincipalKeys(nil, q.p),
			authz.Global{SourceIP: rm.SourceIP, Secure: rm.Secure, Now: time.Now(), UserID: q.p.ID, Principal: &q.p})
	}
	d := authz.Evaluate(&in)
	a.opts.Logger.Debug("authz", "request_id", a.opts.RequestID(q.r.Context()), "principal", q.p.ID,
		"action", act.String(), "resource", arn, "effect", d.Effect.String(), "reason", d.Reason)
	if !d.Allowed() {
		return accessDenied(q.p, act, arn)
	}
	return nil
}

// target finds the user an action names (UserName, the caller itself when
// absent) and authorizes act on it. Admins outside accounts manage the
// policies of users outside accounts by user id (RGW's user-policy cap).
func (a *API) target(q *request, act authz.Action, selfDefault bool) (driver.User, error) {
	ctx := q.r.Context()
	name := q.get("UserName")
	if name == "" && !selfDefault {
		_, err := q.required("UserName")
		return driver.User{}, err
	}
	if q.caller.Account == "" {
		if !q.caller.Admin {
			_, err := q.account()
			return driver.User{}, err
		}
		if name == "" {
			return q.caller, nil
		}
		u, err := a.opts.Driver.GetUser(ctx, name)
		if err != nil || u.Account != "" {
			return driver.User{}, errorf(http.StatusNotFound, "NoSuchEntity", "The user with name %s cannot be found.", name)
		}
		return u, nil
	}
	acct := q.caller.Account
	var u driver.User
	var err error
	if name == "" {
		u, err = a.opts.Driver.GetUser(ctx, q.caller.ID)
	} else {
		u, err = a.opts.Store.GetUser(ctx, acct, name)
	}
	if err != nil {
		if errors.Is(err, iam.ErrNoSuchEntity) {
			// Who may not act on the name learns nothing about it.
			if aerr := a.authorize(q, act, acct, authz.AccountUserARN(acct, "/", name)); aerr != nil {
				return driver.User{}, aerr
			}
		}
		return driver.User{}, err
	}
	if u.AccountRoot && u.ID != q.caller.ID && !q.caller.Admin {
		// The root is the account, not an IAM user: no user's policy
		// reaches its keys or policies (AWS has no IAM API on the root).
		return driver.User{}, errorf(http.StatusNotFound, "NoSuchEntity", "The user with name %s cannot be found.", name)
	}
	return u, a.authorize(q, act, acct, userARN(u))
}

func userARN(u driver.User) string {
	if u.Account == "" {
		return authz.UserARN(u.ID)
	}
	if u.AccountRoot {
		return "arn:aws:iam::" + u.Account + ":root"
	}
	return authz.AccountUserARN(u.Account, u.Path, u.DisplayName)
}

type userXML struct {
	Path       string `xml:"Path"`
	UserName   string `xml:"UserName"`
	UserID     string `xml:"UserId"`
	Arn        string `xml:"Arn"`
	CreateDate string `xml:"CreateDate"`
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

func userOut(u driver.User) userXML {
	p := u.Path
	if p == "" {
		p = "/"
	}
	name := u.DisplayName
	if u.Account == "" {
		name = u.ID
	}
	return userXML{Path: p, UserName: name, UserID: u.ID, Arn: userARN(u), CreateDate: isoTime(u.Created)}
}

func (a *API) createUser(q *request) (any, error) {
	acct, err := q.account()
	if err != nil {
		return nil, err
	}
	name, err := q.required("UserName")
	if err != nil {
		return nil, err
	}
	path := q.get("Path")
	if err := a.authorize(q, authz.IAMCreateUser, acct, authz.AccountUserARN(acct, path, name)); err != nil {
		return nil, err
	}
	if q.form.Has("PermissionsBoundary") || q.form.Has("Tags.member.1.Key") {
		return nil, errorf(http.StatusNotImplemented, "NotImplemented", "Permissions boundaries and user tags are not implemented.")
	}
	u, err := a.opts.Store.CreateUser(q.r.Context(), acct, iam.UserSpec{Name: name, Path: path})
	if err != nil {
		return nil, err
	}
	return struct {
		User userXML `xml:"User"`
	}{userOut(u)}, nil
}

func (a *API) getUser(q *request) (any, error) {
	u, err := a.target(q, authz.IAMGetUser, true)
	if err != nil {
		return nil, err
	}
	return struct {
		User userXML `xml:"User"`
	}{userOut(u)}, nil
}

// listScope is the caller's account and the request's PathPrefix ("/" by
// default), once action is allowed on the kind's ARNs under that path.
func (a *API) listScope(q *request, action authz.Action, kind string) (acct, prefix string, err error) {
	if acct, err = q.account(); err != nil {
		return "", "", err
	}
	if prefix = q.get("PathPrefix"); prefix == "" {
		prefix = "/"
	}
	return acct, prefix, a.authorize(q, action, acct, "arn:aws:iam::"+acct+":"+kind+prefix+"*")
}

func (a *API) listUsers(q *request) (any, error) {
	acct, prefix, err := a.listScope(q, authz.IAMListUsers, "user")
	if err != nil {
		return nil, err
	}
	users, err := a.opts.Store.ListUsers(q.r.Context(), acct, prefix)
	if err != nil {
		return nil, err
	}
	list, pg, err := usersPage(q, users)
	if err != nil {
		return nil, err
	}
	return struct {
		Users []userXML `xml:"Users>member"`
		pageXML
	}{list, pg}, nil
}

// usersPage answers a listing of users (ListUsers, GetGroup's members).
func usersPage(q *request, users []driver.User) ([]userXML, pageXML, error) {
	list := []userXML{}
	for _, u := range users {
		if u.AccountRoot {
			continue // the root is the account, not an IAM user
		}
		list = append(list, userOut(u))
	}
	return page(q, list, func(u userXML) string { return strings.ToLower(u.UserName) })
}

func (a *API) updateUser(q *request) (any, error) {
	u, err := a.target(q, authz.IAMUpdateUser, false)
	if err != nil {
		return nil, err
	}
	if u.Account == "" {
		return nil, errorf(http.StatusBadRequest, "InvalidInput", "only an account's users can be updated here")
	}
	_, err = a.opts.Store.UpdateUser(q.r.Context(), u.Account, u.DisplayName, q.get("NewUserName"), q.get("NewPath"))
	return nil, err
}

func (a *API) deleteUser(q *request) (any, error) {
	u, err := a.target(q, authz.IAMDeleteUser, false)
	if err != nil {
		return nil, err
	}
	if u.Account == "" || u.AccountRoot {
		return nil, errorf(http.StatusConflict, "DeleteConflict", "the account root and users outside accounts are removed with the admin API")
	}
	return nil, a.opts.Store.DeleteUser(q.r.Context(), u.Account, u.DisplayName)
}

type accessKeyMeta struct {
	UserName    string `xml:"UserName"`
	AccessKeyID string `xml:"AccessKeyId"`
	Status      string `xml:"Status"`
	CreateDate  string `xml:"CreateDate"`
}

func keyStatus(k driver.Key) string {
	if k.Inactive {
		return "Inactive"
	}
	return "Active"
}

func (a *API) createAccessKey(q *request) (any, error) {
	u, err := a.target(q, authz.IAMCreateAccessKey, true)
	if err != nil {
		return nil, err
	}
	k, err := a.opts.Store.CreateAccessKey(q.r.Context(), u)
	if err != nil {
		return nil, err
	}
	return struct {
		Key struct {
			UserName        string `xml:"UserName"`
			AccessKeyID     string `xml:"AccessKeyId"`
			Status          string `xml:"Status"`
			SecretAccessKey string `xml:"SecretAccessKey"`
			CreateDate      string `xml:"CreateDate"`
		} `xml:"AccessKey"`
	}{Key: struct {
		UserName        string `xml:"UserName"`
		AccessKeyID     string `xml:"AccessKeyId"`
		Status          string `xml:"Status"`
		SecretAccessKey string `xml:"SecretAccessKey"`
		CreateDate      string `xml:"CreateDate"`
	}{userOut(u).UserName, k.AccessKey, "Active", k.SecretKey, isoTime(k.Created)}}, nil
}

func (a *API) listAccessKeys(q *request) (any, error) {
	u, err := a.target(q, authz.IAMListAccessKeys, true)
	if err != nil {
		return nil, err
	}
	name := userOut(u).UserName
	keys := []accessKeyMeta{}
	for _, k := range u.Keys {
		c := k.Created
		if c.IsZero() {
			c = u.Created
		}
		keys = append(keys, accessKeyMeta{name, k.AccessKey, keyStatus(k), isoTime(c)})
	}
	keys, pg, err := page(q, keys, func(k accessKeyMeta) string { return k.AccessKeyID })
	if err != nil {
		return nil, err
	}
	return struct {
		UserName string          `xml:"UserName"`
		Keys     []accessKeyMeta `xml:"AccessKeyMetadata>member"`
		pageXML
	}{name, keys, pg}, nil
}

func (a *API) updateAccessKey(q *request) (any, error) {
	ak, err := q.required("AccessKeyId")
	if err != nil {
		return nil, err
	}
	status, err := q.required("Status")
	if err != nil {
		return nil, err
	}
	u, err := a.target(q, authz.IAMUpdateAccessKey, true)
	if err != nil {
		return nil, err
	}
	return nil, a.opts.Store.UpdateAccessKey(q.r.Context(), u, ak, status)
}

func (a *API) deleteAccessKey(q *request) (any, error) {
	ak, err := q.required("AccessKeyId")
	if err != nil {
		return nil, err
	}
	u, err := a.target(q, authz.IAMDeleteAccessKey, true)
	if err != nil {
		return nil, err
	}
	return nil, a.opts.Store.DeleteAccessKey(q.r.Context(), u, ak)
}

func (a *API) putUserPolicy(q *request) (any, error) {
	name, err := q.required("PolicyName")
	if err != nil {
		return nil, err
	}
	doc, err := q.required("PolicyDocument")
	if err != nil {
		return nil, err
	}
	u, err := a.target(q, authz.IAMPutUserPolicy, false)
	if err != nil {
		return nil, err
	}
	return nil, a.opts.Store.PutUserPolicy(q.r.Context(), u, name, doc)
}

func (a *API) getUserPolicy(q *request) (any, error) {
	name, err := q.required("PolicyName")
	if err != nil {
		return nil, err
	}
	u, err := a.target(q, authz.IAMGetUserPolicy, false)
	if err != nil {
		return nil, err
	}
	doc, err := iam.UserPolicy(u, name)
	if err != nil {
		return nil, err
	}
	return struct {
		UserName       string `xml:"UserName"`
		PolicyName     string `xml:"PolicyName"`
		PolicyDocument string `xml:"PolicyDocument"`
	}{userOut(u).UserName, name, url.PathEscape(doc)}, nil // AWS URL-encodes documents
}

func (a *API) listUserPolicies(q *request) (any, error) {
	u, err := a.target(q, authz.IAMListUserPolicies, false)
	if err != nil {
		return nil, err
	}
	return namesPage(q, iam.UserPolicyNames(u))
}

func (a *API) deleteUserPolicy(q *request) (any, error) {
	return change(q, "PolicyName", func() (driver.User, error) { return a.target(q, authz.IAMDeleteUserPolicy, false) }, a.opts.Store.DeleteUserPolicy)
}

func (a *API) attachUserPolicy(q *request) (any, error) {
	return change(q, "PolicyArn", func() (driver.User, error) { return a.target(q, authz.IAMAttachUserPolicy, false) }, a.opts.Store.AttachUserPolicy)
}

func (a *API) detachUserPolicy(q *request) (any, error) {
	return change(q, "PolicyArn", func() (driver.User, error) { return a.target(q, authz.IAMDetachUserPolicy, false) }, a.opts.Store.DetachUserPolicy)
}

func (a *API) listAttachedUserPolicies(q *request) (any, error) {
	u, err := a.target(q, authz.IAMListAttachedUserPolicies, false)
	if err != nil {
		return nil, err
	}
	return attachedPage(q, u.ManagedPolicies)
}

func (a *API) getAccountSummary(q *request) (any, error) {
	acct, err := q.account()
	if err != nil {
		return nil, err
	}
	if err := a.authorize(q, authz.IAMGetAccountSummary, acct, "*"); err != nil {
		return nil, err
	}
	ctx := q.r.Context()
	ac, err := a.opts.Store.GetAccount(ctx, acct)
	if err != nil {
		return nil, err
	}
	users, err := a.opts.Store.ListUsers(ctx, acct, "/")
	if err != nil {
		return nil, err
	}
	groups, err := a.opts.Store.ListGroups(ctx, acct, "/")
	if err != nil {
		return nil, err
	}
	roles, err := a.opts.Store.CountRoles(ctx, acct)
	if err != nil {
		return nil, err
	}
	rquota := ac.MaxRoles
	if rquota == 0 {
		rquota = iam.DefaultMaxRoles
	}
	n := 0
	for _, u := range users {
		if !u.AccountRoot {
			n++
		}
	}
	quota := ac.MaxUsers
	if quota == 0 {
		quota = iam.DefaultMaxUsers
	}
	type entry struct {
		Key   string `xml:"key"`
		Value int    `xml:"value"`
	}
	return struct {
		Entries []entry `xml:"SummaryMap>entry"`
	}{[]entry{
		{"Users", n}, {"UsersQuota", quota},
		{"AccessKeysPerUserQuota", iam.MaxAccessKeysPerUser},
		{"AttachedPoliciesPerUserQuota", iam.MaxAttachedPoliciesPerUser},
		{"Groups", len(groups)}, {"GroupsPerUserQuota", iam.MaxGroupsPerUser}, {"Roles", roles}, {"RolesQuota", rquota},
		{"AttachedPoliciesPerRoleQuota", iam.MaxAttachedPoliciesPerRole}, {"Policies", 0},
	}}, nil
}

// change serves the actions that name one required parameter and change
// one entity: the parameter is checked first, then resolve finds the
// entity (and authorizes the action), then apply changes it.
func change[E any](q *request, param string, resolve func() (E, error), apply func(context.Context, E, string) error) (any, error) {
	v, err := q.required(param)
	if err != nil {
		return nil, err
	}
	e, err := resolve()
	if err != nil {
		return nil, err
	}
	return nil, apply(q.r.Context(), e, v)
}
