package service

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/topic"
)

// A failed push names the endpoint without its query: it carries tokens.
func TestHTTPPusherErrorRedacts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens: the POST fails to connect
	tp := &topic.Topic{Name: "t", Settings: topic.Settings{PushEndpoint: "http://" + addr + "/hook?token=s3cr3t"}}
	err = NewHTTPPusher().Push(context.Background(), tp, event.New(event.Params{}))
	if err == nil {
		t.Fatal("push to a closed port succeeded")
	}
	if strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "token=xxxxx") {
		t.Fatalf("error: %v", err)
	}
}
