// Package sts issues and verifies temporary credentials (AWS STS): a
// session token is self-contained, its claims (temporary secret, account,
// role, session name, expiry, session policy, tags) sealed with
// AES-256-GCM under a key of the gateway's STS keyring, which lives in
// the metadata pool so every gateway of a cluster verifies what any of
// them issued, with no store read per request. Format:
// docs/format/sts.md. The decisions (who may assume a role) are
// internal/authz's; this package mints, opens and caches.
package sts
