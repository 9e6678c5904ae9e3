// Package keyring is the local key-management backend: named, versioned
// 32-byte master keys held by the gateway itself, from a key file created
// on first start and from keys given in configuration. Data keys are sealed
// with AES-256-GCM: sealed = BE32(version) ‖ nonce(12) ‖ ciphertext ‖ tag,
// additional data = key id ‖ 0x00 ‖ caller context. The file format, backup
// and rotation are in docs/format/kms-keyring.md.
package keyring

import (
	"bufio"
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/cairn-s3/cairn/internal/kms"
)

// DefaultKeyID is the key SSE-S3 uses when the key file is the source.
const DefaultKeyID = "cairn-default"

const fileHeader = "# cairn keyring v1: <key id> <version> <base64 key>; keep mode 0600, back it up with the data\n"

// Options configure a Keyring. Every field is optional.
type Options struct {
	// File is the key file; created with mode 0600 holding a fresh
	// DefaultKeyID when absent. "" keeps keys in memory only.
	File string
	// Keys are named keys in RGW's rgw_crypt_s3_kms_encryption_keys form:
	// "id=<base64 32 bytes>,id2=...". They are version 1 and not written
	// to File.
	Keys string
	// MasterKey, base64 of 32 bytes, is DefaultKeyID version 1 instead of
	// the file's (for keys injected from a secret store).
	MasterKey string
	// Default names the key SSE-S3 uses; "" = DefaultKeyID when the file
	// or MasterKey provides it, else the only named key if there is one.
	Default string
}

type key struct {
	versions map[uint32][]byte
	newest   uint32
	aead     map[uint32]cipher.AEAD
	inFile   bool // held in the key file (rotatable), not configuration
}

// Keyring implements kms.KMS with local master keys.
type Keyring struct {
	mu   sync.RWMutex
	file string
	keys map[string]*key
	def  string
}

var _ kms.KMS = (*Keyring)(nil)

// Open loads (or creates) the key file and the configured keys.
func Open(o Options) (*Keyring, error) {
	k := &Keyring{file: o.File, keys: map[string]*key{}}
	if o.MasterKey != "" {
		b, err := decodeKey(o.MasterKey)
		if err != nil {
			return nil, fmt.Errorf("kms master key: %w", err)
		}
		if err := k.add(DefaultKeyID, 1, b, false); err != nil {
			return nil, err
		}
	}
	if o.File != "" {
		if err := k.load(o.MasterKey == ""); err != nil {
			return nil, err
		}
	}
	if o.Keys != "" {
		for _, item := range strings.Split(o.Keys, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			id, b64, ok := strings.Cut(item, "=")
			if !ok || id == "" {
				return nil, fmt.Errorf("kms-keys: entry %q is not id=<base64 key>", redactEntry(item))
			}
			b, err := decodeKey(b64)
			if err != nil {
				return nil, fmt.Errorf("kms-keys: key %q: %w", id, err)
			}
			if _, dup := k.keys[id]; dup {
				return nil, fmt.Errorf("kms-keys: key %q defined twice", id)
			}
			if err := k.add(id, 1, b, false); err != nil {
				return nil, err
			}
		}
	}
	switch {
	case o.Default != "":
		if k.keys[o.Default] == nil {
			return nil, fmt.Errorf("kms default key %q is not configured", o.Default)
		}
		k.def = o.Default
	case k.keys[DefaultKeyID] != nil:
		k.def = DefaultKeyID
	case len(k.keys) == 1:
		for id := range k.keys {
			k.def = id
		}
	}
	return k, nil
}

// redactEntry keeps an id but never a key in error messages.
func redactEntry(s string) string {
	if id, _, ok := strings.Cut(s, "="); ok {
		return id + "=…"
	}
	if len(s) > 8 {
		return s[:4] + "…"
	}
	return "…"
}

func decodeKey(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, errors.New("not base64")
	}
	if len(b) != kms.DataKeySize {
		return nil, fmt.Errorf("must be %d bytes, is %d", kms.DataKeySize, len(b))
	}
	return b, nil
}

func (k *Keyring) add(id string, ver uint32, b []byte, inFile bool) error {
	if strings.ContainsAny(id, " \t\n,=") {
		return fmt.Errorf("kms key id %q: no spaces, commas or '='", id)
	}
	blk, err := aes.NewCipher(b)
	if err != nil {
		return err
	}
	g, err := cipher.NewGCM(blk)
	if err != nil {
		return err
	}
	e := k.keys[id]
	if e == nil {
		e = &key{versions: map[uint32][]byte{}, aead: map[uint32]cipher.AEAD{}, inFile: inFile}
		k.keys[id] = e
	}
	if e.inFile != inFile {
		return fmt.Errorf("kms key %q is both in the key file and in configuration", id)
	}
	if _, dup := e.versions[ver]; dup {
		return fmt.Errorf("kms key %q version %d defined twice", id, ver)
	}
	e.versions[ver], e.aead[ver] = b, g
	e.newest = max(e.newest, ver)
	return nil
}

// load reads the key file, creating it with a fresh default key when it is
// absent and create is set.
func (k *Keyring) load(create bool) error {
	data, err := os.ReadFile(k.file)
	if errors.Is(err, os.ErrNotExist) {
		if !create {
			return nil
		}
		b := make([]byte, kms.DataKeySize)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		if err := k.add(DefaultKeyID, 1, b, true); err != nil {
			return err
		}
		return k.save()
	}
	if err != nil {
		return fmt.Errorf("kms keyring: %w", err)
	}
	if fi, err := os.Stat(k.file); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("kms keyring %s: mode %v is readable by others; chmod 600 it", k.file, fi.Mode().Perm())
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		f := strings.Fields(t)
		if len(f) != 3 {
			return fmt.Errorf("kms keyring %s line %d: want <id> <version> <key>", k.file, line)
		}
		ver, err := strconv.ParseUint(f[1], 10, 32)
		if err != nil || ver == 0 {
			return fmt.Errorf("kms keyring %s line %d: bad version", k.file, line)
		}
		b, err := decodeKey(f[2])
		if err != nil {
			return fmt.Errorf("kms keyring %s line %d: %w", k.file, line, err)
		}
		if err := k.add(f[0], uint32(ver), b, true); err != nil {
			return fmt.Errorf("kms keyring %s line %d: %w", k.file, line, err)
		}
	}
	return nil
}

// save writes the file-held keys atomically (temp file, fsync, rename).
func (k *Keyring) save() error {
	var buf bytes.Buffer
	buf.WriteString(fileHeader)
	ids := make([]string, 0, len(k.keys))
	for id, e := range k.keys {
		if e.inFile {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		e := k.keys[id]
		vers := make([]int, 0, len(e.versions))
		for v := range e.versions {
			vers = append(vers, int(v))
		}
		sort.Ints(vers)
		for _, v := range vers {
			fmt.Fprintf(&buf, "%s %d %s\n", id, v, base64.StdEncoding.EncodeToString(e.versions[uint32(v)]))
		}
	}
	if err := os.MkdirAll(filepath.Dir(k.file), 0o700); err != nil {
		return err
	}
	tmp := k.file + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, k.file)
}

// Rotate adds a new random version of the file-held key id (creating the
// key if absent) and saves the file: new data keys use it, old sealed keys
// still open with their version. Keys given by configuration are rotated
// by changing the configuration.
func (k *Keyring) Rotate(id string) (uint32, error) {
	if k.file == "" {
		return 0, errors.New("kms keyring: no key file to rotate in")
	}
	b := make([]byte, kms.DataKeySize)
	if _, err := rand.Read(b); err != nil {
		return 0, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	ver := uint32(1)
	if e := k.keys[id]; e != nil {
		if !e.inFile {
			return 0, fmt.Errorf("kms key %q comes from configuration: rotate it there", id)
		}
		ver = e.newest + 1
	}
	if err := k.add(id, ver, b, true); err != nil {
		return 0, err
	}
	if err := k.save(); err != nil {
		// Never seal with a version the file does not hold.
		e := k.keys[id]
		delete(e.versions, ver)
		delete(e.aead, ver)
		if e.newest = ver - 1; e.newest == 0 {
			delete(k.keys, id)
		}
		return 0, err
	}
	return ver, nil
}

// RotateKey implements kms.Rotator (cairn admin kms rotate-key).
func (k *Keyring) RotateKey(_ context.Context, id string) error {
	_, err := k.Rotate(id)
	return err
}

var _ kms.Rotator = (*Keyring)(nil)

// KeyVersions lists key ids with their newest version (for admin output:
// never key material).
func (k *Keyring) KeyVersions() map[string]uint32 {
	k.mu.RLock()
	defer k.mu.RUnlock()
	out := make(map[string]uint32, len(k.keys))
	for id, e := range k.keys {
		out[id] = e.newest
	}
	return out
}

// DefaultKeyID implements kms.KMS.
func (k *Keyring) DefaultKeyID() string { return k.def }

func (k *Keyring) resolve(id string) (string, *key, error) {
	if id == "" {
		id = k.def
	}
	e := k.keys[id]
	if e == nil {
		return id, nil, fmt.Errorf("%w: %q", kms.ErrKeyNotFound, id)
	}
	return id, e, nil
}

func aadFor(id string, aad []byte) []byte {
	out := make([]byte, 0, len(id)+1+len(aad))
	out = append(out, id...)
	out = append(out, 0)
	return append(out, aad...)
}

func (k *Keyring) seal(id string, e *key, plain, aad []byte) ([]byte, error) {
	g := e.aead[e.newest]
	out := make([]byte, 4+g.NonceSize(), 4+g.NonceSize()+len(plain)+g.Overhead())
	binary.BigEndian.PutUint32(out, e.newest)
	if _, err := rand.Read(out[4:]); err != nil {
		return nil, err
	}
	return g.Seal(out, out[4:4+g.NonceSize()], plain, aadFor(id, aad)), nil
}

func (k *Keyring) open(id string, e *key, sealed, aad []byte) ([]byte, error) {
	if len(sealed) < 4+12+16 {
		return nil, kms.ErrUnseal
	}
	g := e.aead[binary.BigEndian.Uint32(sealed)]
	if g == nil {
		return nil, kms.ErrUnseal
	}
	p, err := g.Open(nil, sealed[4:16], sealed[16:], aadFor(id, aad))
	if err != nil {
		return nil, kms.ErrUnseal
	}
	return p, nil
}

// GenerateDataKey implements kms.KMS.
func (k *Keyring) GenerateDataKey(ctx context.Context, keyID string, aad []byte) (kms.DataKey, error) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	id, e, err := k.resolve(keyID)
	if err != nil {
		return kms.DataKey{}, err
	}
	p := make([]byte, kms.DataKeySize)
	if _, err := rand.Read(p); err != nil {
		return kms.DataKey{}, err
	}
	s, err := k.seal(id, e, p, aad)
	if err != nil {
		return kms.DataKey{}, err
	}
	return kms.DataKey{KeyID: id, Plaintext: p, Sealed: s}, nil
}

// Decrypt implements kms.KMS.
func (k *Keyring) Decrypt(ctx context.Context, keyID string, sealed, aad []byte) ([]byte, error) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	id, e, err := k.resolve(keyID)
	if err != nil {
		return nil, err
	}
	return k.open(id, e, sealed, aad)
}

// Rewrap implements kms.KMS.
func (k *Keyring) Rewrap(ctx context.Context, keyID string, sealed, aad []byte) ([]byte, error) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	id, e, err := k.resolve(keyID)
	if err != nil {
		return nil, err
	}
	p, err := k.open(id, e, sealed, aad)
	if err != nil {
		return nil, err
	}
	defer clear(p)
	return k.seal(id, e, p, aad)
}
