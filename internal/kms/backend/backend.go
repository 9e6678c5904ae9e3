// Package backend opens the key-management backend the configuration
// names (kms-backend), wrapped in kms.Cached: the one place the server
// wiring calls.
package backend

import (
	"fmt"

	"github.com/cairn-s3/cairn/internal/config"
	"github.com/cairn-s3/cairn/internal/kms"
	"github.com/cairn-s3/cairn/internal/kms/kmip"
)

// Open returns the configured KMS and a function that releases it. For
// kms-backend keyring it returns nil: the local keyring (kms/keyring,
// built with SSE) is hooked in here when it lands.
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
		return nil, func() {}, nil
	default:
		return nil, nil, fmt.Errorf("kms-backend %q: want keyring or kmip", cfg.KMSBackend)
	}
}
