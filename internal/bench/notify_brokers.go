package bench

// Broker endpoints of the notify workload (--endpoint-kind kafka|amqp).
// The persistent topics push to a running Kafka or RabbitMQ instead of the
// in-process HTTP receiver, and the bench consumes the events back from
// the broker into the same per-bucket counts and lags (receiver.add), so
// every table and goal of the report works unchanged. The consumer runs in
// this process: its CPU is the "receiver" CPU of the report.
//
// After a cell's queue drained (every event acknowledged by the broker to
// the gateway), sync waits until the consumer has recorded everything the
// broker holds: for Kafka, until its offsets reach every partition's end
// offset; for AMQP, until a barrier message the bench publishes behind the
// gateway's (already confirmed, so already queued) messages comes back.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Endpoint kinds of the notify workload's persistent topics.
const (
	NotifyEndpointHTTP  = "http"
	NotifyEndpointKafka = "kafka"
	NotifyEndpointAMQP  = "amqp"
)

// DefaultNotifyAMQPExchange is the topic exchange the AMQP kind declares
// and the topics publish to.
const DefaultNotifyAMQPExchange = "cairn-bench"

func (c *NotifyConfig) ensureEndpointDefaults() {
	if c.EndpointKind == "" {
		c.EndpointKind = NotifyEndpointHTTP
	}
	if c.AMQPExchange == "" {
		c.AMQPExchange = DefaultNotifyAMQPExchange
	}
	if c.Receiver == "" {
		c.Receiver = ReceiverRaw
	}
}

func (c *NotifyConfig) endpointProblems() []error {
	var errs []error
	switch c.EndpointKind {
	case NotifyEndpointHTTP:
		if len(c.KafkaBrokers) > 0 || c.AMQPURL != "" {
			errs = append(errs, errors.New("--kafka-brokers and --amqp-url need --endpoint-kind kafka or amqp"))
		}
	case NotifyEndpointKafka:
		if len(c.KafkaBrokers) == 0 {
			errs = append(errs, errors.New("--endpoint-kind kafka needs --kafka-brokers host:port[,...]"))
		}
		for _, b := range c.KafkaBrokers {
			if !strings.Contains(b, ":") || strings.ContainsAny(b, "/@") {
				errs = append(errs, fmt.Errorf("--kafka-brokers: %q is not host:port", b))
			}
		}
	case NotifyEndpointAMQP:
		if c.AMQPURL == "" {
			errs = append(errs, errors.New("--endpoint-kind amqp needs --amqp-url amqp://..."))
		} else if _, err := amqp.ParseURI(c.AMQPURL); err != nil {
			errs = append(errs, fmt.Errorf("--amqp-url: %v", err))
		}
	default:
		errs = append(errs, fmt.Errorf("endpoint kind %q: want http, kafka or amqp", c.EndpointKind))
	}
	if c.Receiver != ReceiverRaw && c.Receiver != ReceiverNetHTTP {
		errs = append(errs, fmt.Errorf("--receiver %q: want %s or %s", c.Receiver, ReceiverRaw, ReceiverNetHTTP))
	}
	return errs
}

// brokerConsumer reads the bench topics' events back from a broker.
type brokerConsumer interface {
	// attrs are the topic attributes (besides persistent) that make the
	// gateway push to the broker.
	attrs() map[string]string
	// describe names the endpoint for the report (no secrets).
	describe() string
	// sync returns once every event the broker acknowledged to the
	// gateway before the call has been recorded.
	sync(ctx context.Context) error
	// batches are the record batches read back per topic (Kafka only).
	batches() []NotifyBatches
	close()
}

// NotifyBatches are the record batches the consumer read from one Kafka
// topic: how many records the gateway's producer put into one batch (the
// broker stores batches as produced). A batch fetched twice counts twice.
type NotifyBatches struct {
	Topic           string  `json:"topic"`
	Batches         int64   `json:"batches"`
	Records         int64   `json:"records"`
	RecordsPerBatch float64 `json:"records_per_batch"`
}

// notifyTopicNames are the names of the 1- and 11-shard topics. With a
// broker the names carry the run's start time: a Kafka topic keeps the
// events of earlier runs, and the consumer reads its topics from the start.
func notifyTopicNames(kind string, start time.Time) (string, string) {
	if kind == NotifyEndpointHTTP {
		return "bench1", "bench11"
	}
	s := strconv.FormatInt(start.Unix(), 36)
	return "bench1-" + s, "bench11-" + s
}

// startBrokerConsumer connects to the configured broker and starts
// consuming topics into rv; nil for the http kind. The client libraries'
// goroutines start here and inherit the receiver's profile label
// (go tool pprof -tagfocus role=receiver).
func startBrokerConsumer(ctx context.Context, cfg *NotifyConfig, rv *receiver, topics []string) (brk brokerConsumer, err error) {
	pprof.Do(ctx, pprof.Labels("role", "receiver"), func(ctx context.Context) {
		switch cfg.EndpointKind {
		case NotifyEndpointKafka:
			var k *kafkaConsumer
			if k, err = startKafkaConsumer(ctx, cfg.KafkaBrokers, topics, rv); err == nil {
				brk = k
			}
		case NotifyEndpointAMQP:
			var a *amqpConsumer
			if a, err = startAMQPConsumer(cfg.AMQPURL, cfg.AMQPExchange, topics, rv); err == nil {
				brk = a
			}
		}
	})
	return brk, err
}

// kafkaConsumer consumes the topics from their start (they are new).
type kafkaConsumer struct {
	brokers []string
	topics  []string
	rv      *receiver
	cl      *kgo.Client
	cancel  context.CancelFunc
	done    chan struct{}

	mu   sync.Mutex
	next map[string]map[int32]int64 // topic → partition → offset after the last recorded record
	bat  map[string]*NotifyBatches
	// lastErr is the last fetch error.
	lastErr error
}

var _ kgo.HookFetchBatchRead = (*kafkaConsumer)(nil)

// OnFetchBatchRead counts the batches read (kgo.HookFetchBatchRead).
func (k *kafkaConsumer) OnFetchBatchRead(_ kgo.BrokerMetadata, topic string, _ int32, m kgo.FetchBatchMetrics) {
	k.mu.Lock()
	defer k.mu.Unlock()
	b := k.bat[topic]
	if b == nil {
		b = &NotifyBatches{Topic: topic}
		k.bat[topic] = b
	}
	b.Batches++
	b.Records += int64(m.NumRecords)
}

func (k *kafkaConsumer) batches() []NotifyBatches {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []NotifyBatches
	for _, t := range k.topics {
		if b := k.bat[t]; b != nil && b.Batches > 0 {
			x := *b
			x.RecordsPerBatch = math.Round(float64(x.Records)/float64(x.Batches)*100) / 100
			out = append(out, x)
		}
	}
	return out
}

func startKafkaConsumer(ctx context.Context, brokers, topics []string, rv *receiver) (*kafkaConsumer, error) {
	k := &kafkaConsumer{brokers: brokers, topics: topics, rv: rv, done: make(chan struct{}),
		next: map[string]map[int32]int64{}, bat: map[string]*NotifyBatches{}}
	cl, err := kgo.NewClient(
		kgo.WithHooks(k),
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Creates the topics now (as the gateway's producer would), so the
		// consumer owns their partitions before the first event.
		kgo.AllowAutoTopicCreation(),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		return nil, fmt.Errorf("kafka consumer: %w", err)
	}
	// Fail early on an unreachable broker rather than in the first cell.
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = cl.Ping(pctx)
	cancel()
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("kafka consumer: brokers %v: %w", brokers, err)
	}
	cctx, stop := context.WithCancel(context.Background())
	k.cl, k.cancel = cl, stop
	go k.run(cctx)
	return k, nil
}

func (k *kafkaConsumer) run(ctx context.Context) {
	defer close(k.done)
	for {
		fs := k.cl.PollFetches(ctx)
		if fs.IsClientClosed() || ctx.Err() != nil {
			return
		}
		// Usually transient (a topic still being created); kept for sync's
		// error should the consumer never catch up.
		fs.EachError(func(t string, p int32, err error) {
			k.mu.Lock()
			k.lastErr = fmt.Errorf("%s[%d]: %w", t, p, err)
			k.mu.Unlock()
		})
		now := time.Now()
		type pos struct {
			t string
			p int32
			o int64
		}
		var ends []pos
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) == 0 {
				return
			}
			for _, r := range p.Records {
				k.rv.addBody(r.Value, now)
			}
			ends = append(ends, pos{p.Topic, p.Partition, p.Records[len(p.Records)-1].Offset + 1})
		})
		k.mu.Lock()
		for _, e := range ends {
			if k.next[e.t] == nil {
				k.next[e.t] = map[int32]int64{}
			}
			k.next[e.t][e.p] = e.o
		}
		k.mu.Unlock()
	}
}

func (k *kafkaConsumer) attrs() map[string]string {
	return map[string]string{"push-endpoint": "kafka://" + strings.Join(k.brokers, ","), "kafka-ack-level": "broker"}
}

func (k *kafkaConsumer) describe() string {
	return "kafka://" + strings.Join(k.brokers, ",") + " (kafka-ack-level broker; bench consumer: franz-go)"
}

// sync waits until the consumer reached every partition's end offset as
// the broker reported it when sync began.
func (k *kafkaConsumer) sync(ctx context.Context) error {
	end, err := k.endOffsets(ctx)
	if err != nil {
		return err
	}
	for {
		k.mu.Lock()
		behind := ""
		for t, ps := range end {
			for p, o := range ps {
				if k.next[t][p] < o {
					behind = fmt.Sprintf("%s[%d] at %d of %d", t, p, k.next[t][p], o)
				}
			}
		}
		if behind != "" && k.lastErr != nil {
			behind += "; last fetch error: " + k.lastErr.Error()
		}
		k.mu.Unlock()
		if behind == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafka consumer behind (%s): %w", behind, ctx.Err())
		case <-k.done:
			return errors.New("kafka consumer stopped")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// endOffsets asks the brokers for the end (high watermark) of every
// partition of the topics.
func (k *kafkaConsumer) endOffsets(ctx context.Context) (map[string]map[int32]int64, error) {
	mreq := kmsg.NewPtrMetadataRequest()
	for _, t := range k.topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		mreq.Topics = append(mreq.Topics, rt)
	}
	mresp, err := mreq.RequestWith(ctx, k.cl)
	if err != nil {
		return nil, fmt.Errorf("kafka metadata: %w", err)
	}
	lreq := kmsg.NewPtrListOffsetsRequest()
	lreq.ReplicaID = -1
	for _, mt := range mresp.Topics {
		if mt.Topic == nil {
			continue
		}
		if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				continue // nothing produced to it
			}
			return nil, fmt.Errorf("kafka metadata %s: %w", *mt.Topic, err)
		}
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = *mt.Topic
		for _, p := range mt.Partitions {
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Partition = p.Partition
			lp.Timestamp = -1 // latest
			lt.Partitions = append(lt.Partitions, lp)
		}
		lreq.Topics = append(lreq.Topics, lt)
	}
	end := map[string]map[int32]int64{}
	if len(lreq.Topics) == 0 {
		return end, nil
	}
	lresp, err := lreq.RequestWith(ctx, k.cl)
	if err != nil {
		return nil, fmt.Errorf("kafka list offsets: %w", err)
	}
	for _, t := range lresp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("kafka list offsets %s[%d]: %w", t.Topic, p.Partition, err)
			}
			if end[t.Topic] == nil {
				end[t.Topic] = map[int32]int64{}
			}
			end[t.Topic][p.Partition] = p.Offset
		}
	}
	return end, nil
}

func (k *kafkaConsumer) close() {
	k.cancel()
	k.cl.Close()
	<-k.done
}

// amqpBarrierType marks the bench's own barrier messages.
const amqpBarrierType = "cairn-bench-barrier"

// amqpConsumer binds one exclusive queue to the exchange for every topic
// (routing key = topic name, as the gateway publishes) and consumes it
// with automatic acknowledgement.
type amqpConsumer struct {
	url, exchange string
	topics        []string
	rv            *receiver
	conn          *amqp.Connection
	pub           *amqp.Channel
	done          chan struct{}

	mu       sync.Mutex
	seq      uint64
	barriers map[string]chan struct{}
}

func startAMQPConsumer(rawURL, exchange string, topics []string, rv *receiver) (*amqpConsumer, error) {
	conn, err := amqp.DialConfig(rawURL, amqp.Config{Dial: amqp.DefaultDial(30 * time.Second), Heartbeat: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("amqp consumer: %s: %w", redactAMQP(rawURL), err)
	}
	a := &amqpConsumer{url: rawURL, exchange: exchange, topics: topics, rv: rv, conn: conn, done: make(chan struct{}),
		barriers: map[string]chan struct{}{}}
	fail := func(err error) (*amqpConsumer, error) {
		conn.Close()
		return nil, fmt.Errorf("amqp consumer: %w", err)
	}
	ch, err := conn.Channel()
	if err != nil {
		return fail(err)
	}
	// The endpoint publishes to an existing topic exchange; a durable one,
	// as an operator would declare it.
	if err := ch.ExchangeDeclare(exchange, "topic", true, false, false, false, nil); err != nil {
		return fail(fmt.Errorf("declare exchange %s: %w", exchange, err))
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		return fail(err)
	}
	for _, t := range topics {
		if err := ch.QueueBind(q.Name, t, exchange, false, nil); err != nil {
			return fail(err)
		}
	}
	deliveries, err := ch.Consume(q.Name, "cairn-bench", true, true, false, false, nil)
	if err != nil {
		return fail(err)
	}
	if a.pub, err = conn.Channel(); err != nil {
		return fail(err)
	}
	go a.run(deliveries)
	return a, nil
}

func (a *amqpConsumer) run(deliveries <-chan amqp.Delivery) {
	defer close(a.done)
	for d := range deliveries {
		if d.Type == amqpBarrierType {
			a.mu.Lock()
			if c := a.barriers[d.MessageId]; c != nil {
				close(c)
				delete(a.barriers, d.MessageId)
			}
			a.mu.Unlock()
			continue
		}
		a.rv.addBody(d.Body, time.Now())
	}
}

func (a *amqpConsumer) batches() []NotifyBatches { return nil }

func (a *amqpConsumer) attrs() map[string]string {
	return map[string]string{"push-endpoint": amqpEndpointURL(a.url), "amqp-exchange": a.exchange, "amqp-ack-level": "broker"}
}

func (a *amqpConsumer) describe() string {
	return redactAMQP(a.url) + " (exchange " + a.exchange + ", amqp-ack-level broker; bench consumer: amqp091-go)"
}

// sync publishes a barrier behind the gateway's messages: they were
// confirmed, so they are queued already, and the queue is FIFO.
func (a *amqpConsumer) sync(ctx context.Context) error {
	a.mu.Lock()
	a.seq++
	id := strconv.FormatUint(a.seq, 10)
	c := make(chan struct{})
	a.barriers[id] = c
	a.mu.Unlock()
	err := a.pub.PublishWithContext(ctx, a.exchange, a.topics[0], false, false,
		amqp.Publishing{Type: amqpBarrierType, MessageId: id})
	if err != nil {
		return fmt.Errorf("amqp barrier: %w", err)
	}
	select {
	case <-c:
		return nil
	case <-a.done:
		return errors.New("amqp consumer stopped")
	case <-ctx.Done():
		return fmt.Errorf("amqp barrier did not come back: %w", ctx.Err())
	}
}

func (a *amqpConsumer) close() {
	_ = a.conn.Close()
	<-a.done
}

// amqpEndpointURL drops RabbitMQ's default guest:guest from the topic's
// push-endpoint (the endpoint uses it when the URL names no user): the
// gateway refuses endpoint secrets over plain HTTP.
func amqpEndpointURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if pw, _ := u.User.Password(); u.User.Username() == "guest" && pw == "guest" {
		u.User = nil
	}
	return u.String()
}

// amqpHasSecret: the push-endpoint still carries a password, so the
// gateway must accept endpoint secrets over plain HTTP (loopback only).
func amqpHasSecret(raw string) bool {
	u, err := url.Parse(amqpEndpointURL(raw))
	if err != nil || u.User == nil {
		return false
	}
	_, ok := u.User.Password()
	return ok
}

func redactAMQP(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "amqp://(unparsable)"
	}
	return u.Redacted()
}

// topicAttrs are the attributes of a bench topic: persistent, pushing to
// the receiver or the broker. Sorted for a stable request.
func topicAttrs(rv *receiver, brk brokerConsumer) url.Values {
	a := map[string]string{"push-endpoint": rv.url}
	if brk != nil {
		a = brk.attrs()
	}
	a["persistent"] = "true"
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	form := url.Values{}
	for i, k := range keys {
		n := strconv.Itoa(i + 1)
		form.Set("Attributes.entry."+n+".key", k)
		form.Set("Attributes.entry."+n+".value", a[k])
	}
	return form
}

// notifyGatewayExtra are gateway flags the endpoint kind needs.
func notifyGatewayExtra(cfg *NotifyConfig) []string {
	if cfg.EndpointKind == NotifyEndpointAMQP && amqpHasSecret(cfg.AMQPURL) {
		// The bench's gateway listens on 127.0.0.1 only.
		return []string{"--allow-insecure-endpoint-secrets"}
	}
	return nil
}
