package secret_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/cairn-s3/cairn/internal/kms"
	"github.com/cairn-s3/cairn/internal/kms/kmstest"
	"github.com/cairn-s3/cairn/internal/kms/secret"
)

func TestSealOpenRewrap(t *testing.T) {
	ctx := context.Background()
	mem := kmstest.NewMemory("k1")
	s := secret.New(mem, "")
	if !s.Enabled() {
		t.Fatal("a KMS with a default key must enable sealing")
	}
	if secret.New(nil, "k1").Enabled() || secret.New(kmstest.NewMemory(), "").Enabled() {
		t.Fatal("no KMS or no key: sealing must be off")
	}
	b, err := s.Seal(ctx, "user-key", "alice\x00AKIA", []byte("the-secret"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b.Ciphertext, []byte("the-secret")) {
		t.Fatal("ciphertext holds the secret")
	}
	got, err := s.Open(ctx, "user-key", "alice\x00AKIA", b)
	if err != nil || string(got) != "the-secret" {
		t.Fatalf("%q %v", got, err)
	}
	for _, c := range []struct{ purpose, id string }{{"user-key", "bob\x00AKIA"}, {"topic", "alice\x00AKIA"}} {
		if _, err := s.Open(ctx, c.purpose, c.id, b); !errors.Is(err, kms.ErrUnseal) {
			t.Fatalf("%q/%q: %v, want ErrUnseal", c.purpose, c.id, err)
		}
	}
	bad := *b
	bad.Ciphertext = append([]byte(nil), b.Ciphertext...)
	bad.Ciphertext[0] ^= 1
	if _, err := s.Open(ctx, "user-key", "alice\x00AKIA", &bad); !errors.Is(err, kms.ErrUnseal) {
		t.Fatalf("tampered: %v", err)
	}
	if err := mem.RotateKey(ctx, "k1"); err != nil {
		t.Fatal(err)
	}
	nb, err := s.Rewrap(ctx, "user-key", "alice\x00AKIA", b)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(nb.DataKey, b.DataKey) || !bytes.Equal(nb.Ciphertext, b.Ciphertext) {
		t.Fatal("Rewrap must change the sealed data key only")
	}
	if got, err := s.Open(ctx, "user-key", "alice\x00AKIA", nb); err != nil || string(got) != "the-secret" {
		t.Fatalf("after rewrap: %q %v", got, err)
	}
	var none *secret.Sealer
	if _, err := none.Open(ctx, "user-key", "x", b); !errors.Is(err, secret.ErrNoKMS) {
		t.Fatalf("nil sealer: %v", err)
	}
}
