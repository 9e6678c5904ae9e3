package iam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// Role limits (AWS's IAM quotas).
const (
	DefaultMaxRoles            = 1000
	MaxAttachedPoliciesPerRole = 10
	DefaultSessionDuration     = 3600
	MinSessionDuration         = 3600
	MaxSessionDurationLimit    = 43200
	MaxRoleTags                = 50
	maxRoleDescription         = 1000
)

const nsAccountRoles = "accounts.roles"

var roleNameRE = regexp.MustCompile(`^[\w+=,.@-]{1,64}$`)

// Tag is an IAM tag.
type Tag struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Role is an account's role: a trust policy says who may assume it, its
// policies what its sessions may do.
type Role struct {
	ID                 string            `json:"id"`
	Name               string            `json:"name"`
	Path               string            `json:"path,omitempty"`
	Account            string            `json:"account_id"`
	Created            time.Time         `json:"created"`
	Description        string            `json:"description,omitempty"`
	TrustPolicy        string            `json:"trust_policy"`
	MaxSessionDuration int               `json:"max_session_duration"`
	Tags               []Tag             `json:"tags,omitempty"`
	Policies           map[string]string `json:"role_policies,omitempty"`
	ManagedPolicies    []string          `json:"managed_policies,omitempty"`
}

// ARN is the role's ARN.
func (r Role) ARN() string { return authz.RoleARN(r.Account, r.Path, r.Name) }

func (s *Store) roles() objstore.IOContext { return s.meta.WithNamespace(nsAccountRoles) }

// RoleSpec describes a role to create.
type RoleSpec struct {
	Name, Path, Description, TrustPolicy string
	// MaxSessionDuration in seconds; 0 is the default (3600).
	MaxSessionDuration int
	Tags               []Tag
}

func validTrustPolicy(doc string) error {
	p, err := authz.ParseTrustPolicy([]byte(doc))
	if err != nil {
		var m *authz.MalformedPolicyError
		if errors.As(err, &m) {
			return fmt.Errorf("%w: %s", ErrMalformedPolicy, m.Reason)
		}
		return err
	}
	if len(p.Statements) == 0 {
		return fmt.Errorf("%w: the trust policy has no statement", ErrMalformedPolicy)
	}
	return nil
}

func validTags(tags []Tag) error {
	if len(tags) > MaxRoleTags {
		return fmt.Errorf("%w: a role has at most %d tags", ErrLimitExceeded, MaxRoleTags)
	}
	seen := map[string]bool{}
	for _, t := range tags {
		if t.Key == "" || len(t.Key) > 128 || len(t.Value) > 256 || strings.HasPrefix(strings.ToLower(t.Key), "aws:") {
			return invalid("tag key %q", t.Key)
		}
		if seen[strings.ToLower(t.Key)] {
			return invalid("duplicate tag key %q", t.Key)
		}
		seen[strings.ToLower(t.Key)] = true
	}
	return nil
}

// CreateRole creates a role in account: the record is its own claim (one
// exclusive create of <account>$<lower-case name>), so names are unique
// case-insensitively across gateways. The account's role count is checked
// best effort, as its user count.
func (s *Store) CreateRole(ctx context.Context, account string, spec RoleSpec) (Role, error) {
	if !roleNameRE.MatchString(spec.Name) {
		return Role{}, invalid("role name %q", spec.Name)
	}
	if err := validPath(spec.Path); err != nil {
		return Role{}, err
	}
	if len(spec.Description) > maxRoleDescription {
		return Role{}, invalid("description longer than %d characters", maxRoleDescription)
	}
	if spec.MaxSessionDuration == 0 {
		spec.MaxSessionDuration = DefaultSessionDuration
	}
	if spec.MaxSessionDuration < MinSessionDuration || spec.MaxSessionDuration > MaxSessionDurationLimit {
		return Role{}, invalid("MaxSessionDuration %d must be between %d and %d", spec.MaxSessionDuration, MinSessionDuration, MaxSessionDurationLimit)
	}
	if err := validTrustPolicy(spec.TrustPolicy); err != nil {
		return Role{}, err
	}
	if err := validTags(spec.Tags); err != nil {
		return Role{}, err
	}
	a, err := s.GetAccount(ctx, account)
	if err != nil {
		return Role{}, err
	}
	if max := a.MaxRoles; max >= 0 {
		if max == 0 {
			max = DefaultMaxRoles
		}
		n, err := listPrefix(ctx, s.roles(), account+"$", "")
		if err != nil {
			return Role{}, err
		}
		if len(n) >= max {
			return Role{}, fmt.Errorf("%w: Cannot exceed quota for RolesPerAccount: %d", ErrLimitExceeded, max)
		}
	}
	r := Role{ID: "AROA" + randomUpper(17), Name: spec.Name, Path: spec.Path, Account: account,
		Created: s.now().UTC(), Description: spec.Description, TrustPolicy: spec.TrustPolicy,
		MaxSessionDuration: spec.MaxSessionDuration, Tags: spec.Tags}
	body, _ := json.Marshal(r)
	err = s.roles().Operate(ctx, userKey(account, spec.Name), objstore.NewWriteOp().Create(true).WriteFull(body))
	if errors.Is(err, objstore.ErrExists) {
		return Role{}, fmt.Errorf("%w: Role with name %s already exists.", ErrEntityAlreadyExists, spec.Name)
	}
	return r, err
}

// GetRole returns account's role named name (case-insensitive).
func (s *Store) GetRole(ctx context.Context, account, name string) (Role, error) {
	r, _, err := s.getRole(ctx, account, name)
	return r, err
}

func (s *Store) getRole(ctx context.Context, account, name string) (Role, uint64, error) {
	op := objstore.NewReadOp()
	rd := op.Read(0, 0)
	st := op.Stat()
	if err := s.roles().OperateRead(ctx, userKey(account, name), op); err != nil {
		return Role{}, 0, notFound(err, "The role with name "+name+" cannot be found.")
	}
	var r Role
	if err := json.Unmarshal(rd.Data, &r); err != nil {
		return Role{}, 0, fmt.Errorf("role %s: %w", name, err)
	}
	return r, st.Stat.Version, nil
}

// ListRoles returns the account's roles whose path starts with prefix.
func (s *Store) ListRoles(ctx context.Context, account, prefix string) ([]Role, error) {
	keys, err := listPrefix(ctx, s.roles(), account+"$", "")
	if err != nil {
		return nil, err
	}
	var out []Role
	for _, k := range keys {
		r, _, err := s.getRole(ctx, account, k[len(account)+1:])
		if err != nil {
			continue
		}
		p := r.Path
		if p == "" {
			p = "/"
		}
		if strings.HasPrefix(p, prefix) {
			out = append(out, r)
		}
	}
	return out, nil
}

// DeleteRole removes a role without policies (DeleteConflict otherwise).
// Its sessions stop working at once: they name the role's id, which a
// role created again under the name does not have.
func (s *Store) DeleteRole(ctx context.Context, account, name string) error {
	r, v, err := s.getRole(ctx, account, name)
	if err != nil {
		return err
	}
	if len(r.Policies) > 0 || len(r.ManagedPolicies) > 0 {
		return fmt.Errorf("%w: Cannot delete entity, must detach all policies first.", ErrDeleteConflict)
	}
	err = s.roles().Operate(ctx, userKey(account, name), objstore.NewWriteOp().AssertVersion(v).Remove())
	if errors.Is(err, objstore.ErrCanceled) {
		return fmt.Errorf("%w: the role changed meanwhile", ErrDeleteConflict)
	}
	s.roleChanged(account, name)
	return err
}

// UpdateRole sets the description and the maximum session duration
// (0: unchanged).
func (s *Store) UpdateRole(ctx context.Context, r Role, description *string, maxSession int) error {
	if maxSession != 0 && (maxSession < MinSessionDuration || maxSession > MaxSessionDurationLimit) {
		return invalid("MaxSessionDuration %d must be between %d and %d", maxSession, MinSessionDuration, MaxSessionDurationLimit)
	}
	if description != nil && len(*description) > maxRoleDescription {
		return invalid("description longer than %d characters", maxRoleDescription)
	}
	return s.updateRole(ctx, r.Account, r.Name, func(x *Role) error {
		if description != nil {
			x.Description = *description
		}
		if maxSession != 0 {
			x.MaxSessionDuration = maxSession
		}
		return nil
	})
}

// UpdateAssumeRolePolicy replaces the trust policy.
func (s *Store) UpdateAssumeRolePolicy(ctx context.Context, r Role, doc string) error {
	if err := validTrustPolicy(doc); err != nil {
		return err
	}
	return s.updateRole(ctx, r.Account, r.Name, func(x *Role) error {
		x.TrustPolicy = doc
		return nil
	})
}

// updateRole is a version-guarded read-modify-write of a role.
func (s *Store) updateRole(ctx context.Context, account, name string, fn func(*Role) error) error {
	for attempt := 0; ; attempt++ {
		r, v, err := s.getRole(ctx, account, name)
		if err != nil {
			return err
		}
		if err := fn(&r); err != nil {
			return err
		}
		body, _ := json.Marshal(r)
		err = s.roles().Operate(ctx, userKey(account, name), objstore.NewWriteOp().AssertVersion(v).WriteFull(body))
		if errors.Is(err, objstore.ErrCanceled) && attempt < 20 {
			continue
		}
		s.roleChanged(account, name)
		return err
	}
}

// PutRolePolicy stores an inline role policy after validating it.
func (s *Store) PutRolePolicy(ctx context.Context, r Role, name, doc string) error {
	if err := validatePolicy(name, doc); err != nil {
		return err
	}
	return s.updateRole(ctx, r.Account, r.Name, func(x *Role) error {
		if x.Policies == nil {
			x.Policies = map[string]string{}
		}
		x.Policies[name] = doc
		return nil
	})
}

// RolePolicy returns an inline role policy's document.
func RolePolicy(r Role, name string) (string, error) {
	doc, ok := r.Policies[name]
	if !ok {
		return "", fmt.Errorf("%w: The role policy with name %s cannot be found.", ErrNoSuchEntity, name)
	}
	return doc, nil
}

// DeleteRolePolicy removes an inline role policy.
func (s *Store) DeleteRolePolicy(ctx context.Context, r Role, name string) error {
	return s.updateRole(ctx, r.Account, r.Name, func(x *Role) error {
		if _, ok := x.Policies[name]; !ok {
			return fmt.Errorf("%w: The role policy with name %s cannot be found.", ErrNoSuchEntity, name)
		}
		delete(x.Policies, name)
		return nil
	})
}

// AttachRolePolicy attaches a managed policy by ARN.
func (s *Store) AttachRolePolicy(ctx context.Context, r Role, arn string) error {
	if err := knownManaged(arn); err != nil {
		return err
	}
	return s.updateRole(ctx, r.Account, r.Name, func(x *Role) error {
		if slices.Contains(x.ManagedPolicies, arn) {
			return nil
		}
		if len(x.ManagedPolicies) >= MaxAttachedPoliciesPerRole {
			return fmt.Errorf("%w: Cannot exceed quota for PoliciesPerRole: %d", ErrLimitExceeded, MaxAttachedPoliciesPerRole)
		}
		x.ManagedPolicies = append(x.ManagedPolicies, arn)
		return nil
	})
}

// DetachRolePolicy detaches a managed policy.
func (s *Store) DetachRolePolicy(ctx context.Context, r Role, arn string) error {
	return s.updateRole(ctx, r.Account, r.Name, func(x *Role) error {
		i := slices.Index(x.ManagedPolicies, arn)
		if i < 0 {
			return fmt.Errorf("%w: Policy %s was not found.", ErrNoSuchEntity, arn)
		}
		x.ManagedPolicies = slices.Delete(x.ManagedPolicies, i, i+1)
		return nil
	})
}

// CountRoles returns how many roles account has.
func (s *Store) CountRoles(ctx context.Context, account string) (int, error) {
	keys, err := listPrefix(ctx, s.roles(), account+"$", "")
	return len(keys), err
}

// PolicyNames lists inline policy names, sorted.
func PolicyNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// SetRoleChanged installs fn, called after a role changed or was deleted
// through this Store (internal/sts drops the role's cached sessions).
func (s *Store) SetRoleChanged(fn func(account, name string)) { s.onRole.Store(&fn) }

func (s *Store) roleChanged(account, name string) {
	if fn := s.onRole.Load(); fn != nil {
		(*fn)(account, name)
	}
}
