// Package s3err is the S3 (and SNS query API) error registry: every error
// the gateway sends, as data ({Code, HTTPStatus, Description}), the *Error
// type that carries one with request context, and the writers that render
// the XML error documents.
//
// It owns the wire shape of errors only. Mapping domain errors (object
// layer, driver) onto registry entries happens once, at the HTTP edge in
// package s3api; anything unmapped becomes InternalError via From.
package s3err
