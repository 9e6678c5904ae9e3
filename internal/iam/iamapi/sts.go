package iamapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/iam"
	"github.com/cairn-s3/cairn/internal/sts"
)

// STSNamespace is the STS API's XML namespace.
const STSNamespace = "https://sts.amazonaws.com/doc/2011-06-15/"

var (
	sessionNameRE = regexp.MustCompile(`^[\w+=,.@-]{2,64}$`)
	externalIDRE  = regexp.MustCompile(`^[\w+=,.@:/-]+$`)
)

// maxSessionTags is AWS's limit of session tags per AssumeRole.
const maxSessionTags = 50

type stsHandler func(a *API, q *request) (any, error)

// stsActions maps each served STS Action to its handler.
var stsActions = map[string]stsHandler{
	"AssumeRole":                (*API).assumeRole,
	"AssumeRoleWithWebIdentity": (*API).assumeRoleWithWebIdentity,
	"GetSessionToken":           (*API).getSessionToken,
	"GetCallerIdentity":         (*API).getCallerIdentity,
}

// stsNotYet are STS actions AWS has and Cairn does not serve.
var stsNotYet = map[string]bool{
	"AssumeRoleWithSAML": true, "GetFederationToken": true, "DecodeAuthorizationMessage": true,
	"GetAccessKeyInfo": true, "AssumeRoot": true,
}

// STS returns the handler of the STS query API: POST / signed for the
// "sts" service, or unsigned for AssumeRoleWithWebIdentity.
func (a *API) STS() http.Handler { return http.HandlerFunc(a.serveSTS) }

func (a *API) serveSTS(w http.ResponseWriter, r *http.Request) {
	werr := func(err error) { a.writeErrorNS(w, r, STSNamespace, err) }
	if a.opts.STS == nil {
		werr(errorf(http.StatusNotImplemented, "NotImplemented", "STS is not enabled."))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxForm+1))
	if err != nil || len(body) > maxForm {
		werr(errorf(http.StatusBadRequest, "InvalidInput", "the request body is unreadable or exceeds %d bytes", maxForm))
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		werr(errorf(http.StatusBadRequest, "InvalidInput", "malformed form body"))
		return
	}
	action := form.Get("Action")
	h, ok := stsActions[action]
	if !ok {
		if stsNotYet[action] {
			werr(errorf(http.StatusNotImplemented, "NotImplemented", "%s is not implemented.", action))
			return
		}
		werr(errorf(http.StatusBadRequest, "InvalidAction", "Could not find operation %s.", action))
		return
	}
	if v := form.Get("Version"); v != "" && v != "2011-06-15" {
		werr(errorf(http.StatusBadRequest, "InvalidInput", "Version %s is not supported.", v))
		return
	}
	caller, _ := a.opts.Caller(r.Context())
	if caller.ID == "" && action != "AssumeRoleWithWebIdentity" {
		werr(errorf(http.StatusForbidden, "MissingAuthenticationToken", "Request is missing Authentication Token"))
		return
	}
	q := &request{r: r, form: form, caller: caller, p: caller.Principal()}
	res, err := h(a, q)
	if err != nil {
		werr(err)
		return
	}
	a.writeResultNS(w, r, STSNamespace, action, res)
}

type credentialsXML struct {
	AccessKeyID     string `xml:"AccessKeyId"`
	SecretAccessKey string `xml:"SecretAccessKey"`
	SessionToken    string `xml:"SessionToken"`
	Expiration      string `xml:"Expiration"`
}

func credsOut(c sts.Credentials) credentialsXML {
	return credentialsXML{c.AccessKeyID, c.SecretAccessKey, c.SessionToken, isoTime(c.Expiration)}
}

type assumedRoleXML struct {
	AssumedRoleID string `xml:"AssumedRoleId"`
	Arn           string `xml:"Arn"`
}

func validationError(format string, args ...any) error {
	return errorf(http.StatusBadRequest, "ValidationError", format, args...)
}

// duration reads DurationSeconds (def when absent) within [lo, hi].
func (q *request) duration(def, lo, hi int, tooLong string) (time.Duration, error) {
	v := q.get("DurationSeconds")
	if v == "" {
		def = min(def, hi)
		return time.Duration(def) * time.Second, nil
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil || n < lo:
		return 0, validationError("1 validation error detected: Value '%s' at 'durationSeconds' failed to satisfy constraint: Member must have value greater than or equal to %d", v, lo)
	case n > hi:
		return 0, validationError("%s", tooLong)
	}
	return time.Duration(n) * time.Second, nil
}

// maxSessionPolicyArns is AWS's limit of managed session policies.
const maxSessionPolicyArns = 10

// sessionPolicies reads the session policies: Policy (inline) and
// PolicyArns.member.N.arn (managed: the AWS managed policies Cairn knows).
// Their plain text together is at most 2,048 characters (AWS).
func (q *request) sessionPolicies() (doc string, arns []string, err error) {
	for i := 1; ; i++ {
		k := fmt.Sprintf("PolicyArns.member.%d.arn", i)
		if !q.form.Has(k) {
			break
		}
		if i > maxSessionPolicyArns {
			return "", nil, validationError("1 validation error detected: Value at 'policyArns' failed to satisfy constraint: Member must have length less than or equal to %d", maxSessionPolicyArns)
		}
		arn := q.get(k)
		if len(arn) < 20 || len(arn) > 2048 {
			return "", nil, validationError("1 validation error detected: Value '%s' at 'policyArns.%d.member.arn' failed to satisfy constraint: Member must have length between 20 and 2048", arn, i)
		}
		if _, ok := authz.ManagedPolicy(arn); !ok {
			// Cairn has no customer managed policies: only AWS's exist.
			return "", nil, errorf(http.StatusBadRequest, "MalformedPolicyDocument", "The managed session policy %s does not exist.", arn)
		}
		arns = append(arns, arn)
	}
	for k := range q.form {
		// A member out of sequence, or a field other than arn: not
		// silently dropped.
		if strings.HasPrefix(k, "PolicyArns.") && !slices.Contains(arns, q.get(k)) {
			return "", nil, validationError("unexpected parameter %s", k)
		}
	}
	doc = q.get("Policy")
	size := len(doc)
	for _, a := range arns {
		size += len(a)
	}
	if size > authz.MaxSessionPolicySize {
		return "", nil, errorf(http.StatusBadRequest, "PackedPolicyTooLarge", "Packed policy consumes more than %d characters.", authz.MaxSessionPolicySize)
	}
	if doc == "" {
		return "", arns, nil
	}
	if _, err := authz.ParseSessionPolicy([]byte(doc)); err != nil {
		var m *authz.MalformedPolicyError
		if errors.As(err, &m) {
			return "", nil, errorf(http.StatusBadRequest, "MalformedPolicyDocument", "%s", m.Reason)
		}
		return "", nil, err
	}
	return doc, arns, nil
}

// packedSize is AssumeRole's PackedPolicySize: the percentage of the
// session policy budget used (0: none, and the element is left out).
func (in *assumeInput) packedSize() int {
	n := len(in.policy)
	for _, a := range in.policyArns {
		n += len(a)
	}
	return n * 100 / authz.MaxSessionPolicySize
}

// sessionTags reads Tags.member.N.Key/Value.
func (q *request) sessionTags() (map[string]string, error) {
	if q.form.Has("TransitiveTagKeys.member.1") {
		return nil, errorf(http.StatusNotImplemented, "NotImplemented", "Transitive session tags are not implemented.")
	}
	var out map[string]string
	for i := 1; ; i++ {
		k := fmt.Sprintf("Tags.member.%d.", i)
		if !q.form.Has(k+"Key") && !q.form.Has(k+"Value") {
			return out, nil
		}
		if i > maxSessionTags {
			return nil, validationError("at most %d session tags", maxSessionTags)
		}
		key, val := q.get(k+"Key"), q.get(k+"Value")
		if key == "" || len(key) > 128 || len(val) > 256 || strings.HasPrefix(strings.ToLower(key), "aws:") {
			return nil, validationError("invalid session tag key %q", key)
		}
		if out == nil {
			out = map[string]string{}
		}
		for have := range out {
			if strings.EqualFold(have, key) {
				return nil, validationError("duplicate session tag key %q", key)
			}
		}
		out[key] = val
	}
}

// decideTrust decides act on role r with its trust policy for q's caller
// (p: the caller's principal, extra: request condition keys).
func (a *API) decideTrust(q *request, p authz.Principal, r iam.Role, act authz.Action, extra map[string][]string) error {
	trust, err := authz.ParseTrustPolicy([]byte(r.TrustPolicy))
	if err != nil {
		return accessDenied(p, act, r.ARN()) // a stored policy that no longer parses: closed
	}
	rm := driver.RequestFrom(q.r.Context())
	ctx := authz.GlobalContext(authz.WithPrincipalKeys(trust, p),
		authz.Global{SourceIP: rm.SourceIP, Secure: rm.Secure, Now: time.Now(), UserID: p.ID, Principal: &p})
	for k, v := range extra {
		ctx[strings.ToLower(k)] = v
	}
	in := authz.Input{Owner: r.Account, Policy: trust, Request: authz.Request{Principal: p, Action: act,
		Resource: authz.Resource{IAM: r.ARN()}, Context: ctx}}
	d := authz.Evaluate(&in)
	a.opts.Logger.Debug("authz", "request_id", a.opts.RequestID(q.r.Context()), "principal", p.ARN(),
		"action", act.String(), "resource", r.ARN(), "effect", d.Effect.String(), "reason", d.Reason)
	if !d.Allowed() {
		return accessDenied(p, act, r.ARN())
	}
	return nil
}

// assumeCommon reads and checks what AssumeRole and
// AssumeRoleWithWebIdentity share: the role, session name, duration,
// session policy and tags; then decides with the trust policy.
type assumeInput struct {
	role    iam.Role
	session string
	dur     time.Duration
	policy  string
	// policyArns are the managed session policies.
	policyArns []string
	tags       map[string]string
	// tenant is the role's account's tenant.
	tenant string
}

func (a *API) assumeCommon(q *request, p authz.Principal, act authz.Action, extra map[string][]string) (assumeInput, error) {
	var in assumeInput
	arn, err := q.required("RoleArn")
	if err != nil {
		return in, err
	}
	if in.session, err = q.required("RoleSessionName"); err != nil {
		return in, err
	}
	if !sessionNameRE.MatchString(in.session) {
		return in, validationError("1 validation error detected: Value '%s' at 'roleSessionName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]* and have length between 2 and 64", in.session)
	}
	for _, f := range []string{"SerialNumber", "TokenCode", "SourceIdentity", "ProvidedContexts.member.1.ProviderArn"} {
		if q.form.Has(f) {
			return in, errorf(http.StatusNotImplemented, "NotImplemented", "%s is not implemented.", f)
		}
	}
	if in.policy, in.policyArns, err = q.sessionPolicies(); err != nil {
		return in, err
	}
	if in.tags, err = q.sessionTags(); err != nil {
		return in, err
	}
	in.role, err = a.opts.STS.Role(q.r.Context(), arn)
	if err != nil {
		if errors.Is(err, iam.ErrNoSuchEntity) || errors.Is(err, iam.ErrInvalidInput) {
			// AWS does not say whether the role exists.
			return in, accessDenied(p, act, arn)
		}
		return in, err
	}
	if extra == nil {
		extra = map[string][]string{}
	}
	extra["sts:RoleSessionName"] = []string{in.session}
	var keys []string
	for k, v := range in.tags {
		extra["aws:RequestTag/"+k] = []string{v}
		keys = append(keys, k)
	}
	if len(keys) > 0 {
		extra["aws:TagKeys"] = keys
	}
	if err := a.decideTrust(q, p, in.role, act, extra); err != nil {
		return in, err
	}
	if len(in.tags) > 0 {
		if err := a.decideTrust(q, p, in.role, authz.STSTagSession, extra); err != nil {
			return in, err
		}
	}
	acct, err := a.opts.Store.GetAccount(q.r.Context(), in.role.Account)
	if err != nil {
		return in, err
	}
	in.tenant = acct.Tenant
	hi := in.role.MaxSessionDuration
	if hi == 0 {
		hi = iam.DefaultSessionDuration
	}
	if p.IsRoleSession() {
		hi = min(hi, 3600) // role chaining: at most one hour (AWS)
	}
	in.dur, err = q.duration(sts.DefaultDuration, sts.MinDuration, hi,
		fmt.Sprintf("The requested DurationSeconds exceeds the MaxSessionDuration set for this role (%d).", hi))
	return in, err
}

func (a *API) assumeRole(q *request) (any, error) {
	extra := map[string][]string{}
	if q.form.Has("ExternalId") {
		ext := q.get("ExternalId")
		if len(ext) < 2 || len(ext) > 1224 || !externalIDRE.MatchString(ext) {
			return nil, validationError("1 validation error detected: Value at 'externalId' failed to satisfy constraint: Member must have length between 2 and 1224")
		}
		extra["sts:ExternalId"] = []string{ext}
	}
	in, err := a.assumeCommon(q, q.p, authz.STSAssumeRole, extra)
	if err != nil {
		return nil, err
	}
	c, err := a.opts.STS.Mint(sts.Claims{Account: in.role.Account, UserID: q.caller.ID, RoleID: in.role.ID,
		RoleName: in.role.Name, Session: in.session, Policy: in.policy, PolicyArns: in.policyArns, Tags: in.tags, Tenant: in.tenant}, in.dur)
	if err != nil {
		return nil, err
	}
	a.opts.Logger.Info("sts: role assumed", "request_id", a.opts.RequestID(q.r.Context()), "caller", q.p.ARN(),
		"role", in.role.ARN(), "session", in.session, "access_key", c.AccessKeyID, "expires", c.Expiration)
	out := struct {
		Credentials      credentialsXML `xml:"Credentials"`
		AssumedRoleUser  assumedRoleXML `xml:"AssumedRoleUser"`
		PackedPolicySize int            `xml:"PackedPolicySize,omitempty"`
	}{Credentials: credsOut(c), AssumedRoleUser: assumedRoleXML{in.role.ID + ":" + in.session,
		authz.AssumedRoleARN(in.role.Account, in.role.Name, in.session)}, PackedPolicySize: in.packedSize()}
	return out, nil
}

func (a *API) getSessionToken(q *request) (any, error) {
	for _, f := range []string{"SerialNumber", "TokenCode"} {
		if q.form.Has(f) {
			return nil, errorf(http.StatusNotImplemented, "NotImplemented", "MFA (%s) is not implemented.", f)
		}
	}
	in := authz.Input{Owner: q.caller.Account, Request: authz.Request{Principal: q.p, Action: authz.STSGetSessionToken,
		Resource: authz.Resource{IAM: "*"}}}
	if d := authz.Evaluate(&in); !d.Allowed() {
		return nil, accessDenied(q.p, authz.STSGetSessionToken, "*")
	}
	hi := sts.MaxSessionTokenDuration
	if q.caller.AccountRoot {
		hi = 3600 // AWS: the root's sessions last at most an hour
	}
	dur, err := q.duration(43200, sts.MinDuration, hi, fmt.Sprintf("DurationSeconds must be at most %d", hi))
	if err != nil {
		return nil, err
	}
	c, err := a.opts.STS.Mint(sts.Claims{Account: q.caller.Account, UserID: q.caller.ID}, dur)
	if err != nil {
		return nil, err
	}
	return struct {
		Credentials credentialsXML `xml:"Credentials"`
	}{credsOut(c)}, nil
}

func (a *API) getCallerIdentity(q *request) (any, error) {
	p := q.p
	id := p.ID
	if p.Root {
		id = p.Account
	}
	acct := p.Account
	if acct == "" {
		acct = p.ID // a user outside accounts is its own account
	}
	return struct {
		Arn     string `xml:"Arn"`
		UserID  string `xml:"UserId"`
		Account string `xml:"Account"`
	}{p.ARN(), id, acct}, nil
}
