package server

import (
	"context"
	"errors"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/iam"
	"github.com/cairn-s3/cairn/internal/iam/iamapi"
	"github.com/cairn-s3/cairn/internal/s3api"
	"github.com/cairn-s3/cairn/internal/s3err"
	"github.com/cairn-s3/cairn/internal/sts"
)

// mountIAM serves the IAM query API and the admin account routes.
func (g *Gateway) mountIAM(d *driver.Driver, srv *s3api.Server) error {
	a, err := iamapi.New(iamapi.Options{
		Store:  g.iam,
		Driver: d,
		STS:    g.sts,
		Caller: func(ctx context.Context) (driver.User, bool) {
			id, ok := s3api.IdentityFrom(ctx)
			return id.User, ok
		},
		RequestID: func(ctx context.Context) string { return driver.RequestFrom(ctx).RequestID },
		Logger:    g.Log.With("component", "iam"),
	})
	if err != nil {
		return err
	}
	srv.SetIAMHandler(a)
	srv.SetSTSHandler(a.STS())
	srv.HandleAdmin("account", a.AdminAccount)
	srv.HandleAdmin("account/user", a.AdminAccountUser)
	return nil
}

// openSTS opens the IAM store and the STS service (its keyring in the
// metadata pool, sealed by the secrets key when one is set) and returns
// the verifier of temporary credentials for SigV4.
func (g *Gateway) openSTS(ctx context.Context) (s3api.SessionVerifier, error) {
	g.iam = iam.New(g.Driver)
	svc, err := sts.New(ctx, sts.Options{Driver: g.Driver, Store: g.iam, Secrets: g.secrets,
		Logger: g.Log.With("component", "sts")})
	if err != nil {
		return nil, err
	}
	g.sts = svc
	return func(ctx context.Context, ak, token string) (driver.User, string, error) {
		u, secret, err := svc.Verify(ctx, ak, token)
		switch {
		case errors.Is(err, sts.ErrExpiredToken):
			return driver.User{}, "", s3err.New(s3err.ErrExpiredToken, "")
		case errors.Is(err, sts.ErrInvalidToken):
			return driver.User{}, "", s3err.New(s3err.ErrInvalidToken, "")
		}
		return u, secret, err
	}, nil
}
