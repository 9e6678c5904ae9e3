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
	"net"
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
	cc     *corkConn // conn's socket
	ch     *amqp.Channel
	closed bool

	pmu     sync.Mutex
	pending map[*amqp.Channel]map[uint64]*waiter
}

// waiter is one published message waiting for its confirm: the listener
// sends its outcome, tagged i, on out (buffered for every message that
// can be answered on it, so the listener never blocks).
type waiter struct {
	out      chan<- outcome
	i        int
	returned bool
}

type outcome struct {
	i   int
	err error
}

var _ push.Batcher = (*Endpoint)(nil)

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
		dial := amqp.DefaultDial(e.opts.Timeout)
		conn, err := amqp.DialConfig(e.opts.URL, amqp.Config{
			Dial: func(network, addr string) (net.Conn, error) {
				c, err := dial(network, addr)
				if err != nil {
					return nil, err
				}
				e.cc = newCorkConn(c) // under e.mu, as channel's callers hold it
				return e.cc, nil
			},
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
					w.out <- outcome{w.i, push.Retryablef("amqp endpoint: channel closed before the broker confirmed")}
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
			var err error
			switch {
			case !c.Ack:
				err = push.Retryable(push.ErrNacked)
			case w.returned:
				err = push.Retryable(push.ErrUnroutable)
			}
			w.out <- outcome{w.i, err}
		}
	}
}

// Push publishes msg. See the package comment for ack levels.
func (e *Endpoint) Push(ctx context.Context, msg push.Message) error {
	var err error
	e.PushBatch(ctx, []push.Message{msg}, func(_ int, perr error) { err = perr })
	return err
}

// PushBatch publishes every message on the channel in one hold of it (the
// delivery tags follow the batch's order) and then waits for their
// confirms: one wait and one timeout for the batch instead of one per
// message and no handing of the channel between pushes. done(i, err) gets
// each message's own outcome as its confirm (or return) arrives, with
// Push's errors. A publish that fails (the channel or connection closed)
// fails that message and the rest unsent, retryably; what has no confirm
// when ctx or the timeout ends fails retryably (the broker may have it:
// at-least-once). Delivery passes distinct keys only, so the confirms'
// order does not matter.
func (e *Endpoint) PushBatch(ctx context.Context, msgs []push.Message, done func(i int, err error)) {
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	confirm := e.opts.AckLevel != topic.AckNone
	mandatory := e.opts.AckLevel == topic.AckRoutable
	// Outcomes of confirmed messages; buffered for all of them, so a
	// listener answering after a timeout never blocks.
	var outs chan outcome
	if confirm {
		outs = make(chan outcome, len(msgs))
	}
	now := time.Now()
	sent := 0 // msgs[:sent] were published
	var failure error
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		for i := range msgs {
			done(i, push.ErrClosed)
		}
		return
	}
	ch, err := e.channel()
	if err != nil {
		failure = push.Retryable(fmt.Errorf("amqp endpoint: connect: %w", err))
	}
	var cc *corkConn
	if failure == nil && len(msgs) > 1 {
		// One write for the batch's frames (cork.go), sent before the
		// wait for confirms. A failed write closes the connection: the
		// publishes then fail unconfirmed.
		cc = e.cc
		cc.cork()
	}
	for ; failure == nil && sent < len(msgs); sent++ {
		pub := amqp.Publishing{
			ContentType:  "application/json",
			DeliveryMode: amqp.Persistent,
			Timestamp:    now,
			Body:         msgs[sent].Body,
		}
		if confirm {
			tag := ch.GetNextPublishSeqNo()
			pub.MessageId = strconv.FormatUint(tag, 10)
			e.pmu.Lock()
			p := e.pending[ch]
			if p != nil {
				p[tag] = &waiter{out: outs, i: sent}
			}
			e.pmu.Unlock()
			if p == nil { // the channel closed under us; reconnect next time
				e.ch = nil
				failure = push.Retryablef("amqp endpoint: channel closed")
				break
			}
		}
		if err := ch.PublishWithContext(ctx, e.opts.Exchange, msgs[sent].Topic, mandatory, false, pub); err != nil {
			// Its waiter may still be answered (the channel's close
			// fails it); that answer is ignored below.
			failure = push.Retryable(fmt.Errorf("amqp endpoint: publish: %w", err))
			break
		}
	}
	if cc != nil {
		_ = cc.uncork()
	}
	e.mu.Unlock()
	for i := sent; i < len(msgs); i++ {
		done(i, failure)
	}
	if !confirm {
		for i := range sent {
			done(i, nil)
		}
		return
	}
	answered := make([]bool, sent)
	for left := sent; left > 0; {
		select {
		case o := <-outs:
			if o.i < sent && !answered[o.i] {
				answered[o.i] = true
				left--
				done(o.i, o.err)
			}
		case <-ctx.Done():
			err := push.Retryable(fmt.Errorf("amqp endpoint: no confirm: %w", ctx.Err()))
			for i, a := range answered {
				if !a {
					done(i, err)
				}
			}
			return
		}
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
