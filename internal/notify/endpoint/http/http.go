// Package http pushes notifications to HTTP(S) endpoints: one POST per
// message with the JSON body; a 2xx answer acknowledges it.
//
// The client is synchronous: a Push takes an idle persistent connection
// from the endpoint's pool (or dials one), writes the whole request in one
// Write, reads the answer with net/http's response parser and puts the
// connection back. PushBatch does the same for many messages at once
// (HTTP/1.1 pipelining): all requests in one Write, then the answers in
// order, so a shard's batch costs one write and few reads instead of a
// round trip each. There are no per-connection goroutines, channels or
// header maps, as there are in net/http's Transport.
package http

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	nethttp "net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/push"
)

// DefaultTimeout bounds one push when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

const (
	// maxIdle bounds the idle connections kept per endpoint: as many as
	// delivery keeps pushes in flight per endpoint
	// (delivery.DefaultMaxPerEndpoint); fewer would close each connection
	// beyond the limit after one request and dial anew.
	maxIdle = 256
	// idleTimeout drops connections idle longer than this (as net/http's
	// DefaultTransport does) rather than hold sockets the receiver has
	// most likely closed.
	idleTimeout = 90 * time.Second
	// maxDrain is how much of a response body is read so that the
	// connection can be reused; a longer body closes the connection.
	maxDrain = 64 << 10
	// maxKeptWriteBuf: a connection's write buffer grown past this (an
	// unusually large body) is dropped after the request.
	maxKeptWriteBuf = 64 << 10
)

// Options configure an HTTP endpoint.
type Options struct {
	URL         string // http:// or https://
	VerifySSL   bool   // verify the server certificate (topic verify-ssl)
	CALocation  string // PEM file of CAs to trust instead of the system's
	CloudEvents bool   // send ce-* headers (binary content mode)
	Timeout     time.Duration
}

// Endpoint is an HTTP push endpoint. Connections are kept alive and reused.
type Endpoint struct {
	opts    Options
	addr    string      // host:port to dial
	tlsConf *tls.Config // nil for http://
	// prefix is the request up to the Content-Length value:
	// "POST <uri> HTTP/1.1\r\nHost: h\r\n[Authorization: ...\r\n]Content-Type: application/json\r\nContent-Length: ".
	prefix []byte

	closed atomic.Bool // fast path for Push; mu guards the transition
	mu     sync.Mutex
	idle   []*conn // LIFO; idle[0] is the oldest
}

// conn is one persistent connection.
type conn struct {
	nc     net.Conn
	br     *bufio.Reader
	wbuf   []byte
	idleAt time.Time
}

var _ push.Batcher = (*Endpoint)(nil)

// New builds an endpoint; nothing is dialled until the first Push.
func New(o Options) (*Endpoint, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	u, err := url.Parse(o.URL)
	if err != nil {
		// Never echo the URL: its query may carry a token.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("http endpoint: malformed URL: %w", err)
	}
	if u.Host == "" {
		return nil, errors.New("http endpoint: the URL has no host")
	}
	e := &Endpoint{opts: o}
	port := u.Port()
	switch u.Scheme {
	case "http":
		if port == "" {
			port = "80"
		}
	case "https":
		if port == "" {
			port = "443"
		}
		tlsConf := &tls.Config{InsecureSkipVerify: !o.VerifySSL, ServerName: u.Hostname()} //nolint:gosec // the topic asked for it
		if o.CALocation != "" {
			pem, err := os.ReadFile(o.CALocation)
			if err != nil {
				return nil, fmt.Errorf("http endpoint: ca-location: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("http endpoint: ca-location %s holds no PEM certificate", o.CALocation)
			}
			tlsConf.RootCAs = pool
		}
		e.tlsConf = tlsConf
	default:
		return nil, fmt.Errorf("http endpoint: unsupported scheme %q", u.Scheme)
	}
	e.addr = net.JoinHostPort(u.Hostname(), port)

	p := make([]byte, 0, 128)
	p = append(p, "POST "...)
	p = append(p, u.RequestURI()...)
	p = append(p, " HTTP/1.1\r\nHost: "...)
	p = append(p, u.Host...)
	p = append(p, "\r\n"...)
	if u.User != nil {
		// As net/http's Client does for a URL with user info.
		pw, _ := u.User.Password()
		p = append(p, "Authorization: Basic "...)
		p = append(p, base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw))...)
		p = append(p, "\r\n"...)
	}
	// url.Parse rejects control characters, so no field can split the
	// request.
	p = append(p, "Content-Type: application/json\r\nContent-Length: "...)
	e.prefix = p
	return e, nil
}

// Push POSTs msg.Body. 2xx acknowledges; 408, 425, 429 and 5xx and
// transport errors are retryable; other statuses are permanent.
func (e *Endpoint) Push(ctx context.Context, msg push.Message) error {
	if e.closed.Load() {
		return push.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return push.Retryable(fmt.Errorf("http endpoint: %w", err))
	}
	deadline, ctxDeadline := e.deadline(ctx)
	code, err := e.do(ctx, deadline, &msg)
	if err != nil {
		return transportError(ctx, ctxDeadline, err)
	}
	return statusError(code)
}

// PushBatch POSTs every message on one connection, pipelined (HTTP/1.1,
// RFC 9112 section 9.3): all requests in one write, then the answers in
// order. A message is acknowledged only by its own 2xx answer, classified
// as by Push. When the connection ends early (a receiver closing it after
// some answers, or a broken one) the unanswered requests go again on a
// new connection, as Push resends a request a pooled connection lost, so
// a receiver may see a POST twice; pipelining a non-idempotent method
// is safe here only because delivery is at-least-once anyway.
func (e *Endpoint) PushBatch(ctx context.Context, msgs []push.Message, done func(i int, err error)) {
	if len(msgs) == 1 {
		done(0, e.Push(ctx, msgs[0]))
		return
	}
	fail := func(err error) {
		for i := range msgs {
			done(i, err)
		}
	}
	if e.closed.Load() {
		fail(push.ErrClosed)
		return
	}
	if err := ctx.Err(); err != nil {
		fail(push.Retryable(fmt.Errorf("http endpoint: %w", err)))
		return
	}
	// A message whose headers cannot be sent fails alone, as in Push.
	send := make([]*push.Message, 0, len(msgs))
	idx := make([]int, 0, len(msgs))
	for i := range msgs {
		if err := e.checkHeaders(&msgs[i]); err != nil {
			done(i, push.Retryable(fmt.Errorf("http endpoint: %w", err)))
			continue
		}
		send = append(send, &msgs[i])
		idx = append(idx, i)
	}
	deadline, ctxDeadline := e.deadline(ctx)
	n, err := e.doBatch(ctx, deadline, send, func(j, code int) { done(idx[j], statusError(code)) })
	if n == len(send) {
		return
	}
	terr := transportError(ctx, ctxDeadline, err)
	done(idx[n], terr)
	// After a timeout the receiver was busy with idx[n]: the requests
	// behind it were waiting, not failing. Other errors (refused, reset)
	// are every unanswered message's.
	behind := terr
	if isTimeout(err) || errors.Is(terr, context.DeadlineExceeded) {
		behind = push.Retryable(fmt.Errorf("http endpoint: %w (%w)", push.ErrQueuedBehind, err))
	}
	for _, i := range idx[n+1:] {
		done(i, behind)
	}
}

// deadline is the earlier of the endpoint's timeout and ctx's deadline;
// ctxDeadline tells which.
func (e *Endpoint) deadline(ctx context.Context) (deadline time.Time, ctxDeadline bool) {
	deadline = time.Now().Add(e.opts.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		return d, true
	}
	return deadline, false
}

// transportError classifies a failed exchange: always retryable.
func transportError(ctx context.Context, ctxDeadline bool, err error) error {
	cerr := ctx.Err()
	if cerr == nil && ctxDeadline && isTimeout(err) {
		// The connection's deadline was ctx's, and fired before ctx's
		// own timer.
		cerr = context.DeadlineExceeded
	}
	if cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w (%w)", cerr, err)
	}
	return push.Retryable(fmt.Errorf("http endpoint: %w", err))
}

// statusError classifies an answer's status.
func statusError(code int) error {
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == 408 || code == 425 || code == 429 || code >= 500:
		return push.Retryable(&StatusError{Code: code})
	default:
		return push.Permanent(&StatusError{Code: code})
	}
}

// do sends one request and returns the response status. A pooled
// connection that fails before any byte of the response arrived (the
// receiver closed it while idle) is replaced by a fresh one, once.
func (e *Endpoint) do(ctx context.Context, deadline time.Time, msg *push.Message) (int, error) {
	c := e.get()
	reused := c != nil
	for {
		if c == nil {
			var err error
			if c, err = e.dial(ctx, deadline); err != nil {
				return 0, err
			}
		}
		code, responded, err := e.roundTrip(ctx, c, deadline, msg)
		if err == nil {
			return code, nil
		}
		if !reused || responded || ctx.Err() != nil || isTimeout(err) || !time.Now().Before(deadline) {
			return 0, err
		}
		reused, c = false, nil
	}
}

// arm sets c's deadline and ends c's I/O when ctx ends; release(keep)
// puts c back in the pool (keep) or closes it. A cancellation that fired
// may set its past deadline at any time after, so such a connection is
// never reused. On error c is closed.
func (e *Endpoint) arm(ctx context.Context, c *conn, deadline time.Time) (release func(keep bool), err error) {
	if err := c.nc.SetDeadline(deadline); err != nil {
		c.nc.Close()
		return nil, err
	}
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(aLongTimeAgo) })
	}
	return func(keep bool) {
		if stop != nil && !stop() {
			keep = false
		}
		if keep {
			e.put(c)
		} else {
			c.nc.Close()
		}
	}, nil
}

// roundTrip writes the request on c and reads the answer. On success c
// is back in the pool or closed; on error it is closed. responded tells
// whether any byte of the response arrived.
func (e *Endpoint) roundTrip(ctx context.Context, c *conn, deadline time.Time, msg *push.Message) (code int, responded bool, err error) {
	keep := false
	release, err := e.arm(ctx, c, deadline)
	if err != nil {
		return 0, false, err
	}
	defer func() { release(keep) }()

	w, err := e.appendRequest(c.wbuf[:0], msg)
	if err != nil {
		return 0, false, err
	}
	if cap(w) <= maxKeptWriteBuf {
		c.wbuf = w
	} else {
		c.wbuf = nil
	}
	if _, err := c.nc.Write(w); err != nil {
		return 0, false, err
	}
	// Wait for the first byte apart: a connection the receiver closed
	// while idle fails here, and the request can go again on a new one.
	if _, err := c.br.Peek(1); err != nil {
		return 0, false, err
	}
	code, keep, err = readAnswer(c.br)
	if err != nil {
		return 0, true, err
	}
	if keep {
		keep = c.nc.SetDeadline(time.Time{}) == nil
	}
	return code, true, nil
}

// errEarlyClose: the receiver ended the connection (Connection: close,
// or a body too long to drain) before answering every pipelined request.
var errEarlyClose = errors.New("connection closed before every pipelined request was answered")

// doBatch sends msgs pipelined and reports each answer's status to
// answer(i, status) as it is read. It returns how many of msgs (a prefix)
// were answered, and why the rest were not. The unanswered rest goes again on a new connection after an
// exchange that got at least one answer (the receiver may close a
// connection after any answer), or once after a pooled connection failed
// before any (closed while idle, as in do).
func (e *Endpoint) doBatch(ctx context.Context, deadline time.Time, msgs []*push.Message, answer func(i, status int)) (int, error) {
	c := e.get()
	reused := c != nil
	done := 0
	for done < len(msgs) {
		if c == nil {
			var err error
			if c, err = e.dial(ctx, deadline); err != nil {
				return done, err
			}
		}
		off := done
		n, err := e.pipeline(ctx, c, deadline, msgs[done:], func(i, status int) { answer(off+i, status) })
		done += n
		if err == nil || done == len(msgs) {
			break
		}
		if (n == 0 && !reused) || ctx.Err() != nil || isTimeout(err) || !time.Now().Before(deadline) {
			return done, err
		}
		reused, c = false, nil
	}
	return done, nil
}

// pipeline writes every request of msgs on c in one write, then reads the
// answers in order, each to answer(i, status). It returns how many were answered; fewer
// than len(msgs) only with an error. c is back in the pool after a full
// exchange on a connection that stays open, else closed.
func (e *Endpoint) pipeline(ctx context.Context, c *conn, deadline time.Time, msgs []*push.Message, answer func(i, status int)) (answered int, err error) {
	keep := false
	release, err := e.arm(ctx, c, deadline)
	if err != nil {
		return 0, err
	}
	defer func() { release(keep) }()

	w := c.wbuf[:0]
	for _, msg := range msgs {
		if w, err = e.appendRequest(w, msg); err != nil {
			return 0, err // checked by the caller: not reached
		}
	}
	if cap(w) <= maxKeptWriteBuf {
		c.wbuf = w
	} else {
		c.wbuf = nil
	}
	if _, err := c.nc.Write(w); err != nil {
		return 0, err
	}
	for i := range msgs {
		code, more, err := readAnswer(c.br)
		if err != nil {
			return i, err
		}
		answer(i, code)
		if !more {
			if i+1 < len(msgs) {
				return i + 1, errEarlyClose
			}
			return i + 1, nil
		}
	}
	keep = c.nc.SetDeadline(time.Time{}) == nil
	return len(msgs), nil
}

// checkHeaders reports whether msg's CloudEvents header values can be
// sent (appendRequest refuses the same ones).
func (e *Endpoint) checkHeaders(msg *push.Message) error {
	if !e.opts.CloudEvents {
		return nil
	}
	ce := &msg.CloudEvent
	for _, h := range [...]struct{ name, value string }{
		{"ce-type", ce.Type}, {"ce-source", ce.Source}, {"ce-id", ce.ID}, {"ce-subject", ce.Subject},
	} {
		if !validHeaderValue(h.value) {
			return fmt.Errorf("invalid header field value for %q", h.name)
		}
	}
	return nil
}

// appendRequest appends the request for msg to b.
func (e *Endpoint) appendRequest(b []byte, msg *push.Message) ([]byte, error) {
	b = append(b, e.prefix...)
	b = strconv.AppendInt(b, int64(len(msg.Body)), 10)
	b = append(b, "\r\n"...)
	if e.opts.CloudEvents {
		ce := &msg.CloudEvent
		b = append(b, "ce-specversion: 1.0\r\n"...)
		for _, h := range [...]struct{ name, value string }{
			{"ce-type: ", ce.Type}, {"ce-source: ", ce.Source}, {"ce-id: ", ce.ID},
		} {
			if !validHeaderValue(h.value) {
				return b, fmt.Errorf("invalid header field value for %q", h.name[:len(h.name)-2])
			}
			b = append(b, h.name...)
			b = append(b, h.value...)
			b = append(b, "\r\n"...)
		}
		b = append(b, "ce-time: "...)
		b = ce.Time.UTC().AppendFormat(b, event.TimeLayout) // = the record's eventTime (RGW)
		b = append(b, "\r\nce-subject: "...)
		if !validHeaderValue(ce.Subject) {
			return b, errors.New(`invalid header field value for "ce-subject"`)
		}
		b = append(b, ce.Subject...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	return append(b, msg.Body...), nil
}

// validHeaderValue rejects control characters other than tab, as
// net/http does for header values (a CR or LF would split the request).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// postRequest tells ReadResponse what the response answers (a POST, so
// a body is read as its headers say). Read-only.
var postRequest = &nethttp.Request{Method: nethttp.MethodPost}

var aLongTimeAgo = time.Unix(1, 0)

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// dial opens a new connection, with the TLS handshake for https://.
func (e *Endpoint) dial(ctx context.Context, deadline time.Time) (*conn, error) {
	d := net.Dialer{Deadline: deadline, KeepAlive: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", e.addr)
	if err != nil {
		return nil, err
	}
	if e.tlsConf != nil {
		tc := tls.Client(nc, e.tlsConf)
		_ = nc.SetDeadline(deadline)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	return &conn{nc: nc, br: bufio.NewReader(nc)}, nil
}

// get pops the most recently used idle connection, dropping those idle
// too long.
func (e *Endpoint) get() *conn {
	now := time.Now()
	e.mu.Lock()
	for n := len(e.idle); n > 0; n = len(e.idle) {
		c := e.idle[n-1]
		e.idle[n-1] = nil
		e.idle = e.idle[:n-1]
		if now.Sub(c.idleAt) < idleTimeout {
			e.mu.Unlock()
			return c
		}
		c.nc.Close()
	}
	e.mu.Unlock()
	return nil
}

// put returns c to the pool, or closes it when the endpoint is closed or
// the pool full. Connections idle too long at the bottom of the pool are
// closed on the way.
func (e *Endpoint) put(c *conn) {
	now := time.Now()
	c.idleAt = now
	e.mu.Lock()
	if e.closed.Load() || len(e.idle) >= maxIdle {
		e.mu.Unlock()
		c.nc.Close()
		return
	}
	var stale []*conn
	for len(e.idle) > 0 && now.Sub(e.idle[0].idleAt) >= idleTimeout {
		stale = append(stale, e.idle[0])
		e.idle[0] = nil
		e.idle = e.idle[1:]
	}
	e.idle = append(e.idle, c)
	e.mu.Unlock()
	for _, s := range stale {
		s.nc.Close()
	}
}

// Close drops idle connections; later pushes fail with push.ErrClosed,
// and connections of pushes in flight are closed when they end.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	e.closed.Store(true)
	idle := e.idle
	e.idle = nil
	e.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
	return nil
}

// StatusError is a non-2xx answer.
type StatusError struct{ Code int }

func (e *StatusError) Error() string {
	return fmt.Sprintf("http endpoint: status %d %s", e.Code, nethttp.StatusText(e.Code))
}

// IsStatus reports whether err is a StatusError with the given code.
func IsStatus(err error, code int) bool {
	var s *StatusError
	return errors.As(err, &s) && s.Code == code
}
