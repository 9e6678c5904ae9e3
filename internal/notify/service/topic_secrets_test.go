package service

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairn-s3/cairn/internal/kms/kmstest"
	"github.com/cairn-s3/cairn/internal/kms/secret"
	"github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/objstore"
)

func TestTopicCredentialsSealedAtRest(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, "/db", vfs.NewMem())
	mem := kmstest.NewMemory("secrets")
	open := func(s *secret.Sealer) *Service {
		svc, err := New(ctx, Options{Store: st, Secrets: s})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svc.Close(context.Background()) })
		return svc
	}
	create := func(svc *Service, name string, attrs map[string]string) {
		s, _, err := topic.Parse(attrs, topic.Options{RequestTLS: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.CreateTopic(ctx, CreateTopicInput{Name: name, Owner: "alice", Settings: s}); err != nil {
			t.Fatal(err)
		}
	}
	raw := func(svc *Service, name string) []byte {
		op := objstore.NewReadOp()
		r := op.Read(0, 0)
		if err := svc.topics.OperateRead(ctx, queue.Name("", name), op); err != nil {
			t.Fatal(err)
		}
		return r.Data
	}
	const pw1, pw2 = "URLPASSWORD-5f2c", "SASLPASSWORD-9d1e"

	plain := open(nil)
	create(plain, "old", map[string]string{"push-endpoint": "amqp://bob:" + pw1 + "@127.0.0.1:5672/", "amqp-exchange": "x"})
	if !bytes.Contains(raw(plain, "old"), []byte(pw1)) {
		t.Fatal("test premise: without a KMS the password is stored in clear")
	}

	svc := open(secret.New(mem, ""))
	create(svc, "new", map[string]string{"push-endpoint": "kafka://127.0.0.1:9092", "user-name": "carol", "password": pw2, "use-ssl": "true", "mechanism": "PLAIN"})
	if n, err := svc.SealTopicSecrets(ctx, false); err != nil || n != 1 {
		t.Fatalf("SealTopicSecrets: %d %v", n, err)
	}
	for name, pw := range map[string]string{"old": pw1, "new": pw2} {
		if b := raw(svc, name); bytes.Contains(b, []byte(pw)) || !bytes.Contains(b, []byte(`"sealed"`)) {
			t.Fatalf("%s stored as %s", name, b)
		}
	}
	got, err := svc.GetTopic(ctx, "old")
	if err != nil || got.Settings.PushEndpoint != "amqp://bob:"+pw1+"@127.0.0.1:5672/" || got.Sealed != nil {
		t.Fatalf("old: %+v %v", got, err)
	}
	got, err = svc.GetTopic(ctx, "new")
	if err != nil || got.Settings.Password != pw2 {
		t.Fatalf("new: %+v %v", got, err)
	}
	// Re-seal after a rotation: same credentials, new sealed data key.
	before := raw(svc, "new")
	if err := mem.RotateKey(ctx, "secrets"); err != nil {
		t.Fatal(err)
	}
	if n, err := svc.SealTopicSecrets(ctx, true); err != nil || n != 2 {
		t.Fatalf("reseal: %d %v", n, err)
	}
	if bytes.Equal(before, raw(svc, "new")) {
		t.Fatal("reseal left the topic as it was")
	}
	if got, err := svc.GetTopic(ctx, "new"); err != nil || got.Settings.Password != pw2 {
		t.Fatalf("after reseal: %v", err)
	}
	if _, err := plain.GetTopic(ctx, "new"); !errors.Is(err, secret.ErrNoKMS) {
		t.Fatalf("no KMS: %v, want ErrNoKMS", err)
	}
}
