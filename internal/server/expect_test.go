package server

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// TestExpectReader: Expect headers other than 100-continue are renamed in
// header sections only; bodies (which may contain the same bytes),
// pipelined requests, 100-continue and split reads pass unchanged; framing
// it cannot follow turns it into a pass-through.
func TestExpectReader(t *testing.T) {
	body := "x\r\nExpect: nope\r\n\r\n"
	in := "PUT /b/k HTTP/1.1\r\nHost: h\r\nExpect: bogus\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body +
		"GET /b/k HTTP/1.1\r\nHost: h\r\nexpect: 100-continue\r\n\r\n" +
		"GET /b/j HTTP/1.1\r\nEXPECT:  x \r\n\r\n"
	want := strings.Replace(in, "Expect: bogus", hiddenExpect+": bogus", 1)
	want = strings.Replace(want, "EXPECT:  x ", hiddenExpect+": x", 1)
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(in),
		"bytewise": iotest.OneByteReader(strings.NewReader(in)),
		"half":     iotest.HalfReader(strings.NewReader(in)),
		"data+eof": iotest.DataErrReader(strings.NewReader(in)),
	} {
		got, err := io.ReadAll(&expectReader{r: r, limit: 1 << 16})
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v\nwant %q", name, got, err, want)
		}
	}
	// Chunked: from there on everything passes, Expect too.
	chunked := "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\nExpect: bogus\r\n\r\n"
	got, _ := io.ReadAll(&expectReader{r: strings.NewReader(chunked), limit: 1 << 16})
	if string(got) != chunked {
		t.Errorf("chunked: %q", got)
	}
	// An oversized header section passes through whole (net/http answers 431).
	big := "GET / HTTP/1.1\r\nX: " + strings.Repeat("a", 200) + "\r\nExpect: bogus\r\n\r\n"
	got, _ = io.ReadAll(&expectReader{r: strings.NewReader(big), limit: 64})
	if !bytes.Equal(got, []byte(big)) {
		t.Errorf("oversized: %q", got)
	}
}

// errOnce fails its first read (net/http's aborted background read: a
// deadline in the past), then reads r.
type errOnce struct {
	r    io.Reader
	done bool
}

func (e *errOnce) Read(p []byte) (int, error) {
	if !e.done {
		e.done = true
		return 0, os.ErrDeadlineExceeded
	}
	return e.r.Read(p)
}

// TestExpectReaderErrorNotSticky: a read error (a deadline) is returned
// once; the connection reads on afterwards, as net/http expects.
func TestExpectReaderErrorNotSticky(t *testing.T) {
	in := "GET / HTTP/1.1\r\nExpect: bogus\r\n\r\n"
	f := &expectReader{r: &errOnce{r: strings.NewReader(in)}, limit: 1 << 16}
	if _, err := f.Read(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("first read: %v", err)
	}
	got, err := io.ReadAll(f)
	if err != nil || string(got) != strings.Replace(in, "Expect", hiddenExpect, 1) {
		t.Fatalf("after the deadline: %q, %v", got, err)
	}
}
