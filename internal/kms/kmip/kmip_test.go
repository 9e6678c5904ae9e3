package kmip_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/kms"
	"github.com/cairn-s3/cairn/internal/kms/kmip"
	"github.com/cairn-s3/cairn/internal/kms/kmip/pykmip"
	"github.com/cairn-s3/cairn/internal/kms/kmstest"
)

func newKMS(t *testing.T, srv *pykmip.Server, addr string, timeout time.Duration) *kmip.KMS {
	t.Helper()
	k, err := kmip.New(kmip.Config{Endpoint: addr, CAFile: srv.CA, CertFile: srv.Cert, KeyFile: srv.Key, DefaultKeyID: "kmstest-1", Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close() })
	return k
}

// blackhole accepts connections and never answers (a hung KMS).
func blackhole(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	return l.Addr().String()
}

func TestConformancePyKMIP(t *testing.T) {
	srv := pykmip.Start(t)
	admin := newKMS(t, srv, srv.Addr, 0)
	for _, id := range []string{"kmstest-1", "kmstest-2"} {
		if err := admin.CreateKey(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	harness := kmstest.Harness{
		New:   func(t *testing.T) kms.KMS { return newKMS(t, srv, srv.Addr, 0) },
		KeyID: "kmstest-1", OtherKeyID: "kmstest-2", MissingKeyID: "kmstest-missing",
		Rotate: func(t *testing.T, k kms.KMS, id string) {
			if err := k.(kms.Rotator).RotateKey(context.Background(), id); err != nil {
				t.Fatal(err)
			}
		},
		Unavailable: func(t *testing.T) kms.KMS {
			return newKMS(t, srv, blackhole(t), time.Second)
		},
		UnavailableWithin: 3 * time.Second,
	}
	t.Run("Direct", func(t *testing.T) { kmstest.Run(t, harness) })
	cached := harness
	cached.New = func(t *testing.T) kms.KMS { return kms.NewCached(newKMS(t, srv, srv.Addr, 0), kms.CacheOptions{}) }
	cached.Unavailable = func(t *testing.T) kms.KMS {
		return kms.NewCached(newKMS(t, srv, blackhole(t), time.Second), kms.CacheOptions{})
	}
	t.Run("Cached", func(t *testing.T) { kmstest.Run(t, cached) })

	t.Run("ServerStopped", func(t *testing.T) {
		srv2 := pykmip.Start(t)
		k := newKMS(t, srv2, srv2.Addr, 2*time.Second)
		if err := k.CreateKey(context.Background(), "k"); err != nil {
			t.Fatal(err)
		}
		dk, err := k.GenerateDataKey(context.Background(), "k", nil)
		if err != nil {
			t.Fatal(err)
		}
		srv2.Stop()
		// The pooled connection is dead and the port refuses: quick.
		if _, err := k.Decrypt(context.Background(), "k", dk.Sealed, nil); !errors.Is(err, kms.ErrUnavailable) {
			t.Fatalf("Decrypt with the server stopped: %v, want ErrUnavailable", err)
		}
	})
	t.Run("SteadyStateOneCall", func(t *testing.T) {
		k := newKMS(t, srv, srv.Addr, 0)
		if _, err := k.GenerateDataKey(context.Background(), "kmstest-2", nil); err != nil {
			t.Fatal(err)
		}
		before := k.Calls()
		dk, err := k.GenerateDataKey(context.Background(), "kmstest-2", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.Decrypt(context.Background(), "kmstest-2", dk.Sealed, nil); err != nil {
			t.Fatal(err)
		}
		if n := k.Calls() - before; n != 2 {
			t.Fatalf("%d KMIP requests for a GenerateDataKey and a Decrypt, want 2 (UIDs located once)", n)
		}
	})
}
