package s3api

import (
	"encoding/xml"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// CORS: Put/Get/DeleteBucketCors, OPTIONS preflights answered from the
// bucket's rules, and Access-Control-* headers on actual responses. Rules
// live in the bucket instance (driver.CORSRule), so a preflight or a
// cross-origin GET costs no store read while the instance is cached.

const maxCORSRules = 100

var (
	// AWS answers refused preflights with these (code AccessForbidden).
	errCORSNotAllowed = s3err.APIError{Code: "AccessForbidden", HTTPStatus: http.StatusForbidden,
		Description: "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec."}
	errCORSNotEnabled = s3err.APIError{Code: "AccessForbidden", HTTPStatus: http.StatusForbidden,
		Description: "CORSResponse: CORS is not enabled for this bucket."}
	errCORSBadRequest = s3err.APIError{Code: "BadRequest", HTTPStatus: http.StatusBadRequest,
		Description: "Insufficient information. Origin request header needed."}
)

type corsConfiguration struct {
	XMLName xml.Name  `xml:"CORSConfiguration"`
	Xmlns   string    `xml:"xmlns,attr,omitempty"`
	Rules   []corsXML `xml:"CORSRule"`
}

type corsXML struct {
	ID             string   `xml:"ID,omitempty"`
	AllowedHeaders []string `xml:"AllowedHeader"`
	AllowedMethods []string `xml:"AllowedMethod"`
	AllowedOrigins []string `xml:"AllowedOrigin"`
	ExposeHeaders  []string `xml:"ExposeHeader"`
	MaxAgeSeconds  *int     `xml:"MaxAgeSeconds"`
}

var corsMethods = map[string]bool{"GET": true, "PUT": true, "HEAD": true, "POST": true, "DELETE": true}

// parseCORS parses and validates a CORSConfiguration document the way S3
// does: structure problems are MalformedXML, bad values InvalidRequest.
func parseCORS(data []byte) ([]driver.CORSRule, error) {
	var cfg corsConfiguration
	if err := decodeXML(data, &cfg); err != nil {
		return nil, err
	}
	if len(cfg.Rules) == 0 || len(cfg.Rules) > maxCORSRules {
		return nil, s3err.New(s3err.ErrMalformedXML, "")
	}
	out := make([]driver.CORSRule, 0, len(cfg.Rules))
	for _, x := range cfg.Rules {
		if len(x.AllowedMethods) == 0 || len(x.AllowedOrigins) == 0 {
			return nil, s3err.New(s3err.ErrMalformedXML, "")
		}
		if len(x.ID) > 255 {
			return nil, s3err.New(s3err.ErrInvalidArgument, "The ID of a CORS rule can be at most 255 characters.")
		}
		if x.MaxAgeSeconds != nil && *x.MaxAgeSeconds < 0 {
			return nil, s3err.New(s3err.ErrMalformedXML, "")
		}
		for _, m := range x.AllowedMethods {
			if !corsMethods[m] { // case-sensitive, as in S3
				return nil, s3err.New(s3err.ErrInvalidRequest, "Found unsupported HTTP method in CORS config. Unsupported method is %s", m)
			}
		}
		for _, o := range x.AllowedOrigins {
			if strings.Count(o, "*") > 1 {
				return nil, s3err.New(s3err.ErrInvalidRequest, "AllowedOrigin \"%s\" can not have more than one wildcard.", o)
			}
		}
		for _, h := range x.AllowedHeaders {
			if strings.Count(h, "*") > 1 {
				return nil, s3err.New(s3err.ErrInvalidRequest, "AllowedHeader \"%s\" can not have more than one wildcard.", h)
			}
		}
		for _, h := range x.ExposeHeaders {
			if strings.Contains(h, "*") {
				return nil, s3err.New(s3err.ErrInvalidRequest, "ExposeHeader \"%s\" contains wildcard. We currently do not support wildcard for ExposeHeader.", h)
			}
		}
		out = append(out, driver.CORSRule{
			ID: x.ID, AllowedOrigins: x.AllowedOrigins, AllowedMethods: x.AllowedMethods,
			AllowedHeaders: x.AllowedHeaders, ExposeHeaders: x.ExposeHeaders, MaxAgeSeconds: x.MaxAgeSeconds,
		})
	}
	return out, nil
}

// putBucketCors is PutBucketCors (PUT ?cors).
func (s *Server) putBucketCors(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	p, err := verifyBody(r, rc, -1)
	if err != nil {
		return err
	}
	data, err := readAllLimited(p.body, maxSmallXML)
	if err != nil {
		return err
	}
	rules, err := parseCORS(data)
	if err != nil {
		return err
	}
	return s.be.PutBucketCORS(r.Context(), rc.bucket, rules)
}

// getBucketCors is GetBucketCors (GET ?cors); NoSuchCORSConfiguration when
// the bucket has none.
func (s *Server) getBucketCors(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	rules, err := s.be.GetBucketCORS(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	out := corsConfiguration{Xmlns: s3Namespace}
	for _, c := range rules {
		out.Rules = append(out.Rules, corsXML{
			ID: c.ID, AllowedHeaders: c.AllowedHeaders, AllowedMethods: c.AllowedMethods,
			AllowedOrigins: c.AllowedOrigins, ExposeHeaders: c.ExposeHeaders, MaxAgeSeconds: c.MaxAgeSeconds,
		})
	}
	return writeXML(w, http.StatusOK, out)
}

// deleteBucketCors is DeleteBucketCors (DELETE ?cors): 204 whether or not
// the bucket had rules.
func (s *Server) deleteBucketCors(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if err := s.be.PutBucketCORS(r.Context(), rc.bucket, nil); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// wildcardMatch matches s against a pattern with at most one '*' (S3
// allows one per AllowedOrigin / AllowedHeader).
func wildcardMatch(pattern, s string) bool {
	pre, suf, ok := strings.Cut(pattern, "*")
	if !ok {
		return pattern == s
	}
	return len(s) >= len(pre)+len(suf) && strings.HasPrefix(s, pre) && strings.HasSuffix(s, suf)
}

func originAllowed(rule driver.CORSRule, origin string) bool {
	for _, o := range rule.AllowedOrigins {
		if wildcardMatch(o, origin) {
			return true
		}
	}
	return false
}

func methodAllowed(rule driver.CORSRule, method string) bool {
	for _, m := range rule.AllowedMethods {
		if m == method {
			return true
		}
	}
	return false
}

// headersAllowed reports whether every requested header (lower-cased)
// matches an AllowedHeader, compared case-insensitively.
func headersAllowed(rule driver.CORSRule, requested []string) bool {
	for _, h := range requested {
		ok := false
		for _, a := range rule.AllowedHeaders {
			if wildcardMatch(strings.ToLower(a), h) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// matchCORS returns the first rule allowing origin, method and the
// requested headers: S3 evaluates rules in order and uses the first match.
func matchCORS(rules []driver.CORSRule, origin, method string, headers []string) (driver.CORSRule, bool) {
	for _, rule := range rules {
		if originAllowed(rule, origin) && methodAllowed(rule, method) && headersAllowed(rule, headers) {
			return rule, true
		}
	}
	return driver.CORSRule{}, false
}

// splitHeaderList splits Access-Control-Request-Headers into lower-cased
// names.
func splitHeaderList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(strings.ToLower(f)); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// setCORSHeaders writes the Access-Control-* headers of a matched rule.
// A rule whose origin is exactly "*" answers "*" without credentials, as
// S3 does; otherwise the request's origin is echoed with credentials.
func setCORSHeaders(h http.Header, rule driver.CORSRule, origin string) {
	wildcard := false
	for _, o := range rule.AllowedOrigins {
		if o == "*" {
			wildcard = true
		}
	}
	if wildcard {
		h.Set("Access-Control-Allow-Origin", "*")
	} else {
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
	}
	h.Set("Access-Control-Allow-Methods", strings.Join(rule.AllowedMethods, ", "))
	if len(rule.ExposeHeaders) > 0 {
		h.Set("Access-Control-Expose-Headers", strings.Join(rule.ExposeHeaders, ", "))
	}
	if rule.MaxAgeSeconds != nil {
		h.Set("Access-Control-Max-Age", strconv.Itoa(*rule.MaxAgeSeconds))
	}
}

const corsVary = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"

// preflight answers an OPTIONS request from the bucket's CORS rules. It
// needs no credentials: browsers send none with a preflight.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return s3err.New(errCORSBadRequest, "")
	}
	method := r.Header.Get("Access-Control-Request-Method")
	if method == "" {
		return s3err.New(errCORSBadRequest, "Invalid Access-Control-Request-Method: null")
	}
	rules, err := s.be.GetBucketCORS(r.Context(), rc.bucket)
	if err == nil && len(rules) == 0 {
		err = driver.ErrNoSuchCORSConfiguration
	}
	if err != nil {
		if errors.Is(err, driver.ErrNoSuchCORSConfiguration) {
			return s3err.New(errCORSNotEnabled, "")
		}
		return err
	}
	reqHeaders := splitHeaderList(r.Header.Get("Access-Control-Request-Headers"))
	rule, ok := matchCORS(rules, origin, method, reqHeaders)
	if !ok {
		return s3err.New(errCORSNotAllowed, "")
	}
	h := w.Header()
	setCORSHeaders(h, rule, origin)
	if len(reqHeaders) > 0 {
		h.Set("Access-Control-Allow-Headers", strings.Join(reqHeaders, ", "))
	}
	h.Set("Vary", corsVary)
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// applyCORS adds Access-Control-* headers to an actual (non-preflight)
// request carrying Origin when the bucket has a rule for its origin and
// method. It runs before authentication, so error responses carry the
// headers too and a browser page can read why its request failed.
func (s *Server) applyCORS(w http.ResponseWriter, r *http.Request, bucket string) {
	origin := r.Header.Get("Origin")
	if origin == "" || bucket == "" || !driver.ValidBucketName(bucket) {
		return
	}
	rules, err := s.be.GetBucketCORS(r.Context(), bucket)
	if err != nil || len(rules) == 0 {
		return
	}
	h := w.Header()
	h.Set("Vary", corsVary)
	if rule, ok := matchCORS(rules, origin, r.Method, nil); ok {
		setCORSHeaders(h, rule, origin)
	}
}
