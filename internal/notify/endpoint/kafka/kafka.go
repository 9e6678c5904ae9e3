// Package kafka pushes notifications to Kafka with franz-go. The Kafka
// topic is the Cairn topic name and the record key is "bucket/key", so one
// object's events land in one partition, in order.
package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/cairn-s3/cairn/internal/notify/push"
	"github.com/cairn-s3/cairn/internal/notify/topic"
)

// DefaultTimeout bounds one push when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// maxBatchBytes caps a produce batch (franz-go's default, set explicitly
// because classify relies on it): a record that cannot fit in a batch on
// its own is refused by the client, permanently.
const maxBatchBytes = 1_000_012

// batchOverhead is more than a record batch's header plus one record's
// framing: a record whose key and value exceed maxBatchBytes minus this
// cannot fit in a batch alone.
const batchOverhead = 1 << 10

// Options configure a Kafka endpoint.
type Options struct {
	Brokers    []string // host:port bootstrap list
	AckLevel   string   // topic.AckNone or topic.AckBroker (default)
	UseSSL     bool
	VerifySSL  bool
	CALocation string
	// SASL; Mechanism defaults to PLAIN when User is set.
	User, Password, Mechanism string
	Timeout                   time.Duration
	// Compression of produced batches: "none" (default, as RGW produces:
	// every consumer reads it without codec packages), "gzip", "snappy",
	// "lz4" or "zstd".
	Compression string
}

// Compressions are the values Options.Compression accepts.
var Compressions = []string{"none", "gzip", "snappy", "lz4", "zstd"}

func codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("kafka endpoint: compression %q: want one of %v", name, Compressions)
}

// Endpoint produces to Kafka through one client (connections are shared
// by every push and re-established by franz-go after failures).
type Endpoint struct {
	opts   Options
	client *kgo.Client
	closed atomic.Bool
}

var _ push.Batcher = (*Endpoint)(nil)

// New builds the client; brokers are dialled lazily.
func New(o Options) (*Endpoint, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.AckLevel == "" {
		o.AckLevel = topic.AckBroker
	}
	cc, err := codec(o.Compression)
	if err != nil {
		return nil, err
	}
	kopts := []kgo.Opt{
		kgo.SeedBrokers(o.Brokers...),
		// franz-go's default is snappy; RGW's consumers expect plain batches.
		kgo.ProducerBatchCompression(cc),
		kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchMaxBytes(maxBatchBytes),
		kgo.DialTimeout(o.Timeout),
		// Give up on a record rather than retrying forever inside the
		// client: the delivery manager owns retries.
		kgo.RecordDeliveryTimeout(o.Timeout),
	}
	switch o.AckLevel {
	case topic.AckBroker:
		// All in-sync replicas, idempotent: the strongest "broker" ack.
		kopts = append(kopts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case topic.AckNone:
		kopts = append(kopts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("kafka endpoint: ack level %q", o.AckLevel)
	}
	if o.UseSSL {
		tlsConf := &tls.Config{InsecureSkipVerify: !o.VerifySSL} //nolint:gosec // the topic asked for it
		if o.CALocation != "" {
			pem, err := os.ReadFile(o.CALocation)
			if err != nil {
				return nil, fmt.Errorf("kafka endpoint: ca-location: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("kafka endpoint: ca-location %s holds no PEM certificate", o.CALocation)
			}
			tlsConf.RootCAs = pool
		}
		kopts = append(kopts, kgo.DialTLSConfig(tlsConf))
	}
	if o.User != "" {
		switch o.Mechanism {
		case "", topic.MechanismPlain:
			kopts = append(kopts, kgo.SASL(plain.Auth{User: o.User, Pass: o.Password}.AsMechanism()))
		case topic.MechanismScramSHA256:
			kopts = append(kopts, kgo.SASL(scram.Auth{User: o.User, Pass: o.Password}.AsSha256Mechanism()))
		case topic.MechanismScramSHA512:
			kopts = append(kopts, kgo.SASL(scram.Auth{User: o.User, Pass: o.Password}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("kafka endpoint: mechanism %q", o.Mechanism)
		}
	}
	c, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("kafka endpoint: %w", err)
	}
	return &Endpoint{opts: o, client: c}, nil
}

// Push produces msg to the topic msg.Topic with key msg.Key.
//
// Ack level broker: returns after the broker acknowledged the record.
// Ack level none: returns once the record is buffered in the client
// (fire-and-forget: a record lost later is not reported); a full buffer is
// a retryable error.
func (e *Endpoint) Push(ctx context.Context, msg push.Message) error {
	if e.closed.Load() {
		return push.ErrClosed
	}
	rec := &kgo.Record{Topic: msg.Topic, Key: []byte(msg.Key), Value: append([]byte(nil), msg.Body...)}
	if e.opts.AckLevel == topic.AckNone {
		var sync error
		done := make(chan struct{})
		e.client.TryProduce(context.Background(), rec, func(_ *kgo.Record, err error) {
			select {
			case <-done:
			default:
				sync = err // reported before TryProduce returned (buffer full)
			}
		})
		close(done)
		return classify(context.Background(), sync, recordSize(rec))
	}
	// Wait for the ack, but never past ctx or the timeout: franz-go keeps
	// retrying a record it already sent (an idempotent producer must), so
	// ProduceSync can outlive a dead broker. An abandoned record may still
	// be written later; the retry then makes a duplicate (at-least-once).
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	done := make(chan error, 1)
	e.client.Produce(ctx, rec, func(_ *kgo.Record, err error) { done <- err })
	select {
	case err := <-done:
		return classify(ctx, err, recordSize(rec))
	case <-ctx.Done():
		return push.Retryable(fmt.Errorf("kafka endpoint: no ack: %w", ctx.Err()))
	}
}

// PushBatch produces every message at once and waits for their promises:
// the records of one partition leave in the same produce requests (franz-go
// batches what is buffered while a request is in flight), and the batch
// costs one wait and one timeout instead of one per message. done(i, err)
// gets each record's own outcome, classified as by Push, as its promise
// arrives; what has none when ctx or the timeout ends fails retryably (such
// a record may still be written later: at-least-once, as with Push).
//
// Order: franz-go keeps a partition's records in produce order and, when
// it must fail one (ctx, timeout, retries), fails every record buffered
// behind it in that partition too, so a record is never acknowledged after
// an earlier one of its partition failed. Delivery passes distinct keys
// only; a key's next event waits for this one's outcome.
//
// Ack level none: each message goes as Push sends it (buffered, not waited
// for).
func (e *Endpoint) PushBatch(ctx context.Context, msgs []push.Message, done func(i int, err error)) {
	if e.closed.Load() {
		for i := range msgs {
			done(i, push.ErrClosed)
		}
		return
	}
	if e.opts.AckLevel == topic.AckNone || len(msgs) == 1 {
		for i := range msgs {
			done(i, e.Push(ctx, msgs[i]))
		}
		return
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	type outcome struct {
		i   int
		err error
	}
	// Buffered for all: promises never block franz-go's promise
	// goroutine, also after a timeout returned early.
	outcomes := make(chan outcome, len(msgs))
	recs := make([]kgo.Record, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		recs[i] = kgo.Record{Topic: m.Topic, Key: []byte(m.Key), Value: append([]byte(nil), m.Body...)}
		e.client.Produce(ctx, &recs[i], func(_ *kgo.Record, err error) { outcomes <- outcome{i, err} })
	}
	answered := make([]bool, len(msgs))
	for range msgs {
		select {
		case o := <-outcomes:
			answered[o.i] = true
			done(o.i, classify(ctx, o.err, recordSize(&recs[o.i])))
		case <-ctx.Done():
			err := push.Retryable(fmt.Errorf("kafka endpoint: no ack: %w", ctx.Err()))
			for i, a := range answered {
				if !a {
					done(i, err)
				}
			}
			return
		}
	}
}

// classify maps franz-go errors for a record of size bytes (key and
// value): records the broker can never take are permanent; everything
// else (unreachable broker, leader moves, timeouts, authorisation an
// operator may fix) is retryable.
//
// MESSAGE_TOO_LARGE is permanent only for a record that cannot fit in a
// batch on its own. The broker answers it for a whole record batch that
// exceeds the topic's max.message.bytes, failing every record in it, and a
// batch holds the records of many events (several shards' pushes and a
// delivery batch's): those fit alone and go again, spread by the retry
// backoff's jitter. One that is too large alone for the topic retries
// until the topic's max retries or TTL drop it.
//
// A record failed with a context's error while its own ctx is live was
// failed by franz-go because an earlier record of its partition was
// cancelled (another shard's push that timed out or stopped): not its own
// failure, so push.ErrQueuedBehind (delivery sends it again without
// charging a retry).
func classify(ctx context.Context, err error, size int) error {
	if err == nil {
		return nil
	}
	// Only the bare context errors: franz-go fails a partition's records
	// with the first record's ctx.Err() as it is, and a wrapped deadline
	// (a dial timeout, say) must stay a charged failure, or a broker that
	// is down would be retried without backoff.
	if ctx.Err() == nil && (err == context.Canceled || err == context.DeadlineExceeded) {
		return push.Retryable(fmt.Errorf("kafka endpoint: %w (%w)", push.ErrQueuedBehind, err))
	}
	err = fmt.Errorf("kafka endpoint: %w", err)
	switch {
	case errors.Is(err, kerr.MessageTooLarge):
		if size > maxBatchBytes-batchOverhead {
			return push.Permanent(err)
		}
		return push.Retryable(err)
	case errors.Is(err, kerr.RecordListTooLarge),
		errors.Is(err, kerr.InvalidRecord),
		errors.Is(err, kerr.InvalidTopicException),
		errors.Is(err, kerr.CorruptMessage):
		return push.Permanent(err)
	}
	return push.Retryable(err)
}

func recordSize(r *kgo.Record) int { return len(r.Key) + len(r.Value) }

// Close flushes nothing: records not yet acknowledged fail (their pushes
// already returned or get push errors).
func (e *Endpoint) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	e.client.Close()
	return nil
}
