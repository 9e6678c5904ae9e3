package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"slices"
	"strconv"
)

// AWS ignores an Expect header other than "100-continue"; net/http answers
// 417 before any handler runs. expectReader follows the HTTP/1.1 framing of
// the requests read from a connection and renames such headers to
// hiddenExpect (a per-process name no client can know) in the header
// section only, never in a body; the handler then restores them (so a
// signature that covers Expect still verifies). Framing it cannot follow
// (Transfer-Encoding, a header section beyond the limit, a malformed
// length) turns it into a plain pass-through for the rest of the
// connection: net/http then decides as it would without it.
var hiddenExpect = func() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "X-Cairn-Expect-" + hex.EncodeToString(b)
}()

type expectReader struct {
	r     io.Reader
	limit int    // header bytes held at most before passing through
	hdr   []byte // the current request's header bytes read so far
	out   []byte // bytes ready for the caller
	body  int64  // body bytes of the current request still to pass
	pass  bool
	err   error // the reader's error, returned (once) when out is drained
	// spare is the buffer out was last cut from: once out is drained it
	// takes the next request's header bytes, so a keep-alive connection
	// alternates between two buffers instead of allocating per request.
	spare []byte
}

// readSize is the most read from the connection at once into hdr.
const readSize = 4096

func (f *expectReader) Read(p []byte) (int, error) {
	for {
		if len(f.out) > 0 {
			n := copy(p, f.out)
			f.out = f.out[n:]
			return n, nil
		}
		if f.pass && f.err == nil {
			return f.r.Read(p)
		}
		if f.body > 0 && f.err == nil {
			if int64(len(p)) > f.body {
				p = p[:f.body]
			}
			n, err := f.r.Read(p)
			f.body -= int64(n)
			return n, err
		}
		if i := bytes.Index(f.hdr, []byte("\r\n\r\n")); i >= 0 && i+4 <= f.limit && !f.pass {
			head, rest := f.hdr[:i+4], f.hdr[i+4:]
			body, ok, rename := scanHead(head)
			if !rename {
				// The common case: nothing to rename, the bytes pass as read.
				if !ok {
					f.pass, f.out, f.hdr = true, f.hdr, nil
					continue
				}
				n := i + 4 + int(min(int64(len(rest)), body))
				f.out = f.hdr[:n]
				f.body = body - int64(n-i-4)
				f.hdr = append(f.spare[:0], f.hdr[n:]...)
				f.spare = f.out[:0]
				continue
			}
			out, body, ok := rewriteHead(head)
			f.hdr = nil
			if !ok {
				f.pass = true
				f.out = append(out, rest...)
				continue
			}
			n := min(int64(len(rest)), body)
			f.out = append(out, rest[:n]...)
			f.body = body - n
			f.hdr = append([]byte(nil), rest[n:]...)
			continue
		}
		if f.pass || len(f.hdr) > f.limit || bytes.Contains(f.hdr, []byte("\r\n\r\n")) {
			// beyond the limit: net/http decides (431)
			f.pass, f.out, f.hdr = true, f.hdr, nil
			if len(f.out) > 0 {
				continue
			}
		}
		if f.err != nil {
			if len(f.hdr) > 0 {
				f.out, f.hdr = f.hdr, nil
				continue
			}
			// Once: net/http aborts its background read with a past
			// deadline and then reads on, so an error is not final.
			err := f.err
			f.err = nil
			return 0, err
		}
		// Out is drained here, so hdr is no buffer out is cut from.
		f.hdr = slices.Grow(f.hdr, readSize)
		n, err := f.r.Read(f.hdr[len(f.hdr) : len(f.hdr)+readSize])
		f.hdr = f.hdr[:len(f.hdr)+n]
		f.err = err
	}
}

// headerKind is what the filter needs to know of one header line.
type headerKind int

const (
	hOther   headerKind = iota
	hLength             // Content-Length
	hChunked            // Transfer-Encoding: not a plain length
	hExpect             // Expect other than 100-continue: renamed
)

// headerLine classifies one header line (not the request line).
func headerLine(l []byte) (headerKind, []byte) {
	name, value, found := bytes.Cut(l, []byte(":"))
	if !found {
		return hOther, nil
	}
	name, value = bytes.TrimSpace(name), bytes.TrimSpace(value)
	switch {
	case bytes.EqualFold(name, []byte("Content-Length")):
		return hLength, value
	case bytes.EqualFold(name, []byte("Transfer-Encoding")):
		return hChunked, value
	case bytes.EqualFold(name, []byte("Expect")) && !bytes.EqualFold(value, []byte("100-continue")):
		return hExpect, value
	}
	return hOther, value
}

// addLength folds a Content-Length value into the body length; two that
// disagree, or a bad one, make the framing not plain.
func addLength(value []byte, body *int64, ok *bool) {
	n, err := strconv.ParseInt(string(value), 10, 64)
	if err != nil || n < 0 || (*body > 0 && n != *body) {
		*ok = false
	}
	*body = n
}

// scanHead is rewriteHead's reading half, allocating nothing: the body
// length, whether its framing is a plain Content-Length (ok) and whether
// an Expect line needs renaming.
func scanHead(head []byte) (body int64, ok, rename bool) {
	ok = true
	rest := head[:len(head)-4]
	first := true
	for {
		l, next, more := bytes.Cut(rest, []byte("\r\n"))
		if !first {
			switch k, v := headerLine(l); k {
			case hLength:
				addLength(v, &body, &ok)
			case hChunked:
				ok = false
			case hExpect:
				rename = true
			}
		}
		if !more {
			return body, ok, rename
		}
		first, rest = false, next
	}
}

// rewriteHead renames the header section's Expect lines other than
// 100-continue and returns the request's body length; ok is false when the
// body's framing is not a plain Content-Length.
func rewriteHead(head []byte) (out []byte, body int64, ok bool) {
	lines := bytes.Split(head[:len(head)-4], []byte("\r\n"))
	out = make([]byte, 0, len(head)+64)
	ok = true
	for i, l := range lines {
		if i > 0 {
			out = append(out, "\r\n"...)
			switch k, v := headerLine(l); k {
			case hLength:
				addLength(v, &body, &ok)
			case hChunked:
				ok = false
			case hExpect:
				out = append(out, hiddenExpect...)
				out = append(out, ':', ' ')
				out = append(out, v...)
				continue
			}
		}
		out = append(out, l...)
	}
	return append(out, "\r\n\r\n"...), body, ok
}

// restoreExpect gives the handler back the Expect headers expectReader
// renamed.
func restoreExpect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Values(hiddenExpect); len(v) > 0 {
			r.Header.Del(hiddenExpect)
			r.Header["Expect"] = v
		}
		h.ServeHTTP(w, r)
	})
}
