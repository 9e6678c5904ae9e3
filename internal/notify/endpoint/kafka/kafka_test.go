package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/push"
	"github.com/cairn-s3/cairn/internal/notify/push/pushtest"
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

// safety bounds every wait in these tests. It is a net for a broken
// test, never the synchronisation: each wait ends on its condition, and a
// broker at load average 40 takes more than a minute to start.
const safety = 4 * time.Minute

// fresh names a topic no earlier run (go test -count=N shares the broker)
// has written to.
func fresh(base string) string { return fmt.Sprintf("%s-%d", base, time.Now().UnixNano()) }

// consume reads n records of topicName from the start.
func consume(t *testing.T, addr, topicName string, n int) []*kgo.Record {
	t.Helper()
	return consumeUntil(t, addr, topicName, func(recs []*kgo.Record) bool { return len(recs) >= n })
}

// consumeUntil reads topicName from the start until done holds for the
// records read so far.
func consumeUntil(t *testing.T, addr, topicName string, done func([]*kgo.Record) bool) []*kgo.Record {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topicName),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	var out []*kgo.Record
	for !done(out) {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after %d records of %s: %v", len(out), topicName, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// createWritable creates topicName and waits until every partition's
// leader serves it. Metadata names a leader before the leader's replica
// manager takes the partition; a produce in between gets
// NOT_LEADER_OR_FOLLOWER, which an acks=0 producer never sees (the broker
// drops the batch and closes the connection).
//
// configs are topic configs, "name=value".
func createWritable(t *testing.T, addr, topicName string, partitions int32, configs ...string) {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topicName, partitions, 1
	for _, c := range configs {
		name, value, _ := strings.Cut(c, "=")
		cc := kmsg.NewCreateTopicsRequestTopicConfig()
		cc.Name, cc.Value = name, kmsg.StringPtr(value)
		ct.Configs = append(ct.Configs, cc)
	}
	create.Topics = append(create.Topics, ct)
	create.TimeoutMillis = int32(safety / time.Millisecond)
	for {
		resp, err := create.RequestWith(ctx, c)
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		}
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			break
		}
		retry(t, ctx, "create topic "+topicName, err)
	}
	list := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topicName
	for p := int32(0); p < partitions; p++ {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p, -1 // latest
		lt.Partitions = append(lt.Partitions, lp)
	}
	list.Topics = append(list.Topics, lt)
	for {
		resp, err := list.RequestWith(ctx, c)
		if err == nil {
			var served int32
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if err = kerr.ErrorForCode(rp.ErrorCode); err != nil {
						break
					}
					served++
				}
			}
			if err == nil && served == partitions {
				return
			}
			if err == nil {
				err = fmt.Errorf("%d of %d partitions answered", served, partitions)
			}
		}
		retry(t, ctx, "list offsets of "+topicName, err)
	}
}

// retry fails t once ctx is done, else pauses before the next attempt.
func retry(t *testing.T, ctx context.Context, what string, err error) {
	t.Helper()
	select {
	case <-ctx.Done():
		t.Fatalf("%s: %v (%v)", what, err, ctx.Err())
	case <-time.After(100 * time.Millisecond):
	}
}

func TestPushBrokerAck(t *testing.T) {
	addr := testenv.StartKafka(t)
	// The topic is auto-created by the first push, which waits (acks=all)
	// until a leader takes it.
	ep, err := New(Options{Brokers: []string{addr}, AckLevel: topic.AckBroker, Timeout: safety})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	tn := fresh("t-broker")
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
	// acks=0 is fire-and-forget: a record sent while the auto-created
	// topic has no serving leader is dropped without an error, so the
	// topic must be writable before the push.
	tn := fresh("t-none")
	createWritable(t, addr, tn, 3)
	ep, err := New(Options{Brokers: []string{addr}, AckLevel: topic.AckNone})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
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
	// The endpoint's timeout is only a net: pushes that must succeed wait
	// for the broker (topic auto-creation, leader election after the
	// restart), however long that takes on a loaded machine.
	ep, err := New(Options{Brokers: []string{b.Addr}, Timeout: safety})
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
	// Broker gone: the push fails, retryably, at the caller's deadline
	// rather than the endpoint's timeout. Nothing could make it succeed.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	t0 := time.Now()
	err = ep.Push(ctx, msg(t, tn, "bk", "k", 2))
	cancel()
	if err == nil || !push.IsRetryable(err) {
		t.Fatalf("broker down: %v", err)
	}
	if d := time.Since(t0); d > safety/2 {
		t.Fatalf("broker down: push ignored its context for %v", d)
	}
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	// Retry as the delivery manager would, on retryable errors only.
	deadline := time.Now().Add(safety)
	var after uint64
	for seq := uint64(3); ; seq++ {
		err := ep.Push(context.Background(), msg(t, tn, "bk", "k", seq))
		if err == nil {
			after = seq
			break
		}
		if !push.IsRetryable(err) || time.Now().After(deadline) {
			t.Fatalf("after restart: %v", err)
		}
		t.Logf("after restart, retrying: %v", err)
	}
	// The record from before the restart survived it, and the one pushed
	// after it arrived (the abandoned seq 2 may be there too: at least once).
	before, last := sequencer(t, 1), sequencer(t, after)
	consumeUntil(t, b.Addr, tn, func(recs []*kgo.Record) bool {
		seen := map[string]bool{}
		for _, r := range recs {
			if string(r.Key) != "bk/k" {
				t.Fatalf("key %q", r.Key)
			}
			m, err := event.UnmarshalMessage(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			seen[m.Records[0].S3.Object.Sequencer] = true
		}
		return seen[before] && seen[last]
	})
}

// sequencer is the record sequencer msg writes for seq.
func sequencer(t *testing.T, seq uint64) string {
	t.Helper()
	m, err := event.UnmarshalMessage(msg(t, "x", "bk", "k", seq).Body)
	if err != nil {
		t.Fatal(err)
	}
	return m.Records[0].S3.Object.Sequencer
}

// pushBatch: pushtest.Batch on ep.
func pushBatch(t *testing.T, ep *Endpoint, ctx context.Context, msgs []push.Message, onDone func(i int, err error)) []error {
	t.Helper()
	return pushtest.Batch(t, ep, ctx, msgs, onDone)
}

// A batch of distinct keys over three partitions: every record
// acknowledged once, and every one of them in Kafka.
func TestPushBatch(t *testing.T) {
	addr := testenv.StartKafka(t)
	tn := fresh("t-batch")
	createWritable(t, addr, tn, 3)
	ep, err := New(Options{Brokers: []string{addr}, Timeout: safety})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	var msgs []push.Message
	for i := range 64 {
		msgs = append(msgs, msg(t, tn, "bk", fmt.Sprintf("k%02d", i), uint64(i+1)))
	}
	for i, err := range pushBatch(t, ep, context.Background(), msgs, nil) {
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	want := map[string]string{}
	for _, m := range msgs {
		want[m.Key] = string(m.Body)
	}
	for _, r := range consume(t, addr, tn, len(msgs)) {
		if body, ok := want[string(r.Key)]; !ok || body != string(r.Value) {
			t.Fatalf("record %q: unexpected or changed (%v)", r.Key, ok)
		}
		delete(want, string(r.Key))
	}
	if len(want) != 0 {
		t.Fatalf("%d records missing", len(want))
	}
}

// The broker goes away while a batch is in flight (killed from a done
// call, then the batch's context ends): every message gets one
// outcome; the acknowledged ones are a prefix of the batch in produce
// order (one partition: nothing acknowledged behind a failure) and are
// all in Kafka after the restart; the failed ones are retryable and go
// through once the broker is back.
func TestPushBatchBrokerGoesAway(t *testing.T) {
	b := testenv.NewKafka(t)
	tn := fresh("t-away")
	createWritable(t, b.Addr, tn, 1)
	ep, err := New(Options{Brokers: []string{b.Addr}, Timeout: safety})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	// 1000 records of ~4 KiB: several produce requests (1 MiB batches, one
	// request in flight per broker), so the stop lands between them.
	pad := strings.Repeat(" ", 4000)
	var msgs []push.Message
	for i := range 1000 {
		m := msg(t, tn, "bk", fmt.Sprintf("k%04d", i), uint64(i+1))
		m.Body = append(m.Body, pad...) // JSON still
		msgs = append(msgs, m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The first record leaves alone (linger 0), the rest in requests of
	// ~1 MiB: kill on the second outcome, the first of the second request.
	outcomes := 0
	errs := pushBatch(t, ep, ctx, msgs, func(int, error) {
		if outcomes++; outcomes == 2 {
			if err := syscall.Kill(b.Pid(), syscall.SIGKILL); err != nil {
				t.Error(err)
			}
			if err := b.Stop(); err != nil { // waits until it is gone
				t.Error(err)
			}
			cancel()
		}
	})
	acked := 0
	for acked < len(errs) && errs[acked] == nil {
		acked++
	}
	var failed []push.Message
	for i, err := range errs[acked:] {
		if err == nil {
			t.Fatalf("message %d acknowledged after message %d failed", acked+i, acked)
		}
		if !push.IsRetryable(err) {
			t.Fatalf("message %d: permanent: %v", acked+i, err)
		}
		failed = append(failed, msgs[acked+i])
	}
	t.Logf("%d acknowledged before the broker went away, %d failed (%v)", acked, len(failed), errs[len(errs)-1])
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	// The failed ones, again, as delivery would (retryable failures only).
	deadline := time.Now().Add(safety)
	for len(failed) > 0 {
		var again []push.Message
		for i, err := range pushBatch(t, ep, context.Background(), failed, nil) {
			if err != nil {
				if !push.IsRetryable(err) || time.Now().After(deadline) {
					t.Fatalf("after restart: %v", err)
				}
				again = append(again, failed[i])
			}
		}
		failed = again
	}
	want := map[string]bool{}
	for _, m := range msgs {
		want[m.Key] = true
	}
	consumeUntil(t, b.Addr, tn, func(recs []*kgo.Record) bool {
		for _, r := range recs {
			delete(want, string(r.Key))
		}
		return len(want) == 0
	})
}

// franz-go fails every record buffered behind one whose context ended
// (they share a partition batch): the record behind gets the other's
// context error, which is not its own failure, so classify makes it
// push.ErrQueuedBehind (delivery resends it without charging a retry).
func TestQueuedBehindCancelled(t *testing.T) {
	b := testenv.NewKafka(t)
	tn := fresh("t-behind")
	createWritable(t, b.Addr, tn, 1)
	ep, err := New(Options{Brokers: []string{b.Addr}, Timeout: safety})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if err := ep.Push(context.Background(), msg(t, tn, "bk", "a", 1)); err != nil {
		t.Fatal(err) // the client knows the partition's leader now
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	// Two records of the partition's next batch (nothing can be sent), the
	// first with a context of its own that ends.
	first, cancel := context.WithCancel(context.Background())
	live := context.Background()
	errs := make(chan error, 2)
	for i, ctx := range []context.Context{first, live} {
		m := msg(t, tn, "bk", fmt.Sprint(i), uint64(i+2))
		ep.client.Produce(ctx, &kgo.Record{Topic: tn, Key: []byte(m.Key), Value: m.Body},
			func(_ *kgo.Record, err error) { errs <- err })
	}
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("first record: %v, want context.Canceled", err)
	}
	// Whether the second record shares the first's batch is franz-go's
	// race: its sink may seal the first record's batch (an attempt on the
	// stopped broker) before the second is buffered, and then the second
	// waits in a batch of its own for the broker (a loaded CI machine ran
	// into that and waited 14 minutes). Behind it, it fails with the
	// first's error.
	select {
	case err2 := <-errs:
		err = classify(live, err2, 0)
		if !errors.Is(err, push.ErrQueuedBehind) || !push.IsRetryable(err) {
			t.Fatalf("record behind it: %v, want retryable ErrQueuedBehind", err)
		}
	case <-time.After(20 * time.Second):
		t.Log("the second record went into a batch of its own: only the classification below is checked")
	}
	if err := classify(live, context.Canceled, 0); !errors.Is(err, push.ErrQueuedBehind) || !push.IsRetryable(err) {
		t.Fatalf("another's context error: %v, want retryable ErrQueuedBehind", err)
	}
	if err := classify(first, context.Canceled, 0); errors.Is(err, push.ErrQueuedBehind) || !push.IsRetryable(err) {
		t.Fatalf("own context: %v, want a retryable failure of its own", err)
	}
}

// A topic whose max.message.bytes is below a produce batch: the broker
// refuses whole batches (MESSAGE_TOO_LARGE for every record in them),
// though each record fits alone. That is retryable, and the records get
// through when they go again; only a record too large for any batch is
// permanent.
func TestBatchTooLargeForTopic(t *testing.T) {
	addr := testenv.StartKafka(t)
	tn := fresh("t-small")
	createWritable(t, addr, tn, 1, "max.message.bytes=6000")
	ep, err := New(Options{Brokers: []string{addr}, Timeout: safety})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	// Three of these exceed the topic's limit together, not alone.
	pad := strings.Repeat(" ", 2500)
	var msgs []push.Message
	for i := range 12 {
		m := msg(t, tn, "bk", fmt.Sprintf("k%02d", i), uint64(i+1))
		m.Body = append(m.Body, pad...)
		msgs = append(msgs, m)
	}
	left := msgs
	refused := 0
	for round := 0; len(left) > 0; round++ {
		if round == 100 {
			t.Fatalf("%d records still refused", len(left))
		}
		var again []push.Message
		for i, err := range pushBatch(t, ep, context.Background(), left, nil) {
			if err != nil {
				if !errors.Is(err, kerr.MessageTooLarge) || !push.IsRetryable(err) {
					t.Fatalf("%s: %v, want a retryable MESSAGE_TOO_LARGE", left[i].Key, err)
				}
				refused++
				again = append(again, left[i])
			}
		}
		// As delivery retries: one at a time once batches are refused.
		if len(again) > 0 && len(again) == len(left) {
			again = again[1:]
			if err := ep.Push(context.Background(), left[0]); err != nil {
				t.Fatalf("%s alone: %v", left[0].Key, err)
			}
		}
		left = again
	}
	t.Logf("%d refusals of records that fit alone", refused)
	consume(t, addr, tn, len(msgs))

	big := msg(t, tn, "bk", "big", 100)
	big.Body = append(big.Body, strings.Repeat(" ", maxBatchBytes)...)
	if err := ep.Push(context.Background(), big); !errors.Is(err, kerr.MessageTooLarge) || push.IsRetryable(err) {
		t.Fatalf("a record larger than a batch: %v, want a permanent MESSAGE_TOO_LARGE", err)
	}
}
