package s3api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// RGW admin-API error codes that the S3 registry has no entry for.
var (
	errNoSuchUser    = s3err.APIError{Code: "NoSuchUser", HTTPStatus: http.StatusNotFound, Description: "The specified user does not exist."}
	errUserExists    = s3err.APIError{Code: "UserAlreadyExists", HTTPStatus: http.StatusConflict, Description: "The specified user already exists."}
	errKeyExists     = s3err.APIError{Code: "KeyExists", HTTPStatus: http.StatusConflict, Description: "The specified access key is in use."}
	errNoSuchReshard = s3err.APIError{Code: "NoSuchReshard", HTTPStatus: http.StatusNotFound, Description: "The bucket is not being resharded."}
	// 503 so SDKs retry a write that raced a reshard's switch; the code
	// tells an operator (cairn admin) why.
	errReshardBusy      = s3err.APIError{Code: "ReshardInProgress", HTTPStatus: http.StatusServiceUnavailable, Description: "The bucket index is being resharded; retry shortly."}
	errInvalidVersionID = s3err.APIError{Code: "InvalidArgument", HTTPStatus: http.StatusBadRequest, Description: "Invalid version id specified"}
	errUserHasBuckets   = s3err.APIError{Code: "BucketNotEmpty", HTTPStatus: http.StatusConflict, Description: "The user still owns buckets; remove them first."}
)

// errorTable is the one mapping from domain errors to S3 errors. The first
// match (errors.Is) wins; order matters only for errors that wrap others.
var errorTable = []struct {
	err error
	api s3err.APIError
}{
	{driver.ErrNoSuchBucket, s3err.ErrNoSuchBucket},
	{driver.ErrBucketExists, s3err.ErrBucketAlreadyExists},
	{driver.ErrBucketOwnedByYou, s3err.ErrBucketAlreadyOwnedByYou},
	{driver.ErrBucketNotEmpty, s3err.ErrBucketNotEmpty},
	{driver.ErrInvalidBucketName, s3err.ErrInvalidBucketName},
	{driver.ErrNoSuchKey, s3err.ErrNoSuchKey},
	{driver.ErrNoSuchCORSConfiguration, s3err.ErrNoSuchCORSConfiguration},
	{driver.ErrNoSuchVersion, s3err.ErrNoSuchVersion},
	{driver.ErrInvalidVersionID, errInvalidVersionID},
	{driver.ErrMalformedXML, s3err.ErrMalformedXML},
	{driver.ErrMethodNotAllowed, s3err.ErrMethodNotAllowed},
	{driver.ErrInvalidKey, s3err.ErrInvalidArgument},
	{driver.ErrNoSuchUpload, s3err.ErrNoSuchUpload},
	{driver.ErrInvalidPart, s3err.ErrInvalidPart},
	{driver.ErrInvalidPartOrder, s3err.ErrInvalidPartOrder},
	{driver.ErrEntityTooSmall, s3err.ErrEntityTooSmall},
	{driver.ErrEntityTooLarge, s3err.ErrEntityTooLarge},
	{driver.ErrPreconditionFailed, s3err.ErrPreconditionFailed},
	{driver.ErrInvalidAccessKey, s3err.ErrInvalidAccessKeyID},
	{driver.ErrSlowDown, s3err.ErrSlowDown},
	{driver.ErrQuotaExceeded, s3err.ErrQuotaExceeded},
	{driver.ErrIncompleteBody, s3err.ErrIncompleteBody},
	{driver.ErrInvalidArgument, s3err.ErrInvalidArgument},
	{driver.ErrInvalidRequest, s3err.ErrInvalidRequest},
	{driver.ErrBadDigest, s3err.ErrBadDigest},
	// A write that races a reshard's brief switch: 503 makes clients retry.
	{driver.ErrReshardInProgress, errReshardBusy},
	{driver.ErrTooManyParts, s3err.ErrInvalidArgument},
	{driver.ErrNoSuchUser, errNoSuchUser},
	{driver.ErrUserExists, errUserExists},
	{driver.ErrKeyExists, errKeyExists},
	{driver.ErrNoSuchReshard, errNoSuchReshard},
	{driver.ErrNotEmptyUserBuckets, errUserHasBuckets},
	{driver.ErrTooManyBuckets, s3err.ErrTooManyBuckets},
	{driver.ErrInvalidBucketState, s3err.ErrInvalidBucketState},
	{driver.ErrNoSuchTagSet, s3err.ErrNoSuchTagSet},
	{driver.ErrNoLockConfig, errNoLockConfig},
	{driver.ErrNoSuchLockConfig, s3err.ErrNoSuchObjectLockConfig},
	{driver.ErrNoSuchObjectLock, errNoSuchObjectLock},
	{driver.ErrNoSuchLifecycle, s3err.ErrNoSuchLifecycleConfiguration},
	{driver.ErrInvalidStorageClass, s3err.ErrInvalidStorageClass},
}

// mapError turns any error into the *s3err.Error to send. An *s3err.Error
// anywhere in the chain (e.g. a verifying reader's BadDigest surfacing
// through the backend) is sent as is; domain errors go through errorTable;
// anything else is InternalError, with err kept as the logged cause.
func (s *Server) mapError(err error) *s3err.Error { return MapError(err) }

// MapError is the Server's error mapping, exported for extension handlers
// (admin routes, SNS) that want the same wire errors for driver errors.
func MapError(err error) *s3err.Error {
	var e *s3err.Error
	if errors.As(err, &e) {
		return e
	}
	if e, ok := codedError(err); ok {
		return e
	}
	var a s3err.APIError
	if errors.As(err, &a) {
		return &s3err.Error{APIError: a}
	}
	for _, m := range errorTable {
		if errors.Is(err, m.err) {
			return &s3err.Error{APIError: m.api, Message: detail(m.err, err), Cause: err}
		}
	}
	for _, m := range sseErrorTable {
		if errors.Is(err, m.err) {
			return &s3err.Error{APIError: m.api, Cause: err}
		}
	}
	return s3err.Wrap(s3err.ErrInternalError, err)
}

// detail keeps the registry description unless the domain error carries
// context worth sending (driver.ErrInvalidArgument and friends wrap a
// human-readable reason).
func detail(sentinel, err error) string {
	switch sentinel {
	case driver.ErrInvalidArgument, driver.ErrInvalidKey, driver.ErrTooManyParts, driver.ErrTooManyBuckets:
		return err.Error()
	case driver.ErrInvalidRequest, driver.ErrBadDigest:
		// "<sentinel>: <reason>": send the reason when there is one.
		if _, reason, ok := strings.Cut(err.Error(), ": "); ok && strings.HasPrefix(err.Error(), sentinel.Error()+": ") {
			return reason
		}
	}
	return ""
}
