package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"amqp://bob:hunter2@127.0.0.1:5672/vh", "amqp://bob:REDACTED@127.0.0.1:5672/vh"},
		{`dial "kafka://u:p%40ss@h:9092": refused`, `dial "kafka://u:REDACTED@h:9092": refused`},
		{"http://h/hook?a=1&token=abc123&b=2", "http://h/hook?a=1&token=REDACTED&b=2"},
		{"https://h/x?X-Amz-Signature=deadbeef&X-Amz-Credential=AK/2024", "https://h/x?X-Amz-Signature=REDACTED&X-Amz-Credential=REDACTED"},
		{"Authorization: AWS4-HMAC-SHA256 Credential=AK/x, SignedHeaders=host, Signature=ff", "Authorization: REDACTED"},
		{"password=pw1 user-name=bob", "password=REDACTED user-name=bob"},
		{"/b/k?x-amz-server-side-encryption-customer-key=c2VjcmV0&x-amz-server-side-encryption-customer-key-MD5=bWQ1", "/b/k?x-amz-server-side-encryption-customer-key=REDACTED&x-amz-server-side-encryption-customer-key-MD5=bWQ1"},
		{"http://user@host/path", "http://user@host/path"}, // no password
		{"plain text, key=name", "plain text, key=name"},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Every level, message, attribute, group, error and With attribute goes
// through the filter.
func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	log := Logger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	log = log.With("endpoint", "amqp://a:s3cr3t-1@h")
	log.Debug("push to amqp://a:s3cr3t-2@h failed", "err", fmt.Errorf("wrapped: %w", errors.New("kafka://u:s3cr3t-3@h")),
		slog.Group("topic", "url", "http://h/?token=s3cr3t-4"), "list", []string{"https://x:s3cr3t-5@h"})
	log.WithGroup("g").Error("x", "auth", "Authorization: Basic s3cr3t-6")
	out := buf.String()
	if strings.Contains(out, "s3cr3t") {
		t.Fatalf("secret in log:\n%s", out)
	}
	if strings.Count(out, Mask) != 7 {
		t.Fatalf("want 7 masks (the With attribute is on both lines):\n%s", out)
	}
}
