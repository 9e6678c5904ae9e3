package topic

import (
	"encoding/json"
	"errors"
	"path"
	"strings"
)

// SNS actions a topic Policy can grant or deny.
const (
	ActionGetTopicAttributes = "sns:GetTopicAttributes"
	ActionSetTopicAttributes = "sns:SetTopicAttributes"
	ActionDeleteTopic        = "sns:DeleteTopic"
	ActionPublish            = "sns:Publish"
)

// PolicyEffect is the outcome of evaluating a topic Policy.
type PolicyEffect int

const (
	PolicyPass  PolicyEffect = iota // no statement matched: the owner check decides
	PolicyAllow                     // an Allow matched and no Deny did
	PolicyDeny                      // a Deny matched: refused, even for the owner
)

// TopicPolicy is a parsed topic Policy attribute: a deliberately small
// IAM-style evaluator (Effect, Principal, Action, Resource) for the four
// SNS actions above. It is self-contained until a shared policy engine
// takes over. Statements using what it does not evaluate (Condition,
// NotPrincipal, NotAction, NotResource) are read conservatively: such an
// Allow never matches and such a Deny always matches.
type TopicPolicy struct {
	statements []policyStatement
}

type policyStatement struct {
	deny       bool
	principals []string // "*" or user ids
	actions    []string // lower-case patterns
	resources  []string
	opaque     bool // uses elements this evaluator does not evaluate
}

// ParseTopicPolicy parses a Policy attribute. "" is an empty policy.
func ParseTopicPolicy(doc string) (*TopicPolicy, error) {
	p := &TopicPolicy{}
	if strings.TrimSpace(doc) == "" {
		return p, nil
	}
	var raw struct {
		Statement json.RawMessage
	}
	if err := json.Unmarshal([]byte(doc), &raw); err != nil {
		return nil, invalid("Policy is not valid JSON: %v", err)
	}
	var stmts []map[string]json.RawMessage
	if len(raw.Statement) > 0 && raw.Statement[0] == '{' {
		var one map[string]json.RawMessage
		if err := json.Unmarshal(raw.Statement, &one); err != nil {
			return nil, invalid("Policy: bad Statement: %v", err)
		}
		stmts = append(stmts, one)
	} else if len(raw.Statement) > 0 {
		if err := json.Unmarshal(raw.Statement, &stmts); err != nil {
			return nil, invalid("Policy: bad Statement: %v", err)
		}
	}
	for i, m := range stmts {
		var st policyStatement
		var effect string
		if err := json.Unmarshal(m["Effect"], &effect); err != nil {
			return nil, invalid("Policy: statement %d: Effect must be Allow or Deny", i)
		}
		switch effect {
		case "Allow":
		case "Deny":
			st.deny = true
		default:
			return nil, invalid("Policy: statement %d: Effect must be Allow or Deny", i)
		}
		for _, k := range []string{"Condition", "NotPrincipal", "NotAction", "NotResource"} {
			if _, ok := m[k]; ok {
				st.opaque = true
			}
		}
		var err error
		if st.principals, err = principals(m["Principal"]); err != nil {
			return nil, invalid("Policy: statement %d: %v", i, err)
		}
		if st.actions, err = stringOrList(m["Action"]); err != nil {
			return nil, invalid("Policy: statement %d: Action: %v", i, err)
		}
		for j := range st.actions {
			st.actions[j] = strings.ToLower(st.actions[j])
		}
		if st.resources, err = stringOrList(m["Resource"]); err != nil {
			return nil, invalid("Policy: statement %d: Resource: %v", i, err)
		}
		if _, ok := m["Principal"]; !st.opaque && (!ok || len(st.actions) == 0) {
			return nil, invalid("Policy: statement %d needs Principal and Action", i)
		}
		p.statements = append(p.statements, st)
	}
	return p, nil
}

// Eval decides action on resource (a topic ARN) for user: any matching
// Deny wins, else any matching Allow, else PolicyPass.
func (p *TopicPolicy) Eval(user, action, resource string) PolicyEffect {
	allowed := false
	action = strings.ToLower(action)
	for _, st := range p.statements {
		match := st.opaque || (matchAny(st.principals, user, principalMatch) &&
			matchAny(st.actions, action, globMatch) &&
			(len(st.resources) == 0 || matchAny(st.resources, resource, globMatch)))
		if st.opaque && !st.deny {
			match = false
		}
		if !match {
			continue
		}
		if st.deny {
			return PolicyDeny
		}
		allowed = true
	}
	if allowed {
		return PolicyAllow
	}
	return PolicyPass
}

// MayAccess is the topic access rule: an explicit Deny refuses everyone
// (the owner included, as RGW), an Allow grants, otherwise only the owner
// may. A Policy that does not parse grants nothing beyond the owner.
func (t *Topic) MayAccess(user, action string) bool {
	p, err := ParseTopicPolicy(t.Settings.Policy)
	if err != nil {
		return t.Owner == user
	}
	switch p.Eval(user, action, t.ARN) {
	case PolicyDeny:
		return false
	case PolicyAllow:
		return true
	}
	return t.Owner == user
}

func matchAny(patterns []string, v string, match func(p, v string) bool) bool {
	for _, p := range patterns {
		if match(p, v) {
			return true
		}
	}
	return false
}

// principalMatch matches "*", a user id, or an IAM user ARN
// (arn:aws:iam::<tenant>:user/<id>) against user.
func principalMatch(p, user string) bool {
	if p == "*" {
		return true
	}
	if rest, ok := strings.CutPrefix(p, "arn:aws:iam::"); ok {
		_, id, ok := strings.Cut(rest, ":user/")
		return ok && id == user
	}
	return p == user
}

// globMatch matches IAM wildcards: * any run, ? one character.
func globMatch(p, v string) bool {
	if p == "*" {
		return true
	}
	// path.Match treats '/' specially and '[' as a class: escape both
	// meanings away by matching segment-free strings only.
	if strings.ContainsAny(p, "[\\") || strings.Contains(v, "/") {
		return p == v
	}
	ok, err := path.Match(p, v)
	return err == nil && ok
}

func stringOrList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, err
	}
	return many, nil
}

// principals reads "*", {"AWS": "*" | id | [ids]}.
func principals(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var star string
	if err := json.Unmarshal(raw, &star); err == nil {
		if star != "*" {
			return nil, errPrincipal
		}
		return []string{"*"}, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, errPrincipal
	}
	var out []string
	for k, v := range m {
		if k != "AWS" {
			continue // service principals never name a Cairn user
		}
		ids, err := stringOrList(v)
		if err != nil {
			return nil, errPrincipal
		}
		out = append(out, ids...)
	}
	return out, nil
}

var errPrincipal = errors.New(`Principal must be "*" or {"AWS": ...}`)

// ViewFor returns t as user may see it: the owner sees it whole; anyone
// else (a Policy grantee, an admin) sees the push-endpoint with its
// password and query values redacted and no password attribute.
func (t *Topic) ViewFor(user string) *Topic {
	if user == t.Owner {
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
