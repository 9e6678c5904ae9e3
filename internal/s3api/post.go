package s3api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/auth/postpolicy"
	"github.com/cairn-s3/cairn/internal/auth/sigv2"
	"github.com/cairn-s3/cairn/internal/auth/sigv4"
	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// PostObject: browser uploads with an HTML form (AWS "Browser-based uploads
// using POST", SigV4 and SigV2 forms). The fields come first and are read
// into memory (at most maxPostFields bytes, S3's 20 KB); the file part,
// which must come after them, is streamed to the backend. Fields after the
// file are never read, as in S3.

const maxPostFields = 20 << 10

var errPostPreData = s3err.APIError{Code: "MaxPostPreDataLengthExceededError", HTTPStatus: http.StatusBadRequest,
	Description: "Your POST request fields preceeding the upload file was too large."}

// isPostForm reports whether r is a multipart/form-data POST (a browser
// form upload).
func isPostForm(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "multipart/form-data"
}

// postForm is the form's fields (names lower-cased, repeated fields joined
// with ",") in the order they came, and the file part.
type postForm struct {
	fields map[string]string
	order  []string
	file   *multipart.Part
}

func missingField(name string) error {
	return s3err.New(s3err.ErrInvalidArgument, "Bucket POST must contain a field named '%s'.  If it is specified, please check the order of the fields.", name)
}

func readPostForm(r *http.Request) (*postForm, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, s3err.Wrap(s3err.ErrMalformedPOSTRequest, err)
	}
	f := &postForm{fields: map[string]string{}}
	budget := int64(maxPostFields)
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return nil, s3err.New(s3err.ErrInvalidArgument, "POST requires exactly one file upload per request.")
		}
		if err != nil {
			return nil, s3err.Wrap(s3err.ErrMalformedPOSTRequest, err)
		}
		name := strings.ToLower(p.FormName())
		if name == "" {
			continue
		}
		if name == "file" {
			f.file = p
			return f, nil
		}
		v, err := io.ReadAll(io.LimitReader(p, budget+1))
		if err != nil {
			return nil, s3err.Wrap(s3err.ErrMalformedPOSTRequest, err)
		}
		budget -= int64(len(v) + len(name))
		if budget < 0 {
			return nil, s3err.New(errPostPreData, "")
		}
		if old, ok := f.fields[name]; ok {
			f.fields[name] = old + "," + string(v)
		} else {
			f.fields[name] = string(v)
			f.order = append(f.order, name)
		}
	}
}

// postIdentity verifies the form's signature and returns its signer and
// the (unexpired) policy; both are zero for an anonymous form (no policy,
// no signature fields).
func (s *Server) postIdentity(ctx context.Context, f *postForm, now time.Time) (id Identity, pol *postpolicy.Policy, err error) {
	fv := f.fields
	policyB64, hasPolicy := fv["policy"]
	if !hasPolicy {
		for _, k := range []string{"x-amz-signature", "signature", "x-amz-credential", "awsaccesskeyid"} {
			if _, ok := fv[k]; ok {
				return Identity{}, nil, missingField("policy")
			}
		}
		return Identity{}, nil, nil
	}
	var accessKey, want, got string
	var user driver.User
	switch {
	case fv["x-amz-algorithm"] != "" || fv["x-amz-credential"] != "":
		if fv["x-amz-algorithm"] != "AWS4-HMAC-SHA256" {
			return Identity{}, nil, s3err.New(s3err.ErrInvalidArgument, "Only AWS4-HMAC-SHA256 is supported as x-amz-algorithm.")
		}
		for _, k := range []string{"x-amz-credential", "x-amz-date", "x-amz-signature"} {
			if fv[k] == "" {
				return Identity{}, nil, missingField(k)
			}
		}
		parts := strings.Split(fv["x-amz-credential"], "/")
		if len(parts) != 5 || parts[4] != "aws4_request" || parts[3] != "s3" || parts[0] == "" {
			return Identity{}, nil, s3err.New(s3err.ErrInvalidArgument, "Invalid credential: %s", fv["x-amz-credential"])
		}
		if !strings.HasPrefix(fv["x-amz-date"], parts[1]) {
			return Identity{}, nil, s3err.New(s3err.ErrInvalidArgument, "x-amz-date does not match the credential's date.")
		}
		accessKey, got = parts[0], strings.ToLower(fv["x-amz-signature"])
		u, secret, err := s.be.LookupAccessKey(ctx, accessKey)
		if err != nil {
			return Identity{}, nil, lookupError(err)
		}
		user = u
		m := hmac.New(sha256.New, sigv4.SigningKey(secret, sigv4.Scope{Date: parts[1], Region: parts[2], Service: parts[3]}))
		m.Write([]byte(policyB64))
		want = hex.EncodeToString(m.Sum(nil))
	default:
		accessKey = fv["awsaccesskeyid"]
		if accessKey == "" {
			return Identity{}, nil, missingField("AWSAccessKeyId")
		}
		if fv["signature"] == "" {
			return Identity{}, nil, missingField("signature")
		}
		got = fv["signature"]
		u, secret, err := s.be.LookupAccessKey(ctx, accessKey)
		if err != nil {
			return Identity{}, nil, lookupError(err)
		}
		user = u
		want = sigv2.Sign(secret, policyB64)
	}
	if subtle.ConstantTimeCompare([]byte(want), []byte(got)) != 1 {
		return Identity{}, nil, s3err.New(s3err.ErrSignatureDoesNotMatch, "")
	}
	p, err := postpolicy.Decode(policyB64)
	if err != nil {
		return Identity{}, nil, s3err.Wrap(s3err.ErrInvalidPolicyDocument, err)
	}
	if p.Expired(now) {
		return Identity{}, nil, s3err.New(s3err.ErrAccessDenied, "Invalid according to Policy: Policy expired.")
	}
	return Identity{User: user, AccessKey: accessKey}, &p, nil
}

// authorizePostObject decides whether id (zero for an anonymous form)
// may POST key into the bucket: the one access-control decision point, as
// PutObject (bucket ACL WRITE or a policy allowing s3:PutObject, anonymous
// included where the bucket grants it).
func (s *Server) authorizePostObject(r *http.Request, rc *reqCtx, id Identity, key string) error {
	rc.ident, rc.key = id, key
	// A signed form's bare bucket name is in the signer's tenant.
	if err := s.resolveBucket(rc, id.User.Tenant()); err != nil {
		return err
	}
	return s.authorize(r, rc, authz.S3PutObject)
}

// postFilename is the file part's name without any client path, as S3
// substitutes it for ${filename}.
func postFilename(p *multipart.Part) string {
	n := p.FileName()
	if i := strings.LastIndexAny(n, `/\`); i >= 0 {
		n = n[i+1:]
	}
	return n
}

// postBody enforces content-length-range while streaming: more than max
// bytes fails at once with EntityTooLarge, fewer than min at EOF with
// EntityTooSmall; either way the backend stores nothing.
type postBody struct {
	r        io.Reader
	n        int64
	min, max int64
}

func (b *postBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > b.max {
		return n, s3err.New(s3err.ErrEntityTooLarge, "Your proposed upload exceeds the maximum allowed size")
	}
	if err == io.EOF && b.n < b.min {
		return n, s3err.New(s3err.ErrEntityTooSmall, "Your proposed upload is smaller than the minimum allowed size")
	}
	return n, err
}

type postTagging struct {
	Tags []struct {
		Key   string `xml:"Key"`
		Value string `xml:"Value"`
	} `xml:"TagSet>Tag"`
}

// postHeaderFields are the form fields that stand for a PUT's request
// headers (AWS: "parameters passed to PUT through HTTP headers are instead
// passed as form fields to POST"), by lower-case field name.
var postHeaderFields = map[string]string{
	"content-type": "Content-Type", "cache-control": "Cache-Control",
	"content-disposition": "Content-Disposition", "content-encoding": "Content-Encoding",
	"content-language": "Content-Language", "expires": "Expires",
	"acl":                                 "x-amz-acl",
	"x-amz-grant-read":                    "x-amz-grant-read",
	"x-amz-grant-read-acp":                "x-amz-grant-read-acp",
	"x-amz-grant-write-acp":               "x-amz-grant-write-acp",
	"x-amz-grant-full-control":            "x-amz-grant-full-control",
	"x-amz-object-lock-mode":              "x-amz-object-lock-mode",
	"x-amz-object-lock-retain-until-date": "x-amz-object-lock-retain-until-date",
	"x-amz-object-lock-legal-hold":        "x-amz-object-lock-legal-hold",
	"x-amz-storage-class":                 "x-amz-storage-class",
}

// postRequest returns r with the form's fields as its headers, so the
// upload goes through the same parsing, validation and authorization as
// a PUT (writeMeta): metadata, tagging (an XML Tagging document in a
// form), ACL, object lock. Of the real headers only Referer and
// User-Agent remain (aws:Referer, aws:UserAgent).
func postRequest(r *http.Request, fv map[string]string) (*http.Request, error) {
	h := http.Header{}
	for _, k := range []string{"Referer", "User-Agent"} {
		if v := r.Header.Values(k); len(v) > 0 {
			h[k] = v
		}
	}
	for k, v := range fv {
		if name, ok := postHeaderFields[k]; ok {
			h.Set(name, v)
		} else if strings.HasPrefix(k, "x-amz-meta-") {
			h.Set(k, v)
		}
	}
	if t, ok := fv["tagging"]; ok {
		var tg postTagging
		if err := xml.Unmarshal([]byte(t), &tg); err != nil {
			return nil, s3err.Wrap(s3err.ErrMalformedXML, err)
		}
		q := url.Values{}
		for _, x := range tg.Tags {
			if q.Has(x.Key) {
				return nil, s3err.New(s3err.ErrInvalidTag, "Cannot provide multiple Tags with the same key")
			}
			q.Set(x.Key, x.Value)
		}
		if len(q) > 0 {
			h.Set("X-Amz-Tagging", q.Encode())
		}
	}
	pr := r.Clone(r.Context())
	pr.Header = h
	return pr, nil
}

// postObject is PostObject (POST to the bucket with multipart/form-data).
func (s *Server) postObject(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	f, err := readPostForm(r)
	if err != nil {
		return err
	}
	id, pol, err := s.postIdentity(ctx, f, s.cfg.Now())
	if err != nil {
		return err
	}
	meta := driver.RequestFrom(ctx)
	meta.Principal = id.User.ID
	ctx = driver.WithRequest(ctx, meta)

	// ${filename} is expanded in every field before the policy is checked.
	fname := postFilename(f.file)
	fv := make(map[string]string, len(f.fields)+1)
	for k, v := range f.fields {
		fv[k] = strings.ReplaceAll(v, "${filename}", fname)
	}
	key, ok := fv["key"]
	if !ok {
		return missingField("key")
	}
	// The policy's $bucket is the bucket posted to, whatever a bucket
	// field says: a form signed for another bucket fails its condition.
	fv["bucket"] = rc.bucketName
	pr, err := postRequest(r.WithContext(ctx), fv)
	if err != nil {
		return err
	}
	if err := s.authorizePostObject(pr, rc, id, key); err != nil {
		return err
	}
	lo, hi := int64(0), int64(driver.MaxPutSize)
	if pol != nil {
		if err := pol.Check(fv, f.order); err != nil {
			var ce *postpolicy.ConditionError
			if errors.As(err, &ce) {
				return s3err.New(s3err.ErrAccessDenied, "Invalid according to Policy: %s", ce.Msg)
			}
			return err
		}
		if min, max, ok := pol.LengthRange(); ok {
			lo, hi = min, max
		}
	}
	om, err := s.writeMeta(pr, rc, true)
	if err != nil {
		return err
	}
	// Encryption fields of the form are read as the PUT headers would be.
	sh := http.Header{}
	for k, v := range fv {
		if strings.HasPrefix(k, "x-amz-server-side-encryption") {
			sh.Set(k, v)
		}
	}
	sr := r.Clone(ctx)
	sr.Header = sh
	sp, err := s.parseSSE(sr, sseWrite)
	if err != nil {
		return err
	}
	ctx = withSSE(ctx, sp)
	// Checksum fields are read as the PUT headers would be: the declared
	// value is verified at EOF (BadDigest), else S3's default CRC64NVME is
	// computed; PutObject stores the metadata after reading the body.
	ch := http.Header{}
	for k, v := range fv {
		switch {
		case k == "x-amz-checksum-algorithm":
			ch.Set("x-amz-sdk-checksum-algorithm", v)
		case strings.HasPrefix(k, "x-amz-checksum-"):
			ch.Set(k, v)
		}
	}
	alg, want, _, err := declaredChecksum(ch)
	if err != nil {
		return err
	}
	if alg == "" {
		alg = "CRC64NVME"
	}
	om.Checksums = map[string]string{}
	body := &verifier{r: &postBody{r: f.file, min: lo, max: hi}, size: -1,
		alg: alg, want: want, sum: newChecksumHash(alg), out: om.Checksums}
	info, err := s.be.PutObject(ctx, driver.PutObjectInput{
		Bucket: rc.bucket, Key: key, Body: body, Size: -1, Meta: om,
		EventName: "ObjectCreated:Post",
	})
	if err != nil {
		return err
	}
	return s.postResponse(w, r, rc, fv, key, info)
}

func (s *Server) postResponse(w http.ResponseWriter, r *http.Request, rc *reqCtx, fv map[string]string, key string, info driver.ObjectInfo) error {
	h := w.Header()
	etag := quoteETag(info.ETag)
	h.Set("Etag", etag)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	loc := scheme + "://" + r.Host + "/" + rc.rawBucket + "/" + (&url.URL{Path: key}).EscapedPath()
	h.Set("Location", loc)

	redirect := fv["success_action_redirect"]
	if redirect == "" {
		redirect = fv["redirect"]
	}
	if u, err := url.Parse(redirect); redirect != "" && err == nil && u.Scheme != "" && u.Host != "" {
		// AWS appends bucket, key and etag in that order to the query as
		// the form gave it (url.Values would sort and re-encode it).
		add := "bucket=" + url.QueryEscape(rc.bucketName) + "&key=" + url.QueryEscape(key) + "&etag=" + url.QueryEscape(etag)
		if u.RawQuery != "" {
			add = u.RawQuery + "&" + add
		}
		u.RawQuery = add
		h.Set("Location", u.String())
		w.WriteHeader(http.StatusSeeOther)
		return nil
	}
	switch fv["success_action_status"] {
	case "200":
		w.WriteHeader(http.StatusOK)
	case "201":
		return writeXML(w, http.StatusCreated, struct {
			XMLName  xml.Name `xml:"PostResponse"`
			Location string   `xml:"Location"`
			Bucket   string   `xml:"Bucket"`
			Key      string   `xml:"Key"`
			ETag     string   `xml:"ETag"`
		}{Location: loc, Bucket: rc.bucketName, Key: key, ETag: etag})
	default:
		w.WriteHeader(http.StatusNoContent)
	}
	return nil
}
