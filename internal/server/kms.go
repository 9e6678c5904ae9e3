package server

import (
	"path/filepath"

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
