package authz

import (
	"sort"
	"strings"
)

// MaxIdentityPolicySize bounds one identity policy document (AWS's limit
// for a managed policy; AWS caps a user's inline policies at 2,048
// characters in aggregate, which Cairn does not enforce).
const MaxIdentityPolicySize = 6144

// ParseIdentityPolicy parses an identity-based policy (inline user policy,
// managed policy): no Principal, actions of s3, sns and iam.
func ParseIdentityPolicy(doc []byte) (*Policy, error) {
	p, err := ParsePolicy(doc, PolicyOptions{
		Services: []string{"s3", "sns", "iam", "sts"},
		MaxSize:  MaxIdentityPolicySize,
	})
	if err != nil {
		return nil, err
	}
	for i := range p.Statements {
		if p.Statements[i].hasPrincipal {
			return nil, malformed("Policy document should not specify a principal.")
		}
	}
	return p, nil
}

// MaxTrustPolicySize bounds a role's trust policy (AWS's default quota).
const MaxTrustPolicySize = 2048

// MaxSessionPolicySize bounds an STS session policy (AWS: 2,048
// characters, packed).
const MaxSessionPolicySize = 2048

// ParseTrustPolicy parses a role's trust policy (AssumeRolePolicyDocument):
// a resource policy on the role with sts actions, a Principal in every
// statement, and no Resource (the role it is attached to).
func ParseTrustPolicy(doc []byte) (*Policy, error) {
	return ParsePolicy(doc, PolicyOptions{
		Services:         []string{"sts"},
		RequirePrincipal: true,
		MaxSize:          MaxTrustPolicySize,
		ImplicitResource: "*",
		ResourceOK:       func(string) bool { return false },
	})
}

// ParseSessionPolicy parses an STS session policy (an identity policy).
func ParseSessionPolicy(doc []byte) (*Policy, error) {
	if len(doc) > MaxSessionPolicySize {
		return nil, malformed("Session policies must be at most %d characters", MaxSessionPolicySize)
	}
	return ParseIdentityPolicy(doc)
}

// NamedPolicy is one identity policy with the name it is reported by (an
// inline policy's name, or a managed policy's ARN).
type NamedPolicy struct {
	Name   string
	Policy *Policy
}

// IdentityPolicies is a principal's compiled identity-based policies:
// its inline and attached managed policies (and, later, its groups').
type IdentityPolicies struct {
	Policies []NamedPolicy
}

// Eval evaluates every policy: Deny if any statement denies, Allow if
// some allows, otherwise 0. It returns the deciding policy and statement.
func (ip *IdentityPolicies) Eval(req *Request) (Effect, string, *Statement) {
	if ip == nil {
		return 0, "", nil
	}
	eff, name, st := Effect(0), "", (*Statement)(nil)
	for _, np := range ip.Policies {
		e, s := np.Policy.Eval(req)
		if e == Deny {
			return Deny, np.Name, s
		}
		if e == Allow && eff == 0 {
			eff, name, st = Allow, np.Name, s
		}
	}
	return eff, name, st
}

// Needs reports whether some policy reads condition key k.
func (ip *IdentityPolicies) Needs(k string) bool {
	if ip == nil {
		return false
	}
	for _, np := range ip.Policies {
		if np.Policy.Needs(k) {
			return true
		}
	}
	return false
}

// managedPolicies are the AWS managed policies Cairn knows, by ARN (RGW
// ships the same ones: rgw_iam_managed_policy.cc).
var managedPolicies = map[string]string{
	"arn:aws:iam::aws:policy/AmazonS3FullAccess":      `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*","s3-object-lambda:*"],"Resource":"*"}]}`,
	"arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess":  `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:Get*","s3:List*","s3:Describe*","s3-object-lambda:Get*","s3-object-lambda:List*"],"Resource":"*"}]}`,
	"arn:aws:iam::aws:policy/AmazonSNSFullAccess":     `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["sns:*"],"Resource":"*"}]}`,
	"arn:aws:iam::aws:policy/AmazonSNSReadOnlyAccess": `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["sns:GetTopicAttributes","sns:List*"],"Resource":"*"}]}`,
	"arn:aws:iam::aws:policy/IAMFullAccess":           `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["iam:*"],"Resource":"*"}]}`,
	"arn:aws:iam::aws:policy/IAMReadOnlyAccess":       `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["iam:Get*","iam:List*"],"Resource":"*"}]}`,
}

// compiledManaged holds the managed policies parsed once.
var compiledManaged = func() map[string]*Policy {
	m := make(map[string]*Policy, len(managedPolicies))
	for arn, doc := range managedPolicies {
		p, err := ParsePolicy([]byte(doc), PolicyOptions{Services: []string{"s3", "s3-object-lambda", "sns", "iam"}})
		if err != nil {
			panic("authz: managed policy " + arn + ": " + err.Error())
		}
		m[arn] = p
	}
	return m
}()

// ManagedPolicy returns the AWS managed policy with this ARN, if Cairn
// knows it.
func ManagedPolicy(arn string) (*Policy, bool) {
	p, ok := compiledManaged[arn]
	return p, ok
}

// ManagedPolicyDocument returns a managed policy's JSON document.
func ManagedPolicyDocument(arn string) (string, bool) {
	d, ok := managedPolicies[arn]
	return d, ok
}

// ManagedPolicyARNs lists the known managed policies, sorted.
func ManagedPolicyARNs() []string {
	out := make([]string, 0, len(managedPolicies))
	for a := range managedPolicies {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// UnionPolicies is one policy holding the statements of all of ps: it
// denies what one of them denies and allows what one allows. It combines a
// session's inline and managed session policies (AWS evaluates them as
// one set). ps are not changed.
func UnionPolicies(ps ...*Policy) *Policy {
	if len(ps) == 1 {
		return ps[0]
	}
	out := &Policy{Version: "2012-10-17", keys: map[string]struct{}{}}
	for _, p := range ps {
		out.Statements = append(out.Statements, p.Statements...)
		for k := range p.keys {
			out.keys[k] = struct{}{}
		}
	}
	return out
}

// ManagedPolicyName is the name part of a managed policy ARN.
func ManagedPolicyName(arn string) string {
	return arn[strings.LastIndexByte(arn, '/')+1:]
}

// keys returns the union of the condition keys the policies read.
func (ip *IdentityPolicies) keys() map[string]struct{} {
	if ip == nil {
		return nil
	}
	var m map[string]struct{}
	for _, np := range ip.Policies {
		for k := range np.Policy.keys {
			if m == nil {
				m = map[string]struct{}{}
			}
			m[k] = struct{}{}
		}
	}
	return m
}

// WithPrincipalKeys is WithIdentityKeys for everything of pr's that
// reads condition keys: its identity policies and its session policy.
func WithPrincipalKeys(p *Policy, pr Principal) *Policy {
	if s := pr.Session; s != nil && s.Policy != nil && len(s.Policy.keys) > 0 {
		ip := &IdentityPolicies{Policies: []NamedPolicy{{Name: "session", Policy: s.Policy}}}
		if pr.Identity != nil {
			ip.Policies = append(ip.Policies, pr.Identity.Policies...)
		}
		return WithIdentityKeys(p, ip)
	}
	return WithIdentityKeys(p, pr.Identity)
}

// WithIdentityKeys returns p (the resource policy, possibly nil) such that
// Needs also reports the condition keys ip reads, so callers that build
// the request context from the resource policy build what the identity
// policies read too. p itself is returned when ip reads no key; otherwise
// a copy sharing p's statements.
func WithIdentityKeys(p *Policy, ip *IdentityPolicies) *Policy {
	ik := ip.keys()
	if len(ik) == 0 {
		return p
	}
	out := &Policy{keys: make(map[string]struct{}, len(ik))}
	if p != nil {
		*out = *p
		out.keys = make(map[string]struct{}, len(p.keys)+len(ik))
		for k := range p.keys {
			out.keys[k] = struct{}{}
		}
	}
	for k := range ik {
		out.keys[k] = struct{}{}
	}
	return out
}
