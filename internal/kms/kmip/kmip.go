// Package kmip is the kms.KMS backend over a KMIP server (KMIP 1.4 over
// mutual TLS), for operators who keep master keys in an external KMS.
//
// Master keys never leave the server: a data key is sealed by the server's
// Encrypt (AES-256-GCM, cairn's nonce, aad bound to the key id) and opened
// by its Decrypt. A key id names KMIP objects: version 1 is the symmetric
// key whose Name is the id, version n ≥ 2 the one named "id#n"
// (RotateKey creates it; an operator may too). The UIDs are located once
// and cached (LocateTTL), so steady state costs one round trip per
// GenerateDataKey or Decrypt. The sealed form records the UID of the
// version that sealed it (docs/format/kms.md), so rotated keys still open.
package kmip

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	kmipgo "github.com/ovh/kmip-go"
	"github.com/ovh/kmip-go/kmipclient"
	"github.com/ovh/kmip-go/payloads"

	"github.com/cairn-s3/cairn/internal/kms"
)

// Config of a KMIP backend. Endpoint, CAFile, CertFile and KeyFile are
// required (RGW: rgw_crypt_kmip_addr, _ca_path, _client_cert,
// _client_key).
type Config struct {
	Endpoint string // host:port of the KMIP server (5696 by convention)
	CAFile   string // PEM CA that signed the server's certificate
	CertFile string // PEM client certificate (mutual TLS)
	KeyFile  string // PEM key of CertFile
	// ServerName overrides the name checked in the server's certificate
	// (default: the endpoint's host).
	ServerName string
	// DefaultKeyID is the key SSE-S3 uses ("" = none).
	DefaultKeyID string
	// Timeout bounds each call, connecting included (default 5 s): an
	// unreachable KMS answers kms.ErrUnavailable after at most this long.
	Timeout time.Duration
	// Conns is the number of TLS connections kept open (default 4); a
	// KMIP connection serves one request at a time.
	Conns int
	// LocateTTL is how long the UIDs of a key id are trusted before they
	// are located again, i.e. how soon a rotation made elsewhere is used
	// for new data keys (default 60 s).
	LocateTTL time.Duration
}

// Validate reports every problem.
func (c *Config) Validate() error {
	var errs []error
	if c.Endpoint == "" {
		errs = append(errs, errors.New("kmip-endpoint is required"))
	}
	if c.CAFile == "" || c.CertFile == "" || c.KeyFile == "" {
		errs = append(errs, errors.New("kmip-ca, kmip-cert and kmip-key are required (KMIP runs over mutual TLS)"))
	}
	if strings.Contains(c.DefaultKeyID, "#") {
		errs = append(errs, fmt.Errorf("key id %q: '#' is reserved for key versions", c.DefaultKeyID))
	}
	return errors.Join(errs...)
}

// KMS is the KMIP backend. Safe for concurrent use.
type KMS struct {
	cfg   Config
	tls   *tls.Config
	slots chan *kmipclient.Client // nil slot = not connected yet
	now   func() time.Time

	mu   sync.Mutex
	keys map[string]*keyVersions

	calls atomic.Uint64
}

type keyVersions struct {
	uids    []string // uids[n-1] is version n
	expires time.Time
}

var _ kms.KMS = (*KMS)(nil)
var _ kms.Rotator = (*KMS)(nil)

// New reads the TLS files; it does not connect (the first call does, so a
// gateway starts while its KMS is down and serves what needs no key).
func New(cfg Config) (*KMS, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Conns <= 0 {
		cfg.Conns = 4
	}
	if cfg.LocateTTL <= 0 {
		cfg.LocateTTL = 60 * time.Second
	}
	ca, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("kmip-ca: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("kmip-cert/kmip-key: %w", err)
	}
	pool := x509Pool(ca)
	if pool == nil {
		return nil, fmt.Errorf("kmip-ca %s: no PEM certificate", cfg.CAFile)
	}
	k := &KMS{
		cfg:   cfg,
		tls:   &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: cfg.ServerName},
		slots: make(chan *kmipclient.Client, cfg.Conns),
		now:   time.Now,
		keys:  map[string]*keyVersions{},
	}
	for i := 0; i < cfg.Conns; i++ {
		k.slots <- nil
	}
	return k, nil
}

// Close closes the connections.
func (k *KMS) Close() error {
	for i := 0; i < cap(k.slots); i++ {
		if c := <-k.slots; c != nil {
			closeClient(c)
		}
	}
	return nil
}

// Calls is the number of KMIP requests sent so far.
func (k *KMS) Calls() uint64 { return k.calls.Load() }

// DefaultKeyID implements kms.KMS.
func (k *KMS) DefaultKeyID() string { return k.cfg.DefaultKeyID }

// serverError is a KMIP operation that the server refused.
type serverError struct {
	op     kmipgo.Operation
	reason kmipgo.ResultReason
	msg    string
}

func (e *serverError) Error() string {
	return fmt.Sprintf("kmip: %s refused: %s", opName(e.op), e.msg)
}

func opName(op kmipgo.Operation) string {
	if b, err := op.MarshalText(); err == nil {
		return string(b)
	}
	return strconv.Itoa(int(op))
}

// call sends one request within the configured timeout. Transport
// failures (dial, TLS, timeout, broken connection) are kms.ErrUnavailable;
// a refusal by the server is a *serverError.
func (k *KMS) call(ctx context.Context, build func(*kmipclient.Client) kmipgo.OperationPayload) (kmipgo.OperationPayload, error) {
	cctx, cancel := context.WithTimeout(ctx, k.cfg.Timeout)
	defer cancel()
	var cl *kmipclient.Client
	select {
	case cl = <-k.slots:
	case <-cctx.Done():
		return nil, k.unavailable(ctx, cctx.Err())
	}
	if cl == nil {
		var err error
		cl, err = kmipclient.DialContext(cctx, k.cfg.Endpoint,
			kmipclient.WithTlsConfig(k.tls.Clone()), kmipclient.EnforceVersion(kmipgo.V1_4))
		if err != nil {
			k.slots <- nil
			return nil, k.unavailable(ctx, err)
		}
	}
	k.calls.Add(1)
	res, err := cl.Batch(cctx, build(cl))
	if err != nil {
		closeClient(cl)
		k.slots <- nil
		return nil, k.unavailable(ctx, err)
	}
	k.slots <- cl
	bi := res[0]
	if bi.ResultStatus != kmipgo.ResultStatusSuccess {
		return nil, &serverError{op: bi.Operation, reason: bi.ResultReason, msg: bi.ResultMessage}
	}
	return bi.ResponsePayload, nil
}

// closeClient closes a client whose connection may already be gone:
// kmipclient's Close dereferences a connection that a failed reconnect
// left nil.
func closeClient(c *kmipclient.Client) {
	defer func() { _ = recover() }()
	_ = c.Close()
}

// unavailable wraps a transport error; the caller's own cancellation is
// returned as such.
func (k *KMS) unavailable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w: kmip %s: %v", kms.ErrUnavailable, k.cfg.Endpoint, err)
}

func versionName(id string, n int) string {
	if n == 1 {
		return id
	}
	return id + "#" + strconv.Itoa(n)
}

// locate returns the UIDs of objects named name.
func (k *KMS) locate(ctx context.Context, name string) ([]string, error) {
	resp, err := k.call(ctx, func(c *kmipclient.Client) kmipgo.OperationPayload {
		return c.Locate().WithName(name).WithObjectType(kmipgo.ObjectTypeSymmetricKey).RequestPayload()
	})
	if err != nil {
		return nil, err
	}
	return resp.(*payloads.LocateResponsePayload).UniqueIdentifier, nil
}

// versions returns the UIDs of every version of id (oldest first),
// locating what the cache lacks; refresh forces a look for new versions.
func (k *KMS) versions(ctx context.Context, id string, refresh bool) ([]string, error) {
	if id == "" || strings.Contains(id, "#") {
		return nil, fmt.Errorf("%w: %q", kms.ErrKeyNotFound, id)
	}
	now := k.now()
	k.mu.Lock()
	kv := k.keys[id]
	var known []string
	if kv != nil {
		known = kv.uids
		if !refresh && now.Before(kv.expires) {
			k.mu.Unlock()
			return known, nil
		}
	}
	k.mu.Unlock()
	uids := append([]string(nil), known...)
	for n := len(uids) + 1; ; n++ {
		found, err := k.locate(ctx, versionName(id, n))
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			break
		}
		// Several objects with one name: the server lists the newest
		// first (KMIP Locate orders by Initial Date).
		uids = append(uids, found[0])
	}
	if len(uids) == 0 {
		return nil, fmt.Errorf("%w: no KMIP symmetric key named %q", kms.ErrKeyNotFound, id)
	}
	k.mu.Lock()
	k.keys[id] = &keyVersions{uids: uids, expires: now.Add(k.cfg.LocateTTL)}
	k.mu.Unlock()
	return uids, nil
}

func (k *KMS) forget(id string) {
	k.mu.Lock()
	delete(k.keys, id)
	k.mu.Unlock()
}

// Sealed form, version 1 (docs/format/kms.md):
//
//	0x01 ‖ u8 len(uid) ‖ uid ‖ 12 B nonce ‖ 16 B GCM tag ‖ 32 B ciphertext
const (
	sealedV1  = 0x01
	nonceSize = 12
	tagSize   = 16
)

// serverAAD binds the sealed key to its key id, its header (so a changed
// UID cannot open) and the caller's context.
func serverAAD(id string, header, aad []byte) []byte {
	b := make([]byte, 0, 16+len(id)+len(header)+len(aad))
	b = append(b, "cairn-kms-kmip\x00"...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(id)))
	b = append(b, id...)
	b = append(b, header...)
	return append(b, aad...)
}

func gcmParams() kmipgo.CryptographicParameters {
	return kmipgo.CryptographicParameters{
		CryptographicAlgorithm: kmipgo.CryptographicAlgorithmAES,
		BlockCipherMode:        kmipgo.BlockCipherModeGCM,
		TagLength:              tagSize,
	}
}

// seal encrypts plain under the newest version of id.
func (k *KMS) seal(ctx context.Context, id string, plain, aad []byte) ([]byte, error) {
	uids, err := k.versions(ctx, id, false)
	if err != nil {
		return nil, err
	}
	uid := uids[len(uids)-1]
	if len(uid) > 255 {
		return nil, fmt.Errorf("kmip: UID of %q longer than 255 bytes", id)
	}
	header := append([]byte{sealedV1, byte(len(uid))}, uid...)
	nonce := make([]byte, nonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	resp, err := k.call(ctx, func(c *kmipclient.Client) kmipgo.OperationPayload {
		return c.Encrypt(uid).WithCryptographicParameters(gcmParams()).WithIvCounterNonce(nonce).
			WithAAD(serverAAD(id, header, aad)).Data(plain).RequestPayload()
	})
	var se *serverError
	if errors.As(err, &se) && se.reason == kmipgo.ResultReasonItemNotFound {
		// The cached UID was destroyed on the server.
		k.forget(id)
		return nil, fmt.Errorf("%w: %v", kms.ErrKeyNotFound, err)
	}
	if err != nil {
		return nil, err
	}
	r := resp.(*payloads.EncryptResponsePayload)
	if len(r.AuthenticatedEncryptionTag) != tagSize || len(r.Data) != len(plain) {
		return nil, fmt.Errorf("kmip: Encrypt answered %d bytes and a %d-byte tag", len(r.Data), len(r.AuthenticatedEncryptionTag))
	}
	out := append(header, nonce...)
	out = append(out, r.AuthenticatedEncryptionTag...)
	return append(out, r.Data...), nil
}

// GenerateDataKey implements kms.KMS: the data key is made here (crypto/
// rand) and sealed by the server.
func (k *KMS) GenerateDataKey(ctx context.Context, id string, aad []byte) (kms.DataKey, error) {
	if id == "" {
		id = k.cfg.DefaultKeyID
	}
	plain := make([]byte, kms.DataKeySize)
	if _, err := rand.Read(plain); err != nil {
		return kms.DataKey{}, err
	}
	sealed, err := k.seal(ctx, id, plain, aad)
	if err != nil {
		clear(plain)
		return kms.DataKey{}, err
	}
	return kms.DataKey{KeyID: id, Plaintext: plain, Sealed: sealed}, nil
}

// Decrypt implements kms.KMS.
func (k *KMS) Decrypt(ctx context.Context, id string, sealed, aad []byte) ([]byte, error) {
	if _, err := k.versions(ctx, id, false); err != nil {
		return nil, err
	}
	if len(sealed) < 2 || sealed[0] != sealedV1 {
		return nil, kms.ErrUnseal
	}
	ul := int(sealed[1])
	if ul == 0 || len(sealed) != 2+ul+nonceSize+tagSize+kms.DataKeySize {
		return nil, kms.ErrUnseal
	}
	header, rest := sealed[:2+ul], sealed[2+ul:]
	uid := string(header[2:])
	nonce, tag, ct := rest[:nonceSize], rest[nonceSize:nonceSize+tagSize], rest[nonceSize+tagSize:]
	resp, err := k.call(ctx, func(c *kmipclient.Client) kmipgo.OperationPayload {
		return c.Decrypt(uid).WithCryptographicParameters(gcmParams()).WithIvCounterNonce(nonce).
			WithAAD(serverAAD(id, header, aad)).WithAuthTag(tag).Data(ct).RequestPayload()
	})
	var se *serverError
	if errors.As(err, &se) {
		// A refusal about this sealed key (unknown or foreign UID, a tag
		// that does not verify): it will not open. The server's message
		// is not passed on; it may echo request fields.
		return nil, kms.ErrUnseal
	}
	if err != nil {
		return nil, err
	}
	plain := resp.(*payloads.DecryptResponsePayload).Data
	if len(plain) != kms.DataKeySize {
		return nil, kms.ErrUnseal
	}
	return plain, nil
}

// Rewrap implements kms.KMS. KMIP has no re-encrypt operation: the data
// key passes through this process's memory, and is cleared at once.
func (k *KMS) Rewrap(ctx context.Context, id string, sealed, aad []byte) ([]byte, error) {
	plain, err := k.Decrypt(ctx, id, sealed, aad)
	if err != nil {
		return nil, err
	}
	defer clear(plain)
	if _, err := k.versions(ctx, id, true); err != nil {
		return nil, err
	}
	return k.seal(ctx, id, plain, aad)
}

// create makes an active AES-256 key named name, usable for Encrypt and
// Decrypt only.
func (k *KMS) create(ctx context.Context, name string) (string, error) {
	resp, err := k.call(ctx, func(c *kmipclient.Client) kmipgo.OperationPayload {
		return c.Create().AES(256, kmipgo.CryptographicUsageEncrypt|kmipgo.CryptographicUsageDecrypt).WithName(name).RequestPayload()
	})
	if err != nil {
		return "", err
	}
	uid := resp.(*payloads.CreateResponsePayload).UniqueIdentifier
	if _, err := k.call(ctx, func(*kmipclient.Client) kmipgo.OperationPayload {
		return &payloads.ActivateRequestPayload{UniqueIdentifier: uid}
	}); err != nil {
		return "", err
	}
	return uid, nil
}

// CreateKey creates version 1 of key id on the server (`cairn admin kms
// create-key`; operators may equally create it with their KMS's tools).
func (k *KMS) CreateKey(ctx context.Context, id string) error {
	if id == "" || strings.Contains(id, "#") {
		return fmt.Errorf("kmip: bad key id %q", id)
	}
	uids, err := k.locate(ctx, id)
	if err != nil {
		return err
	}
	if len(uids) > 0 {
		return fmt.Errorf("kmip: a key named %q exists", id)
	}
	_, err = k.create(ctx, id)
	k.forget(id)
	return err
}

// RotateKey implements kms.Rotator: it creates version n+1 of id.
func (k *KMS) RotateKey(ctx context.Context, id string) error {
	uids, err := k.versions(ctx, id, true)
	if err != nil {
		return err
	}
	uid, err := k.create(ctx, versionName(id, len(uids)+1))
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.keys[id] = &keyVersions{uids: append(append([]string(nil), uids...), uid), expires: k.now().Add(k.cfg.LocateTTL)}
	k.mu.Unlock()
	return nil
}
