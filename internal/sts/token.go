package sts

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
)

// tokenVersion is the first byte of a sealed token.
const tokenVersion = 1

// maxToken bounds a token accepted for opening (AWS's are up to a few
// KiB; Cairn's with a 2 KiB session policy stay under 4 KiB).
const maxToken = 8 << 10

// Claims are what a session token carries, sealed.
type Claims struct {
	AccessKey string `json:"ak"`
	Secret    string `json:"sk"`
	// Account is the account of the session's principal (the role's, or
	// the user's for GetSessionToken).
	Account string `json:"acct,omitempty"`
	// UserID: a GetSessionToken session's user; for a role session the
	// user who assumed the role (for the log).
	UserID string `json:"uid,omitempty"`
	// RoleID and RoleName name the assumed role; the role must still have
	// this id when a request is verified.
	RoleID   string `json:"rid,omitempty"`
	RoleName string `json:"rn,omitempty"`
	Session  string `json:"sn,omitempty"`
	Issued   int64  `json:"iat"`
	Expires  int64  `json:"exp"`
	// Policy is the inline session policy as sent, PolicyArns the managed
	// session policies: the session may do what the role's policies and
	// one of these allow.
	Policy     string            `json:"pol,omitempty"`
	PolicyArns []string          `json:"parn,omitempty"`
	Tags       map[string]string `json:"tags,omitempty"`
	// Provider and Subject: an AssumeRoleWithWebIdentity session's OIDC
	// provider ARN and the token's sub.
	Provider string `json:"idp,omitempty"`
	Subject  string `json:"sub,omitempty"`
	// Tenant is a role session's tenant: its account's (an account's
	// tenant never changes), so its buckets and policies are the tenant's.
	Tenant string `json:"tn,omitempty"`
}

var errBadToken = errors.New("sts: malformed or forged session token")

// seal returns the token: base64url(version ‖ kid ‖ nonce ‖ GCM(claims)),
// the first 5 bytes and the access key id as additional data.
func seal(kid uint32, key []byte, c *Claims) (string, error) {
	plain, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	g, err := gcm(key)
	if err != nil {
		return "", err
	}
	buf := make([]byte, 5+g.NonceSize(), 5+g.NonceSize()+len(plain)+g.Overhead())
	buf[0] = tokenVersion
	binary.BigEndian.PutUint32(buf[1:5], kid)
	if _, err := rand.Read(buf[5:]); err != nil {
		return "", err
	}
	out := g.Seal(buf, buf[5:5+g.NonceSize()], plain, aad(buf[:5], c.AccessKey))
	return base64.RawURLEncoding.EncodeToString(out), nil
}

// header parses a token's version and key id.
func header(tok string) ([]byte, uint32, error) {
	if len(tok) > maxToken {
		return nil, 0, errBadToken
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(raw) < 5+12+16 || raw[0] != tokenVersion {
		return nil, 0, errBadToken
	}
	return raw, binary.BigEndian.Uint32(raw[1:5]), nil
}

// open authenticates and decrypts raw (from header) for access key ak.
func open(raw, key []byte, ak string) (*Claims, error) {
	g, err := gcm(key)
	if err != nil {
		return nil, err
	}
	n := g.NonceSize()
	plain, err := g.Open(nil, raw[5:5+n], raw[5+n:], aad(raw[:5], ak))
	if err != nil {
		return nil, errBadToken
	}
	var c Claims
	if err := json.Unmarshal(plain, &c); err != nil || c.AccessKey != ak {
		return nil, errBadToken
	}
	return &c, nil
}

func aad(head []byte, ak string) []byte {
	return append(append([]byte("cairn-sts\x00"), head...), ak...)
}

func gcm(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}
