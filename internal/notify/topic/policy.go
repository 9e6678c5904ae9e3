package topic

import (
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
)

// SNS actions a topic Policy can grant or deny.
const (
	ActionGetTopicAttributes = "sns:GetTopicAttributes"
	ActionSetTopicAttributes = "sns:SetTopicAttributes"
	ActionDeleteTopic        = "sns:DeleteTopic"
	ActionPublish            = "sns:Publish"
)

// ParseTopicPolicy parses and validates a Policy attribute with the one
// policy engine (internal/authz): IAM language, sns:* actions, topic ARNs.
// "" is no policy (nil).
func ParseTopicPolicy(doc string) (*authz.Policy, error) {
	if strings.TrimSpace(doc) == "" {
		return nil, nil
	}
	p, err := authz.ParseTopicPolicy([]byte(doc))
	if err != nil {
		return nil, invalid("Policy: %v", err)
	}
	return p, nil
}

// MayAccess decides action (an sns:* name) on t for p through the one
// authorizer (authz.Evaluate) with the topic's owner and Policy: an
// explicit Deny refuses everyone, the owner and admins included (as RGW);
// an Allow grants; otherwise the owner (or an admin) may. g supplies the
// aws:* condition keys. A Policy that does not parse grants nothing beyond
// that.
func (t *Topic) MayAccess(p authz.Principal, g authz.Global, action string) bool {
	act, ok := authz.ActionByName(action)
	if !ok {
		return false
	}
	pol, _ := ParseTopicPolicy(t.Settings.Policy)
	in := authz.Input{
		Request: authz.Request{Principal: p, Action: act, Resource: authz.Resource{Topic: t.ARN},
			Context: authz.GlobalContext(authz.WithPrincipalKeys(pol, p), g)},
		Owner:  t.Owner,
		Policy: pol,
	}
	return authz.Evaluate(&in).Allowed()
}

// ViewFor returns t as owner (the caller's owning id: its account for an
// IAM account's users, else its user id) may see it: the owner sees it
// whole; anyone else (a Policy grantee, an admin) sees the push-endpoint
// with its password and query values redacted and no password attribute.
func (t *Topic) ViewFor(owner string) *Topic {
	if owner == t.Owner {
		return t
	}
	v := *t
	if v.Settings.PushEndpoint != "" {
		v.Settings.PushEndpoint = redactEndpoint(v.Settings.PushEndpoint)
	}
	if v.Settings.Password != "" {
		v.Settings.Password = "xxxxx"
	}
	return &v
}
