package server

import (
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/s3api"

	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/kms"
	"github.com/cairn-s3/cairn/internal/kms/keyring"
)

// KeyringFile is the local keyring's key file under cfg.
func KeyringFile(cfg *config.Config) string {
	if cfg.KMSKeyring != "" {
		return cfg.KMSKeyring
	}
	return filepath.Join(cfg.DataDir, "kms.keyring")
}

// openKMS is the one place that picks the key-management backend of
// server-side encryption: the local keyring (the only backend so far).
func openKMS(cfg *config.Config) (kms.KMS, error) {
	return keyring.Open(keyring.Options{
		File:      KeyringFile(cfg),
		Keys:      cfg.KMSKeys,
		MasterKey: cfg.KMSMasterKey,
		Default:   cfg.KMSDefaultKey,
	})
}

// rotator is a KMS whose keys the gateway itself holds (the keyring).
type rotator interface {
	Rotate(id string) (uint32, error)
	KeyVersions() map[string]uint32
}

// adminKMS serves /admin/kms: GET lists key ids and their newest versions
// (never key material); POST ?rotate[&key=ID] adds a key version; POST
// ?rewrap&bucket=B re-seals the bucket's data keys under the newest
// versions.
func adminKMS(km kms.KMS, d *driver.Driver, w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	rot, _ := km.(rotator)
	switch {
	case r.Method == http.MethodGet:
		if rot == nil {
			return fmt.Errorf("%w: this KMS backend lists no keys", driver.ErrInvalidArgument)
		}
		return s3api.WriteJSON(w, http.StatusOK, map[string]any{"default": km.DefaultKeyID(), "keys": rot.KeyVersions()})
	case r.Method == http.MethodPost && q.Has("rotate"):
		if rot == nil {
			return fmt.Errorf("%w: rotate keys in the KMS itself", driver.ErrInvalidArgument)
		}
		id := q.Get("key")
		if id == "" {
			id = km.DefaultKeyID()
		}
		v, err := rot.Rotate(id)
		if err != nil {
			return fmt.Errorf("%w: %v", driver.ErrInvalidArgument, err)
		}
		return s3api.WriteJSON(w, http.StatusOK, map[string]any{"key": id, "version": v})
	case r.Method == http.MethodPost && q.Has("rewrap"):
		if q.Get("bucket") == "" {
			return fmt.Errorf("%w: rewrap needs bucket", driver.ErrInvalidArgument)
		}
		n, err := d.RewrapKeys(r.Context(), q.Get("bucket"))
		if err != nil {
			return err
		}
		return s3api.WriteJSON(w, http.StatusOK, map[string]any{"bucket": q.Get("bucket"), "rewrapped": n})
	}
	return fmt.Errorf("%w: GET, POST ?rotate or POST ?rewrap", driver.ErrInvalidArgument)
}
