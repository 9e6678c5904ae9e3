package iam

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Errors, each one IAM error code (the query API maps them in one table).
var (
	ErrNoSuchEntity        = errors.New("NoSuchEntity")
	ErrEntityAlreadyExists = errors.New("EntityAlreadyExists")
	ErrLimitExceeded       = errors.New("LimitExceeded")
	ErrInvalidInput        = errors.New("InvalidInput")
	ErrDeleteConflict      = errors.New("DeleteConflict")
	// ErrMalformedPolicy wraps the parser's reason.
	ErrMalformedPolicy = errors.New("MalformedPolicyDocument")
)

// Limits (AWS's IAM quotas; MaxUsers is RGW's account default).
const (
	MaxAccessKeysPerUser       = 2
	MaxAttachedPoliciesPerUser = 10
	DefaultMaxUsers            = 1000
)

const (
	nsAccounts     = "accounts"
	nsAccountNames = "accounts.name"
	nsAccountUsers = "accounts.users"
)

// Account is an IAM account: it owns its users and the buckets they
// create.
type Account struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Email   string    `json:"email"`
	Tenant  string    `json:"tenant"`
	Created time.Time `json:"created"`
	// MaxUsers limits the account's users; 0 means DefaultMaxUsers,
	// negative unlimited (RGW's max_users).
	MaxUsers int `json:"max_users"`
	// MaxRoles limits the account's roles likewise (0: DefaultMaxRoles).
	MaxRoles int `json:"max_roles,omitempty"`
}

// Store is the account and IAM-user store. Safe for concurrent use.
type Store struct {
	d      *driver.Driver
	meta   objstore.IOContext
	now    func() time.Time
	onRole atomic.Pointer[func(account, name string)]
}

// New returns a Store over d's metadata pool, and makes d include group
// policies in the identities it compiles.
func New(d *driver.Driver) *Store {
	s := &Store{d: d, meta: d.MetaIO(), now: time.Now}
	d.SetGroupPolicyLoader(s.groupPolicies)
	return s
}

func (s *Store) accounts() objstore.IOContext { return s.meta.WithNamespace(nsAccounts) }
func (s *Store) names() objstore.IOContext    { return s.meta.WithNamespace(nsAccountNames) }
func (s *Store) userNames() objstore.IOContext {
	return s.meta.WithNamespace(nsAccountUsers)
}

var (
	nameRE       = regexp.MustCompile(`^[\w+=,.@-]{1,64}$`)
	policyNameRE = regexp.MustCompile(`^[\w+=,.@-]{1,128}$`)
	groupNameRE  = regexp.MustCompile(`^[\w+=,.@-]{1,128}$`)
	pathRE       = regexp.MustCompile(`^/([\x21-\x2e\x30-\x7e]+/)*$`)
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidInput, fmt.Sprintf(format, args...))
}

func randomDigits(n int) string {
	var b strings.Builder
	for range n {
		d, _ := rand.Int(rand.Reader, big.NewInt(10))
		b.WriteByte(byte('0' + d.Int64()))
	}
	return b.String()
}

// NewAccountID returns a random id shaped like RGW's: "RGW" and 17 digits.
func NewAccountID() string { return "RGW" + randomDigits(17) }

// CreateAccount creates an account named name in the empty tenant.
func (s *Store) CreateAccount(ctx context.Context, id, name, email string) (Account, error) {
	return s.CreateAccountIn(ctx, "", id, name, email)
}

// accountNameKey is the name claim of an account: its name, or
// "<tenant>$<name>" in a tenant (RGW's name.<tenant>$<name>; '$' is in
// neither a tenant nor an account name, so the two never collide).
func accountNameKey(tenant, name string) string {
	if tenant == "" {
		return name
	}
	return tenant + "$" + name
}

// CreateAccountIn creates an account named name in tenant ("" for none;
// names are unique per tenant: the name is claimed by one exclusive create
// before the record is written). id "" generates one. The account's users
// are users of the tenant ("<tenant>$<id>"), its buckets the tenant's.
func (s *Store) CreateAccountIn(ctx context.Context, tenant, id, name, email string) (Account, error) {
	if !nameRE.MatchString(name) {
		return Account{}, invalid("account name %q", name)
	}
	if tenant != "" && !driver.ValidTenant(tenant) {
		return Account{}, invalid("tenant %q", tenant)
	}
	if id == "" {
		id = NewAccountID()
	} else if !authz.IsAccountID(id) {
		return Account{}, invalid("account id %q must be RGW followed by 17 digits", id)
	}
	if email != "" && (!strings.Contains(email, "@") || len(email) > 254) {
		return Account{}, invalid("email %q", email)
	}
	a := Account{ID: id, Name: name, Email: email, Tenant: tenant, Created: s.now().UTC()}
	nameKey := accountNameKey(tenant, name)
	err := s.names().Operate(ctx, nameKey, objstore.NewWriteOp().Create(true).WriteFull([]byte(id)))
	if errors.Is(err, objstore.ErrExists) {
		return Account{}, fmt.Errorf("%w: account name %s", ErrEntityAlreadyExists, name)
	}
	if err != nil {
		return Account{}, err
	}
	body, _ := json.Marshal(a)
	err = s.accounts().Operate(ctx, id, objstore.NewWriteOp().Create(true).WriteFull(body))
	if err != nil {
		_ = s.names().Operate(ctx, nameKey, objstore.NewWriteOp().Remove())
		if errors.Is(err, objstore.ErrExists) {
			return Account{}, fmt.Errorf("%w: account id %s", ErrEntityAlreadyExists, id)
		}
		return Account{}, err
	}
	return a, nil
}

// GetAccount returns account id, or ErrNoSuchEntity.
func (s *Store) GetAccount(ctx context.Context, id string) (Account, error) {
	b, err := read(ctx, s.accounts(), id)
	if err != nil {
		return Account{}, notFound(err, "account "+id)
	}
	var a Account
	if err := json.Unmarshal(b, &a); err != nil {
		return Account{}, fmt.Errorf("account %s: %w", id, err)
	}
	return a, nil
}

// AccountByName returns the empty tenant's account named name.
func (s *Store) AccountByName(ctx context.Context, name string) (Account, error) {
	return s.AccountByNameIn(ctx, "", name)
}

// AccountByNameIn returns tenant's account named name.
func (s *Store) AccountByNameIn(ctx context.Context, tenant, name string) (Account, error) {
	id, err := read(ctx, s.names(), accountNameKey(tenant, name))
	if err != nil {
		return Account{}, notFound(err, "account name "+accountNameKey(tenant, name))
	}
	return s.GetAccount(ctx, string(id))
}

// ListAccounts returns every account id in order.
func (s *Store) ListAccounts(ctx context.Context) ([]string, error) {
	return listPrefix(ctx, s.accounts(), "", "")
}

// RemoveAccount deletes an account that has no users and owns no
// buckets (ErrDeleteConflict otherwise).
func (s *Store) RemoveAccount(ctx context.Context, id string) error {
	a, err := s.GetAccount(ctx, id)
	if err != nil {
		return err
	}
	users, err := listPrefix(ctx, s.userNames(), id+"$", "")
	if err != nil {
		return err
	}
	if len(users) > 0 {
		return fmt.Errorf("%w: account %s still has %d users", ErrDeleteConflict, id, len(users))
	}
	if ps, err := s.ListOIDCProviders(ctx, id); err != nil {
		return err
	} else if len(ps) > 0 {
		return fmt.Errorf("%w: account %s still has %d OpenID Connect providers", ErrDeleteConflict, id, len(ps))
	}
	if n, err := s.CountRoles(ctx, id); err != nil {
		return err
	} else if n > 0 {
		return fmt.Errorf("%w: account %s still has %d roles", ErrDeleteConflict, id, n)
	}
	bs, err := s.d.ListBuckets(ctx, id)
	if err != nil {
		return err
	}
	if len(bs) > 0 {
		return fmt.Errorf("%w: account %s still owns %d buckets", ErrDeleteConflict, id, len(bs))
	}
	if err := s.accounts().Operate(ctx, id, objstore.NewWriteOp().Remove()); err != nil {
		return notFound(err, "account "+id)
	}
	_ = s.names().Operate(ctx, accountNameKey(a.Tenant, a.Name), objstore.NewWriteOp().Remove())
	return nil
}

// UserSpec describes a user to create in an account.
type UserSpec struct {
	// ID is the user id; "" generates an AWS-shaped one ("AIDA...").
	ID   string
	Name string
	Path string
	// Root makes the account's root user.
	Root bool
	// Keys are the user's keys; GenerateKey adds one when it has none.
	Keys        []driver.Key
	GenerateKey bool
	Email       string
}

func userKey(account, name string) string { return account + "$" + strings.ToLower(name) }

func validPath(p string) error {
	if p == "" {
		return nil
	}
	if len(p) > 512 || !pathRE.MatchString(p) {
		return invalid("path %q must begin and end with /", p)
	}
	return nil
}

// CreateUser creates a user in account: the name is claimed (one
// exclusive create, case-insensitively unique in the account) after the
// user record exists, and the record removed again if the claim fails.
func (s *Store) CreateUser(ctx context.Context, account string, spec UserSpec) (driver.User, error) {
	if !nameRE.MatchString(spec.Name) {
		return driver.User{}, invalid("user name %q", spec.Name)
	}
	if err := validPath(spec.Path); err != nil {
		return driver.User{}, err
	}
	a, err := s.GetAccount(ctx, account)
	if err != nil {
		return driver.User{}, err
	}
	if max := a.MaxUsers; max >= 0 {
		if max == 0 {
			max = DefaultMaxUsers
		}
		// Best effort: concurrent creates may pass together.
		n, err := listPrefix(ctx, s.userNames(), account+"$", "")
		if err != nil {
			return driver.User{}, err
		}
		if len(n) >= max {
			return driver.User{}, fmt.Errorf("%w: the account has %d users (max %d)", ErrLimitExceeded, len(n), max)
		}
	}
	if _, err := read(ctx, s.userNames(), userKey(account, spec.Name)); err == nil {
		return driver.User{}, fmt.Errorf("%w: User with name %s already exists.", ErrEntityAlreadyExists, spec.Name)
	}
	if spec.ID == "" {
		spec.ID = driver.TenantUserID(a.Tenant, "AIDA"+randomUpper(17))
	}
	if t, _ := driver.SplitUserID(spec.ID); t != a.Tenant {
		// An account's users are its tenant's.
		return driver.User{}, invalid("user %q is not in the account's tenant %q", spec.ID, a.Tenant)
	}
	u := driver.User{ID: spec.ID, DisplayName: spec.Name, Email: spec.Email, Keys: spec.Keys,
		Account: account, AccountRoot: spec.Root, Path: spec.Path}
	create := s.d.CreateUserWithoutKeys
	if spec.GenerateKey {
		create = s.d.CreateUser
	}
	u, err = create(ctx, u)
	if errors.Is(err, driver.ErrUserExists) {
		return driver.User{}, fmt.Errorf("%w: user id %s", ErrEntityAlreadyExists, spec.ID)
	}
	if errors.Is(err, driver.ErrInvalidArgument) {
		return driver.User{}, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	if err != nil {
		return driver.User{}, err
	}
	err = s.userNames().Operate(ctx, userKey(account, spec.Name), objstore.NewWriteOp().Create(true).WriteFull([]byte(u.ID)))
	if err != nil {
		_ = s.d.RemoveUser(ctx, u.ID)
		if errors.Is(err, objstore.ErrExists) {
			return driver.User{}, fmt.Errorf("%w: User with name %s already exists.", ErrEntityAlreadyExists, spec.Name)
		}
		return driver.User{}, err
	}
	return u, nil
}

func randomUpper(n int) string {
	const alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alpha[int(b[i])%len(alpha)]
	}
	return string(b)
}

// GetUser returns account's user named name (case-insensitive).
func (s *Store) GetUser(ctx context.Context, account, name string) (driver.User, error) {
	uid, err := read(ctx, s.userNames(), userKey(account, name))
	if err != nil {
		return driver.User{}, notFound(err, "The user with name "+name+" cannot be found.")
	}
	u, err := s.d.GetUser(ctx, string(uid))
	if errors.Is(err, driver.ErrNoSuchUser) || (err == nil && u.Account != account) {
		return driver.User{}, fmt.Errorf("%w: The user with name %s cannot be found.", ErrNoSuchEntity, name)
	}
	return u, err
}

// ListUsers returns the account's users whose path starts with
// pathPrefix, by name.
func (s *Store) ListUsers(ctx context.Context, account, pathPrefix string) ([]driver.User, error) {
	var out []driver.User
	keys, err := listPrefix(ctx, s.userNames(), account+"$", "")
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		uid, err := read(ctx, s.userNames(), k)
		if err != nil {
			continue // removed meanwhile
		}
		u, err := s.d.GetUser(ctx, string(uid))
		if err != nil {
			continue
		}
		p := u.Path
		if p == "" {
			p = "/"
		}
		if strings.HasPrefix(p, pathPrefix) {
			out = append(out, u)
		}
	}
	return out, nil
}

// CountUsers returns how many users account has.
func (s *Store) CountUsers(ctx context.Context, account string) (int, error) {
	keys, err := listPrefix(ctx, s.userNames(), account+"$", "")
	return len(keys), err
}

// UpdateUser renames or moves a user. A rename claims the new name first.
func (s *Store) UpdateUser(ctx context.Context, account, name, newName, newPath string) (driver.User, error) {
	u, err := s.GetUser(ctx, account, name)
	if err != nil {
		return driver.User{}, err
	}
	if err := validPath(newPath); err != nil {
		return driver.User{}, err
	}
	rename := newName != "" && newName != u.DisplayName
	if rename {
		if !nameRE.MatchString(newName) {
			return driver.User{}, invalid("user name %q", newName)
		}
		if !strings.EqualFold(newName, u.DisplayName) {
			err := s.userNames().Operate(ctx, userKey(account, newName), objstore.NewWriteOp().Create(true).WriteFull([]byte(u.ID)))
			if errors.Is(err, objstore.ErrExists) {
				return driver.User{}, fmt.Errorf("%w: User with name %s already exists.", ErrEntityAlreadyExists, newName)
			}
			if err != nil {
				return driver.User{}, err
			}
		}
	}
	out, err := s.d.UpdateUser(ctx, u.ID, func(x *driver.User) error {
		if rename {
			x.DisplayName = newName
		}
		if newPath != "" {
			x.Path = newPath
		}
		return nil
	})
	if err != nil {
		if rename && !strings.EqualFold(newName, u.DisplayName) {
			_ = s.userNames().Operate(ctx, userKey(account, newName), objstore.NewWriteOp().Remove())
		}
		return driver.User{}, err
	}
	if rename && !strings.EqualFold(newName, u.DisplayName) {
		_ = s.userNames().Operate(ctx, userKey(account, u.DisplayName), objstore.NewWriteOp().Remove())
	}
	return out, nil
}

// DeleteUser removes a user that has no access keys, inline or attached
// policies or groups (AWS's DeleteConflict otherwise), and its name claim.
func (s *Store) DeleteUser(ctx context.Context, account, name string) error {
	u, err := s.GetUser(ctx, account, name)
	if err != nil {
		return err
	}
	groups, err := s.GroupsForUser(ctx, u) // stale memberships do not count
	if err != nil {
		return err
	}
	if len(u.Keys) > 0 || len(u.Policies) > 0 || len(u.ManagedPolicies) > 0 || len(groups) > 0 {
		return fmt.Errorf("%w: Cannot delete entity, must delete access keys, policies and group memberships first.", ErrDeleteConflict)
	}
	return s.RemoveUser(ctx, u)
}

// RemoveUser removes an account user whatever it holds (the admin API's
// user rm): its keys, record and name claim.
func (s *Store) RemoveUser(ctx context.Context, u driver.User) error {
	if err := s.d.RemoveUser(ctx, u.ID); err != nil {
		return err
	}
	if u.Account != "" {
		_ = s.userNames().Operate(ctx, userKey(u.Account, u.DisplayName), objstore.NewWriteOp().Remove())
	}
	return nil
}

// CreateAccessKey gives the user a new active key, at most
// MaxAccessKeysPerUser (LimitExceeded). The key is claimed first, so no
// two users can ever hold it.
func (s *Store) CreateAccessKey(ctx context.Context, u driver.User) (driver.Key, error) {
	if len(u.Keys) >= MaxAccessKeysPerUser {
		return driver.Key{}, fmt.Errorf("%w: Cannot exceed quota for AccessKeysPerUser: %d", ErrLimitExceeded, MaxAccessKeysPerUser)
	}
	ak, sk := driver.NewKeyPair()
	if err := s.d.ClaimAccessKey(ctx, ak, u.ID); err != nil {
		return driver.Key{}, err
	}
	k := driver.Key{User: u.ID, AccessKey: ak, SecretKey: sk, Created: s.now().UTC()}
	_, err := s.d.UpdateUser(ctx, u.ID, func(x *driver.User) error {
		if len(x.Keys) >= MaxAccessKeysPerUser {
			return fmt.Errorf("%w: Cannot exceed quota for AccessKeysPerUser: %d", ErrLimitExceeded, MaxAccessKeysPerUser)
		}
		x.Keys = append(x.Keys, k)
		return nil
	})
	if err != nil {
		_ = s.d.ReleaseAccessKey(ctx, ak)
		return driver.Key{}, err
	}
	return k, nil
}

func noSuchKey(ak string) error {
	return fmt.Errorf("%w: The Access Key with id %s cannot be found.", ErrNoSuchEntity, ak)
}

// UpdateAccessKey sets a key's status ("Active" or "Inactive").
func (s *Store) UpdateAccessKey(ctx context.Context, u driver.User, ak, status string) error {
	if status != "Active" && status != "Inactive" {
		return invalid("status %q must be Active or Inactive", status)
	}
	_, err := s.d.UpdateUser(ctx, u.ID, func(x *driver.User) error {
		for i := range x.Keys {
			if x.Keys[i].AccessKey == ak {
				x.Keys[i].Inactive = status == "Inactive"
				return nil
			}
		}
		return noSuchKey(ak)
	})
	return err
}

// DeleteAccessKey removes a key from the user, then its claim.
func (s *Store) DeleteAccessKey(ctx context.Context, u driver.User, ak string) error {
	_, err := s.d.UpdateUser(ctx, u.ID, func(x *driver.User) error {
		for i := range x.Keys {
			if x.Keys[i].AccessKey == ak {
				x.Keys = append(x.Keys[:i:i], x.Keys[i+1:]...)
				return nil
			}
		}
		return noSuchKey(ak)
	})
	if err != nil {
		return err
	}
	return s.d.ReleaseAccessKey(ctx, ak)
}

// PutUserPolicy stores an inline policy after validating it; a malformed
// document changes nothing.
func (s *Store) PutUserPolicy(ctx context.Context, u driver.User, name, doc string) error {
	if err := validatePolicy(name, doc); err != nil {
		return err
	}
	_, err := s.d.UpdateUser(ctx, u.ID, func(x *driver.User) error {
		if x.Policies == nil {
			x.Policies = map[string]string{}
		}
		x.Policies[name] = doc
		return nil
	})
	return err
}

func validatePolicy(name, doc string) error {
	if !policyNameRE.MatchString(name) {
		return invalid("policy name %q", name)
	}
	if _, err := authz.ParseIdentityPolicy([]byte(doc)); err != nil {
		var m *authz.MalformedPolicyError
		if errors.As(err, &m) {
			return fmt.Errorf("%w: %s", ErrMalformedPolicy, m.Reason)
		}
		return err
	}
	return nil
}

func knownManaged(arn string) error {
	if _, ok := authz.ManagedPolicy(arn); !ok {
		if !strings.HasPrefix(arn, "arn:") {
			return invalid("ARN %s is not valid.", arn)
		}
		return fmt.Errorf("%w: Policy %s does not exist or is not attachable.", ErrNoSuchEntity, arn)
	}
	return nil
}

// UserPolicy returns an inline policy's document.
func UserPolicy(u driver.User, name string) (string, error) {
	doc, ok := u.Policies[name]
	if !ok {
		return "", fmt.Errorf("%w: The user policy with name %s cannot be found.", ErrNoSuchEntity, name)
	}
	return doc, nil
}

// UserPolicyNames lists the inline policies, sorted.
func UserPolicyNames(u driver.User) []string {
	out := make([]string, 0, len(u.Policies))
	for n := range u.Policies {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// DeleteUserPolicy removes an inline policy.
func (s *Store) DeleteUserPolicy(ctx context.Context, u driver.User, name string) error {
	_, err := s.d.UpdateUser(ctx, u.ID, func(x *driver.User) error {
		if _, ok := x.Policies[name]; !ok {
			return fmt.Errorf("%w: The user policy with name %s cannot be found.", ErrNoSuchEntity, name)
		}
		delete(x.Policies, name)
		return nil
	})
	return err
}

// AttachUserPolicy attaches a managed policy by ARN (only the AWS managed
// policies authz knows exist).
func (s *Store) AttachUserPolicy(ctx context.Context, u driver.User, arn string) error {
	if err := knownManaged(arn); err != nil {
		return err
	}
	_, err := s.d.UpdateUser(ctx, u.ID, func(x *driver.User) error {
		for _, a := range x.ManagedPolicies {
			if a == arn {
				return nil
			}
		}
		if len(x.ManagedPolicies) >= MaxAttachedPoliciesPerUser {
			return fmt.Errorf("%w: Cannot exceed quota for PoliciesPerUser: %d", ErrLimitExceeded, MaxAttachedPoliciesPerUser)
		}
		x.ManagedPolicies = append(x.ManagedPolicies, arn)
		return nil
	})
	return err
}

// DetachUserPolicy detaches a managed policy.
func (s *Store) DetachUserPolicy(ctx context.Context, u driver.User, arn string) error {
	_, err := s.d.UpdateUser(ctx, u.ID, func(x *driver.User) error {
		for i, a := range x.ManagedPolicies {
			if a == arn {
				x.ManagedPolicies = append(x.ManagedPolicies[:i:i], x.ManagedPolicies[i+1:]...)
				return nil
			}
		}
		return fmt.Errorf("%w: Policy %s was not found.", ErrNoSuchEntity, arn)
	})
	return err
}

func read(ctx context.Context, io objstore.IOContext, oid string) ([]byte, error) {
	op := objstore.NewReadOp()
	r := op.Read(0, 0)
	if err := io.OperateRead(ctx, oid, op); err != nil {
		return nil, err
	}
	return r.Data, nil
}

func notFound(err error, what string) error {
	if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrInvalid) {
		return fmt.Errorf("%w: %s", ErrNoSuchEntity, what)
	}
	return err
}

// listPrefix lists object names starting with prefix, after marker.
func listPrefix(ctx context.Context, io objstore.IOContext, prefix, marker string) ([]string, error) {
	var out []string
	if marker < prefix {
		marker = prefix
	}
	// A name equal to the prefix itself would be skipped by the marker;
	// claims always extend it.
	for {
		oids, more, err := io.ListObjects(ctx, marker, 1000)
		if err != nil {
			return nil, err
		}
		for _, o := range oids {
			if !strings.HasPrefix(o, prefix) {
				return out, nil
			}
			out = append(out, o)
		}
		if !more || len(oids) == 0 {
			return out, nil
		}
		marker = oids[len(oids)-1]
	}
}
