package authz

import "strings"

// Action is one authorizable operation, named as in AWS's service
// authorization reference (s3:GetObject, sns:Publish, ...).
type Action uint16

// Actions. The zero value is invalid.
const (
	ActionInvalid Action = iota

	// S3, bucket level.
	S3ListAllMyBuckets
	S3CreateBucket
	S3DeleteBucket
	S3ListBucket
	S3ListBucketVersions
	S3ListBucketMultipartUploads
	S3GetBucketLocation
	S3GetBucketAcl
	S3PutBucketAcl
	S3GetBucketPolicy
	S3PutBucketPolicy
	S3DeleteBucketPolicy
	S3GetBucketPolicyStatus
	S3GetBucketPublicAccessBlock
	S3PutBucketPublicAccessBlock
	S3GetBucketOwnershipControls
	S3PutBucketOwnershipControls
	S3GetBucketVersioning
	S3PutBucketVersioning
	S3GetBucketNotification
	S3PutBucketNotification
	S3GetBucketTagging
	S3PutBucketTagging
	S3GetBucketCORS
	S3PutBucketCORS
	S3GetLifecycleConfiguration
	S3PutLifecycleConfiguration
	S3GetEncryptionConfiguration
	S3PutEncryptionConfiguration
	S3GetBucketObjectLockConfiguration
	S3PutBucketObjectLockConfiguration
	S3GetBucketLogging
	S3PutBucketLogging

	// S3, object level.
	S3GetObject
	S3GetObjectVersion
	S3GetObjectAcl
	S3GetObjectVersionAcl
	S3PutObject
	S3PutObjectAcl
	S3PutObjectVersionAcl
	S3DeleteObject
	S3DeleteObjectVersion
	S3GetObjectTagging
	S3GetObjectVersionTagging
	S3PutObjectTagging
	S3PutObjectVersionTagging
	S3DeleteObjectTagging
	S3DeleteObjectVersionTagging
	S3GetObjectAttributes
	S3GetObjectVersionAttributes
	S3AbortMultipartUpload
	S3ListMultipartUploadParts
	S3RestoreObject
	S3GetObjectRetention
	S3PutObjectRetention
	S3GetObjectLegalHold
	S3PutObjectLegalHold
	S3BypassGovernanceRetention
	S3GetObjectTorrent
	S3GetObjectVersionTorrent

	// CairnBucketOwnerOnly decides requests for bucket operations Cairn
	// does not implement (they answer NotImplemented): only the bucket
	// owner (and admins) learn that; no policy statement can name it.
	// Served routes never use it: each has its own action.
	CairnBucketOwnerOnly
	// CairnGetUsage is RGW's GET /?usage: a user reads its own usage log.
	CairnGetUsage

	// SNS.
	SNSCreateTopic
	SNSDeleteTopic
	SNSGetTopicAttributes
	SNSSetTopicAttributes
	SNSListTopics
	SNSPublish

	// IAM (the account's identity store; resource: the user's ARN).
	IAMCreateUser
	IAMGetUser
	IAMListUsers
	IAMUpdateUser
	IAMDeleteUser
	IAMCreateAccessKey
	IAMListAccessKeys
	IAMUpdateAccessKey
	IAMDeleteAccessKey
	IAMPutUserPolicy
	IAMGetUserPolicy
	IAMListUserPolicies
	IAMDeleteUserPolicy
	IAMAttachUserPolicy
	IAMDetachUserPolicy
	IAMListAttachedUserPolicies
	IAMGetAccountSummary
	IAMCreateGroup
	IAMGetGroup
	IAMListGroups
	IAMDeleteGroup
	IAMAddUserToGroup
	IAMRemoveUserFromGroup
	IAMListGroupsForUser
	IAMPutGroupPolicy
	IAMGetGroupPolicy
	IAMListGroupPolicies
	IAMDeleteGroupPolicy
	IAMAttachGroupPolicy
	IAMDetachGroupPolicy
	IAMListAttachedGroupPolicies
	IAMCreateRole
	IAMGetRole
	IAMListRoles
	IAMDeleteRole
	IAMUpdateRole
	IAMUpdateAssumeRolePolicy
	IAMPutRolePolicy
	IAMGetRolePolicy
	IAMListRolePolicies
	IAMDeleteRolePolicy
	IAMAttachRolePolicy
	IAMDetachRolePolicy
	IAMListAttachedRolePolicies
	IAMCreateOpenIDConnectProvider
	IAMGetOpenIDConnectProvider
	IAMListOpenIDConnectProviders
	IAMDeleteOpenIDConnectProvider
	IAMUpdateGroup
	IAMUpdateOpenIDConnectProviderThumbprint
	IAMAddClientIDToOpenIDConnectProvider
	IAMRemoveClientIDFromOpenIDConnectProvider

	// STS (resource: the role's ARN; the role's trust policy is the
	// resource policy).
	STSAssumeRole
	STSAssumeRoleWithWebIdentity
	STSTagSession
	STSGetSessionToken
	STSGetCallerIdentity

	// Cairn's admin API (the gateway's own; RGW calls these "caps").
	AdminUsersRead
	AdminUsersWrite
	AdminBucketsRead
	AdminBucketsWrite
	AdminTopicsRead
	AdminTopicsWrite
	AdminRados
	AdminMetricsRead // scrape /metrics
	AdminKMS         // create and rotate KMS keys, re-seal secrets
	AdminRateLimitRead
	AdminRateLimitWrite
	AdminUsageRead
	AdminUsageWrite

	numActions
)

// Permission is a set of S3 ACL permissions.
type Permission uint8

// ACL permissions. FullControl is all four.
const (
	PermRead Permission = 1 << iota
	PermWrite
	PermReadACP
	PermWriteACP
	PermFullControl = PermRead | PermWrite | PermReadACP | PermWriteACP
)

// Scope says which ACL an action is checked against.
type Scope uint8

// Scopes.
const (
	ScopeService Scope = iota // no resource (ListAllMyBuckets, CreateTopic)
	ScopeBucket               // the bucket's ACL
	ScopeObject               // the object's ACL
	ScopeTopic                // an SNS topic (no ACL)
	ScopeAdmin                // the gateway's admin API (no ACL, no policy)
	ScopeIAM                  // an account's IAM resource (no ACL, identity policies only)
	ScopeSTS                  // STS: a role, guarded by its trust policy
)

type actionInfo struct {
	name  string
	scope Scope
	// perm is the ACL permission that grants the action; 0 means no ACL
	// grant does, only the resource owner or a policy. Bucket-scoped
	// object writes (PutObject, DeleteObject) check the bucket's WRITE.
	perm Permission
	// aclScope is where perm is looked up when it differs from scope.
	aclScope Scope
}

// actions is the action→ACL-permission table (AWS "Mapping of ACL
// permissions and access policy permissions"; RGW op_to_perm where AWS's
// table is silent: READ → object tagging and attributes, bucket READ →
// ListMultipartUploadParts, bucket WRITE → AbortMultipartUpload; see
// docs/design/access-control.md).
var actions = [numActions]actionInfo{
	S3ListAllMyBuckets:                 {"s3:ListAllMyBuckets", ScopeService, 0, 0},
	S3CreateBucket:                     {"s3:CreateBucket", ScopeBucket, 0, 0},
	S3DeleteBucket:                     {"s3:DeleteBucket", ScopeBucket, 0, 0},
	S3ListBucket:                       {"s3:ListBucket", ScopeBucket, PermRead, ScopeBucket},
	S3ListBucketVersions:               {"s3:ListBucketVersions", ScopeBucket, PermRead, ScopeBucket},
	S3ListBucketMultipartUploads:       {"s3:ListBucketMultipartUploads", ScopeBucket, PermRead, ScopeBucket},
	S3GetBucketLocation:                {"s3:GetBucketLocation", ScopeBucket, 0, 0},
	S3GetBucketAcl:                     {"s3:GetBucketAcl", ScopeBucket, PermReadACP, ScopeBucket},
	S3PutBucketAcl:                     {"s3:PutBucketAcl", ScopeBucket, PermWriteACP, ScopeBucket},
	S3GetBucketPolicy:                  {"s3:GetBucketPolicy", ScopeBucket, 0, 0},
	S3PutBucketPolicy:                  {"s3:PutBucketPolicy", ScopeBucket, 0, 0},
	S3DeleteBucketPolicy:               {"s3:DeleteBucketPolicy", ScopeBucket, 0, 0},
	S3GetBucketPolicyStatus:            {"s3:GetBucketPolicyStatus", ScopeBucket, 0, 0},
	S3GetBucketPublicAccessBlock:       {"s3:GetBucketPublicAccessBlock", ScopeBucket, 0, 0},
	S3PutBucketPublicAccessBlock:       {"s3:PutBucketPublicAccessBlock", ScopeBucket, 0, 0},
	S3GetBucketOwnershipControls:       {"s3:GetBucketOwnershipControls", ScopeBucket, 0, 0},
	S3PutBucketOwnershipControls:       {"s3:PutBucketOwnershipControls", ScopeBucket, 0, 0},
	S3GetBucketVersioning:              {"s3:GetBucketVersioning", ScopeBucket, 0, 0},
	S3PutBucketVersioning:              {"s3:PutBucketVersioning", ScopeBucket, 0, 0},
	S3GetBucketNotification:            {"s3:GetBucketNotification", ScopeBucket, 0, 0},
	S3PutBucketNotification:            {"s3:PutBucketNotification", ScopeBucket, 0, 0},
	S3GetBucketTagging:                 {"s3:GetBucketTagging", ScopeBucket, 0, 0},
	S3PutBucketTagging:                 {"s3:PutBucketTagging", ScopeBucket, 0, 0},
	S3GetBucketCORS:                    {"s3:GetBucketCORS", ScopeBucket, 0, 0},
	S3PutBucketCORS:                    {"s3:PutBucketCORS", ScopeBucket, 0, 0},
	S3GetLifecycleConfiguration:        {"s3:GetLifecycleConfiguration", ScopeBucket, 0, 0},
	S3PutLifecycleConfiguration:        {"s3:PutLifecycleConfiguration", ScopeBucket, 0, 0},
	S3GetEncryptionConfiguration:       {"s3:GetEncryptionConfiguration", ScopeBucket, 0, 0},
	S3PutEncryptionConfiguration:       {"s3:PutEncryptionConfiguration", ScopeBucket, 0, 0},
	S3GetBucketObjectLockConfiguration: {"s3:GetBucketObjectLockConfiguration", ScopeBucket, 0, 0},
	S3PutBucketObjectLockConfiguration: {"s3:PutBucketObjectLockConfiguration", ScopeBucket, 0, 0},
	S3GetBucketLogging:                 {"s3:GetBucketLogging", ScopeBucket, 0, 0},
	S3PutBucketLogging:                 {"s3:PutBucketLogging", ScopeBucket, 0, 0},

	S3GetObject:                  {"s3:GetObject", ScopeObject, PermRead, ScopeObject},
	S3GetObjectVersion:           {"s3:GetObjectVersion", ScopeObject, PermRead, ScopeObject},
	S3GetObjectAcl:               {"s3:GetObjectAcl", ScopeObject, PermReadACP, ScopeObject},
	S3GetObjectVersionAcl:        {"s3:GetObjectVersionAcl", ScopeObject, PermReadACP, ScopeObject},
	S3PutObject:                  {"s3:PutObject", ScopeObject, PermWrite, ScopeBucket},
	S3PutObjectAcl:               {"s3:PutObjectAcl", ScopeObject, PermWriteACP, ScopeObject},
	S3PutObjectVersionAcl:        {"s3:PutObjectVersionAcl", ScopeObject, PermWriteACP, ScopeObject},
	S3DeleteObject:               {"s3:DeleteObject", ScopeObject, PermWrite, ScopeBucket},
	S3DeleteObjectVersion:        {"s3:DeleteObjectVersion", ScopeObject, PermWrite, ScopeBucket},
	S3GetObjectTagging:           {"s3:GetObjectTagging", ScopeObject, PermRead, ScopeObject},
	S3GetObjectVersionTagging:    {"s3:GetObjectVersionTagging", ScopeObject, PermRead, ScopeObject},
	S3PutObjectTagging:           {"s3:PutObjectTagging", ScopeObject, 0, 0},
	S3PutObjectVersionTagging:    {"s3:PutObjectVersionTagging", ScopeObject, 0, 0},
	S3DeleteObjectTagging:        {"s3:DeleteObjectTagging", ScopeObject, 0, 0},
	S3DeleteObjectVersionTagging: {"s3:DeleteObjectVersionTagging", ScopeObject, 0, 0},
	S3GetObjectAttributes:        {"s3:GetObjectAttributes", ScopeObject, PermRead, ScopeObject},
	S3GetObjectVersionAttributes: {"s3:GetObjectVersionAttributes", ScopeObject, PermRead, ScopeObject},
	S3AbortMultipartUpload:       {"s3:AbortMultipartUpload", ScopeObject, PermWrite, ScopeBucket},
	S3ListMultipartUploadParts:   {"s3:ListMultipartUploadParts", ScopeObject, PermRead, ScopeBucket},
	S3RestoreObject:              {"s3:RestoreObject", ScopeObject, 0, 0},
	S3GetObjectRetention:         {"s3:GetObjectRetention", ScopeObject, 0, 0},
	S3PutObjectRetention:         {"s3:PutObjectRetention", ScopeObject, 0, 0},
	S3GetObjectLegalHold:         {"s3:GetObjectLegalHold", ScopeObject, 0, 0},
	S3PutObjectLegalHold:         {"s3:PutObjectLegalHold", ScopeObject, 0, 0},
	S3BypassGovernanceRetention:  {"s3:BypassGovernanceRetention", ScopeObject, 0, 0},
	S3GetObjectTorrent:           {"s3:GetObjectTorrent", ScopeObject, PermRead, ScopeObject},
	S3GetObjectVersionTorrent:    {"s3:GetObjectVersionTorrent", ScopeObject, PermRead, ScopeObject},

	CairnBucketOwnerOnly: {"cairn:BucketOwnerOnly", ScopeBucket, 0, 0},
	CairnGetUsage:        {"cairn:GetUsage", ScopeService, 0, 0},

	SNSCreateTopic:        {"sns:CreateTopic", ScopeService, 0, 0},
	SNSDeleteTopic:        {"sns:DeleteTopic", ScopeTopic, 0, 0},
	SNSGetTopicAttributes: {"sns:GetTopicAttributes", ScopeTopic, 0, 0},
	SNSSetTopicAttributes: {"sns:SetTopicAttributes", ScopeTopic, 0, 0},
	SNSListTopics:         {"sns:ListTopics", ScopeService, 0, 0},
	SNSPublish:            {"sns:Publish", ScopeTopic, 0, 0},

	IAMCreateUser:                {"iam:CreateUser", ScopeIAM, 0, 0},
	IAMGetUser:                   {"iam:GetUser", ScopeIAM, 0, 0},
	IAMListUsers:                 {"iam:ListUsers", ScopeIAM, 0, 0},
	IAMUpdateUser:                {"iam:UpdateUser", ScopeIAM, 0, 0},
	IAMDeleteUser:                {"iam:DeleteUser", ScopeIAM, 0, 0},
	IAMCreateAccessKey:           {"iam:CreateAccessKey", ScopeIAM, 0, 0},
	IAMListAccessKeys:            {"iam:ListAccessKeys", ScopeIAM, 0, 0},
	IAMUpdateAccessKey:           {"iam:UpdateAccessKey", ScopeIAM, 0, 0},
	IAMDeleteAccessKey:           {"iam:DeleteAccessKey", ScopeIAM, 0, 0},
	IAMPutUserPolicy:             {"iam:PutUserPolicy", ScopeIAM, 0, 0},
	IAMGetUserPolicy:             {"iam:GetUserPolicy", ScopeIAM, 0, 0},
	IAMListUserPolicies:          {"iam:ListUserPolicies", ScopeIAM, 0, 0},
	IAMDeleteUserPolicy:          {"iam:DeleteUserPolicy", ScopeIAM, 0, 0},
	IAMAttachUserPolicy:          {"iam:AttachUserPolicy", ScopeIAM, 0, 0},
	IAMDetachUserPolicy:          {"iam:DetachUserPolicy", ScopeIAM, 0, 0},
	IAMListAttachedUserPolicies:  {"iam:ListAttachedUserPolicies", ScopeIAM, 0, 0},
	IAMGetAccountSummary:         {"iam:GetAccountSummary", ScopeIAM, 0, 0},
	IAMCreateGroup:               {"iam:CreateGroup", ScopeIAM, 0, 0},
	IAMGetGroup:                  {"iam:GetGroup", ScopeIAM, 0, 0},
	IAMListGroups:                {"iam:ListGroups", ScopeIAM, 0, 0},
	IAMDeleteGroup:               {"iam:DeleteGroup", ScopeIAM, 0, 0},
	IAMAddUserToGroup:            {"iam:AddUserToGroup", ScopeIAM, 0, 0},
	IAMRemoveUserFromGroup:       {"iam:RemoveUserFromGroup", ScopeIAM, 0, 0},
	IAMListGroupsForUser:         {"iam:ListGroupsForUser", ScopeIAM, 0, 0},
	IAMPutGroupPolicy:            {"iam:PutGroupPolicy", ScopeIAM, 0, 0},
	IAMGetGroupPolicy:            {"iam:GetGroupPolicy", ScopeIAM, 0, 0},
	IAMListGroupPolicies:         {"iam:ListGroupPolicies", ScopeIAM, 0, 0},
	IAMDeleteGroupPolicy:         {"iam:DeleteGroupPolicy", ScopeIAM, 0, 0},
	IAMAttachGroupPolicy:         {"iam:AttachGroupPolicy", ScopeIAM, 0, 0},
	IAMDetachGroupPolicy:         {"iam:DetachGroupPolicy", ScopeIAM, 0, 0},
	IAMListAttachedGroupPolicies: {"iam:ListAttachedGroupPolicies", ScopeIAM, 0, 0},

	IAMCreateRole:                  {"iam:CreateRole", ScopeIAM, 0, 0},
	IAMGetRole:                     {"iam:GetRole", ScopeIAM, 0, 0},
	IAMListRoles:                   {"iam:ListRoles", ScopeIAM, 0, 0},
	IAMDeleteRole:                  {"iam:DeleteRole", ScopeIAM, 0, 0},
	IAMUpdateRole:                  {"iam:UpdateRole", ScopeIAM, 0, 0},
	IAMUpdateAssumeRolePolicy:      {"iam:UpdateAssumeRolePolicy", ScopeIAM, 0, 0},
	IAMPutRolePolicy:               {"iam:PutRolePolicy", ScopeIAM, 0, 0},
	IAMGetRolePolicy:               {"iam:GetRolePolicy", ScopeIAM, 0, 0},
	IAMListRolePolicies:            {"iam:ListRolePolicies", ScopeIAM, 0, 0},
	IAMDeleteRolePolicy:            {"iam:DeleteRolePolicy", ScopeIAM, 0, 0},
	IAMAttachRolePolicy:            {"iam:AttachRolePolicy", ScopeIAM, 0, 0},
	IAMDetachRolePolicy:            {"iam:DetachRolePolicy", ScopeIAM, 0, 0},
	IAMListAttachedRolePolicies:    {"iam:ListAttachedRolePolicies", ScopeIAM, 0, 0},
	IAMCreateOpenIDConnectProvider: {"iam:CreateOpenIDConnectProvider", ScopeIAM, 0, 0},
	IAMGetOpenIDConnectProvider:    {"iam:GetOpenIDConnectProvider", ScopeIAM, 0, 0},
	IAMListOpenIDConnectProviders:  {"iam:ListOpenIDConnectProviders", ScopeIAM, 0, 0},
	IAMDeleteOpenIDConnectProvider: {"iam:DeleteOpenIDConnectProvider", ScopeIAM, 0, 0},
	IAMUpdateGroup:                 {"iam:UpdateGroup", ScopeIAM, 0, 0},

	IAMUpdateOpenIDConnectProviderThumbprint:   {"iam:UpdateOpenIDConnectProviderThumbprint", ScopeIAM, 0, 0},
	IAMAddClientIDToOpenIDConnectProvider:      {"iam:AddClientIDToOpenIDConnectProvider", ScopeIAM, 0, 0},
	IAMRemoveClientIDFromOpenIDConnectProvider: {"iam:RemoveClientIDFromOpenIDConnectProvider", ScopeIAM, 0, 0},

	STSAssumeRole:                {"sts:AssumeRole", ScopeSTS, 0, 0},
	STSAssumeRoleWithWebIdentity: {"sts:AssumeRoleWithWebIdentity", ScopeSTS, 0, 0},
	STSTagSession:                {"sts:TagSession", ScopeSTS, 0, 0},
	STSGetSessionToken:           {"sts:GetSessionToken", ScopeSTS, 0, 0},
	STSGetCallerIdentity:         {"sts:GetCallerIdentity", ScopeSTS, 0, 0},

	AdminUsersRead:    {"admin:users-read", ScopeAdmin, 0, 0},
	AdminUsersWrite:   {"admin:users-write", ScopeAdmin, 0, 0},
	AdminBucketsRead:  {"admin:buckets-read", ScopeAdmin, 0, 0},
	AdminBucketsWrite: {"admin:buckets-write", ScopeAdmin, 0, 0},
	AdminTopicsRead:   {"admin:topics-read", ScopeAdmin, 0, 0},
	AdminTopicsWrite:  {"admin:topics-write", ScopeAdmin, 0, 0},
	AdminRados:        {"admin:rados", ScopeAdmin, 0, 0},
	AdminMetricsRead:  {"admin:metrics-read", ScopeAdmin, 0, 0},
	AdminKMS:          {"admin:kms", ScopeAdmin, 0, 0},

	AdminRateLimitRead:  {"admin:ratelimit-read", ScopeAdmin, 0, 0},
	AdminRateLimitWrite: {"admin:ratelimit-write", ScopeAdmin, 0, 0},
	AdminUsageRead:      {"admin:usage-read", ScopeAdmin, 0, 0},
	AdminUsageWrite:     {"admin:usage-write", ScopeAdmin, 0, 0},
}

// String returns the action's reference name, e.g. "s3:GetObject".
func (a Action) String() string {
	if a == ActionInvalid || a >= numActions {
		return "invalid"
	}
	return actions[a].name
}

// Scope returns the kind of resource the action applies to.
func (a Action) Scope() Scope { return actions[a].scope }

// ACLPermission returns the ACL permission granting a and the ACL it is
// looked up in (bucket or object); perm 0 means no ACL grant permits a.
func (a Action) ACLPermission() (perm Permission, where Scope) {
	i := actions[a]
	return i.perm, i.aclScope
}

// ACLOwnerOnly reports whether a's ACL permission grants it only to the
// bucket owner (s3:DeleteObjectVersion through bucket WRITE).
// AWS: "when the grantee is the bucket owner, granting WRITE permission in
// a bucket ACL allows the s3:DeleteObjectVersion action".
func (a Action) ACLOwnerOnly() bool { return a == S3DeleteObjectVersion }

// Service returns the service prefix ("s3", "sns", "iam", "admin").
func (a Action) Service() string {
	s, _, _ := strings.Cut(a.String(), ":")
	return s
}

// ActionByName returns the action named name, case-insensitively (IAM
// action names are case-insensitive).
func ActionByName(name string) (Action, bool) {
	for a := Action(1); a < numActions; a++ {
		if strings.EqualFold(actions[a].name, name) {
			return a, true
		}
	}
	return ActionInvalid, false
}

// AllActions returns every valid action, for tests and documentation.
func AllActions() []Action {
	out := make([]Action, 0, numActions-1)
	for a := Action(1); a < numActions; a++ {
		out = append(out, a)
	}
	return out
}

// actionSet is a bitset over Action, the compiled form of a policy
// statement's Action or NotAction list.
type actionSet [(numActions + 63) / 64]uint64

func (s *actionSet) add(a Action)      { s[a/64] |= 1 << (a % 64) }
func (s *actionSet) has(a Action) bool { return s[a/64]&(1<<(a%64)) != 0 }
func (s *actionSet) empty() bool {
	for _, w := range s {
		if w != 0 {
			return false
		}
	}
	return true
}

// matchActions compiles an Action pattern ("s3:Get*", "*") into set, and
// reports whether it names at least one known action of an allowed
// service.
func matchActions(set *actionSet, pattern string, services []string) bool {
	if pattern == "*" {
		n := 0
		for a := Action(1); a < numActions; a++ {
			if serviceAllowed(a.Service(), services) {
				set.add(a)
				n++
			}
		}
		return n > 0
	}
	svc, _, ok := strings.Cut(pattern, ":")
	if !ok || !serviceAllowed(strings.ToLower(svc), services) {
		return false
	}
	lp := strings.ToLower(pattern)
	n := 0
	for a := Action(1); a < numActions; a++ {
		if wildMatch(lp, strings.ToLower(actions[a].name)) {
			set.add(a)
			n++
		}
	}
	if n == 0 && !strings.ContainsAny(pattern, "*?") {
		return knownUnmodelled[lp]
	}
	// A wildcard matching nothing we implement is still valid IAM.
	return true
}

func serviceAllowed(svc string, services []string) bool {
	for _, s := range services {
		if s == svc {
			return true
		}
	}
	return false
}

// knownUnmodelled are AWS S3 action names Cairn accepts in a policy but
// has no operation for; a statement naming them is valid and matches
// nothing.
var knownUnmodelled = map[string]bool{
	"s3:getbucketwebsite": true, "s3:putbucketwebsite": true, "s3:deletebucketwebsite": true,
	"s3:getreplicationconfiguration": true, "s3:putreplicationconfiguration": true,
	"s3:getaccelerateconfiguration": true, "s3:putaccelerateconfiguration": true,
	"s3:getbucketrequestpayment": true, "s3:putbucketrequestpayment": true,
	"s3:getinventoryconfiguration": true, "s3:putinventoryconfiguration": true,
	"s3:getmetricsconfiguration": true, "s3:putmetricsconfiguration": true,
	"s3:getanalyticsconfiguration": true, "s3:putanalyticsconfiguration": true,
	"s3:getintelligenttieringconfiguration": true, "s3:putintelligenttieringconfiguration": true,
	"s3:objectowneroverridetobucketowner": true, "s3:replicateobject": true,
	"s3:replicatedelete": true, "s3:replicatetags": true,
	"s3:getobjectversionforreplication": true,
	"sns:subscribe":                     true, "sns:unsubscribe": true,
	"sns:listsubscriptionsbytopic": true, "sns:addpermission": true, "sns:removepermission": true,
	"sns:tagresource": true, "sns:untagresource": true, "sns:listtagsforresource": true,
	"iam:getrole": true, "iam:createrole": true, "iam:deleterole": true, "iam:listroles": true,
	"iam:passrole": true, "iam:changepassword": true, "iam:getaccountpasswordpolicy": true,
	"sts:assumerole": true, "sts:getcalleridentity": true, "sts:getsessiontoken": true,
}
