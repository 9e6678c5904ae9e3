// Package amqp pushes notifications to an AMQP 0.9.1 broker (RabbitMQ)
// with amqp091-go: each message is published to the topic's exchange (a
// topic exchange that must already exist) with the Cairn topic name as
// routing key.
//
// Ack levels: none returns once the frame is written; broker waits for
// the publisher confirm; routable also sets the mandatory flag, and a
// message the broker returned as unroutable fails with push.ErrUnroutable
// (retryable: a queue may be bound later).
package amqp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/cairn-s3/cairn/internal/notify/push"
	"github.com/cairn-s3/cairn/internal/notify/topic"
)

// DefaultTimeout bounds one push (including a reconnect) when
// Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Options configure an AMQP endpoint.
type Options struct {
	URL        string // amqp[s]://[user:pw@]host[:port][/vhost]; guest/guest when no user
	Exchange   string
	AckLevel   string // topic.AckNone, AckBroker (default), AckRoutable
	VerifySSL  bool
	CALocation string
	Timeout    time.Duration
}

// Endpoint owns one connection and one channel, re-established on the next
// push after either closes.
type Endpoint struct {
	opts    Options
	tlsConf *tls.Config

	mu     sync.Mutex // serialises connect and publish (tags follow publish order)
	conn   *amqp.Connection
	ch     *amqp.Channel
	closed bool

	pmu     sync.Mutex
	pending map[*amqp.Channel]map[uint64]*waiter
}

type waiter struct {
	done     chan error // buffered 1
	returned bool
}

var _ push.Endpoint = (*Endpoint)(nil)

// New validates options; the broker is dialled on the first push.
func New(o Options) (*Endpoint, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.AckLevel == "" {
		o.AckLevel = topic.AckBroker
	}
	switch o.AckLevel {
	case topic.AckNone, topic.AckBroker, topic.AckRoutable:
	default:
		return nil, fmt.Errorf("amqp endpoint: ack level %q", o.AckLevel)
	}
	if o.Exchange == "" {
		return nil, fmt.Errorf("amqp endpoint: no exchange")
	}
	u, err := amqp.ParseURI(o.URL)
	if err != nil {
		// url.Parse's error quotes the URL, password included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("amqp endpoint: malformed URL: %w", err)
	}
	e := &Endpoint{opts: o, pending: map[*amqp.Channel]map[uint64]*waiter{}}
	if u.Scheme == "amqps" {
		e.tlsConf = &tls.Config{InsecureSkipVerify: !o.VerifySSL} //nolint:gosec // the topic asked for it
		if o.CALocation != "" {
			pem, err := os.ReadFile(o.CALocation)
			if err != nil {
				return nil, fmt.Errorf("amqp endpoint: ca-location: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("amqp endpoint: ca-location %s holds no PEM certificate", o.CALocation)
			}
			e.tlsConf.RootCAs = pool
		}
	}
	return e, nil
}

// channel returns a usable channel, dialling if needed. Called with e.mu held.
func (e *Endpoint) channel() (*amqp.Channel, error) {
	if e.ch != nil && !e.ch.IsClosed() && e.conn != nil && !e.conn.IsClosed() {
		return e.ch, nil
	}
	if e.conn == nil || e.conn.IsClosed() {
		conn, err := amqp.DialConfig(e.opts.URL, amqp.Config{
			Dial:            amqp.DefaultDial(e.opts.Timeout),
			TLSClientConfig: e.tlsConf,
			Heartbeat:       10 * time.Second,
		})
		if err != nil {
			return nil, err
		}
		e.conn = conn
	}
	ch, err := e.conn.Channel()
	if err != nil {
		_ = e.conn.Close()
		e.conn = nil
		return nil, err
	}
	if e.opts.AckLevel != topic.AckNone {
		if err := ch.Confirm(false); err != nil {
			_ = ch.Close()
			return nil, err
		}
		e.pmu.Lock()
		e.pending[ch] = map[uint64]*waiter{}
		e.pmu.Unlock()
		// Unbuffered, read by one goroutine: the library delivers returns
		// and confirms from its reader goroutine in frame order, and a
		// basic.return precedes the basic.ack of the same message.
		confirms := ch.NotifyPublish(make(chan amqp.Confirmation))
		returns := ch.NotifyReturn(make(chan amqp.Return))
		go e.listen(ch, confirms, returns)
	}
	e.ch = ch
	return ch, nil
}

// listen resolves the waiters of one channel until it closes, then fails
// the rest (retryable: the broker may or may not have the message).
func (e *Endpoint) listen(ch *amqp.Channel, confirms <-chan amqp.Confirmation, returns <-chan amqp.Return) {
	for {
		select {
		case r, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			if tag, err := strconv.ParseUint(r.MessageId, 10, 64); err == nil {
				e.pmu.Lock()
				if w := e.pending[ch][tag]; w != nil {
					w.returned = true
				}
				e.pmu.Unlock()
			}
		case c, ok := <-confirms:
			if !ok {
				e.pmu.Lock()
				for _, w := range e.pending[ch] {
					w.done <- push.Retryablef("amqp endpoint: channel closed before the broker confirmed")
				}
				delete(e.pending, ch)
				e.pmu.Unlock()
				// Drain returns so the library never blocks on us.
				if returns != nil {
					go func() {
						for range returns {
						}
					}()
				}
				return
			}
			e.pmu.Lock()
			w := e.pending[ch][c.DeliveryTag]
			delete(e.pending[ch], c.DeliveryTag)
			e.pmu.Unlock()
			if w == nil {
				continue
			}
			switch {
			case !c.Ack:
				w.done <- push.Retryable(push.ErrNacked)
			case w.returned:
				w.done <- push.Retryable(push.ErrUnroutable)
			default:
				w.done <- nil
			}
		}
	}
}

// Push publishes msg. See the package comment for ack levels.
func (e *Endpoint) Push(ctx context.Context, msg push.Message) error {
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	pub := amqp.Publishing{
		ContentType:  "application/json",
		DeliveryMode: amqp.Persistent,
		Timestamp:    time.Now(),
		Body:         msg.Body,
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return push.ErrClosed
	}
	ch, err := e.channel()
	if err != nil {
		e.mu.Unlock()
		return push.Retryable(fmt.Errorf("amqp endpoint: connect: %w", err))
	}
	var w *waiter
	if e.opts.AckLevel != topic.AckNone {
		tag := ch.GetNextPublishSeqNo()
		pub.MessageId = strconv.FormatUint(tag, 10)
		w = &waiter{done: make(chan error, 1)}
		e.pmu.Lock()
		p := e.pending[ch]
		if p != nil {
			p[tag] = w
		}
		e.pmu.Unlock()
		if p == nil { // the channel closed under us; reconnect next time
			e.ch = nil
			e.mu.Unlock()
			return push.Retryablef("amqp endpoint: channel closed")
		}
	}
	mandatory := e.opts.AckLevel == topic.AckRoutable
	err = ch.PublishWithContext(ctx, e.opts.Exchange, msg.Topic, mandatory, false, pub)
	e.mu.Unlock()
	if err != nil {
		return push.Retryable(fmt.Errorf("amqp endpoint: publish: %w", err))
	}
	if w == nil {
		return nil
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		return push.Retryable(fmt.Errorf("amqp endpoint: no confirm: %w", ctx.Err()))
	}
}

// Close closes the connection; pending pushes fail retryably.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	if e.conn != nil && !e.conn.IsClosed() {
		return e.conn.Close()
	}
	return nil
}
