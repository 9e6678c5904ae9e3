package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/cairn-s3/cairn/internal/s3err"
)

// goHeaderTooLarge is what net/http writes, straight to the connection,
// when a request's headers exceed http.Server.MaxHeaderBytes; no handler
// runs. The listener below turns it into an S3 error.
const goHeaderTooLarge = "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large"

// listener wraps accepted connections: it terminates TLS itself (so the
// plaintext reply is visible to conn.Write; the handler gets r.TLS back
// through ConnContext, see withTLSState), and rewrites net/http's bare 431.
// HTTP/2 is not offered: S3 clients speak HTTP/1.1.
type listener struct {
	net.Listener
	tls       *tls.Config // nil: plain HTTP
	maxHeader int         // http.Server.MaxHeaderBytes
	log       *slog.Logger
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	hc := &conn{Conn: c, l: l}
	if l.tls != nil {
		hc.tls = tls.Server(c, l.tls)
		hc.Conn = hc.tls
	}
	hc.in = &expectReader{r: hc.Conn, limit: l.maxHeader + 4096}
	return hc, nil
}

type conn struct {
	net.Conn
	l   *listener
	tls *tls.Conn
	// readSinceWrite counts bytes read since the last write: net/http's
	// 431 follows more than maxHeader bytes of header with no reply in
	// between. A handler could only produce the same write by reading that
	// much request body after flushing its response headers and then
	// flushing exactly those bytes as body; no Cairn handler writes before
	// it has read the request body.
	readSinceWrite atomic.Int64
	in             io.Reader // Conn's bytes through expectReader
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.in.Read(p)
	c.readSinceWrite.Add(int64(n))
	return n, err
}

func (c *conn) Write(p []byte) (int, error) {
	if c.readSinceWrite.Swap(0) > int64(c.l.maxHeader) && bytes.Equal(p, []byte(goHeaderTooLarge)) {
		if _, err := c.Conn.Write(headerTooLargeResponse(c.l.log, c.RemoteAddr())); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// ReadFrom keeps net/http's sendfile path for GET bodies on plain TCP
// (net/http uses it only when the connection is an io.ReaderFrom).
func (c *conn) ReadFrom(r io.Reader) (int64, error) {
	c.readSinceWrite.Store(0)
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// CloseWrite keeps net/http's lingering close after an error reply.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func headerTooLargeResponse(log *slog.Logger, remote net.Addr) []byte {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	rid := strings.ToUpper(hex.EncodeToString(b))
	e := s3err.New(s3err.ErrRequestHeaderSectionTooLarge, "")
	body := s3err.Body(e, "", rid)
	log.Info("request", "request_id", rid, "op", "HeaderTooLarge", "status", e.HTTPStatus, "error", e.Code, "remote", remote.String())
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/xml\r\nContent-Length: %d\r\nx-amz-request-id: %s\r\nServer: Cairn\r\nConnection: close\r\n\r\n%s",
		e.HTTPStatus, http.StatusText(e.HTTPStatus), len(body), rid, body)
}

type tlsConnKey struct{}

// connContext remembers a connection's TLS state holder for withTLSState.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if hc, ok := c.(*conn); ok && hc.tls != nil {
		return context.WithValue(ctx, tlsConnKey{}, hc.tls)
	}
	return ctx
}

// withTLSState sets r.TLS for requests on a connection the listener
// terminated TLS on (net/http sets it only for its own *tls.Conn).
func withTLSState(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tc, ok := r.Context().Value(tlsConnKey{}).(*tls.Conn); ok && r.TLS == nil {
			st := tc.ConnectionState()
			r2 := *r
			r2.TLS = &st
			r = &r2
		}
		h.ServeHTTP(w, r)
	})
}
