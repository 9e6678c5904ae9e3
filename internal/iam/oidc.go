package iam

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

// OIDC provider limits (AWS's quotas).
const (
	MaxOIDCProviders   = 100
	MaxOIDCClientIDs   = 100
	MaxOIDCThumbprints = 5
)

const nsAccountOIDC = "accounts.oidc"

// OIDCProvider is an OpenID Connect identity provider registered in an
// account: AssumeRoleWithWebIdentity accepts tokens its issuer signed for
// one of ClientIDs; Thumbprints pin the issuer's TLS certificates.
type OIDCProvider struct {
	Account string `json:"account_id"`
	// URL is the issuer ("https://host[:port][/path]").
	URL         string    `json:"url"`
	ClientIDs   []string  `json:"client_ids"`
	Thumbprints []string  `json:"thumbprints,omitempty"`
	Created     time.Time `json:"created"`
}

// ID is the provider's identifier: its URL without "https://" (AWS's
// form in ARNs and condition keys).
func (p OIDCProvider) ID() string { return OIDCProviderID(p.URL) }

// ARN is arn:aws:iam::<account>:oidc-provider/<id>.
func (p OIDCProvider) ARN() string { return OIDCProviderARN(p.Account, p.ID()) }

// OIDCProviderID is an issuer URL without its scheme and trailing slash.
func OIDCProviderID(issuer string) string {
	return strings.TrimSuffix(strings.TrimPrefix(issuer, "https://"), "/")
}

// OIDCProviderARN is a provider's ARN.
func OIDCProviderARN(account, id string) string {
	return "arn:aws:iam::" + account + ":oidc-provider/" + id
}

func (s *Store) oidc() objstore.IOContext { return s.meta.WithNamespace(nsAccountOIDC) }

func oidcKey(account, id string) string { return account + "$" + strings.ToLower(id) }

// CreateOIDCProvider registers an issuer in account (one exclusive
// create per account and issuer).
func (s *Store) CreateOIDCProvider(ctx context.Context, account, rawURL string, clientIDs, thumbprints []string) (OIDCProvider, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || len(rawURL) > 255 {
		return OIDCProvider{}, invalid("Url %q must be an https URL without query or fragment", rawURL)
	}
	if len(clientIDs) > MaxOIDCClientIDs {
		return OIDCProvider{}, fmt.Errorf("%w: at most %d client ids", ErrLimitExceeded, MaxOIDCClientIDs)
	}
	for _, c := range clientIDs {
		if c == "" || len(c) > 255 {
			return OIDCProvider{}, invalid("client id %q", c)
		}
	}
	if err := validThumbprints(thumbprints); err != nil {
		return OIDCProvider{}, err
	}
	if _, err := s.GetAccount(ctx, account); err != nil {
		return OIDCProvider{}, err
	}
	n, err := listPrefix(ctx, s.oidc(), account+"$", "")
	if err != nil {
		return OIDCProvider{}, err
	}
	if len(n) >= MaxOIDCProviders {
		return OIDCProvider{}, fmt.Errorf("%w: Cannot exceed quota for OpenIdConnectProvidersPerAccount: %d", ErrLimitExceeded, MaxOIDCProviders)
	}
	p := OIDCProvider{Account: account, URL: strings.TrimSuffix(rawURL, "/"), ClientIDs: clientIDs, Thumbprints: thumbprints, Created: s.now().UTC()}
	body, _ := json.Marshal(p)
	err = s.oidc().Operate(ctx, oidcKey(account, p.ID()), objstore.NewWriteOp().Create(true).WriteFull(body))
	if errors.Is(err, objstore.ErrExists) {
		return OIDCProvider{}, fmt.Errorf("%w: Provider with url %s already exists.", ErrEntityAlreadyExists, rawURL)
	}
	return p, err
}

// validThumbprints checks a thumbprint list (≤ 5 SHA-1 hex digests) and
// brings it to lower case in place.
func validThumbprints(thumbprints []string) error {
	if len(thumbprints) > MaxOIDCThumbprints {
		return fmt.Errorf("%w: at most %d thumbprints", ErrLimitExceeded, MaxOIDCThumbprints)
	}
	for i, t := range thumbprints {
		if b, err := hex.DecodeString(t); err != nil || len(b) != 20 {
			return invalid("thumbprint %q must be 40 hex digits (SHA-1)", t)
		}
		thumbprints[i] = strings.ToLower(t)
	}
	return nil
}

// ParseOIDCProviderARN returns the account and provider id of an ARN.
func ParseOIDCProviderARN(arn string) (account, id string, ok bool) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "iam" {
		return "", "", false
	}
	id, ok = strings.CutPrefix(parts[5], "oidc-provider/")
	return parts[4], id, ok && id != ""
}

// GetOIDCProvider returns account's provider with id (URL without
// scheme).
func (s *Store) GetOIDCProvider(ctx context.Context, account, id string) (OIDCProvider, error) {
	b, err := read(ctx, s.oidc(), oidcKey(account, id))
	if err != nil {
		return OIDCProvider{}, notFound(err, "OpenIDConnect Provider not found for arn "+OIDCProviderARN(account, id))
	}
	var p OIDCProvider
	if err := json.Unmarshal(b, &p); err != nil {
		return OIDCProvider{}, fmt.Errorf("oidc provider %s: %w", id, err)
	}
	return p, nil
}

// ListOIDCProviders returns the account's providers.
func (s *Store) ListOIDCProviders(ctx context.Context, account string) ([]OIDCProvider, error) {
	keys, err := listPrefix(ctx, s.oidc(), account+"$", "")
	if err != nil {
		return nil, err
	}
	var out []OIDCProvider
	for _, k := range keys {
		if p, err := s.GetOIDCProvider(ctx, account, k[len(account)+1:]); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// updateOIDCProvider is a version-guarded read-modify-write of a
// provider. AssumeRoleWithWebIdentity reads the provider on every call, so
// a change applies to the next one (the JWKS cache is keyed by the
// thumbprint set too).
func (s *Store) updateOIDCProvider(ctx context.Context, account, id string, fn func(*OIDCProvider) error) error {
	for attempt := 0; ; attempt++ {
		op := objstore.NewReadOp()
		r := op.Read(0, 0)
		st := op.Stat()
		if err := s.oidc().OperateRead(ctx, oidcKey(account, id), op); err != nil {
			return notFound(err, "OpenIDConnect Provider not found for arn "+OIDCProviderARN(account, id))
		}
		var p OIDCProvider
		if err := json.Unmarshal(r.Data, &p); err != nil {
			return fmt.Errorf("oidc provider %s: %w", id, err)
		}
		if err := fn(&p); err != nil {
			return err
		}
		body, _ := json.Marshal(p)
		err := s.oidc().Operate(ctx, oidcKey(account, id), objstore.NewWriteOp().AssertVersion(st.Stat.Version).WriteFull(body))
		if errors.Is(err, objstore.ErrCanceled) && attempt < 20 {
			continue
		}
		return notFound(err, "OpenIDConnect Provider "+id)
	}
}

// UpdateOIDCThumbprints replaces a provider's thumbprints.
func (s *Store) UpdateOIDCThumbprints(ctx context.Context, account, id string, thumbprints []string) error {
	if err := validThumbprints(thumbprints); err != nil {
		return err
	}
	return s.updateOIDCProvider(ctx, account, id, func(p *OIDCProvider) error {
		p.Thumbprints = thumbprints
		return nil
	})
}

// AddOIDCClientID adds a client id (present already: nothing to do, as
// AWS); at most MaxOIDCClientIDs.
func (s *Store) AddOIDCClientID(ctx context.Context, account, id, clientID string) error {
	if clientID == "" || len(clientID) > 255 {
		return invalid("client id %q", clientID)
	}
	return s.updateOIDCProvider(ctx, account, id, func(p *OIDCProvider) error {
		if slices.Contains(p.ClientIDs, clientID) {
			return nil
		}
		if len(p.ClientIDs) >= MaxOIDCClientIDs {
			return fmt.Errorf("%w: Cannot exceed quota for ClientIdsPerOpenIdConnectProvider: %d", ErrLimitExceeded, MaxOIDCClientIDs)
		}
		p.ClientIDs = append(p.ClientIDs, clientID)
		return nil
	})
}

// RemoveOIDCClientID removes a client id (absent: nothing to do, as AWS);
// tokens for it are refused from the next AssumeRoleWithWebIdentity on.
func (s *Store) RemoveOIDCClientID(ctx context.Context, account, id, clientID string) error {
	if clientID == "" || len(clientID) > 255 {
		return invalid("client id %q", clientID)
	}
	return s.updateOIDCProvider(ctx, account, id, func(p *OIDCProvider) error {
		p.ClientIDs = slices.DeleteFunc(p.ClientIDs, func(c string) bool { return c == clientID })
		return nil
	})
}

// DeleteOIDCProvider removes a provider; tokens of its issuer are
// refused from then on (sessions already issued last until they expire).
func (s *Store) DeleteOIDCProvider(ctx context.Context, account, id string) error {
	if _, err := s.GetOIDCProvider(ctx, account, id); err != nil {
		return err
	}
	return notFound(s.oidc().Operate(ctx, oidcKey(account, id), objstore.NewWriteOp().Remove()), "OpenIDConnect Provider "+id)
}
