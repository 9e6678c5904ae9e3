package delivery

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	firsts, dups := kafkaFirsts(t, got)
	distinct := 0
	for key, seqs := range firsts {
		distinct += len(seqs)
		if !slices.IsSorted(seqs) || len(slices.Compact(slices.Clone(seqs))) != len(seqs) {
			t.Errorf("key %s: sequencers out of order: %v", key, seqs)
		}
	}
	if distinct != 200 {
		t.Errorf("distinct events in Kafka = %d, want 200", distinct)
	}
	t.Logf("kafka: %d records, %d duplicates, %d failed pushes while down", len(got), dups, m.Stats().PushesFailed)
}

// kafkaFirsts decodes Kafka records of one event each (the warm-up record
// aside), checks each record's key is its event's "bucket/key", and
// returns the sequencers of each key's first occurrences, in the order
// read, and how many records repeated an event already seen.
func kafkaFirsts(t *testing.T, records []*kgo.Record) (map[string][]uint64, int) {
	t.Helper()
	seen := map[string]bool{}
	firsts := map[string][]uint64{}
	dups := 0
	for _, r := range records {
		msg, err := event.UnmarshalMessage(r.Value)
		if err != nil || len(msg.Records) != 1 {
			t.Fatalf("bad message %q: %v", r.Value, err)
		}
		rec := msg.Records[0]
		if rec.EventID == "warm-up" {
			continue
		}
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
		firsts[key] = append(firsts[key], seq)
	}
	return firsts, dups
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
	ch := testenv.AMQPChannel(t, url)
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

// warmKafka pushes one record to topicName until the broker takes it, so
// the topic exists with a serving leader before a test counts exchanges
// (an auto-created topic fails the first produces retryably).
func warmKafka(t testing.TB, addr, topicName string) {
	t.Helper()
	ep, err := kafkaep.New(kafkaep.Options{Brokers: []string{addr}, Timeout: brokerPushTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	rec := event.New(event.Params{Type: event.ObjectCreatedPut, Time: time.Now(), Region: "default",
		Bucket: "warm", Key: "up", Sequencer: 1, EventID: "warm-up"})
	m, err := push.NewMessage(topicName, rec)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(brokerSafety)
	for {
		err := ep.Push(context.Background(), m)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("warm-up push: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkKafka consumes topicName until n distinct events (the warm-up
// record aside) arrived and checks them against want: every event there,
// first occurrences in sequencer order per key. It returns the duplicates.
func checkKafka(t *testing.T, addr, topicName string, want map[string][]uint64) int {
	t.Helper()
	n := 0
	for _, seqs := range want {
		n += len(seqs)
	}
	got, dups := kafkaFirsts(t, consumeKafka(t, addr, topicName, n))
	for key, seqs := range want {
		if fmt.Sprint(got[key]) != fmt.Sprint(seqs) {
			t.Errorf("key %s: got %v, want %v", key, got[key], seqs)
		}
	}
	return dups
}

// A backlog goes to Kafka in full batches (push.Batcher: one exchange per
// PushBatch of the configured size), every event once and in order. Each
// key has one event, so every listed entry is a head and ready at once.
func TestKafkaBacklogBatched(t *testing.T) {
	addr := testenv.StartKafka(t)
	e := newEnv(t)
	name := fmt.Sprintf("kbatch-%d", time.Now().UnixNano()) // the Kafka topic; the broker is shared
	warmKafka(t, addr, name)
	const shards, perShard, batch = 3, 64, 32
	tp := e.createTopic(name, "kafka://"+addr, shards, nil)
	want := e.publishEvenly(tp, "b", shards, perShard)
	reg := prometheus.NewRegistry()
	m := e.manager("gw1", e.endpoints(kafkaEndpoint), func(c *Config) {
		c.MaxInFlightPerEndpoint, c.PushBatch, c.Registerer = 3*batch, batch, reg
	})
	total := shards * perShard
	eventually(t, brokerSafety, "every event delivered and removed", func() bool {
		return m.Stats().PushesOK == int64(total) && e.entries(tp) == 0
	})
	if dups := checkKafka(t, addr, name, want); dups != 0 {
		t.Errorf("%d duplicates", dups)
	}
	if got := counter(t, reg, "cairn_notify_delivery_push_exchanges_total", nil); got != float64(total/batch) {
		t.Errorf("%v exchanges for %d events, want %d (full batches of %d)", got, total, total/batch, batch)
	}
}

// killAt is a Kafka endpoint that SIGKILLs its broker when the first
// outcome of its at-th batch arrives: the broker goes away with that batch
// (and other shards' batches) in flight.
type killAt struct {
	*kafkaep.Endpoint
	b       *testenv.Broker
	at      int32
	batches atomic.Int32
	killed  atomic.Bool
}

func (k *killAt) PushBatch(ctx context.Context, msgs []push.Message, done func(int, error)) {
	n := k.batches.Add(1)
	k.Endpoint.PushBatch(ctx, msgs, func(i int, err error) {
		if n == k.at && k.killed.CompareAndSwap(false, true) {
			if pid := k.b.Pid(); pid != 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			if err := k.b.Stop(); err != nil { // waits until it is gone
				panic(err)
			}
		}
		done(i, err)
	})
}

// Kafka is killed while batches are in flight and comes back: nothing is
// lost (every event arrives, the queue drains) and per-key order holds
// (first occurrences; a record in flight at the kill may arrive twice).
func TestKafkaKilledMidBatch(t *testing.T) {
	b := testenv.NewKafka(t)
	e := newEnv(t)
	warmKafka(t, b.Addr, "kkill")
	tp := e.createTopic("kkill", "kafka://"+b.Addr, 3, nil)
	want := map[string][]uint64{}
	for i := range 1000 {
		key := fmt.Sprintf("k%d", i%20)
		want["b/"+key] = append(want["b/"+key], e.publish(tp, "b", key))
	}
	ep := &killAt{b: b, at: 3}
	m := e.manager("gw1", e.endpoints(func(t *topic.Topic) (push.Endpoint, error) {
		inner, err := kafkaEndpoint(t)
		if err != nil {
			return nil, err
		}
		ep.Endpoint = inner.(*kafkaep.Endpoint)
		return ep, nil
	}), func(c *Config) {
		c.InitialBackoff, c.MaxBackoff = 50*time.Millisecond, 500*time.Millisecond
		c.PushTimeout = 5 * time.Second // the batches in flight at the kill fail by this
	})
	eventually(t, brokerSafety, "pushes failing after the kill", func() bool {
		return ep.killed.Load() && m.Stats().PushesFailed >= 1
	})
	left := e.entries(tp)
	if left == 0 {
		t.Fatal("every event delivered before the kill")
	}
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, brokerSafety, "queue drained after restart", func() bool { return e.entries(tp) == 0 })
	dups := checkKafka(t, b.Addr, "kkill", want)
	t.Logf("%d events left at the kill, %d failed pushes, %d duplicates", left, m.Stats().PushesFailed, dups)
}

// A backlog goes to RabbitMQ in full batches (push.Batcher: one exchange
// per PushBatch of the configured size, confirms waited for together),
// every event once.
func TestRabbitMQBacklogBatched(t *testing.T) {
	url := testenv.StartRabbitMQ(t)
	ch := testenv.AMQPChannel(t, url)
	exchange := fmt.Sprintf("cairn-batch-%d", time.Now().UnixNano()) // the broker is shared
	if err := ch.ExchangeDeclare(exchange, "topic", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q.Name, "rbatch", exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	const shards, perShard, batch = 3, 64, 32
	tp := e.createTopic("rbatch", url, shards, func(s *topic.Settings) { s.AMQPExchange = exchange })
	want := map[string]bool{}
	for _, seqs := range e.publishEvenly(tp, "b", shards, perShard) {
		for _, s := range seqs {
			want[fmt.Sprintf("ev-%d", s)] = true
		}
	}
	reg := prometheus.NewRegistry()
	m := e.manager("gw1", e.endpoints(amqpEndpoint), func(c *Config) {
		c.MaxInFlightPerEndpoint, c.PushBatch, c.Registerer = 3*batch, batch, reg
	})
	total := shards * perShard
	eventually(t, brokerSafety, "every event delivered and removed", func() bool {
		return m.Stats().PushesOK == int64(total) && e.entries(tp) == 0
	})
	timeout := time.After(brokerSafety)
	for len(want) > 0 {
		select {
		case d := <-deliveries:
			msg, err := event.UnmarshalMessage(d.Body)
			if err != nil || len(msg.Records) != 1 {
				t.Fatalf("bad message: %v", err)
			}
			if id := msg.Records[0].EventID; !want[id] {
				t.Fatalf("event %s unexpected or twice", id)
			} else {
				delete(want, id)
			}
		case <-timeout:
			t.Fatalf("%d events not received", len(want))
		}
	}
	if got := counter(t, reg, "cairn_notify_delivery_push_exchanges_total", nil); got != float64(total/batch) {
		t.Errorf("%v exchanges for %d events, want %d (full batches of %d)", got, total, total/batch, batch)
	}
}
