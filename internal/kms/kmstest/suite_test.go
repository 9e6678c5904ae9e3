package kmstest_test

import (
	"testing"

	"github.com/cairn-s3/cairn/internal/kms"
	"github.com/cairn-s3/cairn/internal/kms/kmstest"
)

func TestMemory(t *testing.T) {
	kmstest.Run(t, kmstest.Harness{
		New:   func(t *testing.T) kms.KMS { return kmstest.NewMemory("k1", "k2") },
		KeyID: "k1", OtherKeyID: "k2", MissingKeyID: "nope",
		Rotate: func(t *testing.T, k kms.KMS, id string) {
			if err := k.(kms.Rotator).RotateKey(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		},
		Unavailable: func(t *testing.T) kms.KMS {
			m := kmstest.NewMemory("k1", "k2")
			m.SetUnavailable(true)
			return m
		},
	})
}
