package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"time"
)

// The HTTP receiver: the endpoint of the bench's persistent topics. It
// shares the machine's CPUs with the gateway and the client, so what it
// costs per event lowers every ratio the bench reports (issue 25 asks for
// a receiver whose own cost is small, and reports it as the bench's CPU
// per event). Two servers:
//
//   - raw (default): a minimal HTTP/1.1 loop over each connection, what
//     the gateway's endpoint sends (POSTs with a Content-Length, pipelined,
//     docs/design/delivery.md): every complete request in the read buffer
//     is answered, the answers written in one write. Anything else (chunked
//     bodies, a missing length, a malformed request line) gets a 400 and
//     the connection is closed.
//   - net/http: Go's server, one handler call per POST.
//
// Both read each record's bucket and eventTime by scanning the body
// (scanRecords), falling back to a full JSON decode for a body not in the
// gateway's shape; a body with no record is answered 400.
const (
	ReceiverRaw     = "raw"
	ReceiverNetHTTP = "net/http"
)

// receiver is the HTTP endpoint consuming the events; the broker
// consumers (notify_brokers.go) count into it as well.
type receiver struct {
	url  string
	kind string
	srv  *http.Server // net/http
	ln   net.Listener // raw
	wg   sync.WaitGroup
	cmu  sync.Mutex
	conn map[net.Conn]struct{} // raw: open connections, closed by close

	mu  sync.Mutex
	per map[string]*recvStats
}

type recvStats struct {
	n    int64
	lags []time.Duration
}

func startReceiver(kind string) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rv := &receiver{url: "http://" + ln.Addr().String() + "/", kind: kind, per: map[string]*recvStats{}}
	// Labelled so an --in-process CPU profile separates the roles
	// (go tool pprof -tagfocus role=gateway).
	labels := pprof.Labels("role", "receiver")
	if kind == ReceiverNetHTTP {
		rv.srv = &http.Server{Handler: http.HandlerFunc(rv.serveHTTP), ReadHeaderTimeout: 30 * time.Second}
		go pprof.Do(context.Background(), labels, func(context.Context) { _ = rv.srv.Serve(ln) })
		return rv, nil
	}
	rv.ln, rv.conn = ln, map[net.Conn]struct{}{}
	rv.wg.Add(1)
	go pprof.Do(context.Background(), labels, func(context.Context) {
		defer rv.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			rv.cmu.Lock()
			rv.conn[c] = struct{}{}
			rv.cmu.Unlock()
			rv.wg.Add(1)
			go func() {
				defer rv.wg.Done()
				rv.serveRaw(c)
				rv.cmu.Lock()
				delete(rv.conn, c)
				rv.cmu.Unlock()
			}()
		}
	})
	return rv, nil
}

func (rv *receiver) describe() string {
	if rv.kind == ReceiverNetHTTP {
		return "in-process Go HTTP receiver (net/http) " + rv.url
	}
	return "in-process Go HTTP receiver (raw HTTP/1.1 loop) " + rv.url
}

func (rv *receiver) close() {
	if rv.srv != nil {
		_ = rv.srv.Close()
		return
	}
	_ = rv.ln.Close()
	rv.cmu.Lock()
	for c := range rv.conn {
		_ = c.Close()
	}
	rv.cmu.Unlock()
	rv.wg.Wait()
}

func (rv *receiver) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || !rv.addBody(body, time.Now()) {
		http.Error(w, "not an event message", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusOK)
}

var (
	rawOK  = []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	rawBad = []byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
)

// errRawRequest is a request the raw loop does not serve.
var errRawRequest = errors.New("receiver: unsupported request")

// serveRaw answers c's requests in order until it closes or sends one the
// loop does not serve.
func (rv *receiver) serveRaw(c net.Conn) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 256<<10)
	var out, body []byte
	for {
		n, closeAfter, err := readRawHead(br)
		if err != nil {
			if errors.Is(err, errRawRequest) {
				_, _ = c.Write(append(out, rawBad...))
			} else if len(out) > 0 {
				_, _ = c.Write(out)
			}
			return
		}
		if cap(body) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		if !rv.addBody(body, time.Now()) {
			_, _ = c.Write(append(out, rawBad...))
			return
		}
		out = append(out, rawOK...)
		// Answer once every request already read is answered: a
		// pipelined batch gets one write.
		if closeAfter || br.Buffered() == 0 {
			if _, err := c.Write(out); err != nil || closeAfter {
				return
			}
			out = out[:0]
		}
	}
}

// readRawHead reads a request's line and headers: its body length, and
// whether the client asked to close after it. io.EOF (or a read error)
// when the connection ends between requests.
func readRawHead(br *bufio.Reader) (n int, closeAfter bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if len(line) > 0 && errors.Is(err, io.EOF) {
			return 0, false, errRawRequest
		}
		return 0, false, err
	}
	if !bytes.HasPrefix(line, []byte("POST ")) || !bytes.HasSuffix(line, []byte(" HTTP/1.1\r\n")) {
		return 0, false, errRawRequest
	}
	n = -1
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return 0, false, errRawRequest
			}
			return 0, false, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, val, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return 0, false, errRawRequest
		}
		val = bytes.TrimSpace(val)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			v, err := strconv.Atoi(string(val))
			if err != nil || v < 0 || n >= 0 || v > 64<<20 {
				return 0, false, errRawRequest
			}
			n = v
		case bytes.EqualFold(name, []byte("Transfer-Encoding")), bytes.EqualFold(name, []byte("Expect")):
			return 0, false, errRawRequest
		case bytes.EqualFold(name, []byte("Connection")):
			closeAfter = bytes.EqualFold(val, []byte("close"))
		}
	}
	if n < 0 {
		return 0, false, errRawRequest
	}
	return n, closeAfter, nil
}

// recvMsg is the part of an event message the bench reads (the fallback
// decode).
type recvMsg struct {
	Records []struct {
		EventTime string `json:"eventTime"`
		S3        struct {
			Bucket struct {
				Name string `json:"name"`
			} `json:"bucket"`
		} `json:"s3"`
	} `json:"Records"`
}

// recvRecord is one record's bucket and event time as received.
type recvRecord struct{ bucket, eventTime []byte }

var (
	scanPrefix    = []byte(`{"Records":[`)
	scanEventTime = []byte(`"eventTime":"`)
	scanBucket    = []byte(`"bucket":{"name":"`)
)

// scanRecords appends each record's bucket and eventTime, found by
// scanning a body in the shape the gateway writes (event.AppendMessage:
// the eventTime key before the bucket's name, neither escaped). Inside
// JSON strings a quote is escaped, so the patterns match keys only. ok is
// false for any other body, and recs is then unchanged.
func scanRecords(recs []recvRecord, body []byte) (_ []recvRecord, ok bool) {
	if !bytes.HasPrefix(body, scanPrefix) {
		return recs, false
	}
	n0, rest := len(recs), body[len(scanPrefix):]
	str := func(key []byte) ([]byte, bool) {
		i := bytes.Index(rest, key)
		if i < 0 {
			return nil, false
		}
		rest = rest[i+len(key):]
		j := bytes.IndexByte(rest, '"')
		if j <= 0 || bytes.IndexByte(rest[:j], '\\') >= 0 {
			return nil, false
		}
		v := rest[:j]
		rest = rest[j+1:]
		return v, true
	}
	for {
		t, found := str(scanEventTime)
		if !found {
			break
		}
		b, found := str(scanBucket)
		if !found {
			return recs[:n0], false
		}
		recs = append(recs, recvRecord{bucket: b, eventTime: t})
	}
	return recs, len(recs) > n0
}

// addBody records the records of one message received at now (the HTTP
// receiver's POST body, a Kafka record's value, an AMQP message's body);
// false, counting nothing, when body is not an event message.
func (rv *receiver) addBody(body []byte, now time.Time) bool {
	var buf [4]recvRecord
	recs, ok := scanRecords(buf[:0], body)
	if !ok {
		var msg recvMsg
		if json.Unmarshal(body, &msg) != nil {
			return false
		}
		for _, r := range msg.Records {
			recs = append(recs, recvRecord{bucket: []byte(r.S3.Bucket.Name), eventTime: []byte(r.EventTime)})
		}
		if len(recs) == 0 {
			return false
		}
	}
	rv.mu.Lock()
	defer rv.mu.Unlock()
	for _, r := range recs {
		st := rv.per[string(r.bucket)]
		if st == nil {
			st = &recvStats{}
			rv.per[string(r.bucket)] = st
		}
		st.n++
		if t, err := time.Parse(time.RFC3339Nano, string(r.eventTime)); err == nil {
			st.lags = append(st.lags, now.Sub(t))
		}
	}
	return true
}

func (rv *receiver) count(bucket string) int64 {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if st := rv.per[bucket]; st != nil {
		return st.n
	}
	return 0
}

func (rv *receiver) lag(bucket string) NotifyLag {
	rv.mu.Lock()
	st := rv.per[bucket]
	var lags []time.Duration
	var n int64
	if st != nil {
		lags, n = append([]time.Duration(nil), st.lags...), st.n
	}
	rv.mu.Unlock()
	l := NotifyLag{Events: n}
	if len(lags) == 0 {
		return l
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	ms := func(d time.Duration) float64 { return math.Round(float64(d.Microseconds())/10) / 100 }
	l.P50Ms, l.P99Ms, l.MaxMs = ms(lags[len(lags)/2]), ms(lags[int(0.99*float64(len(lags)-1))]), ms(lags[len(lags)-1])
	return l
}
