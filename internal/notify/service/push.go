package service

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/topic"
)

// HTTPPusher pushes to http(s) endpoints: a POST of {"Records":[record]},
// acknowledged by any 2xx. Other schemes fail; the server replaces it with
// an adapter over internal/notify/endpoint for Kafka and AMQP.
type HTTPPusher struct {
	verify, insecure *http.Client
}

// NewHTTPPusher returns an HTTPPusher with its own connection pools.
func NewHTTPPusher() *HTTPPusher {
	mk := func(skip bool) *http.Client {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: skip} //nolint:gosec // topic verify-ssl=false asks for it
		tr.MaxIdleConnsPerHost = 64
		return &http.Client{Transport: tr, Timeout: 30 * time.Second}
	}
	return &HTTPPusher{verify: mk(false), insecure: mk(true)}
}

// Push implements Pusher.
func (p *HTTPPusher) Push(ctx context.Context, t *topic.Topic, rec *event.Record) error {
	u, err := t.Settings.Endpoint()
	if err != nil {
		return err
	}
	if u == nil {
		return errors.New("push: the topic has no push-endpoint")
	}
	if u.Scheme != topic.SchemeHTTP && u.Scheme != topic.SchemeHTTPS {
		return fmt.Errorf("push: no synchronous pusher for scheme %q", u.Scheme)
	}
	body, err := event.MarshalMessage(rec)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.Settings.PushEndpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	c := p.verify
	if !t.Settings.VerifySSL {
		c = p.insecure
	}
	resp, err := c.Do(req)
	if err != nil {
		// net/http's error quotes the URL, query (a token) included.
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = u.Redacted()
		}
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("push: %s answered %d", u.Redacted(), resp.StatusCode)
	}
	return nil
}
