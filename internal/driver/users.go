package driver

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/objstore"
)

var uidRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$`)

const akAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
const skAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

func randString(alphabet string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// NewKeyPair returns a random access key (20 chars) and secret (40 chars),
// the shapes AWS and radosgw-admin use.
func NewKeyPair() (string, string) {
	return randString(akAlphabet, 20), randString(skAlphabet, 40)
}

func (d *Driver) users() objstore.IOContext { return d.meta.WithNamespace(nsUsers) }
func (d *Driver) keys() objstore.IOContext  { return d.meta.WithNamespace(nsKeys) }
func (d *Driver) emails() objstore.IOContext {
	return d.meta.WithNamespace(nsEmails)
}

// CreateUser stores u, generating a key pair when u has none. Access keys are
// claimed with exclusive creates, so two users can never share one.
func (d *Driver) CreateUser(ctx context.Context, u User) (User, error) {
	return d.createUser(ctx, u, true)
}

// CreateUserWithoutKeys stores u with exactly the keys it has, possibly
// none (an IAM user starts without keys).
func (d *Driver) CreateUserWithoutKeys(ctx context.Context, u User) (User, error) {
	return d.createUser(ctx, u, false)
}

func (d *Driver) createUser(ctx context.Context, u User, genKey bool) (User, error) {
	if !ValidUserID(u.ID) {
		// Account ids name accounts in policies and ACLs: no user may
		// take one's shape.
		return User{}, fmt.Errorf("%w: user id %q", ErrInvalidArgument, u.ID)
	}
	if len(u.Keys) == 0 && genKey {
		ak, sk := NewKeyPair()
		u.Keys = []Key{{AccessKey: ak, SecretKey: sk}}
	}
	if u.DisplayName == "" {
		u.DisplayName = u.ID
	}
	u.Created = d.opts.Now().UTC()
	if q := d.opts.DefaultUserQuota; q.Enabled && u.UserQuota == nil {
		q.Normalize()
		u.UserQuota = &q
	}
	for i := range u.Keys {
		u.Keys[i].User = u.ID
		if u.Keys[i].Created.IsZero() {
			u.Keys[i].Created = u.Created
		}
		if len(u.Keys[i].AccessKey) < 3 || len(u.Keys[i].SecretKey) < 8 {
			return User{}, fmt.Errorf("%w: access key or secret too short", ErrInvalidArgument)
		}
	}
	if u.Email != "" && (!strings.Contains(u.Email, "@") || len(u.Email) > 254) {
		return User{}, fmt.Errorf("%w: email %q", ErrInvalidArgument, u.Email)
	}
	body, err := d.encodeUser(ctx, u)
	if err != nil {
		return User{}, err
	}
	if err := d.users().Operate(ctx, u.ID, objstore.NewWriteOp().Create(true).WriteFull(body)); err != nil {
		if errors.Is(err, objstore.ErrExists) {
			return User{}, ErrUserExists
		}
		return User{}, err
	}
	if u.Email != "" {
		// Claimed exclusively, so a grant by email names one user.
		err := d.emails().Operate(ctx, strings.ToLower(u.Email), objstore.NewWriteOp().Create(true).WriteFull([]byte(u.ID)))
		if err != nil {
			_ = d.users().Operate(ctx, u.ID, objstore.NewWriteOp().Remove())
			if errors.Is(err, objstore.ErrExists) {
				return User{}, fmt.Errorf("%w: email %s in use", ErrUserExists, u.Email)
			}
			return User{}, err
		}
	}
	for i, k := range u.Keys {
		err := d.keys().Operate(ctx, k.AccessKey, objstore.NewWriteOp().Create(true).WriteFull([]byte(u.ID)))
		if err != nil {
			// Roll back what this call claimed.
			for _, k2 := range u.Keys[:i] {
				_ = d.keys().Operate(ctx, k2.AccessKey, objstore.NewWriteOp().Remove())
			}
			_ = d.users().Operate(ctx, u.ID, objstore.NewWriteOp().Remove())
			if u.Email != "" {
				_ = d.emails().Operate(ctx, strings.ToLower(u.Email), objstore.NewWriteOp().Remove())
			}
			if errors.Is(err, objstore.ErrExists) {
				return User{}, ErrKeyExists
			}
			return User{}, err
		}
	}
	return u, nil
}

// ValidUserID reports whether id may name a new user: a bare id or
// "<tenant>$<id>" (tenant.go). Account ids name accounts in policies and
// ACLs: no user may take one's shape.
func ValidUserID(id string) bool {
	t, uid := SplitUserID(id)
	if id != uid && !ValidTenant(t) {
		return false
	}
	return uidRE.MatchString(uid) && !authz.IsAccountID(uid)
}

// GetUser returns a user or ErrNoSuchUser.
func (d *Driver) GetUser(ctx context.Context, uid string) (User, error) {
	if uid == "" {
		return User{}, ErrNoSuchUser
	}
	b, err := readAll(ctx, d.users(), uid)
	if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrInvalid) {
		return User{}, ErrNoSuchUser
	}
	if err != nil {
		return User{}, err
	}
	return d.decodeUser(ctx, uid, b)
}

// LookupAccessKey returns the user owning accessKey and its secret.
func (d *Driver) LookupAccessKey(ctx context.Context, accessKey string) (User, string, error) {
	if accessKey == "" {
		return User{}, "", ErrInvalidAccessKey
	}
	u0, secret0, gen, ok := d.akeys.get(accessKey, d.opts.Now())
	if ok {
		return u0, secret0, nil
	}
	loaded := d.opts.Now()
	uid, err := readAll(ctx, d.keys(), accessKey)
	if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrInvalid) {
		return User{}, "", ErrInvalidAccessKey
	}
	if err != nil {
		return User{}, "", err
	}
	u, err := d.GetUser(ctx, string(uid))
	if errors.Is(err, ErrNoSuchUser) {
		return User{}, "", ErrInvalidAccessKey
	}
	if err != nil {
		return User{}, "", err
	}
	for _, k := range u.Keys {
		if k.AccessKey == accessKey {
			if k.Inactive {
				return User{}, "", ErrInvalidAccessKey
			}
			if err := d.compileIdentity(ctx, &u); err != nil {
				return User{}, "", err
			}
			d.akeys.put(accessKey, u, k.SecretKey, gen, loaded)
			return u, k.SecretKey, nil
		}
	}
	return User{}, "", ErrInvalidAccessKey
}

// compileIdentity sets u.Identity: its own and its groups' policies.
func (d *Driver) compileIdentity(ctx context.Context, u *User) error {
	u.Identity = CompileIdentity(*u)
	if l := d.groupPolicies.Load(); l != nil && len(u.Groups) > 0 {
		gp, err := (*l)(ctx, *u)
		if err != nil {
			return err
		}
		if len(gp) > 0 {
			if u.Identity == nil {
				u.Identity = &authz.IdentityPolicies{}
			}
			u.Identity.Policies = append(u.Identity.Policies, gp...)
		}
	}
	return nil
}

// Identity returns user uid with its compiled identity policies (as
// LookupAccessKey), for temporary credentials of that user.
func (d *Driver) Identity(ctx context.Context, uid string) (User, error) {
	u, err := d.GetUser(ctx, uid)
	if err != nil {
		return User{}, err
	}
	return u, d.compileIdentity(ctx, &u)
}

// denyAll stands in for a stored policy that no longer parses: the user
// fails closed.
var denyAll, _ = authz.ParseIdentityPolicy([]byte(`{"Statement":[{"Effect":"Deny","Action":["s3:*","sns:*","iam:*"],"Resource":"*"}]}`))

// GroupPolicyLoader returns the compiled policies of u's groups.
type GroupPolicyLoader func(ctx context.Context, u User) ([]authz.NamedPolicy, error)

// SetGroupPolicyLoader installs the group policy source (internal/iam).
func (d *Driver) SetGroupPolicyLoader(l GroupPolicyLoader) { d.groupPolicies.Store(&l) }

// ForgetKeys drops cached lookups of keys, so the next request reloads
// their user (a group's policies changed).
func (d *Driver) ForgetKeys(keys []Key) { d.akeys.forget(keys) }

// CompileIdentity compiles u's inline and attached managed policies, in
// name order; nil when it has none.
func CompileIdentity(u User) *authz.IdentityPolicies {
	ps := CompilePolicies("", u.Policies, u.ManagedPolicies)
	if len(ps) == 0 {
		return nil
	}
	if t := u.Tenant(); t != "" { // "arn:aws:s3:::b" is the tenant's bucket b
		for i := range ps {
			ps[i].Policy = ps[i].Policy.InTenant(t)
		}
	}
	return &authz.IdentityPolicies{Policies: ps}
}

// CompilePolicies compiles inline policies (in name order, each named
// prefix+name) and attached managed ones (named by ARN). A document that
// no longer parses, or an unknown managed ARN, compiles to deny-all.
func CompilePolicies(prefix string, inline map[string]string, managed []string) []authz.NamedPolicy {
	var out []authz.NamedPolicy
	names := make([]string, 0, len(inline))
	for n := range inline {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p, err := authz.ParseIdentityPolicy([]byte(inline[n]))
		if err != nil {
			p = denyAll
		}
		out = append(out, authz.NamedPolicy{Name: prefix + n, Policy: p})
	}
	for _, arn := range managed {
		p, ok := authz.ManagedPolicy(arn)
		if !ok {
			p = denyAll
		}
		out = append(out, authz.NamedPolicy{Name: prefix + arn, Policy: p})
	}
	return out
}

// UpdateUser applies fn to the stored user uid and writes it back,
// guarded by the object version (retrying on a concurrent change), so
// two gateways' edits never lose one another. fn may change anything but
// the id and the access keys' owner; it must not keep state between
// calls. Cached lookups of the user's keys, old and new, are dropped.
func (d *Driver) UpdateUser(ctx context.Context, uid string, fn func(*User) error) (User, error) {
	for attempt := 0; ; attempt++ {
		op := objstore.NewReadOp()
		r := op.Read(0, 0)
		st := op.Stat()
		err := d.users().OperateRead(ctx, uid, op)
		if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrInvalid) {
			return User{}, ErrNoSuchUser
		}
		if err != nil {
			return User{}, err
		}
		// Secrets are opened and sealed again like any record write, so a
		// key added here is never stored in clear under a KMS.
		u, err := d.decodeUser(ctx, uid, r.Data)
		if err != nil {
			return User{}, err
		}
		old := slices.Clone(u.Keys)
		if err := fn(&u); err != nil {
			return User{}, err
		}
		u.ID = uid
		body, err := d.encodeUser(ctx, u)
		if err != nil {
			return User{}, err
		}
		d.akeys.forget(old)
		err = d.users().Operate(ctx, uid, objstore.NewWriteOp().AssertVersion(st.Stat.Version).WriteFull(body))
		d.akeys.forget(old)
		d.akeys.forget(u.Keys)
		d.forgetUserLimits(uid) // quotas and rate limits apply at once here
		if errors.Is(err, objstore.ErrCanceled) && attempt < 20 {
			continue
		}
		if err != nil {
			return User{}, err
		}
		return u, nil
	}
}

// ClaimAccessKey reserves access key ak for user uid (an exclusive
// create: ErrKeyExists if any user holds it). The caller then adds the
// key to the user with UpdateUser, or releases the claim.
func (d *Driver) ClaimAccessKey(ctx context.Context, ak, uid string) error {
	err := d.keys().Operate(ctx, ak, objstore.NewWriteOp().Create(true).WriteFull([]byte(uid)))
	if errors.Is(err, objstore.ErrExists) {
		return ErrKeyExists
	}
	return err
}

// ReleaseAccessKey removes the claim on ak (after the key left its user).
func (d *Driver) ReleaseAccessKey(ctx context.Context, ak string) error {
	d.akeys.forget([]Key{{AccessKey: ak}})
	err := d.keys().Operate(ctx, ak, objstore.NewWriteOp().Remove())
	if errors.Is(err, objstore.ErrNotFound) {
		return nil
	}
	return err
}

// ListUsers returns every user id in order.
func (d *Driver) ListUsers(ctx context.Context) ([]string, error) {
	return listAll(ctx, d.users())
}

// RemoveUser deletes a user and its keys; a user that still owns buckets
// cannot be removed.
func (d *Driver) RemoveUser(ctx context.Context, uid string) error {
	u, err := d.GetUser(ctx, uid)
	if err != nil {
		return err
	}
	bs, err := d.ListBuckets(ctx, uid)
	if err != nil {
		return err
	}
	if len(bs) > 0 {
		return ErrNotEmptyUserBuckets
	}
	// After the removal too: a lookup that read the key before it went
	// must not cache it (forget bumps the generation such lookups hold).
	d.akeys.forget(u.Keys)
	defer d.akeys.forget(u.Keys)
	for _, k := range u.Keys {
		if err := d.keys().Operate(ctx, k.AccessKey, objstore.NewWriteOp().Remove()); err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return err
		}
	}
	if u.Email != "" {
		_ = d.emails().Operate(ctx, strings.ToLower(u.Email), objstore.NewWriteOp().Remove())
	}
	err = d.users().Operate(ctx, uid, objstore.NewWriteOp().Remove())
	if errors.Is(err, objstore.ErrNotFound) {
		return ErrNoSuchUser
	}
	return err
}

// UserByEmail returns the user registered with email (case-insensitive),
// or ErrNoSuchUser.
func (d *Driver) UserByEmail(ctx context.Context, email string) (User, error) {
	if email == "" {
		return User{}, ErrNoSuchUser
	}
	uid, err := readAll(ctx, d.emails(), strings.ToLower(email))
	if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrInvalid) {
		return User{}, ErrNoSuchUser
	}
	if err != nil {
		return User{}, err
	}
	return d.GetUser(ctx, string(uid))
}

func readAll(ctx context.Context, io objstore.IOContext, oid string) ([]byte, error) {
	op := objstore.NewReadOp()
	r := op.Read(0, 0)
	if err := io.OperateRead(ctx, oid, op); err != nil {
		return nil, err
	}
	return r.Data, nil
}

func listAll(ctx context.Context, io objstore.IOContext) ([]string, error) {
	var out []string
	marker := ""
	for {
		oids, more, err := io.ListObjects(ctx, marker, 1000)
		if err != nil {
			return nil, err
		}
		out = append(out, oids...)
		if !more || len(oids) == 0 {
			return out, nil
		}
		marker = oids[len(oids)-1]
	}
}

// Principal is who u is for authz: an account's user carries its
// account, IAM name and path, and its compiled identity policies (set by
// LookupAccessKey; CompileIdentity otherwise).
func (u User) Principal() authz.Principal {
	return authz.Principal{ID: u.ID, Admin: u.Admin && u.Session == nil, Account: u.Account, Root: u.AccountRoot,
		Name: u.DisplayName, Path: u.Path, Identity: u.Identity, Session: u.Session}
}
