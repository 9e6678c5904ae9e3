// Package push is the contract between notification delivery and endpoints:
// the Message an endpoint sends, the Endpoint interface, errors that say
// whether a retry can help, and a bound on in-flight pushes.
//
// Implementations live in internal/notify/endpoint/{http,kafka,amqp}; the
// factory that builds them from topic attributes is internal/notify/endpoint.
package push

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/event"
)

// Message is one event on its way to an endpoint.
type Message struct {
	// Topic is the Cairn topic name: the Kafka topic and the AMQP routing key.
	Topic string
	// Key is "bucket/key" (raw key): the Kafka message key, so one key's
	// events stay in one partition and keep their order.
	Key string
	// Body is the payload, {"Records":[record]}. Endpoints do not modify it.
	Body []byte
	// CloudEvent holds the attributes HTTP endpoints send as ce-* headers
	// when the topic has cloudevents=true (StoredMessage leaves it empty
	// otherwise).
	CloudEvent CloudEvent
}

// CloudEvent attributes as RGW sends them (rgw_pubsub_push.cc, after the
// CloudEvents AWS S3 adapter): type "com.amazonaws."+eventName, source
// eventSource+"."+awsRegion+"."+bucket, id x-amz-request-id+"."+x-amz-id-2,
// subject the (encoded) key, time the eventTime. Consumers written for RGW
// parse these; note the id repeats when one request fires several
// configurations (de-duplicate on the record's eventId instead).
type CloudEvent struct {
	ID, Type, Source, Subject string
	Time                      time.Time
}

// NewMessage builds the message for one record.
func NewMessage(topic string, rec *event.Record) (Message, error) {
	body, err := event.MarshalMessage(rec)
	if err != nil {
		return Message{}, err
	}
	return newMessage(topic, rec, body), nil
}

// StoredMessage builds the message for a record as a queue stored it
// (stored is event.Marshal's output, rec its decoding): the body wraps
// the stored bytes rather than encoding rec again (event.WrapRecord).
// key is rec's "bucket/key" (delivery has it already). The CloudEvent
// attributes are filled only with cloudEvents (the topic's cloudevents
// attribute, the only case in which an endpoint sends them): they were
// 3 of a delivered event's ~25 allocations.
func StoredMessage(topic, key string, rec *event.Record, stored []byte, cloudEvents bool) Message {
	m := Message{Topic: topic, Key: key, Body: event.WrapRecord(make([]byte, 0, len(stored)+16), stored)}
	if cloudEvents {
		m.CloudEvent = cloudEvent(rec)
	}
	return m
}

func newMessage(topic string, rec *event.Record, body []byte) Message {
	return Message{
		Topic:      topic,
		Key:        rec.S3.Bucket.Name + "/" + rec.ObjectKey(),
		Body:       body,
		CloudEvent: cloudEvent(rec),
	}
}

func cloudEvent(rec *event.Record) CloudEvent {
	return CloudEvent{
		ID:      rec.ResponseElements.RequestID + "." + rec.ResponseElements.HostID,
		Type:    "com.amazonaws." + rec.EventName,
		Source:  rec.EventSource + "." + rec.AWSRegion + "." + rec.S3.Bucket.Name,
		Subject: rec.S3.Object.Key,
		Time:    rec.EventTime.Time,
	}
}

// Endpoint sends messages to one destination.
//
// Push returns nil once the endpoint's acknowledgement level is met (HTTP:
// a 2xx answer; Kafka/AMQP: per the topic's ack level). Otherwise it returns
// an error classified by IsRetryable. Push is safe for concurrent use and
// honours ctx (cancellation is a retryable error). Push does not keep msg.Body
// after it returns.
//
// Close releases connections; Push after Close returns ErrClosed.
type Endpoint interface {
	Push(ctx context.Context, msg Message) error
	Close() error
}

// Batcher is an Endpoint that can send several messages in one exchange
// (HTTP/1.1 pipelining: one write carries many requests). PushBatch
// calls done(i, err) exactly once for each msgs[i], as soon as its outcome
// is known and before it returns, with the error Push would return: nil
// only once that message's own acknowledgement arrived. done is called
// from PushBatch's goroutine. A message without one (a broken connection) is sent again or
// fails retryably, so a receiver may see it twice (at-least-once, as with
// Push). Delivery passes messages of distinct keys only, so their relative
// order does not matter. Same concurrency, ctx and Body rules as Push.
type Batcher interface {
	Endpoint
	PushBatch(ctx context.Context, msgs []Message, done func(i int, err error))
}

// Sentinel errors shared by endpoints.
var (
	// ErrClosed: Push on a closed endpoint (permanent for this endpoint
	// value; the caller builds a new one).
	ErrClosed = errors.New("push: endpoint closed")
	// ErrUnroutable: an AMQP broker could not route a mandatory message
	// (ack level routable). Retryable: a queue may be bound later.
	ErrUnroutable = errors.New("push: broker could not route the message")
	// ErrNacked: the broker refused the message. Retryable.
	ErrNacked = errors.New("push: broker nacked the message")
	// ErrQueuedBehind: a batched message got no answer because an earlier
	// message of its exchange timed out (HTTP pipelining answers in order).
	// Retryable, and not the message's own failure: delivery sends it again
	// without charging it a retry.
	ErrQueuedBehind = errors.New("push: not answered: queued behind a message that timed out")
)

// Error carries the retry classification of a delivery failure.
type Error struct {
	Err       error
	Retryable bool
}

func (e *Error) Error() string {
	if e.Retryable {
		return "retryable: " + e.Err.Error()
	}
	return "permanent: " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable marks err as worth retrying (nil stays nil).
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err, Retryable: true}
}

// Permanent marks err as one that will fail again for this message.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err, Retryable: false}
}

// Retryablef and Permanentf format and classify.
func Retryablef(format string, args ...any) error { return Retryable(fmt.Errorf(format, args...)) }

// Permanentf formats a permanent error.
func Permanentf(format string, args ...any) error { return Permanent(fmt.Errorf(format, args...)) }

// IsRetryable reports whether delivering the same message again may
// succeed. Unclassified errors count as retryable: an event is dropped only
// when an endpoint said so (or TTL / max retries expire).
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Retryable
	}
	return !errors.Is(err, ErrClosed)
}

// IsPermanent reports whether err is a failure that retrying cannot fix.
func IsPermanent(err error) bool { return err != nil && !IsRetryable(err) }
