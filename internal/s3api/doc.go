// Package s3api is Cairn's HTTP layer: routing (path- and
// virtual-host-style), authentication hand-off (Authenticator; SigV4 via
// package sigv4), bucket ownership, the S3 operation handlers (one file per
// family), the RGW-style admin REST API, and the single mapping from
// domain errors to S3 errors (errors.go). It talks to the gateway only
// through Backend and holds no package-level mutable state.
//
// See docs/design/s3api.md for routes, the auth flow and extension points.
package s3api
