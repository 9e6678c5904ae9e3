// Package backend opens the key-management backend the configuration
// names (kms-backend), wrapped in kms.Cached: the one place the server
// wiring calls.
package backend

import (
	"fmt"
	"path/filepath"

	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/kms"
	"github.com/cairn-s3/cairn/internal/kms/keyring"
	"github.com/cairn-s3/cairn/internal/kms/kmip"
)

// KeyringFile is the local keyring's key file under cfg.
func KeyringFile(cfg *config.Config) string {
	if cfg.KMSKeyring != "" {
		return cfg.KMSKeyring
	}
	return filepath.Join(cfg.DataDir, "kms.keyring")
}

// Open returns the configured KMS and a function that releases it. For
// kms-backend keyring (the default) it is the local keyring: key file
// kms-keyring (default <data-dir>/kms.keyring, created 0600), kms-keys,
// kms-master-key.
func Open(cfg *config.Config) (*kms.Cached, func(), error) {
	switch cfg.KMSBackend {
	case "kmip":
		k, err := kmip.New(kmip.Config{
			Endpoint: cfg.KMIPEndpoint, CAFile: cfg.KMIPCA, CertFile: cfg.KMIPCert, KeyFile: cfg.KMIPKey,
			DefaultKeyID: cfg.KMIPDefaultKey, Timeout: cfg.KMIPTimeout,
		})
		if err != nil {
			return nil, nil, err
		}
		return kms.NewCached(k, kms.CacheOptions{}), func() { _ = k.Close() }, nil
	case "keyring", "":
		k, err := keyring.Open(keyring.Options{
			File: KeyringFile(cfg), Keys: cfg.KMSKeys, MasterKey: cfg.KMSMasterKey, Default: cfg.KMSDefaultKey,
		})
		if err != nil {
			return nil, nil, err
		}
		return kms.NewCached(k, kms.CacheOptions{}), func() {}, nil
	default:
		return nil, nil, fmt.Errorf("kms-backend %q: want keyring or kmip", cfg.KMSBackend)
	}
}
