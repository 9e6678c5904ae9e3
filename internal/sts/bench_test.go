package sts_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/iam"
	"github.com/cairn-s3/cairn/internal/sts"
)

const benchSessionPolicy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}`

func benchRole(b *testing.B) (*sts.Service, iam.Role) {
	g1, _, store, r, _ := gateways(b)
	doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::bk/*"}]}`
	if err := store.PutRolePolicy(context.Background(), r, "p", doc); err != nil {
		b.Fatal(err)
	}
	return g1, r
}

// BenchmarkVerifyCached is the per-request cost of a session already
// verified within 5 s: a map lookup and a constant-time token compare.
func BenchmarkVerifyCached(b *testing.B) {
	g, r := benchRole(b)
	cr, err := g.Mint(sts.Claims{Account: r.Account, RoleID: r.ID, RoleName: r.Name, Session: "s", Policy: benchSessionPolicy}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := g.Verify(ctx, cr.AccessKeyID, cr.SessionToken); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyUncached is a first request of a session on a gateway:
// AES-GCM open, claims JSON, session policy parse, the role's read from
// the (in-memory) store and its policies compiled.
func BenchmarkVerifyUncached(b *testing.B) {
	g, r := benchRole(b)
	const n = 4096
	creds := make([]sts.Credentials, n)
	for i := range creds {
		var err error
		if creds[i], err = g.Mint(sts.Claims{Account: r.Account, RoleID: r.ID, RoleName: r.Name, Session: "s", Policy: benchSessionPolicy}, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == n {
			b.StopTimer()
			for j := range creds { // fresh keys: never a cache hit
				creds[j], _ = g.Mint(sts.Claims{Account: r.Account, RoleID: r.ID, RoleName: r.Name, Session: "s", Policy: benchSessionPolicy}, time.Hour)
			}
			i = 0
			b.StartTimer()
		}
		if _, _, err := g.Verify(ctx, creds[i].AccessKeyID, creds[i].SessionToken); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkOpen is the token's cryptographic check alone.
func BenchmarkOpen(b *testing.B) {
	g, r := benchRole(b)
	cr, err := g.Mint(sts.Claims{Account: r.Account, RoleID: r.ID, RoleName: r.Name, Session: "s", Policy: benchSessionPolicy}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Open(ctx, cr.AccessKeyID, cr.SessionToken); err != nil {
			b.Fatal(err)
		}
	}
}
