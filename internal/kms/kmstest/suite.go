package kmstest

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/kms"
)

// Harness describes a backend to the suite.
type Harness struct {
	// New returns the backend under test. It holds master keys KeyID and
	// OtherKeyID and none named MissingKeyID.
	New                             func(t *testing.T) kms.KMS
	KeyID, OtherKeyID, MissingKeyID string
	// Rotate adds a new version of keyID (nil: the rotation cases skip).
	Rotate func(t *testing.T, k kms.KMS, keyID string)
	// Unavailable returns the backend pointed at a service that cannot be
	// reached (nil: that case skips).
	Unavailable func(t *testing.T) kms.KMS
	// UnavailableWithin bounds how long a call to an unavailable backend
	// may take before it returns kms.ErrUnavailable (default 20 s).
	UnavailableWithin time.Duration
}

// Run runs every conformance case against h.
func Run(t *testing.T, h Harness) {
	ctx := context.Background()
	aad := []byte("bucket-id/object/version")
	t.Run("RoundTrip", func(t *testing.T) {
		k := h.New(t)
		dk, err := k.GenerateDataKey(ctx, h.KeyID, aad)
		if err != nil {
			t.Fatal(err)
		}
		if dk.KeyID != h.KeyID || len(dk.Plaintext) != kms.DataKeySize || len(dk.Sealed) == 0 {
			t.Fatalf("data key: id %q, %d plaintext bytes, %d sealed bytes", dk.KeyID, len(dk.Plaintext), len(dk.Sealed))
		}
		if bytes.Contains(dk.Sealed, dk.Plaintext) {
			t.Fatal("sealed form contains the plaintext")
		}
		plain, err := k.Decrypt(ctx, dk.KeyID, dk.Sealed, aad)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(plain, dk.Plaintext) {
			t.Fatal("Decrypt returned another key")
		}
		dk2, err := k.GenerateDataKey(ctx, h.KeyID, aad)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(dk2.Plaintext, dk.Plaintext) || bytes.Equal(dk2.Sealed, dk.Sealed) {
			t.Fatal("two data keys are equal")
		}
		// Empty aad is a context too.
		dk3, err := k.GenerateDataKey(ctx, h.KeyID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := k.Decrypt(ctx, h.KeyID, dk3.Sealed, nil); err != nil || !bytes.Equal(p, dk3.Plaintext) {
			t.Fatalf("empty aad: %v", err)
		}
	})
	t.Run("DefaultKey", func(t *testing.T) {
		k := h.New(t)
		def := k.DefaultKeyID()
		if def == "" {
			if _, err := k.GenerateDataKey(ctx, "", aad); err == nil {
				t.Fatal("no default key, yet GenerateDataKey(\"\") worked")
			}
			return
		}
		dk, err := k.GenerateDataKey(ctx, "", aad)
		if err != nil {
			t.Fatal(err)
		}
		if dk.KeyID != def {
			t.Fatalf("KeyID %q, want the default %q", dk.KeyID, def)
		}
		if p, err := k.Decrypt(ctx, dk.KeyID, dk.Sealed, aad); err != nil || !bytes.Equal(p, dk.Plaintext) {
			t.Fatalf("Decrypt: %v", err)
		}
	})
	t.Run("WrongContext", func(t *testing.T) {
		k := h.New(t)
		dk, err := k.GenerateDataKey(ctx, h.KeyID, aad)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range [][]byte{nil, []byte("bucket-id/object/other"), append(append([]byte(nil), aad...), 0)} {
			if _, err := k.Decrypt(ctx, h.KeyID, dk.Sealed, bad); !errors.Is(err, kms.ErrUnseal) {
				t.Fatalf("aad %q: %v, want ErrUnseal", bad, err)
			}
		}
		// Sealed under one master key, presented as another's.
		if _, err := k.Decrypt(ctx, h.OtherKeyID, dk.Sealed, aad); !errors.Is(err, kms.ErrUnseal) {
			t.Fatalf("other key: %v, want ErrUnseal", err)
		}
	})
	t.Run("Tampered", func(t *testing.T) {
		k := h.New(t)
		dk, err := k.GenerateDataKey(ctx, h.KeyID, aad)
		if err != nil {
			t.Fatal(err)
		}
		for i := range dk.Sealed {
			bad := append([]byte(nil), dk.Sealed...)
			bad[i] ^= 0x01
			if _, err := k.Decrypt(ctx, h.KeyID, bad, aad); !errors.Is(err, kms.ErrUnseal) {
				t.Fatalf("byte %d flipped: %v, want ErrUnseal", i, err)
			}
		}
		for _, bad := range [][]byte{nil, dk.Sealed[:1], dk.Sealed[:len(dk.Sealed)-1], append(append([]byte(nil), dk.Sealed...), 0)} {
			if _, err := k.Decrypt(ctx, h.KeyID, bad, aad); !errors.Is(err, kms.ErrUnseal) {
				t.Fatalf("%d bytes: %v, want ErrUnseal", len(bad), err)
			}
		}
		if _, err := k.Rewrap(ctx, h.KeyID, dk.Sealed[:len(dk.Sealed)-1], aad); !errors.Is(err, kms.ErrUnseal) {
			t.Fatalf("Rewrap of a truncated key: %v, want ErrUnseal", err)
		}
	})
	t.Run("UnknownKey", func(t *testing.T) {
		k := h.New(t)
		if _, err := k.GenerateDataKey(ctx, h.MissingKeyID, aad); !errors.Is(err, kms.ErrKeyNotFound) {
			t.Fatalf("GenerateDataKey: %v, want ErrKeyNotFound", err)
		}
		dk, err := k.GenerateDataKey(ctx, h.KeyID, aad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.Decrypt(ctx, h.MissingKeyID, dk.Sealed, aad); !errors.Is(err, kms.ErrKeyNotFound) {
			t.Fatalf("Decrypt: %v, want ErrKeyNotFound", err)
		}
		if _, err := k.Rewrap(ctx, h.MissingKeyID, dk.Sealed, aad); !errors.Is(err, kms.ErrKeyNotFound) {
			t.Fatalf("Rewrap: %v, want ErrKeyNotFound", err)
		}
	})
	t.Run("Rotation", func(t *testing.T) {
		if h.Rotate == nil {
			t.Skip("backend cannot rotate from the suite")
		}
		k := h.New(t)
		old, err := k.GenerateDataKey(ctx, h.KeyID, aad)
		if err != nil {
			t.Fatal(err)
		}
		h.Rotate(t, k, h.KeyID)
		fresh, err := k.GenerateDataKey(ctx, h.KeyID, aad)
		if err != nil {
			t.Fatal(err)
		}
		for _, dk := range []kms.DataKey{old, fresh} {
			if p, err := k.Decrypt(ctx, h.KeyID, dk.Sealed, aad); err != nil || !bytes.Equal(p, dk.Plaintext) {
				t.Fatalf("after rotation: %v", err)
			}
		}
		re, err := k.Rewrap(ctx, h.KeyID, old.Sealed, aad)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(re, old.Sealed) {
			t.Fatal("Rewrap returned the old sealed key")
		}
		if p, err := k.Decrypt(ctx, h.KeyID, re, aad); err != nil || !bytes.Equal(p, old.Plaintext) {
			t.Fatalf("rewrapped key: %v", err)
		}
		if _, err := k.Decrypt(ctx, h.KeyID, re, []byte("other")); !errors.Is(err, kms.ErrUnseal) {
			t.Fatalf("rewrapped key, wrong aad: %v, want ErrUnseal", err)
		}
		// A second rotation: the first version still opens.
		h.Rotate(t, k, h.KeyID)
		if p, err := k.Decrypt(ctx, h.KeyID, old.Sealed, aad); err != nil || !bytes.Equal(p, old.Plaintext) {
			t.Fatalf("after two rotations: %v", err)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		k := h.New(t)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		shared, err := k.GenerateDataKey(ctx, h.KeyID, aad)
		if err != nil {
			t.Fatal(err)
		}
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 4; i++ {
					dk, err := k.GenerateDataKey(ctx, h.KeyID, aad)
					if err != nil {
						errs <- err
						return
					}
					for _, d := range []kms.DataKey{dk, shared} {
						p, err := k.Decrypt(ctx, h.KeyID, d.Sealed, aad)
						if err != nil {
							errs <- err
							return
						}
						if !bytes.Equal(p, d.Plaintext) {
							errs <- errors.New("wrong plaintext under concurrency")
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})
	t.Run("Unavailable", func(t *testing.T) {
		if h.Unavailable == nil {
			t.Skip("no outage for this backend")
		}
		within := h.UnavailableWithin
		if within == 0 {
			within = 20 * time.Second
		}
		k := h.Unavailable(t)
		// The bound is the backend's own: the context must not be what
		// ends the call.
		cctx, cancel := context.WithTimeout(ctx, 10*within)
		defer cancel()
		start := time.Now()
		_, err := k.GenerateDataKey(cctx, h.KeyID, aad)
		if !errors.Is(err, kms.ErrUnavailable) {
			t.Fatalf("GenerateDataKey: %v, want ErrUnavailable", err)
		}
		_, err = k.Decrypt(cctx, h.KeyID, []byte("sealed-key-bytes-of-some-length-0123456789"), aad)
		if !errors.Is(err, kms.ErrUnavailable) {
			t.Fatalf("Decrypt: %v, want ErrUnavailable", err)
		}
		if d := time.Since(start); d > 2*within {
			t.Fatalf("two calls took %v, want ErrUnavailable within %v each", d, within)
		}
	})
}
