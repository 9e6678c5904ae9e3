package s3api

import (
	"net/http"

	"github.com/cairn-s3/cairn/internal/auth/sigv2"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// v2Unsigned are the query parameters a SigV2 request may carry outside
// its signature: its own credentials, and parameters that only narrow or
// page a read the signature already grants in full (a signed listing of a
// bucket may be re-asked with another prefix or marker, as in AWS).
// Anything else could turn the signed request into another operation, so
// it is refused rather than trusted; SigV4 signs the whole query.
var v2Unsigned = map[string]bool{
	"AWSAccessKeyId": true, "Signature": true, "Expires": true,
	// ListObjects (V1/V2), ListBuckets, ListMultipartUploads, ListParts.
	"prefix": true, "delimiter": true, "marker": true, "max-keys": true, "list-type": true,
	"start-after": true, "continuation-token": true, "fetch-owner": true, "encoding-type": true,
	"key-marker": true, "upload-id-marker": true, "max-uploads": true, "max-parts": true,
	"part-number-marker": true, "max-buckets": true, "bucket-region": true,
	// The operation hint newer SDKs add to every URL; never read.
	"x-id": true,
}

// checkSignedScope refuses an authenticated request whose signature does
// not cover what decides the operation:
//   - SigV2 for the SNS and admin APIs (their action and target are
//     query or body parameters V2 never signs; AWS SNS is SigV4-only too):
//     SNS answers 403 AccessDenied as RGW does, admin 400 InvalidRequest;
//   - a SigV2 S3 request with a parameter that is neither signed, nor a
//     header parameter equal to its (signed) header (a presigned URL's
//     content-type, content-md5 and x-amz-*), nor in v2Unsigned, or with a
//     repeated parameter (V2 signs the first value): 403
//     SignatureDoesNotMatch, as AWS answers a tampered URL;
//   - an SNS request, or an admin request with a body, whose body is
//     unsigned: there the body names the action (SNS) or carries the
//     command (POST /admin/rados), so a presigned URL would run any.
func checkSignedScope(r *http.Request, kind routeKind, ar AuthResult) error {
	if kind == kindSNS && ar.SigV2 {
		// 403 AccessDenied, the answer RGW gives and its clients expect.
		return s3err.New(s3err.ErrAccessDenied, "SigV2 is not accepted for the SNS API; sign with AWS4-HMAC-SHA256.")
	}
	if kind == kindSNS && ar.UnsignedPayload {
		return s3err.New(s3err.ErrInvalidRequest, "The SNS API needs a signed payload: sign the request body (no UNSIGNED-PAYLOAD, no presigned URLs).")
	}
	if kind == kindAdmin && ar.UnsignedPayload && !ar.SigV2 && r.ContentLength != 0 {
		return s3err.New(s3err.ErrInvalidRequest, "An admin API request body must be signed (no UNSIGNED-PAYLOAD, no presigned URLs).")
	}
	if !ar.SigV2 {
		return nil
	}
	if kind != kindS3 {
		return s3err.New(s3err.ErrUnsupportedSignature, "SigV2 is not accepted for this API; sign with AWS4-HMAC-SHA256.")
	}
	for k, vs := range r.URL.Query() {
		if len(vs) > 1 {
			return s3err.New(s3err.ErrSignatureDoesNotMatch, "Query parameter %q is repeated; a SigV2 signature covers one value.", k)
		}
		if !sigv2.Signed(k) && !v2Unsigned[k] && !sigv2.QueryHeaderSigned(r, k) {
			return s3err.New(s3err.ErrSignatureDoesNotMatch, "Query parameter %q is not covered by a SigV2 signature; sign the request with AWS4-HMAC-SHA256.", k)
		}
	}
	return nil
}
