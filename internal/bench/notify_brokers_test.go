package bench

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The broker kinds' configuration: each kind needs its broker and refuses
// the other kind's, topics point at the broker with RGW's attributes, and
// RabbitMQ's default credentials stay out of the push-endpoint.
func TestNotifyEndpointKinds(t *testing.T) {
	for _, tc := range []struct {
		cfg  NotifyConfig
		want string // substring of the error; "" = valid
	}{
		{NotifyConfig{}, ""},
		{NotifyConfig{EndpointKind: "kafka", KafkaBrokers: []string{"127.0.0.1:9092"}}, ""},
		{NotifyConfig{EndpointKind: "amqp", AMQPURL: "amqp://guest:guest@127.0.0.1:5672/"}, ""},
		{NotifyConfig{EndpointKind: "kafka"}, "needs --kafka-brokers"},
		{NotifyConfig{EndpointKind: "kafka", KafkaBrokers: []string{"kafka://h:1"}}, "not host:port"},
		{NotifyConfig{EndpointKind: "amqp"}, "needs --amqp-url"},
		{NotifyConfig{EndpointKind: "amqp", AMQPURL: "http://h/"}, "--amqp-url"},
		{NotifyConfig{AMQPURL: "amqp://h/"}, "need --endpoint-kind"},
		{NotifyConfig{EndpointKind: "sqs"}, `endpoint kind "sqs"`},
	} {
		tc.cfg.InProcess = true
		err := tc.cfg.EnsureDefaults().Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if k := (&NotifyConfig{}).EnsureDefaults(); k.EndpointKind != "http" || k.AMQPExchange != "cairn-bench" {
		t.Fatalf("defaults %q %q", k.EndpointKind, k.AMQPExchange)
	}

	rv := &receiver{url: "http://127.0.0.1:1/", per: map[string]*recvStats{}}
	k := &kafkaConsumer{brokers: []string{"127.0.0.1:1", "127.0.0.1:2"}}
	a := &amqpConsumer{url: "amqp://guest:guest@127.0.0.1:3/", exchange: "ex"}
	for _, tc := range []struct {
		brk  brokerConsumer
		want string
	}{
		{nil, "persistent=true push-endpoint=http://127.0.0.1:1/"},
		{k, "kafka-ack-level=broker persistent=true push-endpoint=kafka://127.0.0.1:1,127.0.0.1:2"},
		{a, "amqp-ack-level=broker amqp-exchange=ex persistent=true push-endpoint=amqp://127.0.0.1:3/"},
	} {
		f := topicAttrs(rv, tc.brk)
		var got []string
		for i := 1; f.Get("Attributes.entry."+itoa(i)+".key") != ""; i++ {
			got = append(got, f.Get("Attributes.entry."+itoa(i)+".key")+"="+f.Get("Attributes.entry."+itoa(i)+".value"))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("attrs %v, want %s", got, tc.want)
		}
	}
	if d := a.describe(); strings.Contains(d, "guest:guest") {
		t.Errorf("describe shows the password: %s", d)
	}
	// Other credentials stay, and the gateway must then accept them over
	// plain HTTP.
	for url, secret := range map[string]bool{"amqp://guest:guest@h/": false, "amqp://h/": false, "amqp://u:p@h/": true} {
		cfg := &NotifyConfig{EndpointKind: "amqp", AMQPURL: url}
		if got := len(notifyGatewayExtra(cfg)) > 0; got != secret || amqpHasSecret(url) != secret {
			t.Errorf("%s: extra flags %v, want secret %v", url, notifyGatewayExtra(cfg), secret)
		}
	}
	if n1, n11 := notifyTopicNames("http", time.Now()); n1 != "bench1" || n11 != "bench11" {
		t.Fatal(n1, n11)
	}
	// A broker keeps earlier runs' events: every run has its own topics.
	a1, _ := notifyTopicNames("kafka", time.Unix(1000, 0))
	a2, _ := notifyTopicNames("kafka", time.Unix(1001, 0))
	if a1 == a2 || !strings.HasPrefix(a1, "bench1-") {
		t.Fatal(a1, a2)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// A broker message body counts as the HTTP receiver's POST does: per
// bucket, with its lag; a body that is no event message counts nothing.
func TestReceiverAddBody(t *testing.T) {
	rv := &receiver{per: map[string]*recvStats{}}
	now := time.Date(2026, 11, 26, 12, 0, 1, 0, time.UTC)
	rv.addBody([]byte(`{"Records":[{"eventTime":"2026-11-26T12:00:00.000Z","s3":{"bucket":{"name":"b1"}}}]}`), now)
	rv.addBody([]byte(`{"Records":[{"eventTime":"2026-11-26T12:00:00.500Z","s3":{"bucket":{"name":"b1"}}},`+
		`{"eventTime":"bad","s3":{"bucket":{"name":"b2"}}}]}`), now)
	rv.addBody([]byte(`not json`), now)
	rv.addBody(nil, now)
	if rv.count("b1") != 2 || rv.count("b2") != 1 {
		t.Fatalf("counts b1 %d b2 %d", rv.count("b1"), rv.count("b2"))
	}
	if l := rv.lag("b1"); l.Events != 2 || l.MaxMs != 1000 || l.P50Ms != 1000 {
		t.Fatalf("lag %+v", l)
	}
	if l := rv.lag("b2"); l.Events != 1 || l.MaxMs != 0 {
		t.Fatalf("lag %+v", l)
	}
}

// The report names the endpoint kind, and the receiver column becomes the
// consumer's.
func TestNotifyMarkdownKind(t *testing.T) {
	md := NotifyMarkdown(&NotifyResult{EndpointKind: "kafka", Endpoint: "kafka://127.0.0.1:1",
		KafkaBatches: []NotifyBatches{{Topic: "bench1-x", Batches: 4, Records: 50, RecordsPerBatch: 12.5}}})
	for _, want := range []string{"Endpoint kind **kafka**: kafka://127.0.0.1:1", "(kafka endpoint)", "consumer µs CPU/event",
		"| bench1-x | 50 | 4 | 12.5 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if md := NotifyMarkdown(&NotifyResult{}); !strings.Contains(md, "(http endpoint)") || !strings.Contains(md, "receiver µs CPU/event") {
		t.Errorf("old result:\n%s", md)
	}
}

// The consumer's batch hook sums per topic and reports the run's topics
// only, in their order.
func TestKafkaBatchCount(t *testing.T) {
	k := &kafkaConsumer{topics: []string{"t1", "t11"}, bat: map[string]*NotifyBatches{}}
	for _, n := range []int{10, 14} {
		k.OnFetchBatchRead(kgo.BrokerMetadata{}, "t11", 0, kgo.FetchBatchMetrics{NumRecords: n})
	}
	k.OnFetchBatchRead(kgo.BrokerMetadata{}, "t1", 2, kgo.FetchBatchMetrics{NumRecords: 3})
	k.OnFetchBatchRead(kgo.BrokerMetadata{}, "other", 0, kgo.FetchBatchMetrics{NumRecords: 3})
	got := k.batches()
	if len(got) != 2 || got[0] != (NotifyBatches{"t1", 1, 3, 3}) || got[1] != (NotifyBatches{"t11", 2, 24, 12}) {
		t.Fatalf("batches %+v", got)
	}
}

// An unreachable broker fails the run at the start, with no consumer left
// behind (not a nil pointer inside the interface).
func TestBrokerConsumerUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	rv := &receiver{per: map[string]*recvStats{}}
	for _, cfg := range []NotifyConfig{
		{EndpointKind: "kafka", KafkaBrokers: []string{addr}},
		{EndpointKind: "amqp", AMQPURL: "amqp://" + addr + "/", AMQPExchange: "ex"},
	} {
		brk, err := startBrokerConsumer(context.Background(), &cfg, rv, []string{"t1"})
		if err == nil || brk != nil {
			t.Errorf("%s: consumer %v, error %v", cfg.EndpointKind, brk, err)
		}
	}
	if brk, err := startBrokerConsumer(context.Background(), &NotifyConfig{EndpointKind: "http"}, rv, nil); brk != nil || err != nil {
		t.Errorf("http: %v %v", brk, err)
	}
}
