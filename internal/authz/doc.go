// Package authz decides whether a principal may perform an action on a
// resource. It is pure: callers load the bucket owner, ACLs, policy, public
// access block and ownership mode, and Evaluate combines them in one
// documented order (see Evaluate). It also owns the access-control
// languages: IAM policy documents (ParsePolicy), S3 ACLs (ACL, canned ACLs,
// x-amz-grant-* headers, AccessControlPolicy XML), the public access block
// and object ownership settings.
//
// Identities are canonical user ids (driver.User.ID), never access keys, so
// rotating a key changes nothing about who owns or may do what.
package authz
