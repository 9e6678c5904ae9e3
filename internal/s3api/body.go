package s3api

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/cairn-s3/cairn/internal/s3err"
)

// guardBody wraps a request body so that a client that stops sending gets
// RequestTimeout after Config.BodyIdleTimeout (a read deadline renewed
// while data flows) and one that closes early gets IncompleteBody, both
// as S3 errors rather than transport errors the handlers would report as
// InternalError.
func (s *Server) guardBody(w http.ResponseWriter, r *http.Request) *http.Request {
	if r.Body == nil || r.Body == http.NoBody {
		return r
	}
	r2 := *r
	r2.Body = &guardedBody{rc: r.Body, ctl: http.NewResponseController(w), idle: s.cfg.BodyIdleTimeout}
	return &r2
}

type guardedBody struct {
	rc   io.ReadCloser
	ctl  *http.ResponseController
	idle time.Duration
	// armed is when the deadline was last pushed; it is renewed only
	// after an eighth of idle passed, so most reads cost no timer update.
	armed time.Time
	noDL  bool // the connection does not support deadlines
	err   error
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.idle > 0 && !b.noDL {
		if now := time.Now(); now.Sub(b.armed) > b.idle/8 {
			if err := b.ctl.SetReadDeadline(now.Add(b.idle)); err != nil {
				b.noDL = true
			}
			b.armed = now
		}
	}
	n, err := b.rc.Read(p)
	switch {
	case err == nil:
	case err == io.EOF:
		// The server reads the connection in the background once the
		// body is done; a stale deadline would cancel the request.
		b.disarm()
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = s3err.Wrap(s3err.ErrRequestTimeout, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		// Not wrapped: readers treat io.ErrUnexpectedEOF as a short end.
		b.disarm()
		err = s3err.New(s3err.ErrIncompleteBody, "The connection closed before the request body was complete.")
	}
	if err != nil {
		b.err = err
	}
	return n, err
}

func (b *guardedBody) disarm() {
	if !b.armed.IsZero() && !b.noDL {
		_ = b.ctl.SetReadDeadline(time.Time{})
	}
}

func (b *guardedBody) Close() error { return b.rc.Close() }
