package topic

import "fmt"

// Error is a client-visible topic API error. The SNS handler writes it with
// ErrorResponse; Code follows RGW (InvalidArgument for bad input).
type Error struct {
	Code       string // e.g. "InvalidArgument", "NotFound"
	Message    string
	HTTPStatus int
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Codes used by this package and by SNS handlers.
const (
	CodeInvalidArgument = "InvalidArgument"
	CodeNotFound        = "NotFound"
	CodeAuthorization   = "AuthorizationError"
	CodeInternal        = "InternalFailure"
)

func invalid(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf(format, args...), HTTPStatus: 400}
}

// NotFound is the error for an unknown topic ARN.
func NotFound(arn string) *Error {
	return &Error{Code: CodeNotFound, Message: "topic not found: " + arn, HTTPStatus: 404}
}
