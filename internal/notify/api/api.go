package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/notify/config"
	"github.com/cairn-s3/cairn/internal/notify/service"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/s3err"
)

// Caller is the authenticated principal of a request.
type Caller struct {
	User  string
	Admin bool
	// SourceIP and Secure (TLS) feed the aws:* condition keys of topic
	// policies.
	SourceIP string
	Secure   bool
	// Principal, when set, is the caller in full (an IAM account's user
	// with its account and identity policies); User and Admin otherwise.
	Principal *authz.Principal
}

// principal and global are the caller as the authorizer sees it.
func (c Caller) principal() authz.Principal {
	if c.Principal != nil {
		return *c.Principal
	}
	return authz.Principal{ID: c.User, Admin: c.Admin}
}

// account is the caller's IAM account ("" outside accounts).
func (c Caller) account() string {
	if c.Principal != nil {
		return c.Principal.Account
	}
	return ""
}

// tenant is the namespace the caller's topics live in: its IAM account
// (account ids never name a tenant, driver.ValidTenant), else its tenant
// ("" for none). RGW scopes an account's topics the same way.
func (c Caller) tenant() string {
	if a := c.account(); a != "" {
		return a
	}
	t, _ := driver.SplitUserID(c.User)
	return t
}

// owner is the id the caller's topics are owned by: its account, so that
// every user and role session of the account shares them (their identity
// policies decide), else the user itself.
func (c Caller) owner() string {
	if a := c.account(); a != "" {
		return a
	}
	return c.User
}

func (c Caller) global() authz.Global {
	return authz.Global{SourceIP: c.SourceIP, Secure: c.Secure, Now: time.Now(), UserID: c.User, Principal: c.Principal}
}

// Options configure the handlers.
type Options struct {
	Service *service.Service
	// Caller returns the request's principal; the server wires it to
	// s3api.IdentityFrom. Required.
	Caller func(ctx context.Context) (Caller, bool)
	// Bucket resolves a bucket name for the admin notification routes
	// (driver.Driver.GetBucket).
	Bucket func(ctx context.Context, name string) (driver.BucketInfo, error)
	// AllowCleartextSecrets accepts and shows topic credentials over
	// plain HTTP (RGW's rgw_allow_notification_secrets_in_cleartext).
	AllowCleartextSecrets bool
	// RequirePublishPolicy refuses a bucket notification naming another
	// user's topic unless its Policy allows sns:Publish to the caller
	// (RGW's rgw_topic_require_publish_policy). Without it any user may
	// attach any topic.
	RequirePublishPolicy bool
	Logger               *slog.Logger
}

// API serves the notification HTTP surface.
type API struct {
	opts Options
	svc  *service.Service
	log  *slog.Logger
}

// New returns the handlers.
func New(opts Options) (*API, error) {
	if opts.Service == nil || opts.Caller == nil {
		return nil, errors.New("api: Options.Service and Options.Caller are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &API{opts: opts, svc: opts.Service, log: opts.Logger}, nil
}

func requestID(ctx context.Context) string { return driver.RequestFrom(ctx).RequestID }

// s3Error maps service errors to S3 errors for the bucket and admin
// handlers. Errors it does not know pass through (the server maps driver
// errors and turns the rest into InternalError).
func s3Error(err error) error {
	var ce *config.Error
	var te *topic.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		if ce.Code == config.CodeMalformedXML {
			return s3err.New(s3err.ErrMalformedXML, "%s", ce.Message)
		}
		return s3err.New(s3err.ErrInvalidArgument, "%s", ce.Message)
	case errors.As(err, &te):
		if te.HTTPStatus == http.StatusNotFound {
			return s3err.New(s3err.ErrTopicNotFound, "%s", te.Message)
		}
		return s3err.New(s3err.ErrInvalidArgument, "%s", te.Message)
	case errors.Is(err, service.ErrTopicNotFound):
		return s3err.New(s3err.ErrTopicNotFound, "%s", err.Error())
	case errors.Is(err, service.ErrNoSuchNotification):
		return s3err.New(s3err.ErrNoSuchConfiguration, "%s", err.Error())
	case errors.Is(err, service.ErrNotOwner):
		return s3err.New(s3err.ErrAccessDenied, "%s", err.Error())
	case errors.Is(err, objstore.ErrInvalid):
		return s3err.New(s3err.ErrInvalidArgument, "%s", err.Error())
	}
	return err
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	out = append(out, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(status)
	_, _ = w.Write(out)
	return nil
}
