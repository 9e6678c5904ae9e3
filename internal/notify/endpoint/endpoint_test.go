package endpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func settings(t *testing.T, attrs map[string]string) topic.Settings {
	t.Helper()
	s, _, err := topic.Parse(attrs, topic.Options{RequestTLS: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func message(t *testing.T, topicName string) Message {
	t.Helper()
	m, err := NewMessage(topicName, event.New(event.Params{Type: event.ObjectCreatedPut, Time: time.Now(), Bucket: "bk", Key: "k"}))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestHTTPAndCache(t *testing.T) {
	var hits, ce atomic.Int32
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		io.Copy(io.Discard, r.Body)
		hits.Add(1)
		if r.Header.Get("ce-specversion") == "1.0" {
			ce.Add(1)
		}
	}))
	defer srv.Close()
	cache := NewCache()
	defer cache.Close()
	s := settings(t, map[string]string{"push-endpoint": srv.URL, "cloudevents": "true"})
	a, err := New(s, Options{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(s, Options{Cache: cache})
	other, _ := New(settings(t, map[string]string{"push-endpoint": srv.URL}), Options{Cache: cache})
	if cache.Len() != 2 {
		t.Fatalf("cache holds %d connections, want 2", cache.Len())
	}
	for _, ep := range []Endpoint{a, b, other} {
		if err := ep.Push(context.Background(), message(t, "t")); err != nil {
			t.Fatal(err)
		}
	}
	if hits.Load() != 3 || ce.Load() != 2 {
		t.Fatalf("hits %d, cloudevents %d", hits.Load(), ce.Load())
	}
	// Closing one user keeps the shared connection for the other.
	a.Close()
	if err := a.Push(context.Background(), message(t, "t")); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if err := b.Push(context.Background(), message(t, "t")); err != nil {
		t.Fatal(err)
	}
	b.Close()
	other.Close()
	if cache.Len() != 0 {
		t.Fatalf("cache holds %d after all closed", cache.Len())
	}
}

func TestNoEndpoint(t *testing.T) {
	if _, err := New(settings(t, nil), Options{}); !errors.Is(err, ErrNoEndpoint) {
		t.Fatal(err)
	}
}

// brokerSafety bounds waits on real brokers: a net, never the
// synchronisation (at load average 40 a fresh broker's first push waits
// for topic auto-creation and leader election for many seconds).
const brokerSafety = 4 * time.Minute

func TestKafka(t *testing.T) {
	addr := testenv.StartKafka(t)
	ep, err := New(settings(t, map[string]string{"push-endpoint": "kafka://" + addr}), Options{Timeout: brokerSafety})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	// A fresh topic: go test -count=N shares the broker.
	tn := fmt.Sprintf("factory-topic-%d", time.Now().UnixNano())
	m := message(t, tn)
	if err := ep.Push(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(tn), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), brokerSafety)
	defer cancel()
	var got *kgo.Record
	for got == nil && ctx.Err() == nil {
		c.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = r })
	}
	if got == nil || string(got.Value) != string(m.Body) || string(got.Key) != "bk/k" {
		t.Fatalf("%+v", got)
	}
}

func TestAMQP(t *testing.T) {
	url := testenv.StartRabbitMQ(t)
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, _ := conn.Channel()
	if err := ch.ExchangeDeclare("fx", "topic", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	q, _ := ch.QueueDeclare("", false, true, true, false, nil)
	if err := ch.QueueBind(q.Name, "t1", "fx", false, nil); err != nil {
		t.Fatal(err)
	}
	d, _ := ch.Consume(q.Name, "", true, false, false, false, nil)
	// Credentials as attributes replace the URL's (guest/guest here).
	ep, err := New(settings(t, map[string]string{"push-endpoint": "amqp://" + url[len("amqp://guest:guest@"):],
		"amqp-exchange": "fx", "amqp-ack-level": "routable", "user-name": "guest", "password": "guest"}), Options{Timeout: brokerSafety})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	m := message(t, "t1")
	if err := ep.Push(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-d:
		if string(got.Body) != string(m.Body) {
			t.Fatal(string(got.Body))
		}
	case <-time.After(brokerSafety):
		t.Fatal("no delivery")
	}
	if err := ep.Push(context.Background(), message(t, "unbound")); !errors.Is(err, ErrUnroutable) || !IsRetryable(err) {
		t.Fatal(err)
	}
}

func TestAMQPURL(t *testing.T) {
	s := settings(t, map[string]string{"push-endpoint": "amqp://old:x@h:5672/vh", "amqp-exchange": "x"})
	if got := amqpURL(s); got != "amqp://old:x@h:5672/vh" {
		t.Fatal(got)
	}
	s.UserName, s.Password = "u@1", "p:w/"
	if got := amqpURL(s); got != "amqp://u%401:p%3Aw%2F@h:5672/vh" {
		t.Fatal(got)
	}
}
