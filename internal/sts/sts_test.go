package sts_test

import (
	"context"
	"encoding/base64"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/iam"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cairn-s3/cairn/internal/sts"
)

type clock struct{ t atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.t.Load()) }
func (c *clock) advance(d time.Duration) { c.t.Add(int64(d)) }

// gateways returns two STS services (two gateways) over one object
// store, on one clock, and an account with a role.
func gateways(t testing.TB) (*sts.Service, *sts.Service, *iam.Store, iam.Role, *clock) {
	t.Helper()
	ctx := context.Background()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: "/d", FS: vfs.NewMem(), Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{}
	c.t.Store(time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC).UnixNano())
	var svcs []*sts.Service
	var store *iam.Store
	for range 2 {
		d, err := driver.New(ctx, driver.Options{Store: st, DefaultShards: 3, GCMinWait: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		store = iam.New(d)
		s, err := sts.New(ctx, sts.Options{Driver: d, Store: store, Now: c.now})
		if err != nil {
			t.Fatal(err)
		}
		svcs = append(svcs, s)
	}
	t.Cleanup(func() { st.Close() })
	a, err := store.CreateAccount(ctx, "", "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	r, err := store.CreateRole(ctx, a.ID, iam.RoleSpec{Name: "R", TrustPolicy: `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"` + a.ID + `"},"Action":"sts:AssumeRole"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	return svcs[0], svcs[1], store, r, c
}

func TestMintVerify(t *testing.T) {
	ctx := context.Background()
	g1, g2, store, r, c := gateways(t)
	cr, err := g1.Mint(sts.Claims{Account: r.Account, RoleID: r.ID, RoleName: r.Name, Session: "s",
		Policy: `{"Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}]}`}, 900*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Another gateway verifies it at once: the keyring is shared.
	u, secret, err := g2.Verify(ctx, cr.AccessKeyID, cr.SessionToken)
	if err != nil || secret != cr.SecretAccessKey {
		t.Fatalf("verify on another gateway: %v", err)
	}
	p := u.Principal()
	if !p.IsRoleSession() || p.ARN() != "arn:aws:sts::"+r.Account+":assumed-role/R/s" || p.Session.Policy == nil || p.Admin {
		t.Fatalf("principal %+v", p)
	}

	raw, _ := base64.RawURLEncoding.DecodeString(cr.SessionToken)
	for name, c := range map[string]struct{ ak, tok string }{
		"other key":   {"ASIAAAAAAAAAAAAAAAAA", cr.SessionToken},
		"garbage":     {cr.AccessKeyID, "x"},
		"flipped bit": {cr.AccessKeyID, flip(raw, len(raw)-3)},
		"header bit":  {cr.AccessKeyID, flip(raw, 2)}, // key id: unknown key
		"version":     {cr.AccessKeyID, flip(raw, 0)},
	} {
		if _, _, err := g2.Verify(ctx, c.ak, c.tok); !errors.Is(err, sts.ErrInvalidToken) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Expiry: refused after, also from the cache.
	if _, _, err := g1.Verify(ctx, cr.AccessKeyID, cr.SessionToken); err != nil {
		t.Fatal(err)
	}
	c.advance(899 * time.Second)
	if _, _, err := g1.Verify(ctx, cr.AccessKeyID, cr.SessionToken); err != nil {
		t.Fatalf("a second before expiry: %v", err)
	}
	c.advance(time.Second)
	for i, g := range []*sts.Service{g1, g2} {
		if _, _, err := g.Verify(ctx, cr.AccessKeyID, cr.SessionToken); !errors.Is(err, sts.ErrExpiredToken) {
			t.Errorf("gateway %d after expiry: %v", i+1, err)
		}
	}

	// A deleted role's sessions are refused on every gateway.
	cr, err = g1.Mint(sts.Claims{Account: r.Account, RoleID: r.ID, RoleName: r.Name, Session: "s2"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g2.Verify(ctx, cr.AccessKeyID, cr.SessionToken); err != nil {
		t.Fatal(err)
	}
	if err := store.DeleteRole(ctx, r.Account, r.Name); err != nil {
		t.Fatal(err)
	}
	c.advance(6 * time.Second) // past the other gateway's session cache
	for i, g := range []*sts.Service{g1, g2} {
		if _, _, err := g.Verify(ctx, cr.AccessKeyID, cr.SessionToken); !errors.Is(err, sts.ErrInvalidToken) {
			t.Errorf("gateway %d, deleted role: %v", i+1, err)
		}
	}
}

func flip(raw []byte, i int) string {
	b := append([]byte(nil), raw...)
	b[i] ^= 1
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestParseRoleARN(t *testing.T) {
	for arn, want := range map[string][3]string{
		"arn:aws:iam::RGW12345678901234567:role/R":     {"RGW12345678901234567", "/", "R"},
		"arn:aws:iam::RGW12345678901234567:role/a/b/R": {"RGW12345678901234567", "/a/b/", "R"},
		"arn:aws:iam::RGW12345678901234567:user/R":     {},
		"arn:aws:iam::123:role/R":                      {},
		"arn:aws:iam::RGW12345678901234567:role/a/":    {},
	} {
		a, p, n, ok := sts.ParseRoleARN(arn)
		if ok != (want[0] != "") || (ok && [3]string{a, p, n} != want) {
			t.Errorf("%s: %s %s %s %v", arn, a, p, n, ok)
		}
	}
}

func FuzzVerify(f *testing.F) {
	g1, _, _, _, _ := gateways(f)
	f.Add("ASIAAAAAAAAAAAAAAAAA", "AQAAAAE")
	f.Fuzz(func(t *testing.T, ak, tok string) {
		if _, _, err := g1.Verify(context.Background(), ak, tok); err == nil {
			t.Fatal("a fuzzed token verified")
		}
	})
}
