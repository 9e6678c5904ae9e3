package sts

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/iam"
	"github.com/cairn-s3/cairn/internal/kms/secret"
)

// Errors of Verify, each one wire error.
var (
	// ErrInvalidToken: the token does not open (forged, altered, another
	// access key's, an unknown key id) or its role is gone.
	ErrInvalidToken = errors.New("InvalidToken")
	// ErrExpiredToken: the session has expired.
	ErrExpiredToken = errors.New("ExpiredToken")
)

// Durations (AWS).
const (
	MinDuration             = 900
	DefaultDuration         = 3600
	MaxSessionTokenDuration = 129600 // GetSessionToken: 36 h
	sessionCacheTTL         = 5 * time.Second
	maxCached               = 100000
)

// Options configure a Service.
type Options struct {
	Driver *driver.Driver
	Store  *iam.Store
	// Secrets, when enabled, seals the STS keys at rest.
	Secrets *secret.Sealer
	Logger  *slog.Logger
	Now     func() time.Time
}

// Service mints and verifies session credentials. Safe for concurrent
// use.
type Service struct {
	opts Options
	ring keyring

	mu    sync.Mutex
	cache map[string]cached
	oidc  oidcCache
}

type cached struct {
	token  string
	user   driver.User
	secret string
	exp    time.Time
	loaded time.Time
	role   string // "<account>$<lower-case role>" for forgetRole
}

// New loads (or creates) the STS keyring and returns the Service.
func New(ctx context.Context, opts Options) (*Service, error) {
	if opts.Driver == nil || opts.Store == nil {
		return nil, errors.New("sts: Options.Driver and Store are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{opts: opts, cache: map[string]cached{}}
	s.ring = keyring{io: opts.Driver.MetaIO().WithNamespace(nsSTS), secrets: opts.Secrets, now: opts.Now}
	if err := s.ring.load(ctx); err != nil {
		return nil, err
	}
	opts.Store.SetRoleChanged(s.forgetRole)
	return s, nil
}

// Credentials are temporary credentials.
type Credentials struct {
	AccessKeyID, SecretAccessKey, SessionToken string
	Expiration                                 time.Time
}

const keyAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

func random(alphabet string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// Mint issues credentials for c (its AccessKey, Secret, Issued and
// Expires are set here) valid for d.
func (s *Service) Mint(c Claims, d time.Duration) (Credentials, error) {
	now := s.opts.Now()
	c.AccessKey = "ASIA" + random(keyAlphabet, 16)
	c.Secret = random("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 40)
	c.Issued = now.Unix()
	exp := now.Add(d).Truncate(time.Second)
	c.Expires = exp.Unix()
	kid, key := s.ring.sealing()
	tok, err := seal(kid, key, &c)
	if err != nil {
		return Credentials{}, err
	}
	return Credentials{AccessKeyID: c.AccessKey, SecretAccessKey: c.Secret, SessionToken: tok, Expiration: exp.UTC()}, nil
}

// Verify returns the principal of a session (as a driver.User with
// Session set) and its secret, for access key ak presenting token.
// ErrInvalidToken or ErrExpiredToken for a bad token; other errors are
// the store's. A verified session is cached for 5 s (role policy
// changes through another gateway apply within that; through this one
// at once), expiry checked on every call.
func (s *Service) Verify(ctx context.Context, ak, token string) (driver.User, string, error) {
	now := s.opts.Now()
	s.mu.Lock()
	e, ok := s.cache[ak]
	s.mu.Unlock()
	if ok && subtle.ConstantTimeCompare([]byte(e.token), []byte(token)) == 1 && now.Sub(e.loaded) < sessionCacheTTL {
		if !now.Before(e.exp) {
			return driver.User{}, "", ErrExpiredToken
		}
		return e.user, e.secret, nil
	}
	c, err := s.Open(ctx, ak, token)
	if err != nil {
		return driver.User{}, "", err
	}
	u, role, err := s.principal(ctx, c)
	if err != nil {
		return driver.User{}, "", err
	}
	s.mu.Lock()
	if len(s.cache) >= maxCached {
		clear(s.cache)
	}
	s.cache[ak] = cached{token: token, user: u, secret: c.Secret, exp: time.Unix(c.Expires, 0), loaded: now, role: role}
	s.mu.Unlock()
	return u, c.Secret, nil
}

// Open authenticates token for ak and checks its expiry.
func (s *Service) Open(ctx context.Context, ak, token string) (*Claims, error) {
	raw, kid, err := header(token)
	if err != nil {
		return nil, ErrInvalidToken
	}
	key, ok := s.ring.get(ctx, kid)
	if !ok {
		return nil, ErrInvalidToken
	}
	c, err := open(raw, key, ak)
	if err != nil {
		return nil, ErrInvalidToken
	}
	if !s.opts.Now().Before(time.Unix(c.Expires, 0)) {
		return nil, ErrExpiredToken
	}
	return c, nil
}

// principal builds the session's principal: a role session is the role
// (which must still exist with the same id) filtered by the session
// policy; a GetSessionToken session is its user.
func (s *Service) principal(ctx context.Context, c *Claims) (driver.User, string, error) {
	if c.RoleName == "" {
		u, err := s.opts.Driver.Identity(ctx, c.UserID)
		if errors.Is(err, driver.ErrNoSuchUser) {
			return driver.User{}, "", ErrInvalidToken
		}
		if err != nil {
			return driver.User{}, "", err
		}
		u.Session = &authz.Session{}
		return u, "", nil
	}
	r, err := s.opts.Store.GetRole(ctx, c.Account, c.RoleName)
	if errors.Is(err, iam.ErrNoSuchEntity) || (err == nil && r.ID != c.RoleID) {
		return driver.User{}, "", ErrInvalidToken
	}
	if err != nil {
		return driver.User{}, "", err
	}
	sess := &authz.Session{RoleID: r.ID, RoleName: r.Name, RolePath: r.Path, Name: c.Session, Tags: c.Tags}
	var ps []*authz.Policy
	if c.Policy != "" {
		p, err := authz.ParseSessionPolicy([]byte(c.Policy))
		if err != nil {
			return driver.User{}, "", ErrInvalidToken // validated at issue: a changed parser fails closed
		}
		ps = append(ps, p)
	}
	for _, arn := range c.PolicyArns {
		p, ok := authz.ManagedPolicy(arn)
		if !ok {
			return driver.User{}, "", ErrInvalidToken // a policy gone since issue: closed
		}
		ps = append(ps, p)
	}
	if len(ps) > 0 {
		sess.Policy = authz.UnionPolicies(ps...).InTenant(c.Tenant)
	}
	u := driver.User{ID: r.ID + ":" + c.Session, DisplayName: r.Name, Account: r.Account, Path: r.Path,
		Created: time.Unix(c.Issued, 0), Session: sess, SessionTenant: c.Tenant}
	if ps := driver.CompilePolicies("", r.Policies, r.ManagedPolicies); len(ps) > 0 {
		for i := range ps { // "arn:aws:s3:::b" is the tenant's bucket b
			ps[i].Policy = ps[i].Policy.InTenant(c.Tenant)
		}
		u.Identity = &authz.IdentityPolicies{Policies: ps}
	}
	return u, roleKey(r.Account, r.Name), nil
}

func roleKey(account, name string) string { return account + "$" + strings.ToLower(name) }

// forgetRole drops the cached sessions of a role that changed.
func (s *Service) forgetRole(account, name string) {
	k := roleKey(account, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	for ak, e := range s.cache {
		if e.role == k {
			delete(s.cache, ak)
		}
	}
}

// Role returns the role an ARN names (arn:aws:iam::<account>:role/[path/]name).
func (s *Service) Role(ctx context.Context, arn string) (iam.Role, error) {
	acct, path, name, ok := ParseRoleARN(arn)
	if !ok {
		return iam.Role{}, fmt.Errorf("%w: %s is not a role ARN", iam.ErrInvalidInput, arn)
	}
	r, err := s.opts.Store.GetRole(ctx, acct, name)
	if err != nil {
		return iam.Role{}, err
	}
	rp := r.Path
	if rp == "" {
		rp = "/"
	}
	if rp != path {
		return iam.Role{}, fmt.Errorf("%w: The role with name %s cannot be found.", iam.ErrNoSuchEntity, name)
	}
	return r, nil
}

// ParseRoleARN splits a role ARN.
func ParseRoleARN(arn string) (account, path, name string, ok bool) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "iam" || !authz.IsAccountID(parts[4]) {
		return "", "", "", false
	}
	res, ok := strings.CutPrefix(parts[5], "role/")
	if !ok {
		return "", "", "", false
	}
	i := strings.LastIndexByte(res, '/')
	return parts[4], "/" + res[:i+1], res[i+1:], res[i+1:] != ""
}
