package iam_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/iam"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
)

// newStores returns two IAM stores (two gateways) over one object store.
func newStores(t *testing.T) (*iam.Store, *iam.Store, *driver.Driver) {
	t.Helper()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: "/d", FS: vfs.NewMem(), Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	var ds []*driver.Driver
	for range 2 {
		d, err := driver.New(context.Background(), driver.Options{Store: st, DefaultShards: 3, GCMinWait: -1})
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	t.Cleanup(func() { ds[0].Close(); ds[1].Close(); st.Close() })
	return iam.New(ds[0]), iam.New(ds[1]), ds[0]
}

func TestAccountsAndUsers(t *testing.T) {
	ctx := context.Background()
	s, s2, d := newStores(t)
	a, err := s.CreateAccount(ctx, "", "acme", "ops@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	if !authz.IsAccountID(a.ID) {
		t.Fatalf("account id %q", a.ID)
	}
	if _, err := s2.CreateAccount(ctx, "", "acme", ""); !errors.Is(err, iam.ErrEntityAlreadyExists) {
		t.Fatalf("second acme: %v", err)
	}
	if got, err := s2.AccountByName(ctx, "acme"); err != nil || got.ID != a.ID {
		t.Fatalf("by name: %+v %v", got, err)
	}

	u, err := s.CreateUser(ctx, a.ID, iam.UserSpec{Name: "Alice", Path: "/eng/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Keys) != 0 || u.Account != a.ID {
		t.Fatalf("new user %+v", u)
	}
	// Names are unique case-insensitively, also through another gateway.
	if _, err := s2.CreateUser(ctx, a.ID, iam.UserSpec{Name: "ALICE"}); !errors.Is(err, iam.ErrEntityAlreadyExists) {
		t.Fatalf("ALICE: %v", err)
	}
	if _, err := s.CreateUser(ctx, a.ID, iam.UserSpec{Name: "bad name"}); !errors.Is(err, iam.ErrInvalidInput) {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := s.CreateUser(ctx, a.ID, iam.UserSpec{Name: "x", Path: "eng"}); !errors.Is(err, iam.ErrInvalidInput) {
		t.Fatalf("bad path: %v", err)
	}
	if _, err := s.CreateUser(ctx, "RGW99999999999999999", iam.UserSpec{Name: "x"}); !errors.Is(err, iam.ErrNoSuchEntity) {
		t.Fatalf("no account: %v", err)
	}
	got, err := s2.GetUser(ctx, a.ID, "alice")
	if err != nil || got.ID != u.ID {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := s.CreateUser(ctx, a.ID, iam.UserSpec{Name: "bob"}); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListUsers(ctx, a.ID, "/eng/")
	if err != nil || len(list) != 1 || list[0].DisplayName != "Alice" {
		t.Fatalf("list /eng/: %+v %v", list, err)
	}
	if list, _ := s.ListUsers(ctx, a.ID, "/"); len(list) != 2 {
		t.Fatalf("list /: %+v", list)
	}
	// Rename moves the claim.
	if _, err := s.UpdateUser(ctx, a.ID, "bob", "Robert", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetUser(ctx, a.ID, "bob"); !errors.Is(err, iam.ErrNoSuchEntity) {
		t.Fatalf("old name: %v", err)
	}
	if _, err := s.UpdateUser(ctx, a.ID, "robert", "alice", ""); !errors.Is(err, iam.ErrEntityAlreadyExists) {
		t.Fatalf("rename onto alice: %v", err)
	}

	// Keys: two at most; inactive keys do not authenticate.
	k1, err := s.CreateAccessKey(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	u, _ = s.GetUser(ctx, a.ID, "alice")
	if _, err := s.CreateAccessKey(ctx, u); err != nil {
		t.Fatal(err)
	}
	u, _ = s.GetUser(ctx, a.ID, "alice")
	if _, err := s.CreateAccessKey(ctx, u); !errors.Is(err, iam.ErrLimitExceeded) {
		t.Fatalf("third key: %v", err)
	}
	if lu, _, err := d.LookupAccessKey(ctx, k1.AccessKey); err != nil || lu.ID != u.ID {
		t.Fatalf("lookup: %v", err)
	}
	if err := s.UpdateAccessKey(ctx, u, k1.AccessKey, "Inactive"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.LookupAccessKey(ctx, k1.AccessKey); !errors.Is(err, driver.ErrInvalidAccessKey) {
		t.Fatalf("inactive key authenticates: %v", err)
	}
	if err := s.UpdateAccessKey(ctx, u, "AKNOPE", "Active"); !errors.Is(err, iam.ErrNoSuchEntity) {
		t.Fatalf("missing key: %v", err)
	}
	// A user with keys cannot be deleted.
	if err := s.DeleteUser(ctx, a.ID, "alice"); !errors.Is(err, iam.ErrDeleteConflict) {
		t.Fatalf("delete with keys: %v", err)
	}
	if err := s.DeleteAccessKey(ctx, u, k1.AccessKey); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.LookupAccessKey(ctx, k1.AccessKey); !errors.Is(err, driver.ErrInvalidAccessKey) {
		t.Fatalf("deleted key authenticates: %v", err)
	}

	// Policies: a malformed one changes nothing.
	if err := s.PutUserPolicy(ctx, u, "p1", `{"Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}]}`); err != nil {
		t.Fatal(err)
	}
	if err := s.PutUserPolicy(ctx, u, "p2", `{"Statement":[{"Effect":"Allow","Action":"s3:Nope","Resource":"*"}]}`); !errors.Is(err, iam.ErrMalformedPolicy) {
		t.Fatalf("malformed: %v", err)
	}
	u, _ = s.GetUser(ctx, a.ID, "alice")
	if names := iam.UserPolicyNames(u); len(names) != 1 || names[0] != "p1" {
		t.Fatalf("policies %v", names)
	}
	if err := s.AttachUserPolicy(ctx, u, "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"); err != nil {
		t.Fatal(err)
	}
	if err := s.AttachUserPolicy(ctx, u, "arn:aws:iam::aws:policy/NoSuch"); !errors.Is(err, iam.ErrNoSuchEntity) {
		t.Fatalf("unknown managed: %v", err)
	}
	u, _ = s.GetUser(ctx, a.ID, "alice")
	if ip := driver.CompileIdentity(u); ip == nil || len(ip.Policies) != 2 {
		t.Fatalf("compiled %+v", ip)
	}

	// An account with users cannot go.
	if err := s.RemoveAccount(ctx, a.ID); !errors.Is(err, iam.ErrDeleteConflict) {
		t.Fatalf("remove account: %v", err)
	}
}

// TestConcurrentClaims: many creators of one account name and one user
// name through two gateways; exactly one wins each.
func TestConcurrentClaims(t *testing.T) {
	ctx := context.Background()
	s, s2, _ := newStores(t)
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := s
			if i%2 == 1 {
				st = s2
			}
			_, err := st.CreateAccount(ctx, "", "race", "")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case !errors.Is(err, iam.ErrEntityAlreadyExists):
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d accounts named race", won)
	}
	a, err := s.AccountByName(ctx, "race")
	if err != nil {
		t.Fatal(err)
	}
	won = 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := s
			if i%2 == 1 {
				st = s2
			}
			_, err := st.CreateUser(ctx, a.ID, iam.UserSpec{Name: []string{"Zed", "zed", "ZED"}[i%3]})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case !errors.Is(err, iam.ErrEntityAlreadyExists):
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d users named zed", won)
	}
	if list, _ := s.ListUsers(ctx, a.ID, "/"); len(list) != 1 {
		t.Fatalf("users %+v", list)
	}
}

func TestUserIDsCannotLookLikeAccounts(t *testing.T) {
	_, _, d := newStores(t)
	if _, err := d.CreateUser(context.Background(), driver.User{ID: "RGW00000000000000001"}); !errors.Is(err, driver.ErrInvalidArgument) {
		t.Fatalf("account-shaped uid: %v", err)
	}
}

// TestAccountsInTenants: account names are unique per tenant; a tenant's
// account's users are the tenant's, whatever the caller names them.
func TestAccountsInTenants(t *testing.T) {
	ctx := context.Background()
	s, s2, _ := newStores(t)
	plain, err := s.CreateAccount(ctx, "", "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	t1, err := s.CreateAccountIn(ctx, "t1", "", "acme", "")
	if err != nil || t1.Tenant != "t1" {
		t.Fatalf("acme in t1: %+v %v", t1, err)
	}
	if _, err := s2.CreateAccountIn(ctx, "t1", "", "acme", ""); !errors.Is(err, iam.ErrEntityAlreadyExists) {
		t.Fatalf("second acme in t1: %v", err)
	}
	if _, err := s.CreateAccountIn(ctx, "RGW00000000000000001", "", "x", ""); !errors.Is(err, iam.ErrInvalidInput) {
		t.Fatalf("an account-id-shaped tenant: %v", err)
	}
	for tenant, want := range map[string]string{"": plain.ID, "t1": t1.ID} {
		if got, err := s2.AccountByNameIn(ctx, tenant, "acme"); err != nil || got.ID != want {
			t.Fatalf("acme in %q: %+v %v", tenant, got, err)
		}
	}
	u, err := s.CreateUser(ctx, t1.ID, iam.UserSpec{Name: "bob"})
	if err != nil || u.Tenant() != "t1" {
		t.Fatalf("t1's account user: %+v %v", u, err)
	}
	for _, id := range []string{"stray", "t2$stray"} {
		if _, err := s.CreateUser(ctx, t1.ID, iam.UserSpec{ID: id, Name: "stray"}); !errors.Is(err, iam.ErrInvalidInput) {
			t.Errorf("user %s in t1's account: %v", id, err)
		}
	}
	if _, err := s.CreateUser(ctx, plain.ID, iam.UserSpec{ID: "t1$x", Name: "x"}); !errors.Is(err, iam.ErrInvalidInput) {
		t.Errorf("a t1 user in the empty tenant's account: %v", err)
	}
	if err := s.RemoveUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveAccount(ctx, t1.ID); err != nil {
		t.Fatal(err)
	}
	// Its name is free again in t1, still taken in the empty tenant.
	if _, err := s2.CreateAccountIn(ctx, "t1", "", "acme", ""); err != nil {
		t.Fatalf("acme in t1 after rm: %v", err)
	}
	if _, err := s2.CreateAccount(ctx, "", "acme", ""); !errors.Is(err, iam.ErrEntityAlreadyExists) {
		t.Fatalf("acme in the empty tenant after t1's rm: %v", err)
	}
}

// TestStaleMembership: an AddUserToGroup that raced DeleteGroup (it read
// the group before the delete) leaves a membership of the deleted group,
// which a later group of the same name does not inherit; a rename keeps
// the members.
func TestStaleMembership(t *testing.T) {
	ctx := context.Background()
	s, s2, d := newStores(t)
	a, err := s.CreateAccount(ctx, "", "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.CreateUser(ctx, a.ID, iam.UserSpec{Name: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	old, err := s.CreateGroup(ctx, a.ID, "admins", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.DeleteGroup(ctx, a.ID, "admins"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUserToGroup(ctx, u, old); err != nil { // the racing add
		t.Fatal(err)
	}
	g, err := s2.CreateGroup(ctx, a.ID, "Admins", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.AttachGroupPolicy(ctx, g, "arn:aws:iam::aws:policy/AmazonS3FullAccess"); err != nil {
		t.Fatal(err)
	}
	u, _ = d.GetUser(ctx, u.ID)
	if gs, err := s.GroupsForUser(ctx, u); err != nil || len(gs) != 0 {
		t.Fatalf("bob's groups after the racing add: %+v %v", gs, err)
	}
	if m, err := s.Members(ctx, g); err != nil || len(m) != 0 {
		t.Fatalf("the new group's members: %+v %v", m, err)
	}
	// A real add, then a rename: still a member, of the renamed group.
	if err := s.AddUserToGroup(ctx, u, g); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateGroup(ctx, a.ID, "admins", "ops", "/ops/"); err != nil {
		t.Fatal(err)
	}
	u, _ = d.GetUser(ctx, u.ID)
	if gs, err := s.GroupsForUser(ctx, u); err != nil || len(gs) != 1 || gs[0].Name != "ops" || gs[0].ID != g.ID {
		t.Fatalf("bob's groups after the rename: %+v %v", gs, err)
	}
	// The stale entry does not block DeleteUser once bob leaves ops.
	ops, _ := s.GetGroup(ctx, a.ID, "ops")
	if err := s.RemoveUserFromGroup(ctx, u, ops); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteUser(ctx, a.ID, "bob"); err != nil {
		t.Fatalf("delete bob with a stale membership: %v", err)
	}
}
