package amqp

import (
	"strings"
	"testing"
)

// A URL the client library cannot parse is reported without the URL: it
// carries the password.
func TestNewErrorRedacts(t *testing.T) {
	_, err := New(Options{URL: "amqp://user:s3cr3t@127.0.0.1:notaport/", Exchange: "x"})
	if err == nil {
		t.Fatal("accepted")
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("error shows the password: %v", err)
	}
}
