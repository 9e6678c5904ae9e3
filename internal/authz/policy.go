package authz

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxBucketPolicySize is S3's limit on a bucket policy document.
const MaxBucketPolicySize = 20 << 10

// MalformedPolicyError is a policy document S3 would answer with
// MalformedPolicy; Reason is the message.
type MalformedPolicyError struct{ Reason string }

func (e *MalformedPolicyError) Error() string { return "malformed policy: " + e.Reason }

func malformed(format string, args ...any) error {
	return &MalformedPolicyError{Reason: fmt.Sprintf(format, args...)}
}

// IsMalformedPolicy reports whether err is a *MalformedPolicyError.
func IsMalformedPolicy(err error) bool {
	var m *MalformedPolicyError
	return errors.As(err, &m)
}

// Effect is a statement's effect.
type Effect uint8

// Statement effects.
const (
	Allow Effect = iota + 1
	Deny
)

func (e Effect) String() string {
	if e == Deny {
		return "Deny"
	}
	return "Allow"
}

// Policy is a parsed IAM policy document (a bucket or topic policy).
type Policy struct {
	Version    string
	ID         string
	Statements []Statement
	// keys are the condition keys and policy variables the document
	// reads (lower case), so callers build only those.
	keys map[string]struct{}
}

// Needs reports whether evaluating the policy may read condition key k
// (lower case). Callers use it to skip computing unused keys.
func (p *Policy) Needs(k string) bool {
	if p == nil {
		return false
	}
	_, ok := p.keys[k]
	return ok
}

// NeedsPrefix reports whether the policy reads any condition key starting
// with prefix (lower case), e.g. "s3:existingobjecttag/".
func (p *Policy) NeedsPrefix(prefix string) bool {
	if p == nil {
		return false
	}
	for k := range p.keys {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func (p *Policy) noteKeys(st *Statement) {
	vars := func(s string) {
		for {
			i := strings.Index(s, "${")
			if i < 0 {
				return
			}
			j := strings.IndexByte(s[i:], '}')
			if j < 0 {
				return
			}
			p.keys[strings.ToLower(s[i+2:i+j])] = struct{}{}
			s = s[i+j+1:]
		}
	}
	for _, r := range st.resources {
		vars(r)
	}
	for _, c := range st.conditions {
		p.keys[c.key] = struct{}{}
		for _, v := range c.values {
			vars(v)
		}
	}
}

// Statement is one compiled policy statement.
type Statement struct {
	Sid    string
	Effect Effect
	// Index is the statement's position in the document, for reasons.
	Index int

	hasPrincipal bool
	notPrincipal bool
	anyPrincipal bool
	principals   []string // canonical user ids, or account ids (IsAccountID)
	// tenants are tenant principals ("arn:aws:iam::<tenant>:root"): every
	// user of the tenant outside accounts. The same ARN also names the
	// empty tenant's user <tenant> (in principals), as before tenants.
	tenants []string
	// acctUsers are account users named by ARN: "<account>:<lower-case name>".
	acctUsers []string
	// services are service principals (lower case), e.g.
	// "logging.s3.amazonaws.com": the gateway acting for a service.
	services []string
	// acctRoles are roles named by ARN ("<account>:<lower-case role>"),
	// acctSessions role sessions ("<account>:<lower-case role>/<session>").
	acctRoles, acctSessions []string
	// federated are OIDC provider ARNs (Principal "Federated").
	federated []string

	notAction bool
	actions   actionSet

	notResource bool
	resources   []string
	resVars     bool // some resource holds a policy variable

	conditions []condition
}

// PolicyOptions say what a policy document may contain.
type PolicyOptions struct {
	// Services are the action prefixes allowed ("s3", "sns").
	Services []string
	// RequirePrincipal: resource policies must name a principal.
	RequirePrincipal bool
	// ResourceOK, if set, validates each Resource ARN pattern.
	ResourceOK func(arn string) bool
	// MaxSize is the document size limit; 0 means none.
	MaxSize int
	// ImplicitResource, if set, is the Resource of a statement that names
	// none, and a document without statements is an empty policy: topic
	// policies, attached to one topic, as RGW reads them.
	ImplicitResource string
	// DenyOnlyNotPrincipal refuses NotPrincipal with Allow (AWS bucket
	// policies: "NotPrincipal" is only for Deny statements).
	DenyOnlyNotPrincipal bool
	// Tenant is the tenant the policy belongs to (its bucket's, its
	// user's): an S3 resource naming no tenant ("arn:aws:s3:::b", or "*"
	// in the account field) names one of this tenant's buckets, as RGW
	// binds it.
	Tenant string
}

// ParseBucketPolicy parses and validates a bucket policy for bucket (its
// internal name, "<tenant>/<name>" for a tenant's): every Resource must
// name the bucket, in its own tenant.
func ParseBucketPolicy(doc []byte, bucket string) (*Policy, error) {
	tenant, name, _ := strings.Cut(bucket, "/")
	if name == "" {
		tenant, name = "", bucket
	}
	return ParsePolicy(doc, PolicyOptions{
		Services:             []string{"s3"},
		RequirePrincipal:     true,
		DenyOnlyNotPrincipal: true,
		MaxSize:              MaxBucketPolicySize,
		Tenant:               tenant,
		ResourceOK: func(arn string) bool {
			acct, rest, ok := s3ARN(arn)
			if !ok || (acct != "" && acct != "*" && acct != tenant) {
				return false
			}
			b, _, _ := strings.Cut(rest, "/")
			return wildMatch(b, name)
		},
	})
}

// ParseTopicPolicy parses and validates an SNS topic's Policy attribute.
func ParseTopicPolicy(doc []byte) (*Policy, error) {
	return ParsePolicy(doc, PolicyOptions{
		Services:         []string{"sns"},
		RequirePrincipal: true,
		MaxSize:          30 << 10,
		ImplicitResource: "*", // the topic the policy is attached to
		ResourceOK: func(arn string) bool {
			return arn == "*" || strings.HasPrefix(arn, "arn:aws:sns:")
		},
	})
}

// ParsePolicy parses an IAM policy document strictly: unknown fields,
// unknown actions and operators, and ill-typed values are errors
// (*MalformedPolicyError), never silently ignored.
func ParsePolicy(doc []byte, opts PolicyOptions) (*Policy, error) {
	if opts.MaxSize > 0 && len(doc) > opts.MaxSize {
		return nil, malformed("Policies must be less than %d KB", opts.MaxSize>>10)
	}
	doc = bytes.TrimSpace(doc)
	if len(doc) == 0 || doc[0] != '{' {
		return nil, malformed("Policies must be valid JSON and the first byte must be '{'")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, malformed("Policies must be valid JSON and the first byte must be '{'")
	}
	p := &Policy{keys: map[string]struct{}{}}
	for k := range top {
		switch k {
		case "Version", "Id", "Statement":
		default:
			return nil, malformed("Unknown field %s", k)
		}
	}
	if v, ok := top["Version"]; ok {
		if err := json.Unmarshal(v, &p.Version); err != nil || (p.Version != "2012-10-17" && p.Version != "2008-10-17") {
			return nil, malformed("The policy must contain a valid version string")
		}
	}
	if v, ok := top["Id"]; ok {
		if err := json.Unmarshal(v, &p.ID); err != nil {
			return nil, malformed("Id must be a string")
		}
	}
	raw, ok := top["Statement"]
	if !ok && opts.ImplicitResource != "" {
		raw, ok = json.RawMessage("[]"), true
	}
	if !ok {
		return nil, malformed("Missing required field Statement")
	}
	var stmts []json.RawMessage
	if err := json.Unmarshal(raw, &stmts); err != nil {
		stmts = []json.RawMessage{raw}
	}
	if len(stmts) == 0 && opts.ImplicitResource == "" {
		return nil, malformed("Could not parse the policy: Statement is empty!")
	}
	sids := map[string]bool{}
	for i, s := range stmts {
		st, err := parseStatement(s, i, opts)
		if err != nil {
			return nil, err
		}
		if st.Sid != "" {
			if sids[st.Sid] {
				return nil, malformed("Statement IDs (SID) in a single policy must be unique")
			}
			sids[st.Sid] = true
		}
		p.noteKeys(&st)
		p.Statements = append(p.Statements, st)
	}
	return p, nil
}

func parseStatement(raw json.RawMessage, idx int, opts PolicyOptions) (Statement, error) {
	st := Statement{Index: idx}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return st, malformed("Statement must be an object")
	}
	for k := range m {
		switch k {
		case "Sid", "Effect", "Principal", "NotPrincipal", "Action", "NotAction",
			"Resource", "NotResource", "Condition":
		default:
			return st, malformed("Unknown field %s", k)
		}
	}
	if v, ok := m["Sid"]; ok {
		if err := json.Unmarshal(v, &st.Sid); err != nil {
			return st, malformed("Sid must be a string")
		}
	}
	var eff string
	if v, ok := m["Effect"]; !ok {
		return st, malformed("Missing required field Effect")
	} else if json.Unmarshal(v, &eff) != nil || (eff != "Allow" && eff != "Deny") {
		return st, malformed("Invalid effect: %s", strings.Trim(string(v), `"`))
	}
	st.Effect = Allow
	if eff == "Deny" {
		st.Effect = Deny
	}

	// Principal / NotPrincipal.
	pr, hasP := m["Principal"]
	npr, hasNP := m["NotPrincipal"]
	switch {
	case hasP && hasNP:
		return st, malformed("Statement cannot have both Principal and NotPrincipal")
	case hasNP && st.Effect == Allow && opts.DenyOnlyNotPrincipal:
		return st, malformed("NotPrincipal is only supported with Effect Deny")
	case hasP || hasNP:
		if hasNP {
			pr, st.notPrincipal = npr, true
		}
		if err := st.parsePrincipal(pr); err != nil {
			return st, err
		}
		st.hasPrincipal = true
	case opts.RequirePrincipal:
		return st, malformed("Missing required field Principal")
	}

	// Action / NotAction.
	ac, hasA := m["Action"]
	nac, hasNA := m["NotAction"]
	if hasA == hasNA {
		if hasA {
			return st, malformed("Statement cannot have both Action and NotAction")
		}
		return st, malformed("Missing required field Action")
	}
	if hasNA {
		ac, st.notAction = nac, true
	}
	names, err := stringList(ac)
	if err != nil || len(names) == 0 {
		return st, malformed("Policy has invalid action")
	}
	for _, n := range names {
		if !matchActions(&st.actions, n, opts.Services) {
			return st, malformed("Policy has invalid action")
		}
	}

	// Resource / NotResource.
	rs, hasR := m["Resource"]
	nrs, hasNR := m["NotResource"]
	if !hasR && !hasNR && opts.ImplicitResource != "" {
		rs, hasR = json.RawMessage(strconv.Quote(opts.ImplicitResource)), true
	}
	if hasR == hasNR {
		if hasR {
			return st, malformed("Statement cannot have both Resource and NotResource")
		}
		return st, malformed("Missing required field Resource")
	}
	if hasNR {
		rs, st.notResource = nrs, true
	}
	st.resources, err = stringList(rs)
	if err != nil || len(st.resources) == 0 {
		return st, malformed("Policy has invalid resource")
	}
	for _, r := range st.resources {
		st.resVars = st.resVars || strings.Contains(r, "${")
		if r != "*" && (!strings.HasPrefix(r, "arn:") || (opts.ResourceOK != nil && !opts.ResourceOK(r))) {
			return st, malformed("Policy has invalid resource")
		}
	}
	if !st.notAction && !st.notResource && !st.actionFitsResource() {
		return st, malformed("Action does not apply to any resource(s) in statement")
	}

	if v, ok := m["Condition"]; ok {
		if st.conditions, err = parseConditions(v); err != nil {
			return st, err
		}
	}
	for i, r := range st.resources {
		st.resources[i] = bindTenant(r, opts.Tenant)
	}
	return st, nil
}

// actionFitsResource reports whether some action of the statement can
// apply to some resource: s3:GetObject needs an object ARN ("bucket/..."),
// s3:ListBucket a bucket ARN.
func (st *Statement) actionFitsResource() bool {
	for a := Action(1); a < numActions; a++ {
		if !st.actions.has(a) {
			continue
		}
		for _, r := range st.resources {
			_, res, s3 := s3ARN(r)
			if r == "*" || !s3 {
				return true
			}
			obj := strings.Contains(res, "/")
			switch a.Scope() {
			case ScopeObject:
				if obj || strings.Contains(r, "*") {
					return true
				}
			case ScopeBucket, ScopeService:
				if !obj {
					return true
				}
			default:
				return true
			}
		}
	}
	// Only unmodelled actions (e.g. s3:GetBucketWebsite): accept.
	return st.actions.empty()
}

func (st *Statement) parsePrincipal(raw json.RawMessage) error {
	bad := malformed("Invalid principal in policy")
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s != "*" {
			return bad
		}
		st.anyPrincipal = true
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return bad
	}
	for typ, v := range m {
		ids, err := stringList(v)
		if err != nil || len(ids) == 0 {
			return bad
		}
		for _, id := range ids {
			switch typ {
			case "AWS":
				if id == "*" {
					st.anyPrincipal = true
					continue
				}
				if acct, name, ok := accountUserPrincipal(id); ok {
					st.acctUsers = append(st.acctUsers, acct+":"+strings.ToLower(name))
					continue
				}
				if kind, acct, name, ok := rolePrincipal(id); ok {
					if kind == "role" {
						st.acctRoles = append(st.acctRoles, acct+":"+strings.ToLower(name))
					} else {
						st.acctSessions = append(st.acctSessions, acct+":"+name)
					}
					continue
				}
				uid, ok := principalID(id)
				if !ok {
					return bad
				}
				st.principals = append(st.principals, uid)
				if t, ok := tenantPrincipal(id); ok {
					st.tenants = append(st.tenants, t)
				}
			case "CanonicalUser":
				if id == "" || id == "*" {
					return bad
				}
				st.principals = append(st.principals, id)
			case "Service":
				// Only the gateway itself acts as a service (bucket
				// logging's permission check); no request comes from one.
				st.services = append(st.services, strings.ToLower(id))
			case "Federated":
				if !strings.HasPrefix(id, "arn:aws:iam::") || !strings.Contains(id, ":oidc-provider/") {
					return bad
				}
				st.federated = append(st.federated, id)
			default:
				return bad
			}
		}
	}
	return nil
}

// principalID turns an AWS principal into a canonical user id:
// "arn:aws:iam:::user/<id>", "arn:aws:iam::<tenant>:user/<id>" (the
// tenant's user "<tenant>$<id>"), "arn:aws:iam::<id>:root" (each Cairn
// user is its own account) or a bare id.
func principalID(s string) (string, bool) {
	if !strings.HasPrefix(s, "arn:") {
		return s, s != "" && !strings.ContainsAny(s, "*?")
	}
	parts := strings.SplitN(s, ":", 6)
	if len(parts) != 6 || parts[1] != "aws" || parts[2] != "iam" {
		return "", false
	}
	switch res := parts[5]; {
	case strings.HasPrefix(res, "user/"):
		id := res[len("user/"):]
		if i := strings.LastIndexByte(id, '/'); i >= 0 { // user path
			id = id[i+1:]
		}
		if parts[4] != "" { // the tenant's user, as RGW reads the account field
			return parts[4] + "$" + id, id != "" && !strings.ContainsAny(parts[4], "$*?")
		}
		return id, id != ""
	case res == "root":
		return parts[4], parts[4] != ""
	}
	return "", false
}

// tenantPrincipal recognises "arn:aws:iam::<tenant>:root" (not an account
// id): RGW's tenant principal, naming every user of the tenant.
func tenantPrincipal(s string) (string, bool) {
	t, ok := strings.CutPrefix(s, "arn:aws:iam::")
	if !ok {
		return "", false
	}
	t, ok = strings.CutSuffix(t, ":root")
	return t, ok && t != "" && !IsAccountID(t) && !strings.ContainsAny(t, ":$/*?")
}

// accountUserPrincipal recognises "arn:aws:iam::<account id>:user/[path/]name"
// naming an IAM account's user.
func accountUserPrincipal(s string) (account, name string, ok bool) {
	parts := strings.SplitN(s, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "iam" || !IsAccountID(parts[4]) {
		return "", "", false
	}
	res, ok := strings.CutPrefix(parts[5], "user/")
	if !ok {
		return "", "", false
	}
	if i := strings.LastIndexByte(res, '/'); i >= 0 {
		res = res[i+1:]
	}
	return parts[4], res, res != "" && !strings.ContainsAny(res, "*?")
}

// rolePrincipal recognises "arn:aws:iam::<account>:role/[path/]name"
// (kind "role", name the role) and
// "arn:aws:sts::<account>:assumed-role/<role>/<session>" (kind "session",
// name "<lower-case role>/<session>").
func rolePrincipal(s string) (kind, account, name string, ok bool) {
	parts := strings.SplitN(s, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || !IsAccountID(parts[4]) {
		return "", "", "", false
	}
	if parts[2] == "iam" {
		res, ok := strings.CutPrefix(parts[5], "role/")
		if !ok {
			return "", "", "", false
		}
		if i := strings.LastIndexByte(res, '/'); i >= 0 {
			res = res[i+1:]
		}
		return "role", parts[4], res, res != "" && !strings.ContainsAny(res, "*?")
	}
	if parts[2] == "sts" {
		res, ok := strings.CutPrefix(parts[5], "assumed-role/")
		role, sess, ok2 := strings.Cut(res, "/")
		if !ok || !ok2 || role == "" || sess == "" || strings.ContainsAny(res, "*?") {
			return "", "", "", false
		}
		return "session", parts[4], strings.ToLower(role) + "/" + sess, true
	}
	return "", "", "", false
}

// IsAccountID reports whether s is shaped like an IAM account id: "RGW"
// and 17 digits, as RGW makes them. User ids outside accounts may not
// take this shape, so the two never collide.
func IsAccountID(s string) bool {
	if len(s) != 20 || !strings.HasPrefix(s, "RGW") {
		return false
	}
	for i := 3; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func stringList(raw json.RawMessage) ([]string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []string{s}, nil
	}
	var l []string
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, err
	}
	return l, nil
}

// match reports whether the statement applies to req, whose resource ARN
// is arn.
func (st *Statement) match(req *Request, arn string) bool {
	ok, _ := st.matchKind(req, arn)
	return ok
}

// matchKind is match, also telling whether the statement names the
// caller only through its account (an account id or ":root" ARN): such
// a grant is the account's, which its users need an identity policy to
// use (AWS's delegation rule).
func (st *Statement) matchKind(req *Request, arn string) (ok bool, via Via) {
	if st.hasPrincipal {
		in, v := st.principalKind(req.Principal)
		if in == st.notPrincipal {
			return false, ViaDirect
		}
		if !st.notPrincipal {
			via = v
		}
	}
	if !st.matchRest(req, arn) {
		return false, ViaDirect
	}
	return true, via
}

func (st *Statement) matchRest(req *Request, arn string) bool {
	if st.actions.has(req.Action) == st.notAction {
		return false
	}
	if st.resourceIn(arn, req.Context) == st.notResource {
		return false
	}
	for i := range st.conditions {
		if !st.conditions[i].eval(req.Context) {
			return false
		}
	}
	return true
}

// principalKind reports whether the statement names p, and how: directly,
// only through p's account, or (a role session) through its role.
func (st *Statement) principalKind(p Principal) (in bool, via Via) {
	if st.anyPrincipal {
		return true, ViaDirect
	}
	if p.Federated != "" {
		for _, f := range st.federated {
			if f == p.Federated {
				return true, ViaDirect
			}
		}
		return false, ViaDirect
	}
	if p.Service != "" {
		return slices.Contains(st.services, strings.ToLower(p.Service)), ViaDirect
	}
	if p.IsAnonymous() {
		return false, ViaDirect
	}
	for _, id := range st.principals {
		if id == p.ID {
			return true, ViaDirect
		}
	}
	if p.Account == "" {
		// A tenant principal names the tenant's users outside accounts
		// (an account's users are named through their account).
		if t, _, ok := strings.Cut(p.ID, "$"); ok && slices.Contains(st.tenants, t) {
			return true, ViaDirect
		}
		return false, ViaDirect
	}
	if p.IsRoleSession() {
		role := p.Account + ":" + strings.ToLower(p.Session.RoleName)
		for _, s := range st.acctSessions {
			if s == role+"/"+p.Session.Name {
				return true, ViaDirect
			}
		}
		for _, r := range st.acctRoles {
			if r == role {
				return true, ViaRole
			}
		}
	} else if len(st.acctUsers) > 0 && !p.Root {
		me := p.Account + ":" + strings.ToLower(p.Name)
		for _, u := range st.acctUsers {
			if u == me {
				return true, ViaDirect
			}
		}
	}
	for _, id := range st.principals {
		if id == p.Account {
			if p.Root {
				return true, ViaDirect
			}
			return true, ViaAccount
		}
	}
	return false, ViaDirect
}

// Via says how a resource policy statement names its caller.
type Via uint8

// Ways a statement names the caller. ViaAccount: only through the
// caller's account (the account's grant, which its users use only with
// an identity Allow); ViaRole: a role session through its role's ARN (the
// session policy still filters it, AWS).
const (
	ViaDirect Via = iota
	ViaRole
	ViaAccount
)

func (st *Statement) resourceIn(arn string, ctx Context) bool {
	for _, r := range st.resources {
		if r == "*" {
			return true
		}
		pat, ok := r, true
		if st.resVars {
			pat, ok = substitute(r, ctx)
		}
		if ok && wildMatch(pat, arn) {
			return true
		}
	}
	return false
}

// Describe names the statement for decision reasons.
func (st *Statement) Describe() string {
	if st.Sid != "" {
		return fmt.Sprintf("statement %q (%s)", st.Sid, st.Effect)
	}
	return fmt.Sprintf("statement #%d (%s)", st.Index, st.Effect)
}

// Eval evaluates the policy for req: Deny if any matching statement denies
// (returning it at once), Allow if some statement allows, otherwise 0
// (no statement applies). The statement returned decided the result.
func (p *Policy) Eval(req *Request) (Effect, *Statement) {
	eff, st, _ := p.evalKind(req)
	return eff, st
}

// evalKind is Eval, also telling whether an Allow names the caller only
// through its account (see matchKind); a direct Allow is preferred.
func (p *Policy) evalKind(req *Request) (Effect, *Statement, Via) {
	if p == nil {
		return 0, nil, ViaDirect
	}
	arn := req.Resource.ARN(req.Action)
	var allow *Statement
	via := ViaDirect
	for i := range p.Statements {
		st := &p.Statements[i]
		ok, v := st.matchKind(req, arn)
		if !ok {
			continue
		}
		if st.Effect == Deny {
			return Deny, st, ViaDirect
		}
		if allow == nil || v < via {
			allow, via = st, v
		}
	}
	if allow != nil {
		return Allow, allow, via
	}
	return 0, nil, ViaDirect
}

// publicRestrictingKeys are condition keys that, compared for equality to
// fixed values, make a statement non-public (AWS "The meaning of
// public").
var publicRestrictingKeys = map[string]bool{
	"aws:sourceip": true, "aws:sourcearn": true, "aws:sourcevpc": true, "aws:sourcevpce": true,
	"aws:sourceaccount": true, "aws:sourceowner": true, "aws:principalorgid": true,
	"aws:principalaccount": true, "aws:principalarn": true, "aws:userid": true,
	"aws:username": true, "s3:dataaccesspointarn": true, "s3:dataaccesspointaccount": true,
}

// IsPublic reports whether the policy grants access to everyone: some
// Allow statement has a wildcard principal (or NotPrincipal) and no
// condition pinning the caller to fixed values.
func (p *Policy) IsPublic() bool {
	if p == nil {
		return false
	}
	for i := range p.Statements {
		st := &p.Statements[i]
		if st.Effect != Allow || !(st.anyPrincipal || st.notPrincipal) {
			continue
		}
		if !st.restricted() {
			return true
		}
	}
	return false
}

func (st *Statement) restricted() bool {
	for _, c := range st.conditions {
		if !publicRestrictingKeys[c.key] || c.spec.negate || c.ifExists || c.set == setAllValues {
			continue
		}
		switch c.spec.kind {
		case opStringEquals, opStringEqualsIgnoreCase, opArnLike, opStringLike:
			fixed := true
			for _, v := range c.values {
				if strings.ContainsAny(v, "*?") || strings.Contains(v, "${") {
					fixed = false
				}
			}
			if fixed {
				return true
			}
		case opIPAddress:
			narrow := true
			for _, n := range c.nets {
				if n.Bits() < 8 {
					narrow = false
				}
			}
			if narrow {
				return true
			}
		}
	}
	return false
}
