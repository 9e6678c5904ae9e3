package iam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// MaxGroupsPerUser is AWS's quota.
const MaxGroupsPerUser = 10

const nsAccountGroups = "accounts.groups"

// Group is an account's group: its members get its policies.
type Group struct {
	ID              string            `json:"id"`
	Name            string            `json:"name"`
	Path            string            `json:"path,omitempty"`
	Account         string            `json:"account_id"`
	Created         time.Time         `json:"created"`
	Policies        map[string]string `json:"group_policies,omitempty"`
	ManagedPolicies []string          `json:"managed_policies,omitempty"`
}

// ARN is the group's ARN.
func (g Group) ARN() string { return GroupARN(g.Account, g.Path, g.Name) }

// GroupARN is arn:aws:iam::<account>:group<path><name>.
func GroupARN(account, path, name string) string {
	if path == "" {
		path = "/"
	}
	return "arn:aws:iam::" + account + ":group" + path + name
}

func (s *Store) groups() objstore.IOContext { return s.meta.WithNamespace(nsAccountGroups) }

// CreateGroup creates a group: the record is its own claim (one exclusive
// create of <account>$<lower-case name>).
func (s *Store) CreateGroup(ctx context.Context, account, name, path string) (Group, error) {
	if !groupNameRE.MatchString(name) {
		return Group{}, invalid("group name %q", name)
	}
	if err := validPath(path); err != nil {
		return Group{}, err
	}
	if _, err := s.GetAccount(ctx, account); err != nil {
		return Group{}, err
	}
	g := Group{ID: "AGPA" + randomUpper(17), Name: name, Path: path, Account: account, Created: s.now().UTC()}
	body, _ := json.Marshal(g)
	err := s.groups().Operate(ctx, userKey(account, name), objstore.NewWriteOp().Create(true).WriteFull(body))
	if errors.Is(err, objstore.ErrExists) {
		return Group{}, fmt.Errorf("%w: Group with name %s already exists.", ErrEntityAlreadyExists, name)
	}
	return g, err
}

// GetGroup returns account's group named name (case-insensitive).
func (s *Store) GetGroup(ctx context.Context, account, name string) (Group, error) {
	g, _, err := s.getGroup(ctx, account, name)
	return g, err
}

func (s *Store) getGroup(ctx context.Context, account, name string) (Group, uint64, error) {
	op := objstore.NewReadOp()
	r := op.Read(0, 0)
	st := op.Stat()
	if err := s.groups().OperateRead(ctx, userKey(account, name), op); err != nil {
		return Group{}, 0, notFound(err, "The group with name "+name+" cannot be found.")
	}
	var g Group
	if err := json.Unmarshal(r.Data, &g); err != nil {
		return Group{}, 0, fmt.Errorf("group %s: %w", name, err)
	}
	return g, st.Stat.Version, nil
}

// ListGroups returns the account's groups whose path starts with prefix.
func (s *Store) ListGroups(ctx context.Context, account, prefix string) ([]Group, error) {
	keys, err := listPrefix(ctx, s.groups(), account+"$", "")
	if err != nil {
		return nil, err
	}
	var out []Group
	for _, k := range keys {
		g, _, err := s.getGroup(ctx, account, k[len(account)+1:])
		if err != nil {
			continue
		}
		p := g.Path
		if p == "" {
			p = "/"
		}
		if strings.HasPrefix(p, prefix) {
			out = append(out, g)
		}
	}
	return out, nil
}

// Members returns the group's users.
func (s *Store) Members(ctx context.Context, g Group) ([]driver.User, error) {
	users, err := s.ListUsers(ctx, g.Account, "/")
	if err != nil {
		return nil, err
	}
	var out []driver.User
	for _, u := range users {
		if slices.IndexFunc(u.Groups, g.isMember) >= 0 {
			out = append(out, u)
		}
	}
	return out, nil
}

// A membership is recorded on the user as "<lower-case name>#<group id>"
// (before group ids were recorded: the name alone). The id makes a
// membership added by a call racing DeleteGroup or a rename stale, never a
// membership of a later group of the same name.
func (g Group) memberEntry() string { return strings.ToLower(g.Name) + "#" + g.ID }

// isMember reports whether a user's membership entry names g.
func (g Group) isMember(entry string) bool {
	return entry == g.memberEntry() || entry == strings.ToLower(g.Name)
}

// memberGroup returns the group a membership entry names, or
// ErrNoSuchEntity when it is gone or stale (another group took its name).
func (s *Store) memberGroup(ctx context.Context, account, entry string) (Group, error) {
	name, id, _ := strings.Cut(entry, "#")
	g, err := s.GetGroup(ctx, account, name)
	if err == nil && id != "" && g.ID != id {
		return Group{}, fmt.Errorf("%w: group %s was replaced", ErrNoSuchEntity, name)
	}
	return g, err
}

// DeleteGroup removes a group without members or policies
// (DeleteConflict otherwise).
func (s *Store) DeleteGroup(ctx context.Context, account, name string) error {
	g, v, err := s.getGroup(ctx, account, name)
	if err != nil {
		return err
	}
	m, err := s.Members(ctx, g)
	if err != nil {
		return err
	}
	if len(m) > 0 || len(g.Policies) > 0 || len(g.ManagedPolicies) > 0 {
		return fmt.Errorf("%w: Cannot delete entity, must remove users and policies from group first.", ErrDeleteConflict)
	}
	err = s.groups().Operate(ctx, userKey(account, name), objstore.NewWriteOp().AssertVersion(v).Remove())
	if errors.Is(err, objstore.ErrCanceled) {
		return fmt.Errorf("%w: the group changed meanwhile", ErrDeleteConflict)
	}
	return err
}

// UpdateGroup changes a group's name (newName, "" keeps it) and path
// (newPath, "" keeps it); the group keeps its id, policies and members.
// A new name is claimed first (one exclusive create of the new record:
// EntityAlreadyExists when taken); then the members are moved to it, the
// old record is removed (its latest content copied over first), and
// members added under the old name meanwhile are moved too. A crash in
// between leaves both records: the old one still serves its members, the
// new one, memberless, blocks its name until deleted.
func (s *Store) UpdateGroup(ctx context.Context, account, name, newName, newPath string) (Group, error) {
	if err := validPath(newPath); err != nil {
		return Group{}, err
	}
	g, _, err := s.getGroup(ctx, account, name)
	if err != nil {
		return Group{}, err
	}
	if newName == "" || strings.EqualFold(newName, g.Name) {
		// Same record: a path change or a change of case only.
		err := s.updateGroup(ctx, account, g.Name, func(x *Group) error {
			if newName != "" {
				x.Name = newName
			}
			if newPath != "" {
				x.Path = newPath
			}
			return nil
		})
		if err != nil {
			return Group{}, err
		}
		return s.GetGroup(ctx, account, g.Name)
	}
	if !groupNameRE.MatchString(newName) {
		return Group{}, invalid("group name %q", newName)
	}
	moved := func(x Group) Group {
		x.Name = newName
		if newPath != "" {
			x.Path = newPath
		}
		return x
	}
	body, _ := json.Marshal(moved(g))
	err = s.groups().Operate(ctx, userKey(account, newName), objstore.NewWriteOp().Create(true).WriteFull(body))
	if errors.Is(err, objstore.ErrExists) {
		return Group{}, fmt.Errorf("%w: Group with name %s already exists.", ErrEntityAlreadyExists, newName)
	}
	if err != nil {
		return Group{}, err
	}
	if err := s.moveMembers(ctx, g, newName); err != nil {
		return Group{}, err
	}
	for attempt := 0; ; attempt++ {
		cur, v, err := s.getGroup(ctx, account, g.Name)
		if errors.Is(err, ErrNoSuchEntity) {
			break // a concurrent rename or delete removed it
		}
		if err != nil {
			return Group{}, err
		}
		// Policies changed through the old name meanwhile move along.
		body, _ := json.Marshal(moved(cur))
		if err := s.groups().Operate(ctx, userKey(account, newName), objstore.NewWriteOp().WriteFull(body)); err != nil {
			return Group{}, err
		}
		err = s.groups().Operate(ctx, userKey(account, g.Name), objstore.NewWriteOp().AssertVersion(v).Remove())
		if errors.Is(err, objstore.ErrCanceled) && attempt < 20 {
			continue
		}
		if err != nil {
			return Group{}, err
		}
		break
	}
	if err := s.moveMembers(ctx, g, newName); err != nil {
		return Group{}, err
	}
	return s.GetGroup(ctx, account, newName)
}

// moveMembers moves the users of group g to its new name (same id; their
// cached keys are dropped so the change applies at once here).
func (s *Store) moveMembers(ctx context.Context, g Group, newName string) error {
	members, err := s.Members(ctx, g)
	if err != nil {
		return err
	}
	to := g
	to.Name = newName
	for _, u := range members {
		_, err := s.d.UpdateUser(ctx, u.ID, func(x *driver.User) error {
			if i := slices.IndexFunc(x.Groups, g.isMember); i >= 0 {
				x.Groups = slices.Delete(x.Groups, i, i+1)
				if !slices.Contains(x.Groups, to.memberEntry()) {
					x.Groups = append(x.Groups, to.memberEntry())
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// AddUserToGroup adds u to group g (at most MaxGroupsPerUser groups).
func (s *Store) AddUserToGroup(ctx context.Context, u driver.User, g Group) error {
	_, err := s.d.UpdateUser(ctx, u.ID, func(x *driver.User) error {
		if slices.IndexFunc(x.Groups, g.isMember) >= 0 {
			return nil
		}
		if len(x.Groups) >= MaxGroupsPerUser {
			return fmt.Errorf("%w: Cannot exceed quota for GroupsPerUser: %d", ErrLimitExceeded, MaxGroupsPerUser)
		}
		x.Groups = append(x.Groups, g.memberEntry())
		return nil
	})
	return err
}

// RemoveUserFromGroup removes u from g.
func (s *Store) RemoveUserFromGroup(ctx context.Context, u driver.User, g Group) error {
	_, err := s.d.UpdateUser(ctx, u.ID, func(x *driver.User) error {
		i := slices.IndexFunc(x.Groups, g.isMember)
		if i < 0 {
			return fmt.Errorf("%w: The user %s is not in group %s.", ErrNoSuchEntity, u.DisplayName, g.Name)
		}
		x.Groups = slices.Delete(x.Groups, i, i+1)
		return nil
	})
	return err
}

// GroupsForUser returns u's groups.
func (s *Store) GroupsForUser(ctx context.Context, u driver.User) ([]Group, error) {
	var out []Group
	for _, k := range u.Groups {
		g, err := s.memberGroup(ctx, u.Account, k)
		if errors.Is(err, ErrNoSuchEntity) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// updateGroup is a version-guarded read-modify-write of a group; the
// members' cached keys are dropped so its policies apply at once here.
func (s *Store) updateGroup(ctx context.Context, account, name string, fn func(*Group) error) error {
	for attempt := 0; ; attempt++ {
		g, v, err := s.getGroup(ctx, account, name)
		if err != nil {
			return err
		}
		if err := fn(&g); err != nil {
			return err
		}
		body, _ := json.Marshal(g)
		err = s.groups().Operate(ctx, userKey(account, name), objstore.NewWriteOp().AssertVersion(v).WriteFull(body))
		if errors.Is(err, objstore.ErrCanceled) && attempt < 20 {
			continue
		}
		if err != nil {
			return err
		}
		if m, err := s.Members(ctx, g); err == nil {
			for _, u := range m {
				s.d.ForgetKeys(u.Keys)
			}
		}
		return nil
	}
}

// PutGroupPolicy stores an inline group policy after validating it.
func (s *Store) PutGroupPolicy(ctx context.Context, g Group, name, doc string) error {
	if err := validatePolicy(name, doc); err != nil {
		return err
	}
	return s.updateGroup(ctx, g.Account, g.Name, func(x *Group) error {
		if x.Policies == nil {
			x.Policies = map[string]string{}
		}
		x.Policies[name] = doc
		return nil
	})
}

// DeleteGroupPolicy removes an inline group policy.
func (s *Store) DeleteGroupPolicy(ctx context.Context, g Group, name string) error {
	return s.updateGroup(ctx, g.Account, g.Name, func(x *Group) error {
		if _, ok := x.Policies[name]; !ok {
			return fmt.Errorf("%w: The group policy with name %s cannot be found.", ErrNoSuchEntity, name)
		}
		delete(x.Policies, name)
		return nil
	})
}

// AttachGroupPolicy attaches a managed policy by ARN.
func (s *Store) AttachGroupPolicy(ctx context.Context, g Group, arn string) error {
	if err := knownManaged(arn); err != nil {
		return err
	}
	return s.updateGroup(ctx, g.Account, g.Name, func(x *Group) error {
		if slices.Contains(x.ManagedPolicies, arn) {
			return nil
		}
		if len(x.ManagedPolicies) >= MaxAttachedPoliciesPerUser {
			return fmt.Errorf("%w: Cannot exceed quota for PoliciesPerGroup: %d", ErrLimitExceeded, MaxAttachedPoliciesPerUser)
		}
		x.ManagedPolicies = append(x.ManagedPolicies, arn)
		return nil
	})
}

// DetachGroupPolicy detaches a managed policy.
func (s *Store) DetachGroupPolicy(ctx context.Context, g Group, arn string) error {
	return s.updateGroup(ctx, g.Account, g.Name, func(x *Group) error {
		i := slices.Index(x.ManagedPolicies, arn)
		if i < 0 {
			return fmt.Errorf("%w: Policy %s was not found.", ErrNoSuchEntity, arn)
		}
		x.ManagedPolicies = slices.Delete(x.ManagedPolicies, i, i+1)
		return nil
	})
}

// groupPolicies is the driver's GroupPolicyLoader: the compiled policies
// of u's groups, each named "group/<name>/<policy>". A group removed
// meanwhile contributes nothing.
func (s *Store) groupPolicies(ctx context.Context, u driver.User) ([]authz.NamedPolicy, error) {
	if u.Account == "" {
		return nil, nil
	}
	var out []authz.NamedPolicy
	for _, k := range u.Groups {
		g, err := s.memberGroup(ctx, u.Account, k)
		if errors.Is(err, ErrNoSuchEntity) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ps := driver.CompilePolicies("group/"+g.Name+"/", g.Policies, g.ManagedPolicies)
		if t := u.Tenant(); t != "" { // "arn:aws:s3:::b" is the tenant's bucket b
			for i := range ps {
				ps[i].Policy = ps[i].Policy.InTenant(t)
			}
		}
		out = append(out, ps...)
	}
	return out, nil
}
