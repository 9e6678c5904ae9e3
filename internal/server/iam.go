package server

import (
	"context"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/iam"
	"github.com/cairn-s3/cairn/internal/iam/iamapi"
	"github.com/cairn-s3/cairn/internal/s3api"
)

// mountIAM serves the IAM query API and the admin account routes.
func (g *Gateway) mountIAM(d *driver.Driver, srv *s3api.Server) error {
	a, err := iamapi.New(iamapi.Options{
		Store:  iam.New(d),
		Driver: d,
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
	srv.HandleAdmin("account", a.AdminAccount)
	srv.HandleAdmin("account/user", a.AdminAccountUser)
	return nil
}
