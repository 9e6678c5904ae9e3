package delivery

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	amqpep "github.com/cairn-s3/cairn/internal/notify/endpoint/amqp"
	kafkaep "github.com/cairn-s3/cairn/internal/notify/endpoint/kafka"
	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/push"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/testenv"
)

func TestMain(m *testing.M) {
	if os.Getenv(benchReceiverEnv) != "" {
		runBenchReceiver() // BenchmarkDeliveryCPU's receiver process
		return
	}
	testenv.Main(m)
}

// brokerSafety bounds the waits on real brokers. It is a net, never the
// synchronisation: at load average 40 a broker takes over a minute to
// start and a produce can take seconds.
const brokerSafety = 5 * time.Minute

// brokerPushTimeout bounds one push. The manager retries failed pushes, so
// this only decides how soon a push to a stopped broker counts as failed;
// it must be long enough for a loaded broker to ack.
const brokerPushTimeout = time.Minute

func kafkaEndpoint(t *topic.Topic) (push.Endpoint, error) {
	u, err := t.Settings.Endpoint()
	if err != nil {
		return nil, err
	}
	return kafkaep.New(kafkaep.Options{Brokers: u.Addrs, AckLevel: t.Settings.KafkaAckLevel, Timeout: brokerPushTimeout})
}

// A real Kafka (KRaft) broker goes down under load and comes back: nothing
// is removed while it is down, everything arrives afterwards, in order per
// key (the message key is bucket/key, so one key stays in one partition).
func TestKafkaDownThenUp(t *testing.T) {
	b := testenv.NewKafka(t)
	e := newEnv(t)
	tp := e.createTopic("kev", "kafka://"+b.Addr, 3, func(s *topic.Settings) { s.KafkaAckLevel = topic.AckBroker })
	m := e.manager("gw1", e.endpoints(kafkaEndpoint), func(c *Config) {
		c.InitialBackoff, c.MaxBackoff = 50*time.Millisecond, 500*time.Millisecond
	})
	want := map[string][]uint64{}
	pub := func(n int) {
		for i := 0; i < n; i++ {
			key := fmt.Sprintf("k%d", i%10)
			want["b/"+key] = append(want["b/"+key], e.publish(tp, "b", key))
		}
	}
	pub(100)
	eventually(t, brokerSafety, "first 100 delivered", func() bool { return m.Stats().PushesOK >= 100 })

	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	pub(100)
	eventually(t, brokerSafety, "pushes failing", func() bool { return m.Stats().PushesFailed >= 3 })
	if n := e.entries(tp); n != 100 {
		t.Fatalf("entries while Kafka is down = %d, want 100", n)
	}
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, brokerSafety, "queue drained after restart", func() bool { return e.entries(tp) == 0 })

	got := consumeKafka(t, b.Addr, "kev", 200)
	seen := map[string]bool{}
	last := map[string]uint64{}
	dups := 0
	for _, r := range got {
		msg, err := event.UnmarshalMessage(r.Value)
		if err != nil || len(msg.Records) != 1 {
			t.Fatalf("bad message %q: %v", r.Value, err)
		}
		rec := msg.Records[0]
		key := rec.S3.Bucket.Name + "/" + rec.ObjectKey()
		if string(r.Key) != key {
			t.Errorf("kafka key %q, want %q", r.Key, key)
		}
		if seen[rec.EventID] {
			dups++
			continue
		}
		seen[rec.EventID] = true
		seq, _ := event.ParseSequencer(rec.S3.Object.Sequencer)
		if seq <= last[key] {
			t.Errorf("key %s: sequencer %d after %d", key, seq, last[key])
		}
		last[key] = seq
	}
	if len(seen) != 200 {
		t.Errorf("distinct events in Kafka = %d, want 200", len(seen))
	}
	t.Logf("kafka: %d records, %d duplicates, %d failed pushes while down", len(got), dups, m.Stats().PushesFailed)
}

// consumeKafka reads topic from the start until at least n records arrived
// and no more come for a moment.
func consumeKafka(t *testing.T, addr, topicName string, n int) []*kgo.Record {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topicName),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []*kgo.Record
	deadline := time.Now().Add(brokerSafety)
	for time.Now().Before(deadline) {
		wait := 5 * time.Second
		if len(out) >= n {
			wait = 500 * time.Millisecond
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		fs := c.PollFetches(ctx)
		cancel()
		before := len(out)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
		if len(out) >= n && len(out) == before {
			return out
		}
	}
	t.Fatalf("consumed %d records of %s, want %d", len(out), topicName, n)
	return nil
}

func amqpEndpoint(t *topic.Topic) (push.Endpoint, error) {
	return amqpep.New(amqpep.Options{URL: t.Settings.PushEndpoint, Exchange: t.Settings.AMQPExchange,
		AckLevel: t.Settings.AMQPAckLevel, Timeout: brokerPushTimeout})
}

// RabbitMQ with amqp-ack-level=routable: while no queue is bound, every
// publish comes back unroutable (retryable) and nothing leaves the shard;
// once a queue is bound everything arrives, in order per key.
func TestRabbitMQUnroutableThenRoutable(t *testing.T) {
	url := testenv.StartRabbitMQ(t)
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	const exchange = "cairn-delivery-test"
	if err := ch.ExchangeDeclare(exchange, "topic", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	tp := e.createTopic("rmq", url, 2, func(s *topic.Settings) {
		s.AMQPExchange, s.AMQPAckLevel = exchange, topic.AckRoutable
	})
	m := e.manager("gw1", e.endpoints(amqpEndpoint), func(c *Config) {
		c.InitialBackoff, c.MaxBackoff = 20*time.Millisecond, 200*time.Millisecond
	})
	want := map[string][]uint64{}
	for i := 0; i < 200; i++ {
		key := fmt.Sprintf("k%d", i%10)
		want["b/"+key] = append(want["b/"+key], e.publish(tp, "b", key))
	}
	eventually(t, brokerSafety, "unroutable failures", func() bool { return m.Stats().PushesFailed >= 10 })
	if n := e.entries(tp); n != 200 {
		t.Fatalf("entries while unroutable = %d, want 200", n)
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q.Name, "rmq", exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	last := map[string]uint64{}
	timeout := time.After(brokerSafety)
	for len(seen) < 200 {
		select {
		case d := <-deliveries:
			msg, err := event.UnmarshalMessage(d.Body)
			if err != nil || len(msg.Records) != 1 {
				t.Fatalf("bad message: %v", err)
			}
			rec := msg.Records[0]
			if seen[rec.EventID] {
				continue
			}
			seen[rec.EventID] = true
			key := rec.S3.Bucket.Name + "/" + rec.ObjectKey()
			seq, _ := event.ParseSequencer(rec.S3.Object.Sequencer)
			if seq <= last[key] {
				t.Errorf("key %s: sequencer %d after %d", key, seq, last[key])
			}
			last[key] = seq
		case <-timeout:
			t.Fatalf("received %d of 200 events", len(seen))
		}
	}
	eventually(t, brokerSafety, "queue drained", func() bool { return e.entries(tp) == 0 })
	t.Logf("rabbitmq: %d failed (unroutable) pushes before the bind, then 200 events in key order", m.Stats().PushesFailed)
}
