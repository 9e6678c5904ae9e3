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
//  2. The resource owner managing its bucket policy: allowed.
//  3. A matching Deny statement in the policy: ExplicitDeny.
//  4. Admins: allowed (after denies: gates first, bypasses after).
//  5. A matching Allow statement: allowed, unless RestrictPublicBuckets is
//     set, the policy is public, and the caller is not the owner.
//  6. The ACL: the action's permission (Action.ACLPermission) in the
//     bucket or object ACL, public grants skipped under IgnorePublicAcls.
//     With ACLs disabled (BucketOwnerEnforced) the bucket owner holds every
//     ACL permission and nobody else any. Bucket WRITE grants
//     s3:DeleteObjectVersion to the bucket owner only.
//  7. Actions no ACL grants (configuration, SNS): the owner.
//  8. Service actions (ListAllMyBuckets, CreateBucket, CreateTopic,
//     ListTopics): any authenticated user.
//  9. Otherwise ImplicitDeny.
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
	if isOwner && policyManagement(a) {
		return Decision{Allowed, "bucket owner manages its policy"}
	}
	eff, st := in.Policy.Eval(req)
	if eff == Deny {
		return Decision{ExplicitDeny, "policy " + st.Describe()}
	}
	if p.Admin {
		return Decision{Allowed, "admin user"}
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
