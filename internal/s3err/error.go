package s3err

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Error is an APIError with the context of one failure. It is what handlers
// and the auth layer return; the HTTP edge turns it into a response with
// WriteXML. errors.Is(err, ErrNoSuchKey) holds for an *Error carrying
// ErrNoSuchKey, even when wrapped.
type Error struct {
	APIError
	// Message overrides APIError.Description on the wire when non-empty.
	Message string
	// Resource, RequestID and HostID fill the matching XML elements when
	// WriteXML is not given them.
	Resource  string
	RequestID string
	HostID    string
	// Cause is the underlying error, for logs only: it is never sent.
	Cause error
}

// New returns an *Error for api. The message is formatted from format and
// args; an empty format keeps the registry description.
func New(api APIError, format string, args ...any) *Error {
	e := &Error{APIError: api}
	if format != "" {
		e.Message = fmt.Sprintf(format, args...)
	}
	return e
}

// Wrap returns an *Error for api that records cause for logging. The wire
// message is the registry description.
func Wrap(api APIError, cause error) *Error {
	return &Error{APIError: api, Cause: cause}
}

// Error implements error. The text includes the cause, for logs.
func (e *Error) Error() string {
	s := e.Code + ": " + e.WireMessage()
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// WireMessage is the text sent in <Message>.
func (e *Error) WireMessage() string {
	if e.Message != "" {
		return e.Message
	}
	return e.Description
}

// Unwrap exposes the cause to errors.Is/As.
func (e *Error) Unwrap() error { return e.Cause }

// Is reports whether target is the APIError this error carries, so that
// errors.Is(err, s3err.ErrNoSuchKey) works. Entries sharing a Code (such as
// ErrAccessDenied and ErrRequestExpired) are distinct.
func (e *Error) Is(target error) bool {
	a, ok := target.(APIError)
	return ok && a == e.APIError
}

// From converts any error into an *Error: an *Error anywhere in the chain is
// returned as is, a bare APIError gets its registry description, and
// anything else becomes InternalError with err as the cause (log it with the
// request id; its text is never sent). From(nil) is nil.
func From(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var a APIError
	if errors.As(err, &a) {
		return &Error{APIError: a}
	}
	return Wrap(ErrInternalError, err)
}

type xmlError struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string   `xml:"Code"`
	Message   string   `xml:"Message"`
	Resource  string   `xml:"Resource"`
	RequestID string   `xml:"RequestId"`
	HostID    string   `xml:"HostId"`
}

// Body renders the S3 XML error document for err. Empty resource and
// requestID fall back to err's own fields.
func Body(err *Error, resource, requestID string) []byte {
	if resource == "" {
		resource = err.Resource
	}
	if requestID == "" {
		requestID = err.RequestID
	}
	out, mErr := xml.Marshal(xmlError{
		Code:      err.Code,
		Message:   err.WireMessage(),
		Resource:  resource,
		RequestID: requestID,
		HostID:    err.HostID,
	})
	if mErr != nil { // only strings: cannot happen
		panic(mErr)
	}
	return append([]byte(xml.Header), out...)
}

// WriteXML writes err as an S3 error response: status, Content-Type
// application/xml, x-amz-request-id and the <Error> document. A 304 gets no
// body, as HTTP requires. For HEAD requests use Write or WriteHead, which
// send no body.
func WriteXML(w http.ResponseWriter, err *Error, resource, requestID string) {
	if requestID == "" {
		requestID = err.RequestID
	}
	h := w.Header()
	if requestID != "" {
		h.Set("x-amz-request-id", requestID)
	}
	if err.HTTPStatus == http.StatusNotModified {
		w.WriteHeader(err.HTTPStatus)
		return
	}
	body := Body(err, resource, requestID)
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status(err))
	_, _ = w.Write(body)
}

// WriteHead writes the status and request id of err with no body, for HEAD
// requests (S3 sends no error document there; clients see only the status).
func WriteHead(w http.ResponseWriter, err *Error, requestID string) {
	if requestID == "" {
		requestID = err.RequestID
	}
	if requestID != "" {
		w.Header().Set("x-amz-request-id", requestID)
	}
	w.WriteHeader(status(err))
}

// Write picks WriteHead or WriteXML by the request method; the resource is
// the request path.
func Write(w http.ResponseWriter, r *http.Request, err *Error, requestID string) {
	if r.Method == http.MethodHead {
		WriteHead(w, err, requestID)
		return
	}
	WriteXML(w, err, r.URL.Path, requestID)
}

func status(err *Error) int {
	if err.HTTPStatus < 100 || err.HTTPStatus > 999 {
		return http.StatusInternalServerError
	}
	return err.HTTPStatus
}

type snsErrorResponse struct {
	XMLName xml.Name `xml:"ErrorResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
	Error   struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	} `xml:"Error"`
	RequestID string `xml:"RequestId"`
}

// WriteSNSXML writes err in the SNS query-API shape
// (<ErrorResponse><Error><Type/><Code/><Message/></Error><RequestId/>),
// which the aws CLI's sns commands parse.
func WriteSNSXML(w http.ResponseWriter, err *Error, requestID string) {
	var doc snsErrorResponse
	doc.Xmlns = "http://sns.amazonaws.com/doc/2010-03-31/"
	doc.Error.Type = "Sender"
	if status(err) >= 500 {
		doc.Error.Type = "Receiver"
	}
	doc.Error.Code = err.Code
	doc.Error.Message = err.WireMessage()
	if requestID == "" {
		requestID = err.RequestID
	}
	doc.RequestID = requestID
	out, mErr := xml.Marshal(doc)
	if mErr != nil {
		panic(mErr)
	}
	body := append([]byte(xml.Header), out...)
	h := w.Header()
	if requestID != "" {
		h.Set("x-amzn-RequestId", requestID)
	}
	h.Set("Content-Type", "text/xml")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status(err))
	_, _ = w.Write(body)
}
