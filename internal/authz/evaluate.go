package authz

import "fmt"

// DecisionEffect is the outcome of an authorization.
type DecisionEffect uint8

// Decision effects. ImplicitDeny means nothing allowed the request;
// ExplicitDeny that a Deny statement matched (nothing can override it).
const (
	ImplicitDeny DecisionEffect = iota
	ExplicitDeny
	Allowed
)

func (e DecisionEffect) String() string {
	switch e {
	case Allowed:
		return "Allow"
	case ExplicitDeny:
		return "ExplicitDeny"
	}
	return "ImplicitDeny"
}

// Decision is Evaluate's answer. Reason names the statement, grant or
// rule that decided, for the debug log.
type Decision struct {
	Effect DecisionEffect
	Reason string
}

// Allowed reports whether the request may proceed.
func (d Decision) Allowed() bool { return d.Effect == Allowed }

// Input is a request plus the access-control state already loaded for its
// resource. Nil ACLs and policy mean none.
type Input struct {
	Request
	// Owner is the owner of the bucket (S3 actions) or topic (SNS).
	Owner string
	// BucketACL is the bucket's ACL; ObjectACL the object's, nil when the
	// action does not read one (PutObject) or the object does not exist.
	BucketACL *ACL
	ObjectACL *ACL
	// Policy is the bucket or topic policy.
	Policy *Policy
	// PublicAccessBlock is the bucket's setting.
	PublicAccessBlock PublicAccessBlock
	// Ownership is the bucket's object ownership mode.
	Ownership Ownership
}

// policyManagement are the actions a bucket owner may always perform,
// whatever the policy says, so a bad policy cannot lock it out (S3 keeps
// this for the account root; Cairn users are their own root).
func policyManagement(a Action) bool {
	return a == S3GetBucketPolicy || a == S3PutBucketPolicy || a == S3DeleteBucketPolicy
}

// Evaluate decides a request, in this order (RGW's
// verify_bucket/object_permission, AWS's policy evaluation logic):
//
//  1. Admin-API actions: only admins.
//  2. The resource owner managing its bucket policy: allowed (for an
//     account, its root).
//  3. A matching Deny statement in the resource policy or in one of the
//     principal's identity policies: ExplicitDeny.
//  4. Admins: allowed (after denies: gates first, bypasses after).
//  5. IAM actions (evaluateIAM) and account users (evaluateAccount) are
//     decided by AWS's identity/resource rules; users outside accounts
//     continue here, their identity policies only ever denying (RGW).
//  6. A matching Allow statement: allowed, unless RestrictPublicBuckets is
//     set, the policy is public, and the caller is not the owner.
//  7. The ACL: the action's permission (Action.ACLPermission) in the
//     bucket or object ACL, public grants skipped under IgnorePublicAcls.
//     With ACLs disabled (BucketOwnerEnforced) the bucket owner holds every
//     ACL permission and nobody else any. Bucket WRITE grants
//     s3:DeleteObjectVersion to the bucket owner only.
//  8. Actions no ACL grants (configuration, SNS): the owner.
//  9. Service actions (ListAllMyBuckets, CreateBucket, CreateTopic,
//     ListTopics): any authenticated user.
//  10. Otherwise ImplicitDeny.
//
// Owner is the resource owner's canonical id: for what an account owns,
// the account id, so "same account" is Owner == Principal.Account.
func Evaluate(in *Input) Decision {
	req := &in.Request
	p := req.Principal
	a := req.Action
	if a == ActionInvalid || a >= numActions {
		return Decision{ImplicitDeny, "invalid action"}
	}
	if a.Scope() == ScopeAdmin {
		if p.Admin {
			return Decision{Allowed, "admin user"}
		}
		return Decision{ImplicitDeny, "admin API needs an admin user"}
	}
	isOwner := !p.IsAnonymous() && p.ID == in.Owner && in.Owner != ""
	rootOwner := p.InAccount() && p.Root && in.Owner == p.Account
	if (isOwner || rootOwner) && policyManagement(a) {
		return Decision{Allowed, "bucket owner manages its policy"}
	}
	if a == STSGetCallerIdentity && !p.IsAnonymous() {
		// AWS: no permission is needed, and a Deny cannot stop it.
		return Decision{Allowed, "anyone may ask who it is"}
	}
	eff, st, via := in.Policy.evalKind(req)
	if eff == Deny {
		return Decision{ExplicitDeny, "policy " + st.Describe()}
	}
	ieff, iname, ist := p.Identity.Eval(req)
	if ieff == Deny {
		return Decision{ExplicitDeny, "identity policy " + iname + " " + ist.Describe()}
	}
	if s := p.Session; s != nil && s.Policy != nil {
		// A session may do what both its role's policies and its session
		// policy allow; a resource grant naming the role is filtered too,
		// one naming the session is not (AWS).
		seff, sst := s.Policy.Eval(req)
		if seff == Deny {
			return Decision{ExplicitDeny, "session policy " + sst.Describe()}
		}
		if seff != Allow {
			ieff = 0
			if via == ViaRole {
				eff = 0
			}
		}
	}
	if via == ViaRole {
		via = ViaDirect
	}
	if p.Admin {
		return Decision{Allowed, "admin user"}
	}
	switch a.Scope() {
	case ScopeIAM:
		return evaluateIAM(in, ieff, iname, ist)
	case ScopeSTS:
		return evaluateSTS(in, eff, st, via == ViaAccount, ieff, iname, ist)
	}
	if p.InAccount() {
		return evaluateAccount(in, eff, st, via == ViaAccount, ieff, iname, ist)
	}
	if eff == Allow {
		if in.PublicAccessBlock.RestrictPublicBuckets && !isOwner && in.Policy.IsPublic() {
			// Public and cross-account grants of a public policy are void.
		} else {
			return Decision{Allowed, "policy " + st.Describe()}
		}
	}
	if perm, where := a.ACLPermission(); perm != 0 {
		if in.Ownership.ACLsDisabled() {
			if isOwner {
				return Decision{Allowed, "bucket owner (ACLs disabled)"}
			}
		} else if a.ACLOwnerOnly() && !isOwner {
			// A WRITE grant lets others create and delete current objects,
			// never destroy versions (AWS's ACL table).
			return Decision{ImplicitDeny, fmt.Sprintf("%s grants %s to the bucket owner only", perm, a)}
		} else {
			acl := in.BucketACL
			if where == ScopeObject {
				acl = in.ObjectACL
			}
			if ok, i := acl.Permits(p, perm, in.PublicAccessBlock.IgnorePublicAcls); ok {
				return Decision{Allowed, acl.DescribeGrant(i)}
			}
		}
		return Decision{ImplicitDeny, fmt.Sprintf("no policy statement or ACL grant gives %s", perm)}
	}
	switch a.Scope() {
	case ScopeService:
		if !p.IsAnonymous() {
			return Decision{Allowed, "authenticated user"}
		}
		return Decision{ImplicitDeny, "anonymous"}
	}
	if a == S3CreateBucket && !p.IsAnonymous() {
		return Decision{Allowed, "authenticated user"}
	}
	if isOwner {
		return Decision{Allowed, "resource owner"}
	}
	return Decision{ImplicitDeny, "not the owner and no policy statement allows"}
}

// evaluateIAM decides an IAM action: Owner is the account the IAM
// resource belongs to. IAM has no resource policies: the account's root
// may do everything in its account, its users what their identity
// policies allow; nobody acts on another account (admins were allowed
// before).
func evaluateIAM(in *Input, ieff Effect, iname string, ist *Statement) Decision {
	p := in.Principal
	switch {
	case !p.InAccount():
		return Decision{ImplicitDeny, "IAM actions need an account user or an admin"}
	case p.Session != nil && !p.IsRoleSession():
		// AWS: GetSessionToken credentials cannot call IAM (without MFA,
		// which Cairn does not have).
		return Decision{ImplicitDeny, "GetSessionToken credentials cannot call IAM"}
	case in.Owner != p.Account:
		return Decision{ImplicitDeny, "another account's IAM resource"}
	case p.Root:
		return Decision{Allowed, "account root in its own account"}
	case ieff == Allow:
		return Decision{Allowed, "identity policy " + iname + " " + ist.Describe()}
	}
	return Decision{ImplicitDeny, "no identity policy allows"}
}

// evaluateAccount decides for an IAM account's user (AWS "Policy
// evaluation logic", denies already handled): the root acts freely in its
// own account; in the same account an identity Allow or a resource Allow
// naming the user suffices; across accounts both the identity side and
// the resource side (policy or ACL, naming the user or its account) must
// allow. A grant naming only the account (its id, ":root", an ACL grant
// to it) is the account's, which its users use only with an identity
// Allow. The root's identity side always allows.
func evaluateAccount(in *Input, eff Effect, st *Statement, via bool, ieff Effect, iname string, ist *Statement) Decision {
	p := in.Principal
	a := in.Action
	same := in.Owner != "" && (in.Owner == p.Account || in.Owner == p.ID)
	if p.Root && same {
		return Decision{Allowed, "account root in its own account"}
	}
	identity, idReason := ieff == Allow || p.Root, "account root"
	if ieff == Allow {
		idReason = "identity policy " + iname + " " + ist.Describe()
	}
	if a.Scope() == ScopeService || a == S3CreateBucket {
		if identity {
			return Decision{Allowed, idReason}
		}
		return Decision{ImplicitDeny, "no identity policy allows"}
	}
	if same && identity {
		return Decision{Allowed, idReason}
	}
	// The resource side: a policy Allow, else an ACL grant.
	resAny, resDirect, resReason := false, false, ""
	if eff == Allow && !(in.PublicAccessBlock.RestrictPublicBuckets && !same && in.Policy.IsPublic()) {
		resAny, resDirect, resReason = true, !via, "policy "+st.Describe()
	}
	if perm, where := a.ACLPermission(); !resAny && perm != 0 && !in.Ownership.ACLsDisabled() && !(a.ACLOwnerOnly() && !same) {
		acl := in.BucketACL
		if where == ScopeObject {
			acl = in.ObjectACL
		}
		ignore := in.PublicAccessBlock.IgnorePublicAcls
		if ok, i := acl.Permits(p, perm, ignore); ok {
			resAny, resDirect, resReason = true, true, acl.DescribeGrant(i)
		} else if ok, i := acl.Permits(Principal{ID: p.Account}, perm, ignore); ok {
			resAny, resReason = true, acl.DescribeGrant(i)
		}
	}
	switch {
	case same && resDirect:
		return Decision{Allowed, resReason}
	case same:
		return Decision{ImplicitDeny, "no identity policy allows, and no resource grant names the user"}
	case !identity:
		return Decision{ImplicitDeny, "cross-account: no identity policy allows"}
	case !resAny:
		return Decision{ImplicitDeny, "cross-account: no policy statement or ACL grant of the resource allows"}
	}
	return Decision{Allowed, idReason + " and " + resReason}
}

// evaluateSTS decides an STS action. AssumeRole* are decided by the
// role's trust policy (in.Policy, Owner the role's account), the
// resource-policy rule of AWS: in the role's account a trust statement
// naming the caller (user, role, session or OIDC provider) suffices, one
// naming only the account needs an identity Allow too (the root's
// identity side always allows); across accounts both must allow. Users
// outside accounts have no identity side: the trust policy must name
// them. GetSessionToken: any long-term credential.
func evaluateSTS(in *Input, eff Effect, st *Statement, viaAccount bool, ieff Effect, iname string, ist *Statement) Decision {
	p := in.Principal
	switch in.Action {
	case STSGetSessionToken:
		if p.IsAnonymous() || p.Session != nil {
			return Decision{ImplicitDeny, "GetSessionToken needs long-term credentials"}
		}
		return Decision{Allowed, "long-term credentials"}
	case STSGetCallerIdentity:
		return Decision{ImplicitDeny, "anonymous"}
	}
	if eff != Allow {
		return Decision{ImplicitDeny, "the role's trust policy does not allow the caller"}
	}
	trust := "trust policy " + st.Describe()
	if p.Federated != "" {
		return Decision{Allowed, trust}
	}
	if p.IsAnonymous() {
		return Decision{ImplicitDeny, "anonymous"}
	}
	same := p.InAccount() && in.Owner == p.Account
	switch {
	case !p.InAccount() && !viaAccount:
		return Decision{Allowed, trust}
	case same && !viaAccount:
		return Decision{Allowed, trust}
	case p.Root || ieff == Allow:
		if ieff == Allow {
			return Decision{Allowed, trust + " and identity policy " + iname + " " + ist.Describe()}
		}
		return Decision{Allowed, trust + " and account root"}
	}
	return Decision{ImplicitDeny, "the trust policy names the account: an identity policy must allow " + in.Action.String()}
}
