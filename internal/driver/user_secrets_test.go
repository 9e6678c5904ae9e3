package driver_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/kms/kmstest"
	"github.com/cairn-s3/cairn/internal/kms/secret"
	"github.com/cairn-s3/cairn/internal/objstore"
)

// storedUser reads a user record as stored.
func storedUser(t *testing.T, st objstore.Store, uid string) []byte {
	t.Helper()
	io, err := st.IOContext(context.Background(), driver.PoolMeta)
	if err != nil {
		t.Fatal(err)
	}
	op := objstore.NewReadOp()
	r := op.Read(0, 0)
	if err := io.WithNamespace("users.uid").OperateRead(context.Background(), uid, op); err != nil {
		t.Fatal(err)
	}
	return r.Data
}

func TestUserSecretsSealedAtRest(t *testing.T) {
	ctx := context.Background()
	st := newMemStore(t)
	defer st.Close()
	open := func(s *secret.Sealer) *driver.Driver {
		d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 3, GCMinWait: -1, Secrets: s})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	mem := kmstest.NewMemory("secrets")
	sealer := secret.New(mem, "")
	const oldSecret, newSecret = "OLDSECRET0123456789abcdefghijklmnopqrstu", "NEWSECRET0123456789abcdefghijklmnopqrstu"

	// Written in clear before a KMS was configured.
	d := open(nil)
	if _, err := d.CreateUser(ctx, driver.User{ID: "old", Keys: []driver.Key{{AccessKey: "OLDAK", SecretKey: oldSecret}}}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if !bytes.Contains(storedUser(t, st, "old"), []byte(oldSecret)) {
		t.Fatal("test premise: a record without KMS holds the secret in clear")
	}

	d = open(sealer)
	// Clear records still read...
	if _, sk, err := d.LookupAccessKey(ctx, "OLDAK"); err != nil || sk != oldSecret {
		t.Fatalf("clear record: %q %v", sk, err)
	}
	// ...and are sealed by the migration.
	if n, err := d.SealUserSecrets(ctx, false); err != nil || n != 1 {
		t.Fatalf("SealUserSecrets: %d %v", n, err)
	}
	if n, err := d.SealUserSecrets(ctx, false); err != nil || n != 0 {
		t.Fatalf("second SealUserSecrets: %d %v, want nothing left to seal", n, err)
	}
	if _, err := d.CreateUser(ctx, driver.User{ID: "new", Keys: []driver.Key{{AccessKey: "NEWAK", SecretKey: newSecret}}}); err != nil {
		t.Fatal(err)
	}
	for uid, sk := range map[string]string{"old": oldSecret, "new": newSecret} {
		if raw := storedUser(t, st, uid); bytes.Contains(raw, []byte(sk)) || !bytes.Contains(raw, []byte("secret_sealed")) {
			t.Fatalf("user %s stored as %s", uid, raw)
		}
	}
	for ak, sk := range map[string]string{"OLDAK": oldSecret, "NEWAK": newSecret} {
		u, got, err := d.LookupAccessKey(ctx, ak)
		if err != nil || got != sk || u.Keys[0].SealedSecret != nil {
			t.Fatalf("%s: %q %v", ak, got, err)
		}
	}
	// Rotation, then re-seal: same secrets, new sealed data keys.
	before := storedUser(t, st, "new")
	if err := mem.RotateKey(ctx, "secrets"); err != nil {
		t.Fatal(err)
	}
	if n, err := d.SealUserSecrets(ctx, true); err != nil || n != 2 {
		t.Fatalf("reseal: %d %v", n, err)
	}
	if bytes.Equal(before, storedUser(t, st, "new")) {
		t.Fatal("reseal left the record as it was")
	}
	d.Close()
	d = open(sealer)
	if u, err := d.GetUser(ctx, "new"); err != nil || u.Keys[0].SecretKey != newSecret {
		t.Fatalf("after reseal: %v", err)
	}
	d.Close()

	// Without the KMS a sealed record does not load (it never falls back
	// to an empty secret).
	d = open(nil)
	defer d.Close()
	if _, _, err := d.LookupAccessKey(ctx, "NEWAK"); !errors.Is(err, secret.ErrNoKMS) {
		t.Fatalf("no KMS: %v, want ErrNoKMS", err)
	}
}
