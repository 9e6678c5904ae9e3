package s3api

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"strings"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/kms"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// The one decision point for server-side encryption headers: a request's
// headers become a driver.SSERequest (carried in the context) or an S3
// error; sseHeaders renders a stored record for every response that
// reports one.

// Header names in canonical form: Header.Get allocates to canonicalise
// any other spelling, on every request.
const (
	hSSE          = "X-Amz-Server-Side-Encryption"
	hSSEKMSKeyID  = "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id"
	hSSEContext   = "X-Amz-Server-Side-Encryption-Context"
	hSSEBucketKey = "X-Amz-Server-Side-Encryption-Bucket-Key-Enabled"
	hSSECAlg      = "X-Amz-Server-Side-Encryption-Customer-Algorithm"
	hSSECKey      = "X-Amz-Server-Side-Encryption-Customer-Key"
	hSSECKeyMD5   = "X-Amz-Server-Side-Encryption-Customer-Key-Md5"
)

// ssecHeaders names one SSE-C header triple.
type ssecHeaders struct{ alg, key, md5 string }

var (
	ssecObject = ssecHeaders{hSSECAlg, hSSECKey, hSSECKeyMD5}
	ssecCopy   = ssecHeaders{
		"X-Amz-Copy-Source-Server-Side-Encryption-Customer-Algorithm",
		"X-Amz-Copy-Source-Server-Side-Encryption-Customer-Key",
		"X-Amz-Copy-Source-Server-Side-Encryption-Customer-Key-Md5",
	}
)

// sseOp is what a request does with encryption headers.
type sseOp int

const (
	sseWrite sseOp = iota // PutObject, CopyObject (destination), CreateMultipartUpload, POST
	sseRead               // GetObject, HeadObject, GetObjectAttributes
	ssePart               // UploadPart, UploadPartCopy, CompleteMultipartUpload: the upload's SSE-C key
)

// sseParams is a parsed request: what goes to the driver, and the
// customer key's MD5 to echo.
type sseParams struct {
	req    driver.SSERequest
	keyMD5 string
}

var (
	errSSEMethod = s3err.New(s3err.ErrInvalidArgument,
		"The encryption method specified is not supported")
	errSSECOverHTTP = s3err.New(s3err.ErrInvalidRequest,
		"Requests specifying Server Side Encryption with Customer provided keys must be made over a secure connection.")
)

// customerKey parses one SSE-C header triple (the object's or the copy
// source's); nil when absent.
func (s *Server) customerKey(r *http.Request, names ssecHeaders) ([]byte, string, error) {
	h := r.Header
	alg, key, sum := h.Get(names.alg), h.Get(names.key), h.Get(names.md5)
	if alg == "" && key == "" && sum == "" {
		return nil, "", nil
	}
	if r.TLS == nil && !s.cfg.AllowSSECOverHTTP {
		return nil, "", errSSECOverHTTP
	}
	if alg == "" {
		return nil, "", s3err.New(s3err.ErrInvalidArgument, "Requests specifying Server Side Encryption with Customer provided keys must provide a valid encryption algorithm.")
	}
	if alg != "AES256" {
		return nil, "", s3err.New(s3err.ErrInvalidArgument, "The encryption algorithm specified is not supported: %s", alg)
	}
	if key == "" {
		return nil, "", s3err.New(s3err.ErrInvalidArgument, "Requests specifying Server Side Encryption with Customer provided keys must provide an appropriate secret key.")
	}
	raw, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(raw) != 32 {
		return nil, "", s3err.New(s3err.ErrInvalidArgument, "The secret key was invalid for the specified algorithm.")
	}
	if sum == "" {
		return nil, "", s3err.New(s3err.ErrInvalidArgument, "Requests specifying Server Side Encryption with Customer provided keys must provide the client calculated MD5 of the secret key.")
	}
	want := md5.Sum(raw)
	if got, err := base64.StdEncoding.DecodeString(sum); err != nil || string(got) != string(want[:]) {
		return nil, "", s3err.New(s3err.ErrInvalidArgument, "The calculated MD5 hash of the key did not match the hash that was provided.")
	}
	return raw, sum, nil
}

// parseSSE reads the encryption headers of a request doing op.
func (s *Server) parseSSE(r *http.Request, op sseOp) (sseParams, error) {
	var p sseParams
	h := r.Header
	ckey, md5sum, err := s.customerKey(r, ssecObject)
	if err != nil {
		return p, err
	}
	p.keyMD5 = md5sum
	srcKey, _, err := s.customerKey(r, ssecCopy)
	if err != nil {
		return p, err
	}
	if srcKey != nil && h.Get("X-Amz-Copy-Source") == "" {
		return p, s3err.New(s3err.ErrInvalidArgument, "Copy-source encryption headers need x-amz-copy-source.")
	}
	p.req.CopySourceKey = srcKey
	mode := h.Get(hSSE)
	kmsKey, kmsCtx, bucketKey := h.Get(hSSEKMSKeyID), h.Get(hSSEContext), h.Get(hSSEBucketKey)
	if op != sseWrite {
		// AWS: these describe how to store, not how to read.
		if mode != "" || kmsKey != "" || kmsCtx != "" || bucketKey != "" {
			return p, s3err.New(s3err.ErrInvalidArgument, "x-amz-server-side-encryption headers are only valid when writing an object or creating an upload.")
		}
		p.req.CustomerKey = ckey
		return p, nil
	}
	if ckey != nil {
		if mode != "" || kmsKey != "" || kmsCtx != "" || bucketKey != "" {
			return p, s3err.New(s3err.ErrInvalidArgument, "Server Side Encryption with Customer provided key is incompatible with the encryption method specified")
		}
		p.req.Put = &driver.SSESpec{Mode: driver.SSEModeC, CustomerKey: ckey}
		return p, nil
	}
	var bk bool
	switch strings.ToLower(bucketKey) {
	case "":
	case "true":
		bk = true
	case "false":
	default:
		return p, s3err.New(s3err.ErrInvalidArgument, "The x-amz-server-side-encryption-bucket-key-enabled header must be true or false.")
	}
	switch mode {
	case "":
		if kmsKey != "" || kmsCtx != "" || bucketKey != "" {
			return p, s3err.New(s3err.ErrInvalidArgument, "Server Side Encryption with AWS KMS managed key requires HTTP header x-amz-server-side-encryption : aws:kms")
		}
		return p, nil // the bucket default (or none)
	case "AES256":
		if kmsKey != "" || kmsCtx != "" {
			return p, s3err.New(s3err.ErrInvalidArgument, "Server Side Encryption with AWS KMS managed key requires HTTP header x-amz-server-side-encryption : aws:kms")
		}
		p.req.Put = &driver.SSESpec{Mode: driver.SSEModeS3, BucketKey: bk}
	case "aws:kms":
		if kmsCtx != "" {
			if err := checkKMSContext(kmsCtx); err != nil {
				return p, err
			}
		}
		p.req.Put = &driver.SSESpec{Mode: driver.SSEModeKMS, KMSKeyID: kmsKey, Context: kmsCtx, BucketKey: bk}
	case "aws:kms:dsse":
		return p, s3err.New(s3err.ErrNotImplemented, "Dual-layer server-side encryption (aws:kms:dsse) is not implemented.")
	default:
		return p, errSSEMethod
	}
	return p, nil
}

// checkKMSContext accepts base64 of a JSON object of string values.
func checkKMSContext(v string) error {
	raw, err := base64.StdEncoding.DecodeString(v)
	var m map[string]string
	if err != nil || json.Unmarshal(raw, &m) != nil {
		return s3err.New(s3err.ErrInvalidArgument, "The x-amz-server-side-encryption-context header must be base64-encoded JSON of string pairs.")
	}
	return nil
}

// withSSE puts a parsed request into ctx for the driver.
func withSSE(ctx context.Context, p sseParams) context.Context {
	if p.req.Put == nil && p.req.CustomerKey == nil && p.req.CopySourceKey == nil {
		return ctx
	}
	return driver.WithSSE(ctx, p.req)
}

// sseHeaders reports a stored record as AWS does; keyMD5 is the request's
// customer key MD5 (SSE-C), never stored.
func sseHeaders(h http.Header, rec *driver.SSERecord, keyMD5 string) {
	if rec == nil {
		return
	}
	switch rec.Mode {
	case driver.SSEModeS3:
		h.Set(hSSE, "AES256")
	case driver.SSEModeKMS:
		h.Set(hSSE, "aws:kms")
		h.Set(hSSEKMSKeyID, rec.KeyID)
		if rec.Context != "" {
			h.Set(hSSEContext, rec.Context)
		}
		if rec.BucketKey {
			// AWS reports bucket keys for SSE-KMS only.
			h.Set(hSSEBucketKey, "true")
		}
	case driver.SSEModeC:
		h.Set(hSSECAlg, "AES256")
		if keyMD5 != "" {
			h.Set("X-Amz-Server-Side-Encryption-Customer-Key-Md5", keyMD5)
		}
	}
}

// Errors of encryption, mapped in errorTable.
var (
	errSSECKeyMissing = s3err.APIError{Code: "InvalidRequest", HTTPStatus: http.StatusBadRequest,
		Description: "The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object."}
	errSSECKeyMismatch = s3err.APIError{Code: "AccessDenied", HTTPStatus: http.StatusForbidden,
		Description: "The provided customer key does not match the key the object was encrypted with."}
	errSSENotApplicable = s3err.APIError{Code: "InvalidRequest", HTTPStatus: http.StatusBadRequest,
		Description: "The encryption parameters are not applicable to this object."}
	errKMSNotConfigured = s3err.APIError{Code: "NotImplemented", HTTPStatus: http.StatusNotImplemented,
		Description: "Server-side encryption with a key-management service is not configured on this gateway."}
	errKMSKeyNotFound = s3err.APIError{Code: "KMS.NotFoundException", HTTPStatus: http.StatusBadRequest,
		Description: "The specified KMS key does not exist."}
	errKMSUnavailable = s3err.APIError{Code: "ServiceUnavailable", HTTPStatus: http.StatusServiceUnavailable,
		Description: "The key-management service is unavailable; nothing was written. Retry later."}
	errKMSUnseal = s3err.APIError{Code: "InternalError", HTTPStatus: http.StatusInternalServerError,
		Description: "The object's data key could not be unsealed by the key-management service."}
	errNoSuchEncryption = s3err.APIError{Code: "ServerSideEncryptionConfigurationNotFoundError", HTTPStatus: http.StatusNotFound,
		Description: "The server side encryption configuration was not found"}
)

var sseErrorTable = []struct {
	err error
	api s3err.APIError
}{
	{driver.ErrSSECustomerKeyMissing, errSSECKeyMissing},
	{driver.ErrSSECustomerKeyMismatch, errSSECKeyMismatch},
	{driver.ErrSSENotApplicable, errSSENotApplicable},
	{driver.ErrKMSNotConfigured, errKMSNotConfigured},
	{driver.ErrNoSuchEncryptionConfiguration, errNoSuchEncryption},
	{kms.ErrKeyNotFound, errKMSKeyNotFound},
	{kms.ErrUnavailable, errKMSUnavailable},
	{kms.ErrUnseal, errKMSUnseal},
}

// EncryptionBackend stores bucket default encryption.
type EncryptionBackend interface {
	PutBucketEncryption(ctx context.Context, bucket string, e driver.BucketEncryption) error
	// GetBucketEncryption returns driver.ErrNoSuchEncryptionConfiguration
	// when the bucket has none.
	GetBucketEncryption(ctx context.Context, bucket string) (driver.BucketEncryption, error)
	DeleteBucketEncryption(ctx context.Context, bucket string) error
}

func (s *Server) encryptionBackend() (EncryptionBackend, error) {
	eb, ok := s.be.(EncryptionBackend)
	if !ok {
		return nil, s3err.New(s3err.ErrNotImplemented, "Bucket encryption is not implemented by this backend.")
	}
	return eb, nil
}

type sseConfigXML struct {
	XMLName xml.Name `xml:"ServerSideEncryptionConfiguration"`
	Xmlns   string   `xml:"xmlns,attr,omitempty"`
	Rules   []struct {
		Default *struct {
			Algorithm string `xml:"SSEAlgorithm"`
			KMSKeyID  string `xml:"KMSMasterKeyID,omitempty"`
		} `xml:"ApplyServerSideEncryptionByDefault"`
		BucketKeyEnabled *bool `xml:"BucketKeyEnabled"`
	} `xml:"Rule"`
}

func (s *Server) putBucketEncryption(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	eb, err := s.encryptionBackend()
	if err != nil {
		return err
	}
	data, err := readSmall(r, rc, 64<<10)
	if err != nil {
		return err
	}
	var doc sseConfigXML
	if err := xml.Unmarshal(data, &doc); err != nil || len(doc.Rules) != 1 || doc.Rules[0].Default == nil {
		return s3err.New(s3err.ErrMalformedXML, "")
	}
	rule := doc.Rules[0]
	e := driver.BucketEncryption{KMSKeyID: rule.Default.KMSKeyID}
	if rule.BucketKeyEnabled != nil {
		e.BucketKey = *rule.BucketKeyEnabled
	}
	switch rule.Default.Algorithm {
	case "AES256":
		if e.KMSKeyID != "" {
			return s3err.New(s3err.ErrInvalidArgument, "a KMSMasterKeyID is not applicable if the default sse algorithm is not aws:kms")
		}
		e.Mode = driver.SSEModeS3
	case "aws:kms":
		e.Mode = driver.SSEModeKMS
	case "aws:kms:dsse":
		return s3err.New(s3err.ErrNotImplemented, "Dual-layer server-side encryption (aws:kms:dsse) is not implemented.")
	default:
		return s3err.New(s3err.ErrMalformedXML, "")
	}
	if err := eb.PutBucketEncryption(r.Context(), rc.bucket, e); err != nil {
		return err
	}
	writeEmptyOK(w, "")
	return nil
}

type sseConfigOut struct {
	XMLName xml.Name `xml:"ServerSideEncryptionConfiguration"`
	Xmlns   string   `xml:"xmlns,attr"`
	Rule    struct {
		Default struct {
			Algorithm string `xml:"SSEAlgorithm"`
			KMSKeyID  string `xml:"KMSMasterKeyID,omitempty"`
		} `xml:"ApplyServerSideEncryptionByDefault"`
		BucketKeyEnabled bool `xml:"BucketKeyEnabled"`
	} `xml:"Rule"`
}

func (s *Server) getBucketEncryption(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	eb, err := s.encryptionBackend()
	if err != nil {
		return err
	}
	e, err := eb.GetBucketEncryption(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	out := sseConfigOut{Xmlns: s3Namespace}
	out.Rule.Default.Algorithm = "AES256"
	if e.Mode == driver.SSEModeKMS {
		out.Rule.Default.Algorithm = "aws:kms"
		out.Rule.Default.KMSKeyID = e.KMSKeyID
	}
	out.Rule.BucketKeyEnabled = e.BucketKey
	return writeXML(w, http.StatusOK, out)
}

func (s *Server) deleteBucketEncryption(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	eb, err := s.encryptionBackend()
	if err != nil {
		return err
	}
	if err := eb.DeleteBucketEncryption(r.Context(), rc.bucket); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
