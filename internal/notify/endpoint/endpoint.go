// Package endpoint turns a topic's settings into a connected push endpoint
// (http, kafka or amqp) and shares connections between topics that point
// at the same destination with the same options.
//
// The contract (Message, Endpoint, retryable errors) is package push;
// this package re-exports it so callers need one import:
//
//	cache := endpoint.NewCache()
//	defer cache.Close()
//	ep, err := endpoint.New(t.Settings, endpoint.Options{Cache: cache})
//	...
//	msg, _ := endpoint.NewMessage(t.Name, rec)
//	if err := ep.Push(ctx, msg); err != nil && endpoint.IsRetryable(err) { /* retry later */ }
//	ep.Close() // releases the shared connection
package endpoint

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/endpoint/amqp"
	httpep "github.com/cairn-s3/cairn/internal/notify/endpoint/http"
	"github.com/cairn-s3/cairn/internal/notify/endpoint/kafka"
	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/push"
	"github.com/cairn-s3/cairn/internal/notify/topic"
)

// Re-exported contract.
type (
	Endpoint = push.Endpoint
	Message  = push.Message
)

// Errors re-exported from push.
var (
	ErrClosed     = push.ErrClosed
	ErrUnroutable = push.ErrUnroutable
	ErrNacked     = push.ErrNacked
	// ErrNoEndpoint: the topic has no push-endpoint.
	ErrNoEndpoint = errors.New("endpoint: topic has no push-endpoint")
)

// IsRetryable reports whether pushing the same message again may succeed.
func IsRetryable(err error) bool { return push.IsRetryable(err) }

// NewMessage builds the message for one record of a topic.
func NewMessage(topicName string, rec *event.Record) (Message, error) {
	return push.NewMessage(topicName, rec)
}

// DefaultMaxInFlight bounds concurrent pushes per destination.
const DefaultMaxInFlight = 64

// Options for New.
type Options struct {
	// Cache shares one connection per destination; nil gives each New its
	// own connection.
	Cache *Cache
	// Timeout bounds one push (default: each implementation's, 10 s).
	Timeout time.Duration
	// MaxInFlight bounds concurrent pushes per destination (0: default,
	// negative: unbounded). A push beyond it waits for a slot or its ctx.
	MaxInFlight int
	// KafkaCompression is the Kafka endpoints' batch compression
	// (kafka.Options.Compression; gateway option notif-kafka-compression).
	KafkaCompression string
}

// New returns an endpoint for the topic settings. The result must be
// closed; with a Cache, Close releases the shared connection, which closes
// when its last user does.
func New(s topic.Settings, o Options) (Endpoint, error) {
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if s.PushEndpoint == "" {
		return nil, ErrNoEndpoint
	}
	if o.Cache == nil {
		return build(s, o)
	}
	return o.Cache.get(s, o)
}

func build(s topic.Settings, o Options) (Endpoint, error) {
	u, err := s.Endpoint()
	if err != nil {
		return nil, err
	}
	var ep Endpoint
	switch u.Scheme {
	case topic.SchemeHTTP, topic.SchemeHTTPS:
		ep, err = httpep.New(httpep.Options{URL: s.PushEndpoint, VerifySSL: s.VerifySSL, CALocation: s.CALocation,
			CloudEvents: s.CloudEvents, Timeout: o.Timeout})
	case topic.SchemeKafka:
		user, pw := s.Credentials()
		ep, err = kafka.New(kafka.Options{Brokers: u.Addrs, AckLevel: s.KafkaAckLevel, UseSSL: s.UseSSL,
			VerifySSL: s.VerifySSL, CALocation: s.CALocation, User: user, Password: pw, Mechanism: s.Mechanism,
			Timeout: o.Timeout, Compression: o.KafkaCompression})
	case topic.SchemeAMQP, topic.SchemeAMQPS:
		ep, err = amqp.New(amqp.Options{URL: amqpURL(s), Exchange: s.AMQPExchange, AckLevel: s.AMQPAckLevel,
			VerifySSL: s.VerifySSL, CALocation: s.CALocation, Timeout: o.Timeout})
	default:
		return nil, fmt.Errorf("endpoint: unsupported scheme %q", u.Scheme)
	}
	if err != nil {
		return nil, err
	}
	return push.Limit(ep, o.MaxInFlight), nil
}

// amqpURL applies user-name/password attributes to the URL.
func amqpURL(s topic.Settings) string {
	if s.UserName == "" {
		return s.PushEndpoint
	}
	scheme, rest, _ := strings.Cut(s.PushEndpoint, "://")
	if at := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@"); at >= 0 {
		rest = rest[at+1:]
	}
	return scheme + "://" + urlUser(s.UserName, s.Password) + "@" + rest
}

func urlUser(user, pw string) string {
	esc := func(s string) string {
		var b strings.Builder
		for _, c := range []byte(s) {
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
		return b.String()
	}
	return esc(user) + ":" + esc(pw)
}

// Cache shares endpoints between topics with the same destination and
// connection options. Safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	entries map[string]*entry
}

type entry struct {
	ep   Endpoint
	refs int
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{entries: map[string]*entry{}} }

// cacheKey lists everything that changes the connection or push behaviour.
func cacheKey(s topic.Settings, o Options) string {
	return strings.Join([]string{
		s.PushEndpoint, strconv.FormatBool(s.VerifySSL), s.CALocation, strconv.FormatBool(s.CloudEvents),
		s.AMQPExchange, s.AMQPAckLevel, s.KafkaAckLevel, strconv.FormatBool(s.UseSSL), s.Mechanism,
		s.UserName, s.Password, o.Timeout.String(), strconv.Itoa(o.MaxInFlight), o.KafkaCompression,
	}, "\x00")
}

func (c *Cache) get(s topic.Settings, o Options) (Endpoint, error) {
	key := cacheKey(s, o)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	if e == nil {
		ep, err := build(s, o)
		if err != nil {
			return nil, err
		}
		e = &entry{ep: ep}
		c.entries[key] = e
	}
	e.refs++
	h := &handle{c: c, key: key, e: e}
	if b, ok := e.ep.(push.Batcher); ok {
		return &batchHandle{handle: h, b: b}, nil
	}
	return h, nil
}

// Len is the number of distinct connections held.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Close closes every connection, including ones still referenced.
func (c *Cache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for k, e := range c.entries {
		errs = append(errs, e.ep.Close())
		delete(c.entries, k)
	}
	return errors.Join(errs...)
}

type handle struct {
	c      *Cache
	key    string
	e      *entry
	closed atomic.Bool
}

func (h *handle) Push(ctx context.Context, msg Message) error {
	if h.closed.Load() {
		return ErrClosed
	}
	return h.e.ep.Push(ctx, msg)
}

// batchHandle is the handle of an endpoint that batches (push.Batcher).
type batchHandle struct {
	*handle
	b push.Batcher
}

func (h *batchHandle) PushBatch(ctx context.Context, msgs []Message, done func(i int, err error)) {
	if h.closed.Load() {
		for i := range msgs {
			done(i, ErrClosed)
		}
		return
	}
	h.b.PushBatch(ctx, msgs, done)
}

func (h *handle) Close() error {
	if h.closed.Swap(true) {
		return nil
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	h.e.refs--
	if h.e.refs > 0 || h.c.entries[h.key] != h.e {
		return nil
	}
	delete(h.c.entries, h.key)
	return h.e.ep.Close()
}
