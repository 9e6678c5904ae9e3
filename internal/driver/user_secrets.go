package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairn-s3/cairn/internal/kms/secret"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// secretPurpose binds a sealed user secret to its record: a box copied
// to another user or access key does not open (docs/format/kms.md).
const secretPurpose = "user-secret-key"

func secretIdentity(uid, accessKey string) string { return uid + "\x00" + accessKey }

// encodeUser renders u for the store, its secret keys sealed when a KMS
// seals secrets.
func (d *Driver) encodeUser(ctx context.Context, u User) ([]byte, error) {
	if d.opts.Secrets.Enabled() {
		keys := make([]Key, len(u.Keys))
		for i, k := range u.Keys {
			if k.SealedSecret == nil {
				box, err := d.opts.Secrets.Seal(ctx, secretPurpose, secretIdentity(u.ID, k.AccessKey), []byte(k.SecretKey))
				if err != nil {
					return nil, fmt.Errorf("user %s: sealing the secret key: %w", u.ID, err)
				}
				k.SealedSecret = box
			}
			k.SecretKey = ""
			keys[i] = k
		}
		u.Keys = keys
	}
	return json.Marshal(u)
}

// decodeUser parses a stored user and opens its sealed secrets.
func (d *Driver) decodeUser(ctx context.Context, uid string, b []byte) (User, error) {
	var u User
	if err := json.Unmarshal(b, &u); err != nil {
		return User{}, fmt.Errorf("user %s: %w", uid, err)
	}
	for i := range u.Keys {
		k := &u.Keys[i]
		if k.SealedSecret == nil {
			continue
		}
		plain, err := d.opts.Secrets.Open(ctx, secretPurpose, secretIdentity(u.ID, k.AccessKey), k.SealedSecret)
		if err != nil {
			return User{}, fmt.Errorf("user %s: secret key of %s: %w", uid, k.AccessKey, err)
		}
		k.SecretKey, k.SealedSecret = string(plain), nil
	}
	return u, nil
}

// SealUserSecrets walks every user record: with rewrap false it seals the
// secret keys still stored in clear (records written before a KMS was
// configured; run at start), with rewrap true it also re-seals the sealed
// ones under the newest version of their KMS key, secrets unchanged
// (`cairn admin kms reseal`). Each record is replaced only over the
// version read, so a concurrent change wins and is left as written. It
// returns how many records it rewrote.
func (d *Driver) SealUserSecrets(ctx context.Context, rewrap bool) (int, error) {
	if !d.opts.Secrets.Enabled() {
		return 0, secret.ErrNoKMS
	}
	uids, err := listAll(ctx, d.users())
	if err != nil {
		return 0, err
	}
	n := 0
	for _, uid := range uids {
		op := objstore.NewReadOp()
		st := op.Stat()
		rd := op.Read(0, 0)
		if err := d.users().OperateRead(ctx, uid, op); err != nil {
			if errors.Is(err, objstore.ErrNotFound) {
				continue
			}
			return n, err
		}
		var u User
		if err := json.Unmarshal(rd.Data, &u); err != nil {
			return n, fmt.Errorf("user %s: %w", uid, err)
		}
		changed := false
		for i := range u.Keys {
			k := &u.Keys[i]
			switch {
			case k.SealedSecret == nil:
				changed = true // encodeUser seals it
			case rewrap:
				box, err := d.opts.Secrets.Rewrap(ctx, secretPurpose, secretIdentity(u.ID, k.AccessKey), k.SealedSecret)
				if err != nil {
					return n, fmt.Errorf("user %s: %w", uid, err)
				}
				k.SealedSecret, changed = box, true
			}
		}
		if !changed {
			continue
		}
		body, err := d.encodeUser(ctx, u)
		if err != nil {
			return n, err
		}
		err = d.users().Operate(ctx, uid, objstore.NewWriteOp().AssertVersion(st.Stat.Version).WriteFull(body))
		if errors.Is(err, objstore.ErrCanceled) || errors.Is(err, objstore.ErrNotFound) {
			continue // changed or removed meanwhile
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
