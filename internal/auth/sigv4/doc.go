// Package sigv4 authenticates S3 (and SNS query API) requests signed with
// AWS Signature Version 4 and verifies their bodies as they stream.
//
// It owns: parsing the Authorization header and presigned query
// parameters; canonical requests (S3 path rules: the decoded path encoded
// once, never normalised); clock skew and presign expiry against an
// injected clock; constant-time signature comparison; and the request body
// pipeline (Body): signed sha256 payloads, the aws-chunked decoder for
// STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER] and
// STREAMING-UNSIGNED-PAYLOAD-TRAILER with chained chunk and trailer
// signatures, Content-MD5 and x-amz-checksum-* (header or trailer, via
// package checksum). It has no storage dependency: secrets come from a
// SecretLookup, and every error is an *s3err.Error ready for the wire.
//
// Verification of the body is necessarily completed at EOF: a handler must
// read Result.Body to io.EOF before committing anything, and treat any
// other error as the request's failure.
//
// Not supported: SigV2, SigV4a (ECDSA), session tokens, browser POST
// policy uploads.
package sigv4
