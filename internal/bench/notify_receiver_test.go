package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	nhttp "github.com/cairn-s3/cairn/internal/notify/endpoint/http"
	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/push"
)

func gatewayMessage(bucket, key string, at time.Time, meta map[string]string) []byte {
	r := event.New(event.Params{Type: event.ObjectCreatedPut, Time: at, Bucket: bucket, BucketOwner: "o",
		Key: key, Size: 4096, ETag: "abc", Metadata: meta, User: `u"ser`})
	return event.AppendMessage(nil, r)
}

// The scan finds what a full decode finds in the gateway's messages,
// including keys and metadata that spell the patterns inside strings, and
// refuses bodies of another shape instead of miscounting them.
func TestScanRecords(t *testing.T) {
	at := time.Date(2026, 11, 27, 12, 0, 0, 123e6, time.UTC)
	for _, key := range []string{"k", `"eventTime":"x`, `a"bucket":{"name":"evil`, "\\", "ü/\x01"} {
		body := gatewayMessage("b-1", key, at, map[string]string{"x-amz-meta-m": `"bucket":{"name":"m"}`})
		recs, ok := scanRecords(nil, body)
		if !ok || len(recs) != 1 || string(recs[0].bucket) != "b-1" || string(recs[0].eventTime) != "2026-11-27T12:00:00.123Z" {
			t.Fatalf("key %q: ok %v recs %q", key, ok, recs)
		}
	}
	two := event.AppendMessage(nil,
		event.New(event.Params{Type: event.ObjectCreatedPut, Time: at, Bucket: "b1", Key: "a"}),
		event.New(event.Params{Type: event.ObjectRemovedDelete, Time: at.Add(time.Second), Bucket: "b2", Key: "b"}))
	if recs, ok := scanRecords(nil, two); !ok || len(recs) != 2 || string(recs[1].bucket) != "b2" || string(recs[1].eventTime) != "2026-11-27T12:00:01.123Z" {
		t.Fatalf("two records: ok %v %q", ok, recs)
	}
	for _, body := range []string{
		``, `not json`, `{"Records":[]}`, ` {"Records":[{"eventTime":"t","s3":{"bucket":{"name":"b"}}}]}`,
		`{"Records":[{"eventTime":"t","s3":{}}]}`, `{"Records":[{"eventTime":"t","s3":{"bucket":{"name":"b\u0041"}}}]}`,
	} {
		if recs, ok := scanRecords([]recvRecord{{}}, []byte(body)); ok || len(recs) != 1 {
			t.Errorf("%q: ok %v recs %d", body, ok, len(recs))
		}
	}
	// The fallback decode takes what the scan refuses.
	rv := &receiver{per: map[string]*recvStats{}}
	if !rv.addBody([]byte(`{"Records":[{"eventTime":"2026-11-27T12:00:00Z","s3":{"bucket":{"name":"b\u0041"}}}]}`), at) || rv.count("bA") != 1 {
		t.Fatalf("fallback: %d", rv.count("bA"))
	}
	if rv.addBody([]byte(`{"Records":[]}`), at) || rv.addBody([]byte(`{}`), at) {
		t.Fatal("a message without records counted")
	}
}

// The raw receiver serves the gateway's own HTTP endpoint, pipelined
// batches included, and refuses what it does not parse.
func TestRawReceiver(t *testing.T) {
	for _, kind := range []string{ReceiverRaw, ReceiverNetHTTP} {
		t.Run(strings.ReplaceAll(kind, "/", "-"), func(t *testing.T) {
			rv, err := startReceiver(kind)
			if err != nil {
				t.Fatal(err)
			}
			defer rv.close()
			ep, err := nhttp.New(nhttp.Options{URL: rv.url, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer ep.Close()
			now := time.Now()
			var msgs []push.Message
			for i := 0; i < 100; i++ {
				msgs = append(msgs, push.Message{Topic: "t", Key: fmt.Sprintf("b/%d", i), Body: gatewayMessage("b", fmt.Sprint(i), now, nil)})
			}
			for round := 0; round < 3; round++ {
				fails := 0
				ep.PushBatch(context.Background(), msgs, func(i int, err error) {
					if err != nil {
						fails++
						t.Errorf("push %d: %v", i, err)
					}
				})
				if fails > 0 {
					break
				}
			}
			if err := ep.Push(context.Background(), push.Message{Body: gatewayMessage("c", "one", now, nil)}); err != nil {
				t.Fatal(err)
			}
			if n := rv.count("b"); n != 300 || rv.count("c") != 1 {
				t.Fatalf("counted %d and %d, want 300 and 1", n, rv.count("c"))
			}
			if l := rv.lag("b"); l.Events != 300 || l.MaxMs <= 0 {
				t.Fatalf("lag %+v", l)
			}
			if err := ep.Push(context.Background(), push.Message{Body: []byte("not an event")}); err == nil {
				t.Fatal("a body that is no event message was accepted")
			}
			if kind != ReceiverRaw {
				return
			}
			// Two pipelined requests, then one the loop does not serve.
			c, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(rv.url, "/"), "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			body := gatewayMessage("d", "k", now, nil)
			req := fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\ncontent-length: %d\r\n\r\n%s", len(body), body)
			chunked := "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
			if _, err := c.Write([]byte(req + req + chunked)); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			for i, want := range []int{200, 200, 400} {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("answer %d: %v", i, err)
				}
				if resp.StatusCode != want {
					t.Fatalf("answer %d: %d, want %d", i, resp.StatusCode, want)
				}
				resp.Body.Close()
			}
			if _, err := br.ReadByte(); err == nil {
				t.Fatal("connection left open after a refused request")
			}
			if rv.count("d") != 2 {
				t.Fatalf("counted %d of d, want 2", rv.count("d"))
			}
		})
	}
}
