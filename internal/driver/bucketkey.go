package driver

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/cairn-s3/cairn/internal/crypt"
)

// Bucket keys (AWS's S3 Bucket Keys): with BucketKey set, an object's OEK
// is sealed locally under a bucket-level data key instead of by a KMS call
// of its own. The bucket key is a KMS data key, reused for BucketKeyTTL by
// every new object of the bucket with the same mode, KMS key and context;
// each record carries the bucket key's KMS-sealed form, so any gateway
// opens it with one KMS call and then from cache. Steady state: no KMS call
// per PUT or GET.

// BucketKeyTTL is how long a gateway seals new objects under one bucket key.
const BucketKeyTTL = 10 * time.Minute

// maxOpenBucketKeys bounds the cache of opened bucket keys.
const maxOpenBucketKeys = 4096

type bucketKey struct {
	plain   []byte
	sealed  []byte
	keyID   string
	expires time.Time
}

type bucketKeys struct {
	mu   sync.Mutex
	gen  map[string]*bucketKey // (bucket id, mode, key, context) -> key for new objects
	open map[[32]byte][]byte   // sha256(sealed) -> plaintext, for reads
}

func bucketKeyAAD(mode, kmsContext string) []byte {
	return []byte("cairn-sse bucket-key/1\x00" + mode + "\x00" + kmsContext)
}

func localSeal(key, plain, aad []byte) ([]byte, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, g.NonceSize(), g.NonceSize()+len(plain)+g.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return g.Seal(nonce, nonce, plain, aad), nil
}

func localOpen(key, sealed, aad []byte) ([]byte, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		return nil, err
	}
	if len(sealed) < g.NonceSize() {
		return nil, crypt.ErrAuth
	}
	p, err := g.Open(nil, sealed[:g.NonceSize()], sealed[g.NonceSize():], aad)
	if err != nil {
		return nil, crypt.ErrAuth
	}
	return p, nil
}

// genBucketKey returns the bucket key new objects of inst use for
// (mode, keyID, context), making one with the KMS when none is current.
func (d *Driver) genBucketKey(ctx context.Context, inst Instance, mode, keyID, kmsContext string) (*bucketKey, error) {
	id := inst.ID + "\x00" + mode + "\x00" + keyID + "\x00" + kmsContext
	now := d.opts.Now()
	d.bkeys.mu.Lock()
	if k := d.bkeys.gen[id]; k != nil && now.Before(k.expires) {
		d.bkeys.mu.Unlock()
		return k, nil
	}
	d.bkeys.mu.Unlock()
	dk, err := d.opts.KMS.GenerateDataKey(ctx, keyID, bucketKeyAAD(mode, kmsContext))
	if err != nil {
		return nil, err
	}
	k := &bucketKey{plain: dk.Plaintext, sealed: dk.Sealed, keyID: dk.KeyID, expires: now.Add(BucketKeyTTL)}
	d.bkeys.mu.Lock()
	defer d.bkeys.mu.Unlock()
	if d.bkeys.gen == nil {
		d.bkeys.gen = map[string]*bucketKey{}
	}
	d.bkeys.gen[id] = k
	d.rememberBucketKey(k.sealed, k.plain)
	return k, nil
}

// rememberBucketKey caches an opened bucket key; d.bkeys.mu is held.
func (d *Driver) rememberBucketKey(sealed, plain []byte) {
	if d.bkeys.open == nil {
		d.bkeys.open = map[[32]byte][]byte{}
	}
	if len(d.bkeys.open) >= maxOpenBucketKeys {
		for h := range d.bkeys.open { // drop an arbitrary entry
			delete(d.bkeys.open, h)
			break
		}
	}
	d.bkeys.open[sha256.Sum256(sealed)] = plain
}

// openBucketKey returns the plaintext of a record's bucket key, from cache
// or with one KMS call.
func (d *Driver) openBucketKey(ctx context.Context, rec *SSERecord) ([]byte, error) {
	h := sha256.Sum256(rec.BucketKeySealed)
	d.bkeys.mu.Lock()
	p := d.bkeys.open[h]
	d.bkeys.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := d.opts.KMS.Decrypt(ctx, rec.KeyID, rec.BucketKeySealed, bucketKeyAAD(rec.Mode, rec.Context))
	if err != nil {
		return nil, err
	}
	d.bkeys.mu.Lock()
	d.rememberBucketKey(rec.BucketKeySealed, p)
	d.bkeys.mu.Unlock()
	return p, nil
}
