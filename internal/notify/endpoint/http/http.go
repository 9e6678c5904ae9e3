// Package http pushes notifications to HTTP(S) endpoints: one POST per
// message with the JSON body; a 2xx answer acknowledges it.
package http

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/push"
)

// DefaultTimeout bounds one push when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

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
	opts   Options
	url    *url.URL // parsed once; requests share it (read-only)
	client *nethttp.Client
	closed atomic.Bool
}

var _ push.Endpoint = (*Endpoint)(nil)

// New builds an endpoint; nothing is dialled until the first Push.
func New(o Options) (*Endpoint, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	tlsConf := &tls.Config{InsecureSkipVerify: !o.VerifySSL} //nolint:gosec // the topic asked for it
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
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("http endpoint: %w", err)
	}
	tr := nethttp.DefaultTransport.(*nethttp.Transport).Clone()
	tr.TLSClientConfig = tlsConf
	// Keep as many idle connections as delivery keeps pushes in flight
	// per endpoint (delivery.DefaultMaxPerEndpoint): fewer closes each
	// connection beyond the limit after one request and dials anew.
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
	return &Endpoint{opts: o, url: u, client: &nethttp.Client{
		Transport: tr,
		Timeout:   o.Timeout,
		// Redirects are not followed: a receiver that moved is a
		// configuration problem to surface, not to chase.
		CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse },
	}}, nil
}

var jsonType = []string{"application/json"} // shared; never modified

// Push POSTs msg.Body. 2xx acknowledges; 408, 425, 429 and 5xx and
// transport errors are retryable; other statuses are permanent.
func (e *Endpoint) Push(ctx context.Context, msg push.Message) error {
	if e.closed.Load() {
		return push.ErrClosed
	}
	body := msg.Body
	req := (&nethttp.Request{
		Method: nethttp.MethodPost, URL: e.url, Host: e.url.Host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        nethttp.Header{"Content-Type": jsonType},
		Body:          io.NopCloser(bytes.NewReader(body)),
		GetBody:       func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil },
		ContentLength: int64(len(body)),
	}).WithContext(ctx)
	if e.opts.CloudEvents {
		ce := msg.CloudEvent
		req.Header.Set("ce-specversion", "1.0")
		req.Header.Set("ce-type", ce.Type)
		req.Header.Set("ce-source", ce.Source)
		req.Header.Set("ce-id", ce.ID)
		req.Header.Set("ce-time", ce.Time.UTC().Format(time.RFC3339Nano))
		req.Header.Set("ce-subject", ce.Subject)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return push.Retryable(fmt.Errorf("http endpoint: %w", err))
	}
	// Drain a little so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return nil
	case c == 408 || c == 425 || c == 429 || c >= 500:
		return push.Retryable(&StatusError{Code: c})
	default:
		return push.Permanent(&StatusError{Code: c})
	}
}

// Close drops idle connections; later pushes fail with push.ErrClosed.
func (e *Endpoint) Close() error {
	e.closed.Store(true)
	e.client.CloseIdleConnections()
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
