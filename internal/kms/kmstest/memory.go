// Package kmstest is the conformance suite every kms.KMS backend runs
// (Run), and Memory, a small in-process reference backend for tests of
// code above the kms boundary, with an outage switch.
package kmstest

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cairn-s3/cairn/internal/kms"
)

// Memory keeps versioned master keys in memory. Sealed form: BE32 version
// ‖ 12 B nonce ‖ AES-256-GCM(data key), aad = key id ‖ 0 ‖ version ‖ aad.
type Memory struct {
	mu   sync.Mutex
	keys map[string][][]byte // id -> versions, oldest first
	def  string
	down atomic.Bool
}

var _ kms.KMS = (*Memory)(nil)
var _ kms.Rotator = (*Memory)(nil)

// NewMemory returns a Memory holding one version of each id; the first is
// the default key.
func NewMemory(ids ...string) *Memory {
	m := &Memory{keys: map[string][][]byte{}}
	for i, id := range ids {
		if i == 0 {
			m.def = id
		}
		m.keys[id] = [][]byte{randomKey()}
	}
	return m
}

func randomKey() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return b
}

// SetUnavailable makes every call fail with kms.ErrUnavailable (an outage).
func (m *Memory) SetUnavailable(down bool) { m.down.Store(down) }

// RotateKey adds a version to id.
func (m *Memory) RotateKey(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys[id] == nil {
		return kms.ErrKeyNotFound
	}
	m.keys[id] = append(m.keys[id], randomKey())
	return nil
}

// DefaultKeyID is the first id NewMemory got.
func (m *Memory) DefaultKeyID() string { return m.def }

func (m *Memory) key(id string, version int) ([]byte, int, error) {
	if m.down.Load() {
		return nil, 0, kms.ErrUnavailable
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := m.keys[id]
	if vs == nil {
		return nil, 0, fmt.Errorf("%w: %q", kms.ErrKeyNotFound, id)
	}
	if version < 0 {
		version = len(vs) - 1
	}
	if version >= len(vs) {
		return nil, 0, kms.ErrUnseal
	}
	return vs[version], version, nil
}

func memAAD(id string, version int, aad []byte) []byte {
	b := append([]byte(id), 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(b[len(id)+1:], uint32(version))
	return append(b, aad...)
}

func (m *Memory) seal(id string, plain, aad []byte) ([]byte, error) {
	k, v, err := m.key(id, -1)
	if err != nil {
		return nil, err
	}
	g := gcm(k)
	out := binary.BigEndian.AppendUint32(nil, uint32(v))
	nonce := make([]byte, g.NonceSize())
	_, _ = rand.Read(nonce)
	out = append(out, nonce...)
	return g.Seal(out, nonce, plain, memAAD(id, v, aad)), nil
}

func gcm(k []byte) cipher.AEAD {
	b, _ := aes.NewCipher(k)
	g, _ := cipher.NewGCM(b)
	return g
}

// GenerateDataKey implements kms.KMS.
func (m *Memory) GenerateDataKey(_ context.Context, id string, aad []byte) (kms.DataKey, error) {
	if id == "" {
		id = m.def
	}
	plain := randomKey()
	sealed, err := m.seal(id, plain, aad)
	if err != nil {
		return kms.DataKey{}, err
	}
	return kms.DataKey{KeyID: id, Plaintext: plain, Sealed: sealed}, nil
}

// Decrypt implements kms.KMS.
func (m *Memory) Decrypt(_ context.Context, id string, sealed, aad []byte) ([]byte, error) {
	if _, _, err := m.key(id, -1); err != nil {
		return nil, err
	}
	if len(sealed) < 4+12+16 {
		return nil, kms.ErrUnseal
	}
	v := int(binary.BigEndian.Uint32(sealed))
	k, _, err := m.key(id, v)
	if err != nil {
		return nil, err
	}
	plain, err := gcm(k).Open(nil, sealed[4:16], sealed[16:], memAAD(id, v, aad))
	if err != nil {
		return nil, kms.ErrUnseal
	}
	return plain, nil
}

// Rewrap implements kms.KMS.
func (m *Memory) Rewrap(ctx context.Context, id string, sealed, aad []byte) ([]byte, error) {
	plain, err := m.Decrypt(ctx, id, sealed, aad)
	if err != nil {
		return nil, err
	}
	defer clear(plain)
	return m.seal(id, plain, aad)
}
