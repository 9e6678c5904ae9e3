// Package iam owns IAM accounts and the IAM semantics of their users:
// account records and name claims, users within an account (paths,
// case-insensitive unique names), access keys with statuses and AWS's
// limit of two per user, inline user policies and attached managed
// policies. It sits beside the driver, which stores the user records and
// access-key claims it shares with users outside accounts; authorization
// of IAM requests stays in internal/authz.
//
// Layout in pool default.rgw.meta (docs/format/iam.md):
//
//	namespace accounts        object <account id>            account JSON
//	namespace accounts.name   object <account name>          data: account id (exclusive create)
//	namespace accounts.users  object <account id>$<lower name> data: user id (exclusive create)
//
// Every claim is one exclusive create, so two gateways can never create
// the same account name or user name twice.
package iam
