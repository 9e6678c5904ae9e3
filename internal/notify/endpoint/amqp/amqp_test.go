package amqp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/push"
	"github.com/cairn-s3/cairn/internal/notify/push/pushtest"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// safety bounds every wait in these tests. It is a net for a broken test,
// never the synchronisation: each wait ends on its condition (a delivery,
// a confirm), however long a loaded machine takes.
const safety = 4 * time.Minute

// fresh names an exchange no earlier run (go test -count=N shares the
// broker) has declared.
func fresh(base string) string { return fmt.Sprintf("%s-%d", base, time.Now().UnixNano()) }

func msg(t *testing.T, topicName, key string) push.Message {
	t.Helper()
	m, err := push.NewMessage(topicName, event.New(event.Params{Type: event.ObjectCreatedPut, Time: time.Now(), Bucket: "bk", Key: key}))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// setup declares a topic exchange and, if bindKey is set, a queue bound to
// it; it returns the deliveries of that queue.
func setup(t *testing.T, url, exchange, bindKey string) <-chan amqp.Delivery {
	t.Helper()
	ch := testenv.AMQPChannel(t, url)
	if err := ch.ExchangeDeclare(exchange, "topic", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if bindKey == "" {
		return nil
	}
	q, err := ch.QueueDeclare(exchange+"-q", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q.Name, bindKey, exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	d, err := ch.Consume(q.Name, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func receive(t *testing.T, d <-chan amqp.Delivery) amqp.Delivery {
	t.Helper()
	select {
	case m := <-d:
		return m
	case <-time.After(safety):
		t.Fatal("no delivery")
		return amqp.Delivery{}
	}
}

func newEP(t *testing.T, o Options) *Endpoint {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = safety
	}
	ep, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep
}

func TestAckLevels(t *testing.T) {
	url := testenv.StartRabbitMQ(t)
	for _, level := range []string{topic.AckNone, topic.AckBroker, topic.AckRoutable} {
		t.Run(level, func(t *testing.T) {
			ex := fresh("ex-" + level)
			d := setup(t, url, ex, "t1")
			ep := newEP(t, Options{URL: url, Exchange: ex, AckLevel: level})
			for i, key := range []string{"a", "b", "c"} {
				m := msg(t, "t1", key)
				if err := ep.Push(context.Background(), m); err != nil {
					t.Fatalf("push %d: %v", i, err)
				}
				got := receive(t, d)
				if string(got.Body) != string(m.Body) || got.RoutingKey != "t1" || got.Exchange != ex || got.ContentType != "application/json" {
					t.Fatalf("delivery %+v", got)
				}
			}
		})
	}
}

// With routable, a message no queue takes is a retryable ErrUnroutable;
// with broker it is acknowledged (and dropped by the broker).
func TestUnroutable(t *testing.T) {
	url := testenv.StartRabbitMQ(t)
	ex := fresh("ex-unroutable")
	setup(t, url, ex, "")
	ep := newEP(t, Options{URL: url, Exchange: ex, AckLevel: topic.AckRoutable})
	for i := 0; i < 3; i++ {
		err := ep.Push(context.Background(), msg(t, "nobody", "k"))
		if !errors.Is(err, push.ErrUnroutable) || !push.IsRetryable(err) {
			t.Fatalf("routable: got %v", err)
		}
	}
	broker := newEP(t, Options{URL: url, Exchange: ex, AckLevel: topic.AckBroker})
	if err := broker.Push(context.Background(), msg(t, "nobody", "k")); err != nil {
		t.Fatalf("broker: %v", err)
	}
	// Routable messages interleaved with unroutable ones are told apart.
	d := setup(t, url, ex, "somebody")
	if err := ep.Push(context.Background(), msg(t, "somebody", "k")); err != nil {
		t.Fatal(err)
	}
	receive(t, d)
	if err := ep.Push(context.Background(), msg(t, "nobody", "k")); !errors.Is(err, push.ErrUnroutable) {
		t.Fatal(err)
	}
}

// A missing exchange closes the channel: retryable, and the endpoint
// recovers once the exchange exists.
func TestMissingExchange(t *testing.T) {
	url := testenv.StartRabbitMQ(t)
	ex := fresh("ex-later")
	ep := newEP(t, Options{URL: url, Exchange: ex})
	err := ep.Push(context.Background(), msg(t, "t1", "k"))
	if err == nil || !push.IsRetryable(err) {
		t.Fatalf("got %v", err)
	}
	d := setup(t, url, ex, "t1")
	var lastErr error
	for i := 0; i < 3; i++ {
		if lastErr = ep.Push(context.Background(), msg(t, "t1", "k")); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatal(lastErr)
	}
	receive(t, d)
}

func TestBrokerDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ep := newEP(t, Options{URL: "amqp://guest:guest@" + addr + "/", Exchange: "x", Timeout: time.Second})
	if err := ep.Push(context.Background(), msg(t, "t", "k")); err == nil || !push.IsRetryable(err) || !strings.Contains(err.Error(), "connect") {
		t.Fatalf("got %v", err)
	}
	ep.Close()
	if err := ep.Push(context.Background(), msg(t, "t", "k")); !errors.Is(err, push.ErrClosed) {
		t.Fatal(err)
	}
}

// The same endpoint reconnects after the broker restarts.
func TestReconnect(t *testing.T) {
	b := testenv.NewRabbitMQ(t)
	setup(t, b.URL, "ex-r", "t1")
	// The endpoint's timeout is only a net: pushes wait for the broker, and
	// the one while it is down fails on its own (connection refused).
	ep := newEP(t, Options{URL: b.URL, Exchange: "ex-r"})
	if err := ep.Push(context.Background(), msg(t, "t1", "k")); err != nil {
		t.Fatal(err)
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := ep.Push(context.Background(), msg(t, "t1", "k")); err == nil || !push.IsRetryable(err) {
		t.Fatalf("broker down: %v", err)
	}
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	// Retry as the delivery manager would, on retryable errors only: the
	// first push may still meet the connection the old broker closed.
	m := msg(t, "t1", "k2")
	for deadline := time.Now().Add(safety); ; {
		err := ep.Push(context.Background(), m)
		if err == nil {
			break
		}
		if !push.IsRetryable(err) || time.Now().After(deadline) {
			t.Fatalf("after restart: %v", err)
		}
		t.Logf("after restart, retrying: %v", err)
	}
	ch := testenv.AMQPChannel(t, b.URL)
	// Durable exchange and queue survived the restart. The first message
	// went to setup's consumer (gone with the old broker); the one pushed
	// after the restart waits in the durable queue (a retried push may
	// have left a copy too: at least once).
	found := false
	for {
		d, ok, err := ch.Get("ex-r-q", true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if string(d.Body) != string(m.Body) {
			t.Fatalf("queued after restart: %s", d.Body)
		}
		found = true
	}
	if !found {
		t.Fatal("the push after the restart is not in the durable queue")
	}
}

// pushBatch: pushtest.Batch on ep.
func pushBatch(t *testing.T, ep *Endpoint, msgs []push.Message, onDone func(i int, err error)) []error {
	t.Helper()
	return pushtest.Batch(t, ep, context.Background(), msgs, onDone)
}

// A batch at every ack level: each message confirmed once and delivered;
// unroutable with routable, each on its own, when no queue is bound.
func TestPushBatch(t *testing.T) {
	url := testenv.StartRabbitMQ(t)
	for _, level := range []string{topic.AckNone, topic.AckBroker, topic.AckRoutable} {
		t.Run(level, func(t *testing.T) {
			ex := fresh("ex-batch-" + level)
			d := setup(t, url, ex, "t1")
			ep := newEP(t, Options{URL: url, Exchange: ex, AckLevel: level})
			var msgs []push.Message
			want := map[string]bool{}
			for i := range 40 {
				m := msg(t, "t1", fmt.Sprintf("k%d", i))
				msgs = append(msgs, m)
				want[string(m.Body)] = true
			}
			for i, err := range pushBatch(t, ep, msgs, nil) {
				if err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
			}
			for range msgs {
				got := receive(t, d)
				if !want[string(got.Body)] || got.RoutingKey != "t1" {
					t.Fatalf("delivery %q (routing key %s): unexpected or twice", got.Body, got.RoutingKey)
				}
				delete(want, string(got.Body))
			}
		})
	}
	t.Run("unroutable", func(t *testing.T) {
		ex := fresh("ex-batch-unroutable")
		setup(t, url, ex, "")
		ep := newEP(t, Options{URL: url, Exchange: ex, AckLevel: topic.AckRoutable})
		msgs := []push.Message{msg(t, "t1", "a"), msg(t, "t1", "b"), msg(t, "t1", "c")}
		for i, err := range pushBatch(t, ep, msgs, nil) {
			if !errors.Is(err, push.ErrUnroutable) || !push.IsRetryable(err) {
				t.Fatalf("message %d: %v, want retryable ErrUnroutable", i, err)
			}
		}
	})
}

// The broker is killed while a batch waits for its confirms (from the
// first message's done): every message gets one outcome, the failed ones
// retryable; after the restart they go again, and then every message
// confirmed before or after the kill is in the durable queue.
func TestPushBatchBrokerGoesAway(t *testing.T) {
	b := testenv.NewRabbitMQ(t)
	// A durable exchange and queue, nobody consuming: the queue keeps
	// what was confirmed.
	func() {
		conn, err := amqp.Dial(b.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if err := ch.ExchangeDeclare("ex-away", "topic", true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := ch.QueueDeclare("ex-away-q", true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		if err := ch.QueueBind("ex-away-q", "t1", "ex-away", false, nil); err != nil {
			t.Fatal(err)
		}
	}()
	ep := newEP(t, Options{URL: b.URL, Exchange: "ex-away"})
	pad := strings.Repeat(" ", 4000)
	var msgs []push.Message
	for i := range 500 {
		m := msg(t, "t1", fmt.Sprintf("k%03d", i))
		m.Body = append(m.Body, pad...)
		msgs = append(msgs, m)
	}
	killed := false
	errs := pushBatch(t, ep, msgs, func(int, error) {
		if !killed {
			killed = true
			if err := syscall.Kill(b.Pid(), syscall.SIGKILL); err != nil {
				t.Error(err)
			}
			if err := b.Stop(); err != nil { // waits until it is gone
				t.Error(err)
			}
		}
	})
	var failed []push.Message
	for i, err := range errs {
		if err != nil {
			if !push.IsRetryable(err) {
				t.Fatalf("message %d: permanent: %v", i, err)
			}
			failed = append(failed, msgs[i])
		}
	}
	t.Logf("%d confirmed before the kill, %d failed", len(msgs)-len(failed), len(failed))
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(safety); len(failed) > 0; {
		var again []push.Message
		for i, err := range pushBatch(t, ep, failed, nil) {
			if err != nil {
				if !push.IsRetryable(err) || time.Now().After(deadline) {
					t.Fatalf("after restart: %v", err)
				}
				again = append(again, failed[i])
			}
		}
		failed = again
	}
	ch := testenv.AMQPChannel(t, b.URL)
	want := map[string]bool{}
	for _, m := range msgs {
		want[string(m.Body)] = true
	}
	for {
		d, ok, err := ch.Get("ex-away-q", true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		delete(want, string(d.Body)) // a copy may be there twice: at least once
	}
	if len(want) != 0 {
		t.Fatalf("%d confirmed messages not in the durable queue", len(want))
	}
}
