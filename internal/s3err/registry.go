package s3err

import "net/http"

// APIError is one entry of the S3 error registry: the wire code, the HTTP
// status and the default message sent when no specific one is given.
//
// APIError values are comparable and implement error, so a handler can write
// errors.Is(err, s3err.ErrNoSuchKey) against any *Error that carries it.
// Two entries may share a Code (AWS reuses AccessDenied and InvalidRequest
// for several conditions); they differ by Description.
type APIError struct {
	Code        string
	HTTPStatus  int
	Description string
}

func (a APIError) Error() string { return a.Code + ": " + a.Description }

// S3 errors. Codes, statuses and descriptions follow the AWS S3 error
// responses reference; RGW-specific entries say so.
var (
	ErrAccessDenied                 = APIError{"AccessDenied", http.StatusForbidden, "Access Denied."}
	ErrAccountProblem               = APIError{"AccountProblem", http.StatusForbidden, "There is a problem with your account that prevents the operation from completing successfully."}
	ErrAuthorizationHeaderMalformed = APIError{"AuthorizationHeaderMalformed", http.StatusBadRequest, "The authorization header that you provided is not valid."}
	ErrAuthorizationQueryParameters = APIError{"AuthorizationQueryParametersError", http.StatusBadRequest, "Error parsing the X-Amz-Credential parameter."}
	ErrBadDigest                    = APIError{"BadDigest", http.StatusBadRequest, "The Content-MD5 you specified did not match what we received."}
	ErrBadRequest                   = APIError{"BadRequest", http.StatusBadRequest, "Bad Request."}
	ErrBucketAlreadyExists          = APIError{"BucketAlreadyExists", http.StatusConflict, "The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again."}
	ErrBucketAlreadyOwnedByYou      = APIError{"BucketAlreadyOwnedByYou", http.StatusConflict, "Your previous request to create the named bucket succeeded and you already own it."}
	ErrBucketNotEmpty               = APIError{"BucketNotEmpty", http.StatusConflict, "The bucket you tried to delete is not empty."}
	ErrEntityTooLarge               = APIError{"EntityTooLarge", http.StatusBadRequest, "Your proposed upload exceeds the maximum allowed object size."}
	ErrEntityTooSmall               = APIError{"EntityTooSmall", http.StatusBadRequest, "Your proposed upload is smaller than the minimum allowed object size."}
	ErrExpiredToken                 = APIError{"ExpiredToken", http.StatusBadRequest, "The provided token has expired."}
	ErrIllegalLocationConstraint    = APIError{"IllegalLocationConstraintException", http.StatusBadRequest, "The specified location-constraint is not valid for this endpoint."}
	ErrIncompleteBody               = APIError{"IncompleteBody", http.StatusBadRequest, "You did not provide the number of bytes specified by the Content-Length HTTP header."}
	ErrInternalError                = APIError{"InternalError", http.StatusInternalServerError, "We encountered an internal error. Please try again."}
	ErrInvalidAccessKeyID           = APIError{"InvalidAccessKeyId", http.StatusForbidden, "The AWS access key ID you provided does not exist in our records."}
	ErrInvalidArgument              = APIError{"InvalidArgument", http.StatusBadRequest, "Invalid Argument."}
	ErrInvalidBucketName            = APIError{"InvalidBucketName", http.StatusBadRequest, "The specified bucket is not valid."}
	ErrInvalidBucketState           = APIError{"InvalidBucketState", http.StatusConflict, "The request is not valid with the current state of the bucket."}
	ErrInvalidChunkSize             = APIError{"InvalidChunkSizeError", http.StatusBadRequest, "Only the last chunk is allowed to have a size less than 8192 bytes."}
	ErrInvalidDigest                = APIError{"InvalidDigest", http.StatusBadRequest, "The Content-MD5 you specified is not valid."}
	ErrInvalidEncodingType          = APIError{"InvalidArgument", http.StatusBadRequest, "Invalid Encoding Method specified in Request."}
	ErrInvalidLocationConstraint    = APIError{"InvalidLocationConstraint", http.StatusBadRequest, "The specified location constraint is not valid."}
	ErrInvalidObjectState           = APIError{"InvalidObjectState", http.StatusForbidden, "The operation is not valid for the current state of the object."}
	ErrInvalidPart                  = APIError{"InvalidPart", http.StatusBadRequest, "One or more of the specified parts could not be found. The part might not have been uploaded, or the specified entity tag might not have matched the part's entity tag."}
	ErrInvalidPartNumber            = APIError{"InvalidPartNumber", http.StatusRequestedRangeNotSatisfiable, "The requested partnumber is not satisfiable."}
	ErrInvalidPartOrder             = APIError{"InvalidPartOrder", http.StatusBadRequest, "The list of parts was not in ascending order. The parts list must be specified in order by part number."}
	ErrInvalidPolicyDocument        = APIError{"InvalidPolicyDocument", http.StatusBadRequest, "The content of the form does not meet the conditions specified in the policy document."}
	ErrInvalidRange                 = APIError{"InvalidRange", http.StatusRequestedRangeNotSatisfiable, "The requested range is not satisfiable."}
	ErrInvalidRequest               = APIError{"InvalidRequest", http.StatusBadRequest, "Invalid Request."}
	ErrInvalidSecurity              = APIError{"InvalidSecurity", http.StatusForbidden, "The provided security credentials are not valid."}
	ErrInvalidStorageClass          = APIError{"InvalidStorageClass", http.StatusBadRequest, "The storage class you specified is not valid."}
	ErrInvalidTag                   = APIError{"InvalidTag", http.StatusBadRequest, "The tag provided was not a valid tag."}
	ErrInvalidToken                 = APIError{"InvalidToken", http.StatusBadRequest, "The provided token is malformed or otherwise invalid."}
	ErrInvalidURI                   = APIError{"InvalidURI", http.StatusBadRequest, "Couldn't parse the specified URI."}
	ErrKeyTooLong                   = APIError{"KeyTooLongError", http.StatusBadRequest, "Your key is too long."}
	ErrMalformedACL                 = APIError{"MalformedACLError", http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."}
	ErrMalformedPOSTRequest         = APIError{"MalformedPOSTRequest", http.StatusBadRequest, "The body of your POST request is not well-formed multipart/form-data."}
	ErrMalformedPolicy              = APIError{"MalformedPolicy", http.StatusBadRequest, "Policy has invalid resource."}
	ErrMalformedTrailer             = APIError{"MalformedTrailerError", http.StatusBadRequest, "The request contained trailing data that was not well-formed or did not conform to our published schema."}
	ErrMalformedXML                 = APIError{"MalformedXML", http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."}
	ErrMaxMessageLengthExceeded     = APIError{"MaxMessageLengthExceeded", http.StatusBadRequest, "Your request was too big."}
	ErrMetadataTooLarge             = APIError{"MetadataTooLarge", http.StatusBadRequest, "Your metadata headers exceed the maximum allowed metadata size."}
	ErrMethodNotAllowed             = APIError{"MethodNotAllowed", http.StatusMethodNotAllowed, "The specified method is not allowed against this resource."}
	ErrMissingContentLength         = APIError{"MissingContentLength", http.StatusLengthRequired, "You must provide the Content-Length HTTP header."}
	ErrMissingContentMD5            = APIError{"InvalidRequest", http.StatusBadRequest, "Missing required header for this request: Content-MD5."}
	ErrMissingDateHeader            = APIError{"AccessDenied", http.StatusForbidden, "AWS authentication requires a valid Date or x-amz-date header."}
	ErrMissingRequestBody           = APIError{"MissingRequestBodyError", http.StatusBadRequest, "Request Body is empty."}
	ErrMissingSecurityHeader        = APIError{"MissingSecurityHeader", http.StatusBadRequest, "Your request is missing a required header."}
	ErrNoSuchBucket                 = APIError{"NoSuchBucket", http.StatusNotFound, "The specified bucket does not exist."}
	ErrNoSuchBucketPolicy           = APIError{"NoSuchBucketPolicy", http.StatusNotFound, "The bucket policy does not exist."}
	ErrNoSuchConfiguration          = APIError{"NoSuchConfiguration", http.StatusNotFound, "The specified configuration does not exist."}
	ErrNoSuchCORSConfiguration      = APIError{"NoSuchCORSConfiguration", http.StatusNotFound, "The CORS configuration does not exist."}
	ErrNoSuchKey                    = APIError{"NoSuchKey", http.StatusNotFound, "The specified key does not exist."}
	ErrNoSuchLifecycleConfiguration = APIError{"NoSuchLifecycleConfiguration", http.StatusNotFound, "The lifecycle configuration does not exist."}
	ErrNoSuchObjectLockConfig       = APIError{"ObjectLockConfigurationNotFoundError", http.StatusNotFound, "Object Lock configuration does not exist for this bucket."}
	ErrNoSuchTagSet                 = APIError{"NoSuchTagSet", http.StatusNotFound, "The TagSet does not exist."}
	ErrNoSuchUpload                 = APIError{"NoSuchUpload", http.StatusNotFound, "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed."}
	ErrNoSuchVersion                = APIError{"NoSuchVersion", http.StatusNotFound, "The specified version does not exist."}
	ErrNoSuchWebsiteConfiguration   = APIError{"NoSuchWebsiteConfiguration", http.StatusNotFound, "The specified bucket does not have a website configuration."}
	ErrNotImplemented               = APIError{"NotImplemented", http.StatusNotImplemented, "A header you provided implies functionality that is not implemented."}
	ErrNotModified                  = APIError{"NotModified", http.StatusNotModified, "Not Modified."}
	ErrOperationAborted             = APIError{"OperationAborted", http.StatusConflict, "A conflicting conditional operation is currently in progress against this resource. Try again."}
	ErrPreconditionFailed           = APIError{"PreconditionFailed", http.StatusPreconditionFailed, "At least one of the preconditions you specified did not hold."}
	ErrRequestExpired               = APIError{"AccessDenied", http.StatusForbidden, "Request has expired."}
	ErrRequestHeaderSectionTooLarge = APIError{"RequestHeaderSectionTooLarge", http.StatusBadRequest, "Your request header section exceeds the maximum allowed size."}
	ErrRequestNotYetValid           = APIError{"AccessDenied", http.StatusForbidden, "Request is not valid yet."}
	ErrRequestTimeTooSkewed         = APIError{"RequestTimeTooSkewed", http.StatusForbidden, "The difference between the request time and the server's time is too large."}
	ErrRequestTimeout               = APIError{"RequestTimeout", http.StatusBadRequest, "Your socket connection to the server was not read from or written to within the timeout period."}
	ErrServiceUnavailable           = APIError{"ServiceUnavailable", http.StatusServiceUnavailable, "Please reduce your request rate."}
	ErrSignatureDoesNotMatch        = APIError{"SignatureDoesNotMatch", http.StatusForbidden, "The request signature we calculated does not match the signature you provided. Check your key and signing method."}
	ErrSlowDown                     = APIError{"SlowDown", http.StatusServiceUnavailable, "Please reduce your request rate."}
	ErrTooManyBuckets               = APIError{"TooManyBuckets", http.StatusBadRequest, "You have attempted to create more buckets than allowed."}
	ErrUnexpectedContent            = APIError{"UnexpectedContent", http.StatusBadRequest, "This request does not support content."}
	ErrUnsupportedSignature         = APIError{"InvalidRequest", http.StatusBadRequest, "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256."}
	ErrXAmzContentSHA256Mismatch    = APIError{"XAmzContentSHA256Mismatch", http.StatusBadRequest, "The provided 'x-amz-content-sha256' header does not match what was computed."}

	// Access control (AWS ACL, policy, public access block, ownership).
	ErrAccessControlListNotSupported = APIError{"AccessControlListNotSupported", http.StatusBadRequest, "The bucket does not allow ACLs."}
	ErrUnresolvableGrantByEmail      = APIError{"UnresolvableGrantByEmailAddress", http.StatusBadRequest, "The email address you provided does not match any account on record."}
	ErrNoSuchPublicAccessBlock       = APIError{"NoSuchPublicAccessBlockConfiguration", http.StatusNotFound, "The public access block configuration was not found."}
	ErrOwnershipControlsNotFound     = APIError{"OwnershipControlsNotFoundError", http.StatusNotFound, "The bucket ownership controls were not found."}
	ErrInvalidBucketAclWithOwnership = APIError{"InvalidBucketAclWithObjectOwnership", http.StatusBadRequest, "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting."}

	// Ceph RGW additions.
	ErrQuotaExceeded = APIError{"QuotaExceeded", http.StatusForbidden, "Quota exceeded."}
	ErrUserSuspended = APIError{"UserSuspended", http.StatusForbidden, "The user is suspended."}
)

// Query-API (IAM, STS, SNS) answers to a bad session token, as AWS's
// query services give them (S3 says InvalidToken / ExpiredToken, 400).
var (
	ErrInvalidClientTokenID = APIError{"InvalidClientTokenId", http.StatusForbidden, "The security token included in the request is invalid."}
	ErrExpiredTokenQuery    = APIError{"ExpiredToken", http.StatusForbidden, "The security token included in the request is expired"}
)

// SNS (query API) errors, returned by the topic handlers on the same
// listener. SNS wraps them in ErrorResponse, see WriteSNSXML.
var (
	ErrSNSAuthorization      = APIError{"AuthorizationError", http.StatusForbidden, "You are not authorized to perform this action."}
	ErrSNSInternal           = APIError{"InternalFailure", http.StatusInternalServerError, "The request processing has failed because of an unknown error, exception or failure."}
	ErrSNSInvalidAction      = APIError{"InvalidAction", http.StatusBadRequest, "The action or operation requested is invalid."}
	ErrSNSInvalidParameter   = APIError{"InvalidParameter", http.StatusBadRequest, "Indicates that a request parameter does not comply with the associated constraints."}
	ErrInvalidParameterValue = APIError{"InvalidParameterValue", http.StatusBadRequest, "An invalid or out-of-range value was supplied for the input parameter."}
	ErrMissingParameter      = APIError{"MissingParameter", http.StatusBadRequest, "A required parameter for the specified action is not supplied."}
	ErrTopicNotFound         = APIError{"NotFound", http.StatusNotFound, "Topic does not exist."}
)

// Registry lists every APIError this package defines, for tests and for
// tooling that documents the wire surface. Callers must not modify it.
var Registry = []APIError{
	ErrAccessDenied, ErrAccountProblem, ErrAuthorizationHeaderMalformed, ErrAuthorizationQueryParameters,
	ErrBadDigest, ErrBadRequest, ErrBucketAlreadyExists, ErrBucketAlreadyOwnedByYou, ErrBucketNotEmpty,
	ErrEntityTooLarge, ErrEntityTooSmall, ErrExpiredToken, ErrIllegalLocationConstraint, ErrIncompleteBody,
	ErrInternalError, ErrInvalidAccessKeyID, ErrInvalidArgument, ErrInvalidBucketName, ErrInvalidBucketState,
	ErrInvalidChunkSize, ErrInvalidDigest, ErrInvalidEncodingType, ErrInvalidLocationConstraint,
	ErrInvalidObjectState, ErrInvalidPart, ErrInvalidPartNumber, ErrInvalidPartOrder, ErrInvalidPolicyDocument,
	ErrInvalidRange, ErrInvalidRequest, ErrInvalidSecurity, ErrInvalidStorageClass, ErrInvalidTag,
	ErrInvalidToken, ErrInvalidURI, ErrKeyTooLong, ErrMalformedACL, ErrMalformedPOSTRequest, ErrMalformedPolicy,
	ErrMalformedTrailer, ErrMalformedXML, ErrMaxMessageLengthExceeded, ErrMetadataTooLarge, ErrMethodNotAllowed,
	ErrMissingContentLength, ErrMissingContentMD5, ErrMissingDateHeader, ErrMissingRequestBody,
	ErrMissingSecurityHeader, ErrNoSuchBucket, ErrNoSuchBucketPolicy, ErrNoSuchConfiguration,
	ErrNoSuchCORSConfiguration, ErrNoSuchKey, ErrNoSuchLifecycleConfiguration, ErrNoSuchObjectLockConfig,
	ErrNoSuchTagSet, ErrNoSuchUpload, ErrNoSuchVersion, ErrNoSuchWebsiteConfiguration, ErrNotImplemented,
	ErrNotModified, ErrOperationAborted, ErrPreconditionFailed, ErrRequestExpired,
	ErrRequestHeaderSectionTooLarge, ErrRequestNotYetValid, ErrRequestTimeTooSkewed, ErrRequestTimeout,
	ErrServiceUnavailable, ErrSignatureDoesNotMatch, ErrSlowDown, ErrTooManyBuckets, ErrUnexpectedContent,
	ErrUnsupportedSignature, ErrXAmzContentSHA256Mismatch, ErrQuotaExceeded, ErrUserSuspended,
	ErrAccessControlListNotSupported, ErrUnresolvableGrantByEmail, ErrNoSuchPublicAccessBlock,
	ErrOwnershipControlsNotFound, ErrInvalidBucketAclWithOwnership,
	ErrSNSAuthorization, ErrSNSInternal, ErrSNSInvalidAction, ErrSNSInvalidParameter,
	ErrInvalidParameterValue, ErrMissingParameter, ErrTopicNotFound,
	ErrInvalidClientTokenID, ErrExpiredTokenQuery,
}

// Bucket logging (PutBucketLogging's target checks).
var ErrInvalidTargetBucketForLogging = APIError{"InvalidTargetBucketForLogging", http.StatusBadRequest, "The target bucket for logging is not valid."}
