package sts

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/kms/secret"
	"github.com/cairn-s3/cairn/internal/objstore"
)

const (
	nsSTS     = "sts"
	keysOID   = "keys"
	keyLen    = 32
	sealWhat  = "sts-key"
	reloadGap = 5 * time.Second // at most one store read per gap for unknown key ids
)

// storedKey is one STS key as stored: in clear, or sealed by the KMS
// secrets key when one is configured.
type storedKey struct {
	ID      uint32      `json:"id"`
	Created time.Time   `json:"created"`
	Key     []byte      `json:"key,omitempty"`
	Sealed  *secret.Box `json:"sealed,omitempty"`
}

type keyFile struct {
	Keys []storedKey `json:"keys"`
}

// keyring holds the STS keys by id; the highest id seals new tokens.
type keyring struct {
	io      objstore.IOContext
	secrets *secret.Sealer
	now     func() time.Time

	mu       sync.RWMutex
	keys     map[uint32][]byte
	current  uint32
	lastLoad time.Time
}

// load reads the keyring, creating it (one exclusive create, so
// gateways starting together agree on one key) when absent.
func (k *keyring) load(ctx context.Context) error {
	for attempt := 0; attempt < 3; attempt++ {
		op := objstore.NewReadOp()
		r := op.Read(0, 0)
		err := k.io.OperateRead(ctx, keysOID, op)
		if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrInvalid) {
			if err := k.create(ctx); err != nil && !errors.Is(err, objstore.ErrExists) {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		return k.decode(ctx, r.Data)
	}
	return errors.New("sts: keyring vanished while loading")
}

func (k *keyring) create(ctx context.Context) error {
	key := make([]byte, keyLen)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	sk := storedKey{ID: 1, Created: k.now().UTC()}
	if k.secrets.Enabled() {
		box, err := k.secrets.Seal(ctx, sealWhat, "1", key)
		if err != nil {
			return fmt.Errorf("sts: seal key: %w", err)
		}
		sk.Sealed = box
	} else {
		sk.Key = key
	}
	body, _ := json.Marshal(keyFile{Keys: []storedKey{sk}})
	return k.io.Operate(ctx, keysOID, objstore.NewWriteOp().Create(true).WriteFull(body))
}

func (k *keyring) decode(ctx context.Context, b []byte) error {
	var f keyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("sts: keyring: %w", err)
	}
	keys := map[uint32][]byte{}
	var cur uint32
	for _, sk := range f.Keys {
		key := sk.Key
		if sk.Sealed != nil {
			var err error
			if key, err = k.secrets.Open(ctx, sealWhat, strconv.FormatUint(uint64(sk.ID), 10), sk.Sealed); err != nil {
				return fmt.Errorf("sts: open key %d: %w", sk.ID, err)
			}
		}
		if len(key) != keyLen {
			return fmt.Errorf("sts: key %d has %d bytes", sk.ID, len(key))
		}
		keys[sk.ID] = key
		cur = max(cur, sk.ID)
	}
	if cur == 0 {
		return errors.New("sts: the keyring holds no key")
	}
	k.mu.Lock()
	k.keys, k.current, k.lastLoad = keys, cur, k.now()
	k.mu.Unlock()
	return nil
}

// sealing returns the current key and its id.
func (k *keyring) sealing() (uint32, []byte) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.current, k.keys[k.current]
}

// get returns key id, reloading the keyring (rate-limited) when another
// gateway may have added it.
func (k *keyring) get(ctx context.Context, id uint32) ([]byte, bool) {
	k.mu.RLock()
	key, ok := k.keys[id]
	fresh := k.now().Sub(k.lastLoad) < reloadGap
	k.mu.RUnlock()
	if ok || fresh {
		return key, ok
	}
	if err := k.load(ctx); err != nil {
		return nil, false
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	key, ok = k.keys[id]
	return key, ok
}
