// Package secret seals small secrets at rest (user secret keys, topic
// endpoint credentials) with data keys from a kms.KMS: each Box has its own
// data key, sealed by the KMS, and the secret AES-256-GCM under it, both
// bound to what the secret belongs to (purpose and record identity), so a
// box copied into another record does not open. Format: docs/format/kms.md.
package secret

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/cairn-s3/cairn/internal/kms"
)

// Version is the Box format version.
const Version = 1

// Box is a sealed secret as stored (JSON, byte fields base64).
type Box struct {
	V          int    `json:"v"`
	KeyID      string `json:"kid"` // KMS master key of DataKey
	DataKey    []byte `json:"dk"`  // sealed by the KMS
	Nonce      []byte `json:"n"`
	Ciphertext []byte `json:"ct"` // secret ‖ 16 B tag
}

// ErrNoKMS: a record holds a sealed secret but no KMS is configured.
var ErrNoKMS = errors.New("secret: sealed at rest, and no KMS is configured to open it")

// Sealer seals under one KMS key. A nil *Sealer seals nothing (Enabled
// reports false).
type Sealer struct {
	kms   kms.KMS
	keyID string
}

// New returns a Sealer sealing under keyID (the KMS's default key when
// ""), or nil when k is nil or neither names a key.
func New(k kms.KMS, keyID string) *Sealer {
	if k == nil {
		return nil
	}
	if keyID == "" {
		keyID = k.DefaultKeyID()
	}
	if keyID == "" {
		return nil
	}
	return &Sealer{kms: k, keyID: keyID}
}

// Enabled reports whether s seals.
func (s *Sealer) Enabled() bool { return s != nil }

// KMS returns the KMS s uses (nil for a nil Sealer).
func (s *Sealer) KMS() kms.KMS {
	if s == nil {
		return nil
	}
	return s.kms
}

func aad(purpose, identity string) []byte {
	b := make([]byte, 0, 16+len(purpose)+len(identity))
	b = append(b, "cairn-secret\x00"...)
	b = append(b, Version)
	b = append(b, purpose...)
	b = append(b, 0)
	return append(b, identity...)
}

func gcm(key []byte) (cipher.AEAD, error) {
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(blk)
}

// Seal seals plain for (purpose, identity). One KMS GenerateDataKey.
func (s *Sealer) Seal(ctx context.Context, purpose, identity string, plain []byte) (*Box, error) {
	if s == nil {
		return nil, ErrNoKMS
	}
	a := aad(purpose, identity)
	dk, err := s.kms.GenerateDataKey(ctx, s.keyID, a)
	if err != nil {
		return nil, err
	}
	defer clear(dk.Plaintext)
	g, err := gcm(dk.Plaintext)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, g.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return &Box{V: Version, KeyID: dk.KeyID, DataKey: dk.Sealed, Nonce: nonce, Ciphertext: g.Seal(nil, nonce, plain, a)}, nil
}

// Open returns the secret in b. kms.ErrUnseal when b does not belong to
// (purpose, identity) or was altered; ErrNoKMS for a nil Sealer.
func (s *Sealer) Open(ctx context.Context, purpose, identity string, b *Box) ([]byte, error) {
	if s == nil {
		return nil, ErrNoKMS
	}
	if b.V != Version {
		return nil, fmt.Errorf("secret: box version %d unsupported", b.V)
	}
	a := aad(purpose, identity)
	key, err := s.kms.Decrypt(ctx, b.KeyID, b.DataKey, a)
	if err != nil {
		return nil, err
	}
	defer clear(key)
	g, err := gcm(key)
	if err != nil {
		return nil, kms.ErrUnseal
	}
	if len(b.Nonce) != g.NonceSize() {
		return nil, kms.ErrUnseal
	}
	plain, err := g.Open(nil, b.Nonce, b.Ciphertext, a)
	if err != nil {
		return nil, kms.ErrUnseal
	}
	return plain, nil
}

// Rewrap re-seals b's data key under the newest version of its KMS key;
// the ciphertext is unchanged.
func (s *Sealer) Rewrap(ctx context.Context, purpose, identity string, b *Box) (*Box, error) {
	if s == nil {
		return nil, ErrNoKMS
	}
	dk, err := s.kms.Rewrap(ctx, b.KeyID, b.DataKey, aad(purpose, identity))
	if err != nil {
		return nil, err
	}
	nb := *b
	nb.DataKey = dk
	return &nb, nil
}
