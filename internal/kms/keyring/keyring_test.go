package keyring

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/kms"
	"github.com/cairn-s3/cairn/internal/kms/kmstest"
)

var ctx = context.Background()

func b64(c byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{c}, 32)) }

func TestFileCreatedAndReloaded(t *testing.T) {
	f := filepath.Join(t.TempDir(), "kms.keyring")
	k, err := Open(Options{File: f})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(f)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	if k.DefaultKeyID() != DefaultKeyID {
		t.Fatalf("default %q", k.DefaultKeyID())
	}
	dk, err := k.GenerateDataKey(ctx, "", []byte("ctx"))
	if err != nil || len(dk.Plaintext) != 32 || dk.KeyID != DefaultKeyID {
		t.Fatal(dk, err)
	}
	k2, err := Open(Options{File: f})
	if err != nil {
		t.Fatal(err)
	}
	p, err := k2.Decrypt(ctx, dk.KeyID, dk.Sealed, []byte("ctx"))
	if err != nil || !bytes.Equal(p, dk.Plaintext) {
		t.Fatalf("reopened keyring: %v", err)
	}
	if _, err := k2.Decrypt(ctx, dk.KeyID, dk.Sealed, []byte("other")); !errors.Is(err, kms.ErrUnseal) {
		t.Fatalf("wrong aad: %v", err)
	}
	bad := bytes.Clone(dk.Sealed)
	bad[len(bad)-1] ^= 1
	if _, err := k2.Decrypt(ctx, dk.KeyID, bad, []byte("ctx")); !errors.Is(err, kms.ErrUnseal) {
		t.Fatalf("tampered: %v", err)
	}
	os.Chmod(f, 0o644)
	if _, err := Open(Options{File: f}); err == nil {
		t.Fatal("a world-readable key file was accepted")
	}
}

func TestNamedKeysAndRotation(t *testing.T) {
	f := filepath.Join(t.TempDir(), "kms.keyring")
	k, err := Open(Options{File: f, Keys: "testkey-1=" + b64(1) + ", testkey-2=" + b64(2)})
	if err != nil {
		t.Fatal(err)
	}
	a, err := k.GenerateDataKey(ctx, "testkey-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Decrypt(ctx, "testkey-2", a.Sealed, nil); !errors.Is(err, kms.ErrUnseal) {
		t.Fatalf("opened under another key: %v", err)
	}
	if _, err := k.GenerateDataKey(ctx, "nope", nil); !errors.Is(err, kms.ErrKeyNotFound) {
		t.Fatalf("unknown key: %v", err)
	}
	if _, err := k.Rotate("testkey-1"); err == nil {
		t.Fatal("rotated a configured key")
	}
	old, _ := k.GenerateDataKey(ctx, "", nil)
	if v, err := k.Rotate(DefaultKeyID); err != nil || v != 2 {
		t.Fatal(v, err)
	}
	k, err = Open(Options{File: f, Keys: "testkey-1=" + b64(1)})
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(f); strings.Contains(string(data), b64(1)) {
		t.Fatal("a configured key was written to the key file")
	}
	nw, _ := k.GenerateDataKey(ctx, "", nil)
	if nw.Sealed[3] != 2 || old.Sealed[3] != 1 {
		t.Fatalf("versions %d %d", old.Sealed[3], nw.Sealed[3])
	}
	if p, err := k.Decrypt(ctx, "", old.Sealed, nil); err != nil || !bytes.Equal(p, old.Plaintext) {
		t.Fatalf("old version: %v", err)
	}
	re, err := k.Rewrap(ctx, "", old.Sealed, nil)
	if err != nil || re[3] != 2 {
		t.Fatal(err)
	}
	if p, _ := k.Decrypt(ctx, "", re, nil); !bytes.Equal(p, old.Plaintext) {
		t.Fatal("rewrap changed the key")
	}
}

func TestBadConfigNeverEchoesKeys(t *testing.T) {
	secret := "c2VjcmV0LXNlY3JldC1zZWNyZXQ="
	for _, keys := range []string{"k1=" + secret, secret} {
		_, err := Open(Options{Keys: keys})
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Fatalf("%q: %v", keys, err)
		}
	}
}

// TestConformance runs the kms conformance suite on the keyring (file-held
// keys, so rotation applies) and on it behind kms.Cached.
func TestConformance(t *testing.T) {
	newKR := func(t *testing.T) *Keyring {
		f := filepath.Join(t.TempDir(), "kms.keyring")
		k, err := Open(Options{File: f})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"k1", "k2"} {
			if _, err := k.Rotate(id); err != nil {
				t.Fatal(err)
			}
		}
		return k
	}
	rotate := func(t *testing.T, k kms.KMS, id string) {
		if err := k.(kms.Rotator).RotateKey(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("Direct", func(t *testing.T) {
		kmstest.Run(t, kmstest.Harness{New: func(t *testing.T) kms.KMS { return newKR(t) },
			KeyID: "k1", OtherKeyID: "k2", MissingKeyID: "nope", Rotate: rotate})
	})
	t.Run("Cached", func(t *testing.T) {
		kmstest.Run(t, kmstest.Harness{New: func(t *testing.T) kms.KMS { return kms.NewCached(newKR(t), kms.CacheOptions{}) },
			KeyID: "k1", OtherKeyID: "k2", MissingKeyID: "nope", Rotate: rotate})
	})
}
