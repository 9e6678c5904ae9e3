package sts

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/iam"
)

// Web identity errors, each one STS error code.
var (
	ErrInvalidIdentityToken = errors.New("InvalidIdentityToken")
	ErrExpiredIdentityToken = errors.New("ExpiredTokenException")
	ErrIDPCommunication     = errors.New("IDPCommunicationError")
)

const (
	jwksTTL        = 10 * time.Minute
	jwksRefreshGap = 30 * time.Second // forced refetch on an unknown kid at most this often
	maxIDPBody     = 1 << 20
	maxJWT         = 16 << 10
	clockLeeway    = 60 * time.Second
)

// WebIdentity is a verified web identity token.
type WebIdentity struct {
	Provider iam.OIDCProvider
	Subject  string
	// Audience is the token's aud that matched a client id.
	Audience string
	// Claims are the token's string claims, for trust-policy conditions.
	Claims map[string]string
}

type jwks struct {
	keys    map[string]*rsa.PublicKey // by kid ("" when the set has one unnamed key)
	fetched time.Time
}

// oidcCache holds each issuer's JWKS.
type oidcCache struct {
	mu   sync.Mutex
	sets map[string]*jwks // by issuer URL and thumbprints
}

func idpErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidIdentityToken, fmt.Sprintf(format, args...))
}

// VerifyWebIdentity checks an RS256 JWT against provider p: signature by
// a key of the issuer's JWKS (discovery document, then jwks_uri, fetched
// over TLS pinned to p's thumbprints when it has some), iss = p.URL, aud
// one of p's client ids, exp in the future (60 s leeway), nbf passed.
func (s *Service) VerifyWebIdentity(ctx context.Context, p iam.OIDCProvider, token string) (WebIdentity, error) {
	if len(token) > maxJWT {
		return WebIdentity{}, idpErr("the token is too long")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return WebIdentity{}, idpErr("the token is not a JWS compact serialization")
	}
	var hdr struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}
	if err := decodeSegment(parts[0], &hdr); err != nil {
		return WebIdentity{}, idpErr("malformed header")
	}
	if hdr.Alg != "RS256" {
		return WebIdentity{}, idpErr("unsupported signing algorithm %q (RS256 only)", hdr.Alg)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return WebIdentity{}, idpErr("malformed signature")
	}
	var raw map[string]any
	if err := decodeSegment(parts[1], &raw); err != nil {
		return WebIdentity{}, idpErr("malformed claims")
	}
	key, err := s.jwk(ctx, p, hdr.Kid)
	if err != nil {
		return WebIdentity{}, err
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig) != nil {
		return WebIdentity{}, idpErr("the signature does not verify")
	}
	claims := map[string]string{}
	for k, v := range raw {
		if str, ok := v.(string); ok {
			claims[k] = str
		}
	}
	if claims["iss"] != p.URL && strings.TrimSuffix(claims["iss"], "/") != p.URL {
		return WebIdentity{}, idpErr("the token's issuer %q is not the provider's", claims["iss"])
	}
	now := s.opts.Now()
	exp, ok := raw["exp"].(float64)
	if !ok {
		return WebIdentity{}, idpErr("the token has no exp")
	}
	if !now.Before(time.Unix(int64(exp), 0).Add(clockLeeway)) {
		return WebIdentity{}, fmt.Errorf("%w: Token expired", ErrExpiredIdentityToken)
	}
	if nbf, ok := raw["nbf"].(float64); ok && now.Add(clockLeeway).Before(time.Unix(int64(nbf), 0)) {
		return WebIdentity{}, idpErr("the token is not valid yet")
	}
	var auds []string
	switch a := raw["aud"].(type) {
	case string:
		auds = []string{a}
	case []any:
		for _, x := range a {
			if s, ok := x.(string); ok {
				auds = append(auds, s)
			}
		}
	}
	w := WebIdentity{Provider: p, Subject: claims["sub"], Claims: claims}
	for _, a := range auds {
		if slices.Contains(p.ClientIDs, a) {
			w.Audience = a
			break
		}
	}
	if w.Audience == "" {
		return WebIdentity{}, idpErr("Incorrect token audience")
	}
	if w.Subject == "" {
		return WebIdentity{}, idpErr("the token has no sub")
	}
	return w, nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// jwk returns the issuer's key kid, fetching the JWKS when absent, stale,
// or (rate-limited) when kid is unknown (the issuer rotated).
func (s *Service) jwk(ctx context.Context, p iam.OIDCProvider, kid string) (*rsa.PublicKey, error) {
	cacheKey := p.URL + "|" + strings.Join(p.Thumbprints, ",")
	now := s.opts.Now()
	s.oidc.mu.Lock()
	if s.oidc.sets == nil {
		s.oidc.sets = map[string]*jwks{}
	}
	set := s.oidc.sets[cacheKey]
	s.oidc.mu.Unlock()
	if set != nil && now.Sub(set.fetched) < jwksTTL {
		if k := set.pick(kid); k != nil {
			return k, nil
		}
		if now.Sub(set.fetched) < jwksRefreshGap {
			return nil, idpErr("no key %q in the issuer's JWKS", kid)
		}
	}
	fresh, err := s.fetchJWKS(ctx, p)
	if err != nil {
		return nil, err
	}
	fresh.fetched = now
	s.oidc.mu.Lock()
	s.oidc.sets[cacheKey] = fresh
	s.oidc.mu.Unlock()
	if k := fresh.pick(kid); k != nil {
		return k, nil
	}
	return nil, idpErr("no key %q in the issuer's JWKS", kid)
}

func (j *jwks) pick(kid string) *rsa.PublicKey {
	if k, ok := j.keys[kid]; ok {
		return k
	}
	if kid == "" && len(j.keys) == 1 {
		for _, k := range j.keys {
			return k
		}
	}
	return nil
}

// httpClient fetches from the issuer: with thumbprints, the TLS chain is
// accepted when the SHA-1 of one of its certificates is listed (RGW and
// AWS pin the issuer this way; no CA needed); without, the system roots
// verify it.
func (s *Service) httpClient(p iam.OIDCProvider) *http.Client {
	tr := &http.Transport{Proxy: nil, TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: 10 * time.Second}
	if len(p.Thumbprints) > 0 {
		tr.TLSClientConfig = &tls.Config{
			InsecureSkipVerify: true, // replaced by the pin below
			VerifyConnection: func(cs tls.ConnectionState) error {
				for _, c := range cs.PeerCertificates {
					sum := sha1.Sum(c.Raw)
					if slices.Contains(p.Thumbprints, hex.EncodeToString(sum[:])) {
						return nil
					}
				}
				return errors.New("no certificate of the issuer matches the provider's thumbprints")
			},
		}
	}
	return &http.Client{Transport: tr, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (s *Service) getJSON(ctx context.Context, c *http.Client, u string, v any) error {
	if !strings.HasPrefix(u, "https://") {
		return fmt.Errorf("%w: %s is not https", ErrIDPCommunication, u)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIDPCommunication, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIDPCommunication, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s answered %d", ErrIDPCommunication, u, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxIDPBody)).Decode(v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrIDPCommunication, u, err)
	}
	return nil
}

func (s *Service) fetchJWKS(ctx context.Context, p iam.OIDCProvider) (*jwks, error) {
	c := s.httpClient(p)
	defer c.CloseIdleConnections()
	var disc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := s.getJSON(ctx, c, p.URL+"/.well-known/openid-configuration", &disc); err != nil {
		return nil, err
	}
	if strings.TrimSuffix(disc.Issuer, "/") != p.URL {
		return nil, fmt.Errorf("%w: the discovery document names issuer %q", ErrIDPCommunication, disc.Issuer)
	}
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Use string `json:"use"`
			N   string `json:"n"`
			E   string `json:"e"`
			X5c []string
		} `json:"keys"`
	}
	if err := s.getJSON(ctx, c, disc.JWKSURI, &set); err != nil {
		return nil, err
	}
	out := &jwks{keys: map[string]*rsa.PublicKey{}}
	for _, k := range set.Keys {
		if k.Kty != "RSA" || (k.Use != "" && k.Use != "sig") {
			continue
		}
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if err1 != nil || err2 != nil || len(e) > 4 || len(n) < 256 {
			continue // unusable, or RSA under 2048 bits
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		out.keys[k.Kid] = pub
	}
	if len(out.keys) == 0 {
		return nil, fmt.Errorf("%w: the issuer's JWKS has no usable RSA key", ErrIDPCommunication)
	}
	return out, nil
}

// UnverifiedIssuer returns a JWT's iss claim without verifying anything,
// to find the provider whose keys then verify the token.
func UnverifiedIssuer(token string) (string, error) {
	parts := strings.Split(token, ".")
	if len(token) > maxJWT || len(parts) != 3 {
		return "", idpErr("the token is not a JWS compact serialization")
	}
	var c struct {
		Iss string `json:"iss"`
	}
	if err := decodeSegment(parts[1], &c); err != nil || c.Iss == "" {
		return "", idpErr("the token names no issuer")
	}
	return c.Iss, nil
}
