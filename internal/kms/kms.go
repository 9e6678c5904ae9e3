// Package kms is the key-management boundary of server-side encryption:
// named master keys that seal and unseal per-object data keys. The master
// keys never leave their backend (a local keyring in kms/keyring, a KMIP
// server in kms/kmip); callers see only data keys and their sealed form.
//
// Every backend returns the sentinel errors below for the same condition,
// compared with errors.Is, so the S3 layer maps them once: ErrKeyNotFound
// to 400 KMS.NotFoundException, ErrUnavailable to 503 (nothing written),
// ErrUnseal to 403/500 (the stored sealed key or its context is wrong).
package kms

import (
	"context"
	"errors"
)

// DataKeySize is the size of a plaintext data key (AES-256).
const DataKeySize = 32

// Sentinel errors every backend returns.
var (
	// ErrKeyNotFound: no master key has the given id.
	ErrKeyNotFound = errors.New("kms: key not found")
	// ErrUnavailable: the backend cannot be reached or refused to serve;
	// the request may be retried later.
	ErrUnavailable = errors.New("kms: unavailable")
	// ErrUnseal: a sealed data key did not open (tampered, wrong key or
	// wrong context).
	ErrUnseal = errors.New("kms: cannot unseal data key")
)

// DataKey is a fresh data key: the plaintext to encrypt with, and the
// sealed form to store beside the data.
type DataKey struct {
	// KeyID is the master key that sealed it (the default key's id when
	// the caller asked for "").
	KeyID string
	// Plaintext is DataKeySize random bytes. The caller owns it and should
	// clear it when done.
	Plaintext []byte
	// Sealed is opaque to callers; it names the master key version that
	// sealed it, so a rotated key still opens old data keys.
	Sealed []byte
}

// KMS seals data keys under master keys. Implementations are safe for
// concurrent use.
type KMS interface {
	// GenerateDataKey returns a fresh data key sealed under master key
	// keyID ("" = the backend's default key), bound to context aad: Decrypt
	// opens it only with the same aad.
	GenerateDataKey(ctx context.Context, keyID string, aad []byte) (DataKey, error)
	// Decrypt opens a sealed data key. keyID is the id GenerateDataKey
	// returned in DataKey.KeyID.
	Decrypt(ctx context.Context, keyID string, sealed, aad []byte) ([]byte, error)
	// Rewrap re-seals a sealed data key under the current version of
	// keyID (after a rotation) without exposing it to the caller; the
	// data it protects is not rewritten.
	Rewrap(ctx context.Context, keyID string, sealed, aad []byte) ([]byte, error)
	// DefaultKeyID is the id GenerateDataKey uses for "" ("" if the
	// backend has no default: SSE-S3 then cannot be served).
	DefaultKeyID() string
}

// Rotator is implemented by backends whose master keys cairn can rotate
// itself (`cairn admin kms rotate-key`): RotateKey adds a new version of
// keyID that GenerateDataKey and Rewrap use from then on; data keys sealed
// under older versions still open. A backend whose keys are rotated by
// its operator (outside cairn) need not implement it.
type Rotator interface {
	RotateKey(ctx context.Context, keyID string) error
}
