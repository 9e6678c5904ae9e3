package authz

import (
	"strconv"
	"strings"
	"time"
)

// Principal is who makes a request, resolved once at authentication.
type Principal struct {
	// ID is the canonical user id (driver.User.ID); "" is anonymous.
	ID string
	// Admin is a gateway administrator: it may use the admin API and, past
	// explicit denies, every S3 and SNS resource (RGW's system users).
	Admin bool
	// Account is the IAM account the user belongs to ("" for a user outside
	// accounts, which is its own account as before accounts existed).
	Account string
	// Root marks the account's root user: it owns what the account owns.
	Root bool
	// Name and Path are the IAM user name and path, for the user's ARN.
	Name, Path string
	// Identity holds the compiled identity-based policies (inline and
	// attached managed); nil is none. For a role session: the role's.
	Identity *IdentityPolicies
	// Service is a service principal the gateway acts as (bucket
	// logging's "logging.s3.amazonaws.com"); ID is then "". Only
	// statements naming that service, or "*", match it.
	Service string
	// Session is set for temporary credentials (STS).
	Session *Session
	// Federated is the OIDC provider ARN of an AssumeRoleWithWebIdentity
	// caller (which has no Cairn identity): trust policies name it.
	Federated string
}

// Session is the STS part of a principal using temporary credentials.
// A role session (RoleName set) is the role, filtered by Policy; a
// GetSessionToken session (RoleName "") is its user.
type Session struct {
	RoleID, RoleName, RolePath string
	// Name is the role session name.
	Name string
	// Policy is the session policy: the session may do only what both
	// the role's policies and this allow. Nil is none.
	Policy *Policy
	// Tags are the session tags (aws:PrincipalTag/<key>).
	Tags map[string]string
}

// RoleARN is the session's role ARN.
func (s *Session) RoleARN(account string) string {
	return RoleARN(account, s.RolePath, s.RoleName)
}

// RoleARN is arn:aws:iam::<account>:role<path><name>.
func RoleARN(account, path, name string) string {
	if path == "" {
		path = "/"
	}
	return "arn:aws:iam::" + account + ":role" + path + name
}

// AssumedRoleARN is arn:aws:sts::<account>:assumed-role/<role>/<session>.
func AssumedRoleARN(account, role, session string) string {
	return "arn:aws:sts::" + account + ":assumed-role/" + role + "/" + session
}

// IsRoleSession reports whether p is a role session.
func (p Principal) IsRoleSession() bool { return p.Session != nil && p.Session.RoleName != "" }

// InAccount reports whether p is an IAM account's user.
func (p Principal) InAccount() bool { return p.Account != "" }

// Anonymous is the principal of an unsigned request.
var Anonymous = Principal{}

// IsAnonymous reports whether p is the anonymous principal.
func (p Principal) IsAnonymous() bool { return p.ID == "" }

// ARN is the principal's IAM user ARN, as policies name it.
func (p Principal) ARN() string {
	switch {
	case p.ID == "":
		return "*"
	case p.IsRoleSession():
		return AssumedRoleARN(p.Account, p.Session.RoleName, p.Session.Name)
	case p.Account != "" && p.Root:
		return "arn:aws:iam::" + p.Account + ":root"
	case p.Account != "":
		return AccountUserARN(p.Account, p.Path, p.Name)
	}
	return UserARN(p.ID)
}

// AccountUserARN is the ARN of an account's user: path is "/" or
// "/a/b/".
func AccountUserARN(account, path, name string) string {
	if path == "" {
		path = "/"
	}
	return "arn:aws:iam::" + account + ":user" + path + name
}

// UserARN returns the IAM ARN of a Cairn user: every user is its own
// account; the ARN's account field is the user's tenant, empty for a user
// outside tenants (RGW's form): "<tenant>$<uid>" is
// "arn:aws:iam::<tenant>:user/<uid>".
func UserARN(id string) string {
	tenant, uid, ok := strings.Cut(id, "$")
	if !ok {
		return "arn:aws:iam:::user/" + id
	}
	return "arn:aws:iam::" + tenant + ":user/" + uid
}

// Resource names what a request acts on. Bucket-scoped actions use Bucket;
// object-scoped ones Bucket, Key and VersionID; SNS actions Topic (an ARN).
type Resource struct {
	Bucket    string
	Key       string
	VersionID string
	Topic     string
	// IAM is the ARN of an IAM resource (a user, "arn:aws:iam::<acct>:
	// user/*" for listings, "*" for account-wide actions).
	IAM string
}

// ARN returns the resource ARN that policies' Resource patterns match,
// for action a.
func (r Resource) ARN(a Action) string {
	switch a.Scope() {
	case ScopeTopic:
		return r.Topic
	case ScopeIAM, ScopeSTS:
		if r.IAM == "" {
			return "*"
		}
		return r.IAM
	case ScopeObject:
		return BucketARN(r.Bucket) + "/" + r.Key
	case ScopeBucket:
		return BucketARN(r.Bucket)
	}
	return "*"
}

// BucketARN is the ARN of a bucket by its internal name: a tenant's
// bucket "<tenant>/<name>" is "arn:aws:s3::<tenant>:<name>", as in RGW,
// where the tenant stands in the account field.
func BucketARN(bucket string) string {
	if tenant, name, ok := strings.Cut(bucket, "/"); ok {
		return "arn:aws:s3::" + tenant + ":" + name
	}
	return "arn:aws:s3:::" + bucket
}

// Context holds a request's condition keys (aws:SourceIp, s3:prefix, ...)
// by lower-case name. Values come from the server, never copied
// wholesale from client headers.
type Context map[string][]string

// Set sets key (any case) to values.
func (c Context) Set(key string, values ...string) { c[strings.ToLower(key)] = values }

// Get returns key's values (key in lower case) and whether it is present.
func (c Context) Get(key string) ([]string, bool) {
	v, ok := c[key]
	return v, ok
}

// Request is one authorization question.
type Request struct {
	Principal Principal
	Action    Action
	Resource  Resource
	Context   Context
}

// Global is what the request-independent condition keys (aws:*) are made
// of; every API (S3, SNS, admin) fills it the same way.
type Global struct {
	SourceIP string // the peer address, never a header
	Secure   bool   // the request came over TLS
	Now      time.Time
	UserID   string // "" for anonymous
	// Principal, when set, is the caller: account users get their IAM name
	// as aws:username and their ARN as aws:PrincipalArn.
	Principal *Principal
}

// GlobalContext returns the aws:* condition keys p reads, from g. Only
// keys the policy reads are computed.
func GlobalContext(p *Policy, g Global) Context {
	c := Context{}
	set := func(k string, v func() string) {
		if p.Needs(k) {
			c[k] = []string{v()}
		}
	}
	set("aws:sourceip", func() string { return g.SourceIP })
	set("aws:securetransport", func() string { return strconv.FormatBool(g.Secure) })
	set("aws:currenttime", func() string { return g.Now.UTC().Format(time.RFC3339) })
	set("aws:epochtime", func() string { return strconv.FormatInt(g.Now.Unix(), 10) })
	if pr := g.Principal; pr != nil && pr.IsRoleSession() {
		s := pr.Session
		set("aws:userid", func() string { return pr.ID })
		set("aws:principaltype", func() string { return "AssumedRole" })
		set("aws:principalarn", func() string { return s.RoleARN(pr.Account) })
		set("aws:principalaccount", func() string { return pr.Account })
		for k, v := range s.Tags {
			set("aws:principaltag/"+strings.ToLower(k), func() string { return v })
		}
	} else if pr != nil && pr.Account != "" {
		name, typ := pr.Name, "User"
		if pr.Root {
			name, typ = pr.Account, "Account"
		}
		set("aws:username", func() string { return name })
		set("aws:userid", func() string { return pr.ID })
		set("aws:principaltype", func() string { return typ })
		set("aws:principalarn", pr.ARN)
		set("aws:principalaccount", func() string { return pr.Account })
	} else if g.UserID != "" {
		set("aws:username", func() string { return g.UserID })
		set("aws:userid", func() string { return g.UserID })
		set("aws:principaltype", func() string { return "User" })
		set("aws:principalarn", func() string { return UserARN(g.UserID) })
	} else {
		set("aws:principaltype", func() string { return "Anonymous" })
	}
	return c
}
