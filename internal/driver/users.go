package driver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

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
	if !uidRE.MatchString(u.ID) {
		return User{}, fmt.Errorf("%w: user id %q", ErrInvalidArgument, u.ID)
	}
	if len(u.Keys) == 0 {
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
		if len(u.Keys[i].AccessKey) < 3 || len(u.Keys[i].SecretKey) < 8 {
			return User{}, fmt.Errorf("%w: access key or secret too short", ErrInvalidArgument)
		}
	}
	if u.Email != "" && (!strings.Contains(u.Email, "@") || len(u.Email) > 254) {
		return User{}, fmt.Errorf("%w: email %q", ErrInvalidArgument, u.Email)
	}
	body, _ := json.Marshal(u)
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
	var u User
	if err := json.Unmarshal(b, &u); err != nil {
		return User{}, fmt.Errorf("user %s: %w", uid, err)
	}
	return u, nil
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
			d.akeys.put(accessKey, u, k.SecretKey, gen, loaded)
			return u, k.SecretKey, nil
		}
	}
	return User{}, "", ErrInvalidAccessKey
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
