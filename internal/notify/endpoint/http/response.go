package http

import (
	"bufio"
	"bytes"
	"io"
	nethttp "net/http"
)

// readAnswer reads one final response from br and drains its body. It
// returns the status and whether the connection can carry another
// exchange (net/http's rules: not Connection: close, not 101, a body of
// at most maxDrain bytes). Interim 1xx answers are skipped.
//
// The common answer (HTTP/1.1, a Content-Length or no body, plain headers,
// all of it buffered) is parsed in place without allocating: net/http's
// ReadResponse builds a Response, a header map and strings for every
// answer, ~7 allocations of a pushed event's ~30. Anything else goes to
// ReadResponse. The fast path only peeks until it has accepted the whole
// answer, so the fallback sees the same bytes.
func readAnswer(br *bufio.Reader) (status int, keep bool, err error) {
	if status, n, keep, ok := peekAnswer(br); ok {
		_, err := br.Discard(n)
		return status, keep && err == nil, err
	}
	resp, err := nethttp.ReadResponse(br, postRequest)
	// 1xx answers are interim (no body); the final one follows. 101
	// Switching Protocols is final, and not a 2xx.
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != 101 {
		resp, err = nethttp.ReadResponse(br, postRequest)
	}
	if err != nil {
		return 0, false, err
	}
	// Drain a little so the connection can be reused: io.Copy ends
	// without error at the body's EOF.
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain+1))
	return resp.StatusCode, err == nil && n <= maxDrain && !resp.Close && resp.StatusCode != 101, nil
}

// peekAnswer parses a buffered answer that needs nothing of net/http's:
// "HTTP/1.1 ddd[ reason]", header lines of token names and plain values,
// at most one Content-Length, no Transfer-Encoding, a status of 200 or
// above, and a body (Content-Length, or none for 204 and 304) that is
// buffered too. It returns the answer's length n; ok false means "use
// ReadResponse" and consumes nothing.
func peekAnswer(br *bufio.Reader) (status, n int, keep, ok bool) {
	if br.Buffered() == 0 {
		if _, err := br.Peek(1); err != nil {
			return 0, 0, false, false
		}
	}
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 || len(buf) < 13 || string(buf[:9]) != "HTTP/1.1 " {
		return 0, 0, false, false
	}
	for _, c := range buf[9:12] {
		if c < '0' || c > '9' {
			return 0, 0, false, false
		}
		status = status*10 + int(c-'0')
	}
	if status < 200 || (buf[12] != ' ' && buf[12] != '\r') {
		return 0, 0, false, false
	}
	line := bytes.IndexByte(buf, '\n') + 1 // the status line ends before end
	if buf[line-2] != '\r' || !plainValue(buf[12:line-2]) {
		return 0, 0, false, false
	}
	keep, length := true, -1
	for line < end+2 {
		eol := line + bytes.IndexByte(buf[line:], '\n')
		if buf[eol-1] != '\r' {
			return 0, 0, false, false
		}
		h := buf[line : eol-1]
		line = eol + 1
		colon := bytes.IndexByte(h, ':')
		if colon <= 0 || !token(h[:colon]) {
			return 0, 0, false, false
		}
		name, v := h[:colon], bytes.Trim(h[colon+1:], " \t")
		if !plainValue(v) {
			return 0, 0, false, false
		}
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length >= 0 || len(v) == 0 || len(v) > 9 {
				return 0, 0, false, false
			}
			length = 0
			for _, c := range v {
				if c < '0' || c > '9' {
					return 0, 0, false, false
				}
				length = length*10 + int(c-'0')
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return 0, 0, false, false
		case bytes.EqualFold(name, []byte("Connection")):
			if closeToken(v) {
				keep = false
			}
		}
	}
	noBody := status == nethttp.StatusNoContent || status == nethttp.StatusNotModified
	if noBody && length > 0 {
		return 0, 0, false, false // net/http reads no body: let it decide
	}
	if length < 0 {
		if !noBody {
			return 0, 0, false, false // the body runs to the close
		}
		length = 0
	}
	if length > maxDrain {
		return 0, 0, false, false
	}
	n = end + 4 + length
	if n > len(buf) {
		return 0, 0, false, false
	}
	return status, n, keep, true
}

// token reports whether b is a non-empty RFC 9110 token.
func token(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || bytes.IndexByte([]byte(`"(),/:;<=>?@[\]{}`), c) >= 0 {
			return false
		}
	}
	return len(b) > 0
}

// plainValue reports whether b has no control characters other than tab
// (nor obs-text, which net/http would keep as is: not worth a fast path).
func plainValue(b []byte) bool {
	for _, c := range b {
		if (c < ' ' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// closeToken reports whether a Connection value lists "close".
func closeToken(v []byte) bool {
	for len(v) > 0 {
		var t []byte
		t, v, _ = bytes.Cut(v, []byte(","))
		if bytes.EqualFold(bytes.Trim(t, " \t"), []byte("close")) {
			return true
		}
	}
	return false
}
