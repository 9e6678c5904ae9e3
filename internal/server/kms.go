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
	local := cfg.KMSBackend == "" || cfg.KMSBackend == "keyring"
	if local && cfg.Backend == "rados" && cfg.KMSMasterKey == "" {
		// Each gateway's own key file: gateways sharing a cluster could not
		// read each other's encrypted objects (docs/design/encryption.md).
		g.Log.Warn("SSE on a shared RADOS cluster with a local keyring file: every gateway must use the same keys (kms-master-key, kms-keys) or one KMIP server, or they cannot read each other's encrypted objects")
	}
	if local && cfg.SecretsKey == "" {
		// The local keyring's key file sits beside the secrets: sealing
		// them under it is opt-in (secrets-key), SSE needs no choice.
		return nil
	}
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
// their keys, secrets unchanged; POST ?rewrap&bucket=B does the same for
// the data keys of the bucket's SSE objects.
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
		case q.Has("rewrap"):
			// SSE: re-seal the bucket's object data keys under the newest
			// key versions, data untouched.
			if q.Get("bucket") == "" {
				return fmt.Errorf("%w: rewrap needs bucket", driver.ErrInvalidArgument)
			}
			n, err := g.Driver.RewrapKeys(r.Context(), q.Get("bucket"))
			if err != nil {
				return kmsAdminError(err)
			}
			return s3api.WriteJSON(w, http.StatusOK, map[string]any{"bucket": q.Get("bucket"), "rewrapped": n})
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
		return fmt.Errorf("%w: want ?rotate-key, ?create-key, ?rewrap or ?reseal", driver.ErrInvalidArgument)
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
