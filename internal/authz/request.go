package authz

import "strings"

// Principal is who makes a request, resolved once at authentication.
type Principal struct {
	// ID is the canonical user id (driver.User.ID); "" is anonymous.
	ID string
	// Admin is a gateway administrator: it may use the admin API and, past
	// explicit denies, every S3 and SNS resource (RGW's system users).
	Admin bool
}

// Anonymous is the principal of an unsigned request.
var Anonymous = Principal{}

// IsAnonymous reports whether p is the anonymous principal.
func (p Principal) IsAnonymous() bool { return p.ID == "" }

// ARN is the principal's IAM user ARN, as policies name it.
func (p Principal) ARN() string {
	if p.ID == "" {
		return "*"
	}
	return UserARN(p.ID)
}

// UserARN returns the IAM ARN of a Cairn user: every user is its own
// account, with an empty account id (RGW's form for an untenanted user).
func UserARN(id string) string { return "arn:aws:iam:::user/" + id }

// Resource names what a request acts on. Bucket-scoped actions use Bucket;
// object-scoped ones Bucket, Key and VersionID; SNS actions Topic (an ARN).
type Resource struct {
	Bucket    string
	Key       string
	VersionID string
	Topic     string
}

// ARN returns the resource ARN that policies' Resource patterns match,
// for action a.
func (r Resource) ARN(a Action) string {
	switch a.Scope() {
	case ScopeTopic:
		return r.Topic
	case ScopeObject:
		return "arn:aws:s3:::" + r.Bucket + "/" + r.Key
	case ScopeBucket:
		return "arn:aws:s3:::" + r.Bucket
	}
	return "*"
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
