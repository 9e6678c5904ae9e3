package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/kms"
	"github.com/cairn-s3/cairn/internal/kms/backend"
	"github.com/cairn-s3/cairn/internal/kms/secret"
	"github.com/cairn-s3/cairn/internal/notify/service"
	"github.com/cairn-s3/cairn/internal/s3api"
)

// openKMS opens the configured KMS (nil for none) and the Sealer of
// secrets at rest (nil when no KMS key is named).
func (g *Gateway) openKMS(cfg *config.Config) error {
	k, release, err := backend.Open(cfg)
	if err != nil {
		return fmt.Errorf("kms: %w", err)
	}
	g.closers = append(g.closers, release)
	if k == nil {
		return nil
	}
	g.KMS = k
	g.secrets = secret.New(k, cfg.SecretsKey)
	if !g.secrets.Enabled() {
		g.Log.Warn("a KMS is configured but names no key for secrets (secrets-key, kmip-default-key): user secret keys and topic credentials stay in clear")
	}
	return nil
}

// sealSecretsAtStart seals user secret keys and topic credentials that
// were stored in clear before a KMS was configured. A KMS that is down
// only delays it to the next start: clear records still read.
func (g *Gateway) sealSecretsAtStart(ctx context.Context, d *driver.Driver, svc *service.Service) {
	if !g.secrets.Enabled() {
		return
	}
	users, err := d.SealUserSecrets(ctx, false)
	if err != nil {
		g.Log.Warn("sealing user secret keys stored in clear", "err", err)
	}
	topics := 0
	if svc != nil {
		if topics, err = svc.SealTopicSecrets(ctx, false); err != nil {
			g.Log.Warn("sealing topic credentials stored in clear", "err", err)
		}
	}
	if users+topics > 0 {
		g.Log.Info("sealed secrets stored in clear", "users", users, "topics", topics)
	}
}

// adminKMS serves /admin/kms: POST ?rotate-key&key-id=K adds a version to
// master key K (new data keys use it); POST ?create-key&key-id=K creates K
// where the backend lets cairn (KMIP); POST ?reseal re-seals the sealed
// user secret keys and topic credentials under the newest versions of
// their keys, secrets unchanged.
func (g *Gateway) adminKMS(svc *service.Service) s3api.AdminHandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if r.Method != http.MethodPost {
			return fmt.Errorf("%w: /admin/kms takes POST", driver.ErrInvalidArgument)
		}
		if g.KMS == nil {
			return fmt.Errorf("%w: no KMS is configured (kms-backend)", driver.ErrInvalidArgument)
		}
		q := r.URL.Query()
		id := q.Get("key-id")
		switch {
		case q.Has("rotate-key") || q.Has("create-key"):
			if id == "" {
				return fmt.Errorf("%w: key-id is required", driver.ErrInvalidArgument)
			}
			var err error
			if q.Has("create-key") {
				c, ok := g.KMS.Inner().(interface {
					CreateKey(context.Context, string) error
				})
				if !ok {
					return fmt.Errorf("%w: this KMS backend's keys are created by its operator", driver.ErrInvalidArgument)
				}
				err = c.CreateKey(r.Context(), id)
			} else {
				err = g.KMS.RotateKey(r.Context(), id)
			}
			if err != nil {
				return kmsAdminError(err)
			}
			return s3api.WriteJSON(w, http.StatusOK, map[string]any{"key_id": id})
		case q.Has("reseal"):
			if !g.secrets.Enabled() {
				return fmt.Errorf("%w: no KMS key seals secrets (secrets-key)", driver.ErrInvalidArgument)
			}
			users, err := g.Driver.SealUserSecrets(r.Context(), true)
			if err != nil {
				return kmsAdminError(err)
			}
			topics := 0
			if svc != nil {
				if topics, err = svc.SealTopicSecrets(r.Context(), true); err != nil {
					return kmsAdminError(err)
				}
			}
			return s3api.WriteJSON(w, http.StatusOK, map[string]any{"users": users, "topics": topics})
		}
		return fmt.Errorf("%w: want ?rotate-key, ?create-key or ?reseal", driver.ErrInvalidArgument)
	}
}

// kmsAdminError keeps the KMS's own message (never key material) and
// makes an unknown key a client error.
func kmsAdminError(err error) error {
	if errors.Is(err, kms.ErrKeyNotFound) {
		return fmt.Errorf("%w: %v", driver.ErrInvalidArgument, err)
	}
	return err
}
