package http

import (
	"bufio"
	"bytes"
	"io"
	nethttp "net/http"
	"testing"
)

// refAnswer is readAnswer without the fast path: what the endpoint did
// before (net/http's ReadResponse, 1xx skipped, body drained).
func refAnswer(br *bufio.Reader) (int, bool, error) {
	resp, err := nethttp.ReadResponse(br, postRequest)
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != 101 {
		resp, err = nethttp.ReadResponse(br, postRequest)
	}
	if err != nil {
		return 0, false, err
	}
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain+1))
	return resp.StatusCode, err == nil && n <= maxDrain && !resp.Close && resp.StatusCode != 101, nil
}

var answerSeeds = []string{
	"HTTP/1.1 200 OK\r\nDate: Fri, 27 Nov 2026 01:40:00 GMT\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello",
	"HTTP/1.1 204 No Content\r\n\r\n",
	"HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\nabc",
	"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 00\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nContent-Length : 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
	"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\nfail",
	"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\n\r\nbody to the close",
	"HTTP/1.1 200 OK\nContent-Length: 0\n\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
	"HTTP/1.1 2x0 OK\r\n\r\n",
	"HTTP/1.1 200 \xffOK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX-Y: \x01\r\nContent-Length: 0\r\n\r\n",
}

// The fast path answers exactly as ReadResponse did: the same status,
// the same verdict on the connection, the same bytes left for the next
// answer, an error where it gave one.
func TestReadAnswerMatchesReadResponse(t *testing.T) {
	for _, s := range answerSeeds {
		checkAnswer(t, []byte(s))
		checkAnswer(t, []byte(s+answerSeeds[0]))
	}
}

func FuzzReadAnswer(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add([]byte(s + answerSeeds[0]))
	}
	f.Fuzz(checkAnswer)
}

func checkAnswer(t *testing.T, in []byte) {
	br := bufio.NewReader(bytes.NewReader(in))
	code, keep, err := readAnswer(br)
	rest, _ := io.ReadAll(br)
	rbr := bufio.NewReader(bytes.NewReader(in))
	rcode, rkeep, rerr := refAnswer(rbr)
	rrest, _ := io.ReadAll(rbr)
	if (err == nil) != (rerr == nil) {
		t.Fatalf("%q: err %v, ReadResponse %v", in, err, rerr)
	}
	if err != nil {
		return
	}
	if code != rcode || keep != rkeep {
		t.Fatalf("%q: status %d keep %v, ReadResponse %d keep %v", in, code, keep, rcode, rkeep)
	}
	if keep && !bytes.Equal(rest, rrest) {
		t.Fatalf("%q: left %q, ReadResponse left %q", in, rest, rrest)
	}
}

// A plain answer costs no allocation (ReadResponse made ~7).
func TestReadAnswerAllocs(t *testing.T) {
	one := "HTTP/1.1 200 OK\r\nDate: Fri, 27 Nov 2026 01:40:00 GMT\r\nContent-Length: 0\r\n\r\n"
	in := bytes.Repeat([]byte(one), 200)
	r := bytes.NewReader(in)
	br := bufio.NewReader(r)
	allocs := testing.AllocsPerRun(100, func() {
		if code, keep, err := readAnswer(br); code != 200 || !keep || err != nil {
			t.Fatalf("got %d %v %v", code, keep, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per answer, want 0", allocs)
	}
}
