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
	"time"
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

// TestExpectReaderPipelined: many requests in a row, read in pieces of
// every size, come out byte for byte (the header buffers are reused
// between requests), with only the Expect lines renamed.
func TestExpectReaderPipelined(t *testing.T) {
	var in, want strings.Builder
	for i := range 60 {
		body := strings.Repeat(strconv.Itoa(i%10), i*97%5000)
		h := "PUT /b/k" + strconv.Itoa(i) + " HTTP/1.1\r\nHost: h\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n"
		if i%7 == 3 {
			in.WriteString(h + "Expect: odd\r\n\r\n" + body)
			want.WriteString(h + hiddenExpect + ": odd\r\n\r\n" + body)
			continue
		}
		in.WriteString(h + "\r\n" + body)
		want.WriteString(h + "\r\n" + body)
	}
	for _, step := range []int{1, 7, 100, 4095, 4096, 5000, 1 << 20} {
		f := &expectReader{r: iotest.HalfReader(strings.NewReader(in.String())), limit: 1 << 16}
		var got bytes.Buffer
		p := make([]byte, step)
		for {
			n, err := f.Read(p)
			got.Write(p[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if got.String() != want.String() {
			t.Fatalf("reads of %d: output differs (%d bytes, want %d)", step, got.Len(), want.Len())
		}
	}
}

// BenchmarkExpectReader: a keep-alive connection's stream of 4 KiB PUTs
// (warp's wire form) through the Expect filter, as net/http's bufio reads
// it.
func BenchmarkExpectReader(b *testing.B) {
	raw := rawPut(b, "/putbench/obj/00000001.rnd", bytes.Repeat([]byte("x"), 4096), time.Now().UTC())
	src := &repeatReader{data: raw}
	f := &expectReader{r: src, limit: 1 << 20}
	p := make([]byte, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		for left := len(raw); left > 0; {
			n, err := f.Read(p[:min(len(p), left)])
			if err != nil {
				b.Fatal(err)
			}
			left -= n
		}
	}
}

// repeatReader returns data over and over, at most 4 KiB per read.
type repeatReader struct {
	data []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := copy(p[:min(len(p), 4096)], r.data[r.off:])
	r.off = (r.off + n) % len(r.data)
	return n, nil
}
