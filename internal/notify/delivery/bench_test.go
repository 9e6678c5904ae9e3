package delivery

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/notify/event"
	"github.com/cairn-s3/cairn/internal/notify/push"
	nq "github.com/cairn-s3/cairn/internal/notify/queue"
	"github.com/cairn-s3/cairn/internal/notify/topic"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cairn-s3/cairn/internal/testenv"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
)

// benchReceiverEnv makes the test binary a receiver process (TestMain).
const benchReceiverEnv = "CAIRN_DELIVERY_BENCH_RECEIVER"

// BenchmarkDeliveryCPU is the delivery side of a persistent HTTP topic in
// CPU time: the real manager, worker, lease ops and pipelined HTTP
// endpoint over a real queue on an embedded store (pebble on disk under
// TMPDIR: put it on /dev/shm), pushing to a Go HTTP receiver that
// acknowledges each POST. The receiver runs in a child process, so
// cpu-µs/op (getrusage of this process per delivered event, GC, pebble's
// background work and the scheduler included) is the gateway's share
// alone; rcv-cpu-µs/op is the receiver's.
//
// backlog: b.N events are committed first (not measured), then delivered:
// lists and removals carry a full window. stream: events are committed
// while delivery runs, at about 4,000 per second (a notified PUT rate of
// the gateway), so lists, pushes and removals carry what a live gateway's
// do; cpu-µs/op then includes the commits, whose own cost the publish
// cell measures alone (same pace, no manager): delivery = stream - publish.
// Run (TMPDIR on /dev/shm):
//
//	go test -c -o dlv.test ./internal/notify/delivery
//	./dlv.test -test.run '^$' -test.bench DeliveryCPU -test.cpu 1 -test.benchtime 10000x
func BenchmarkDeliveryCPU(b *testing.B) {
	rcv := startBenchReceiver(b)
	to := benchTarget{url: rcv.url, stats: rcv.stats}
	for _, mode := range []string{"backlog", "stream", "publish"} {
		for _, shards := range []int{1, 11} {
			b.Run(fmt.Sprintf("%s/shards=%d", mode, shards), func(b *testing.B) {
				benchDelivery(b, to, mode, shards)
			})
		}
	}
}

// BenchmarkDeliveryCPUBroker is BenchmarkDeliveryCPU's backlog and stream
// cells with a Kafka or RabbitMQ endpoint (the tests' shared brokers,
// internal/testenv; skipped when not installed) at the default ack level
// (broker): cpu-µs/op is the gateway side's delivery, the broker client
// included; the broker is another process and not counted.
//
//	./dlv.test -test.run '^$' -test.bench DeliveryCPUBroker -test.cpu 1 -test.benchtime 10000x
func BenchmarkDeliveryCPUBroker(b *testing.B) {
	for _, kind := range []string{"kafka", "amqp"} {
		for _, mode := range []string{"backlog", "stream"} {
			for _, shards := range []int{1, 11} {
				b.Run(fmt.Sprintf("%s/%s/shards=%d", kind, mode, shards), func(b *testing.B) {
					benchDelivery(b, brokerTarget(b, kind), mode, shards)
				})
			}
		}
	}
}

// benchTarget is the endpoint a delivery benchmark pushes to.
type benchTarget struct {
	url   string                                    // the topic's push-endpoint
	mod   func(*topic.Settings)                     // more topic settings, or nil
	extra func(*topic.Topic) (push.Endpoint, error) // non-HTTP endpoints, or nil
	// stats reports the receiver's requests and CPU time; nil for brokers.
	stats func(testing.TB) (posts, cpuNs int64)
}

func brokerTarget(b *testing.B, kind string) benchTarget {
	switch kind {
	case "kafka":
		addr := testenv.StartKafka(b)
		warmKafka(b, addr, "bench") // the Kafka topic is the Cairn topic's name
		return benchTarget{url: "kafka://" + addr, extra: kafkaEndpoint}
	default:
		url := testenv.StartRabbitMQ(b)
		ch := testenv.AMQPChannel(b, url)
		const exchange = "cairn-bench"
		if err := ch.ExchangeDeclare(exchange, "topic", false, false, false, false, nil); err != nil {
			b.Fatal(err)
		}
		return benchTarget{url: url, extra: amqpEndpoint,
			mod: func(s *topic.Settings) { s.AMQPExchange = exchange }}
	}
}

const benchRate = 4000 // events per second in stream and publish cells

func benchDelivery(b *testing.B, to benchTarget, mode string, shards int) {
	e := newEnvOn(b, embedded.Options{Dir: b.TempDir(), FS: vfs.Default})
	tp := e.createTopic("bench", to.url, shards, to.mod)
	data := make([][]byte, b.N)
	for i := range data {
		data[i] = benchRecord(b, i)
	}
	publish := func(i int) {
		key := fmt.Sprintf("obj-%08d", i)
		r, err := e.q.Reserve(e.ctx, nq.Name("", tp.Name), nq.ShardIndex("bk1", key, shards), uint64(len(data[i])))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Commit(e.ctx, data[i]); err != nil {
			b.Fatal(err)
		}
	}
	if mode == "backlog" {
		for i := range b.N {
			publish(i)
		}
	}
	var m *Manager
	reg := prometheus.NewRegistry()
	start := func() {
		var err error
		m, err = New(Config{Owner: "gw1", IO: e.q.IO(), Registry: e.q, Topics: e,
			Endpoints: e.endpoints(to.extra), Registerer: reg, Logger: testLogger()})
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Start(); err != nil {
			b.Fatal(err)
		}
	}
	if mode == "stream" { // leases taken before the clock starts
		start()
		for len(m.Owned()) < shards {
			time.Sleep(time.Millisecond)
		}
	}
	var n0, rc0 int64
	if to.stats != nil {
		n0, rc0 = to.stats(b)
	}
	c0 := cpuTime(b)
	b.ReportAllocs()
	b.ResetTimer()
	switch mode {
	case "backlog":
		start()
	case "stream", "publish":
		// Paced: 4 events per ms tick, caught up after a late tick.
		t0 := time.Now()
		for i := range b.N {
			if i%4 == 0 {
				if d := time.Duration(i) * time.Second / benchRate; time.Since(t0) < d {
					time.Sleep(d - time.Since(t0))
				}
			}
			publish(i)
		}
	}
	if m != nil {
		// Done when every event was acknowledged and removed.
		for m.met.nOK.Load() < int64(b.N) || e.entries(tp) > 0 {
			time.Sleep(2 * time.Millisecond)
		}
	}
	b.StopTimer()
	var n1, rc1 int64
	if to.stats != nil {
		n1, rc1 = to.stats(b)
	}
	b.ReportMetric(float64(cpuTime(b)-c0)/float64(b.N)/1e3, "cpu-µs/op")
	if m != nil {
		if to.stats != nil {
			b.ReportMetric(float64(rc1-rc0)/float64(b.N)/1e3, "rcv-cpu-µs/op")
		}
		ops := counter(b, reg, "cairn_notify_delivery_shard_ops_total", nil)
		b.ReportMetric(float64(b.N)/ops, "events/shard-op")
		for _, op := range []string{"list", "remove", "list_remove"} {
			n := counter(b, reg, "cairn_notify_delivery_shard_ops_total", map[string]string{"op": op})
			b.ReportMetric(n*1000/float64(b.N), op+"-ops/kev")
		}
		b.ReportMetric(float64(b.N)/counter(b, reg, "cairn_notify_delivery_push_exchanges_total", nil), "events/exchange")
		b.ReportMetric(meanLatency(b, reg)*1e3, "lat-ms")
		if got := n1 - n0; to.stats != nil && got < int64(b.N) {
			b.Fatalf("receiver got %d POSTs for %d events", got, b.N)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Stop(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// meanLatency is the mean commit -> acknowledgement time in seconds.
func meanLatency(b *testing.B, reg prometheus.Gatherer) float64 {
	fams, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	var n uint64
	for _, f := range fams {
		if f.GetName() != "cairn_notify_delivery_latency_seconds" {
			continue
		}
		for _, m := range f.Metric {
			sum += m.Histogram.GetSampleSum()
			n += m.Histogram.GetSampleCount()
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// benchRecord is a stored record as the gateway writes it for a 4 KiB PUT
// (~780 bytes).
func benchRecord(b *testing.B, i int) []byte {
	rec := event.New(event.Params{Type: event.ObjectCreatedPut, Time: time.Now(), Region: "default",
		User: "testid", SourceIP: "127.0.0.1", RequestID: fmt.Sprintf("tx%021x-default", i),
		HostID: "4f2a-default-default", Bucket: "bk1", BucketOwner: "testid",
		BucketID: "a3f1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d.4137.1", Key: fmt.Sprintf("obj-%08d", i),
		Size: 4096, ETag: "620f0b67a91f7f74151bc5be745b7110", Sequencer: uint64(i + 1)})
	rec = rec.ForConfiguration("notif1", "")
	data, err := event.Marshal(rec)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// benchReceiver talks to the receiver child: a line on its stdin asks for
// "<posts> <cpu-ns>".
type benchReceiver struct {
	url string
	in  io.Writer
	out *bufio.Reader
}

func startBenchReceiver(b *testing.B) *benchReceiver {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), benchReceiverEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	r := &benchReceiver{in: in, out: bufio.NewReader(out)}
	addr, err := r.out.ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	r.url = "http://" + strings.TrimSpace(addr) + "/events"
	return r
}

func (r *benchReceiver) stats(b testing.TB) (posts, cpuNs int64) {
	if _, err := io.WriteString(r.in, "?\n"); err != nil {
		b.Fatal(err)
	}
	line, err := r.out.ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(line)
	posts, _ = strconv.ParseInt(f[0], 10, 64)
	cpuNs, _ = strconv.ParseInt(f[1], 10, 64)
	return posts, cpuNs
}

// runBenchReceiver is the child: it acknowledges every POST with 200 and
// answers stats requests on stdin until stdin closes.
func runBenchReceiver() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var posts atomic.Int64
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		posts.Add(1)
	}))
	fmt.Println(ln.Addr().String())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		fmt.Println(posts.Load(), ru.Utime.Nano()+ru.Stime.Nano())
	}
	os.Exit(0)
}
