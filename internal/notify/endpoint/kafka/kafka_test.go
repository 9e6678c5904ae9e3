package kafka

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/push"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func msg(t *testing.T, topicName, bucket, key string, seq uint64) push.Message {
	t.Helper()
	rec := event.New(event.Params{Type: event.ObjectCreatedPut, Time: time.Now(), Region: "default",
		Bucket: bucket, Key: key, Sequencer: seq})
	m, err := push.NewMessage(topicName, rec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// consume reads n records of topicName from the start.
func consume(t *testing.T, addr, topicName string, n int) []*kgo.Record {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topicName),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", len(out), n, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

func TestPushBrokerAck(t *testing.T) {
	addr := testenv.StartKafka(t)
	ep, err := New(Options{Brokers: []string{addr}, AckLevel: topic.AckBroker, Timeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	const tn = "t-broker"
	keys := []string{"a.txt", "b.txt", "c.txt", "d.txt"}
	var sent []push.Message
	for i := 0; i < 12; i++ {
		m := msg(t, tn, "bk", keys[i%len(keys)], uint64(i+1))
		if err := ep.Push(context.Background(), m); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
		sent = append(sent, m)
	}
	recs := consume(t, addr, tn, len(sent))
	partition := map[string]int32{}
	lastSeq := map[string]string{}
	bodies := map[string]bool{}
	for _, m := range sent {
		bodies[string(m.Body)] = true
	}
	for _, r := range recs {
		k := string(r.Key)
		if p, ok := partition[k]; ok && p != r.Partition {
			t.Fatalf("key %s in partitions %d and %d", k, p, r.Partition)
		}
		partition[k] = r.Partition
		if !bodies[string(r.Value)] {
			t.Fatalf("unexpected body %s", r.Value)
		}
		m, err := event.UnmarshalMessage(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		rec := m.Records[0]
		if k != "bk/"+rec.ObjectKey() {
			t.Fatalf("key %q for object %q", k, rec.ObjectKey())
		}
		// Within a key, records arrive in sequencer order.
		if s := rec.S3.Object.Sequencer; s <= lastSeq[k] {
			t.Fatalf("key %s: sequencer %s after %s", k, s, lastSeq[k])
		}
		lastSeq[k] = rec.S3.Object.Sequencer
	}
	if len(partition) != len(keys) {
		t.Fatalf("keys seen: %v", partition)
	}
}

func TestPushNoAck(t *testing.T) {
	addr := testenv.StartKafka(t)
	ep, err := New(Options{Brokers: []string{addr}, AckLevel: topic.AckNone})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	const tn = "t-none"
	m := msg(t, tn, "bk", "k", 1)
	if err := ep.Push(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	r := consume(t, addr, tn, 1)[0]
	if string(r.Value) != string(m.Body) || string(r.Key) != "bk/k" {
		t.Fatalf("%s %s", r.Key, r.Value)
	}
}

// No broker at the address: the push fails within its timeout, retryably.
func TestPushBrokerDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ep, err := New(Options{Brokers: []string{addr}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	t0 := time.Now()
	err = ep.Push(context.Background(), msg(t, "t", "bk", "k", 1))
	if err == nil || !push.IsRetryable(err) {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}

// The same endpoint recovers after its broker restarts.
func TestReconnect(t *testing.T) {
	b := testenv.NewKafka(t)
	ep, err := New(Options{Brokers: []string{b.Addr}, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	const tn = "t-reconnect"
	if err := ep.Push(context.Background(), msg(t, tn, "bk", "k", 1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := ep.Push(context.Background(), msg(t, tn, "bk", "k", 2)); err == nil || !push.IsRetryable(err) {
		t.Fatalf("broker down: %v", err)
	}
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for i := 0; i < 10; i++ {
		if lastErr = ep.Push(context.Background(), msg(t, tn, "bk", "k", uint64(3+i))); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("after restart: %v", lastErr)
	}
	// The record from before the restart and the first one after it.
	recs := consume(t, b.Addr, tn, 2)
	if string(recs[0].Key) != "bk/k" {
		t.Fatalf("%s", recs[0].Key)
	}
}
