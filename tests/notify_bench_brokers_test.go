package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cairn-s3/cairn/internal/testenv"
)

// `cairn bench notify --endpoint-kind kafka|amqp` against a real broker, in
// one tiny cell per mode: the persistent topic pushes to the broker, the
// bench consumes the events back, and every acknowledged PUT's event
// arrives (the brokers start one after the other, each stopped when its
// subtest ends).
func TestBenchNotifyBrokers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts brokers")
	}
	for _, kind := range []string{"kafka", "amqp"} {
		t.Run(kind, func(t *testing.T) {
			var flags []string
			if kind == "kafka" {
				flags = []string{"--kafka-brokers", testenv.NewKafka(t).Addr}
			} else {
				flags = []string{"--amqp-url", testenv.NewRabbitMQ(t).URL}
			}
			dir := t.TempDir()
			out := filepath.Join(dir, "notify-"+kind+".json")
			const concurrency = 4
			cmd := exec.Command(cairnBin, append([]string{"bench", "notify", "--endpoint-kind", kind,
				"--rounds", "1", "--duration", "2s", "--soak", "-1s", "--modes", "none,shards=1", "--sizes", "4KiB",
				"--ops", "put", "--concurrency", "4", "--data-dir", dir, "--json", out}, flags...)...)
			cmd.Env = os.Environ()
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("bench notify: %v\n%s", err, tail(string(b), 4000))
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				EndpointKind string `json:"endpoint_kind"`
				Endpoint     string `json:"endpoint"`
				Cells        []struct {
					Mode    string `json:"mode"`
					Topic   string `json:"topic"`
					Drained bool   `json:"drained"`
					S3      struct {
						Ops    int64 `json:"ops"`
						Errors int64 `json:"errors"`
					} `json:"s3"`
					Lag struct {
						Events int64   `json:"events"`
						P50Ms  float64 `json:"p50_ms"`
					} `json:"lag"`
				} `json:"cells"`
				KafkaBatches []struct {
					Topic   string `json:"topic"`
					Batches int64  `json:"batches"`
					Records int64  `json:"records"`
				} `json:"kafka_batches"`
			}
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if r.EndpointKind != kind || r.Endpoint == "" || len(r.Cells) != 2 {
				t.Fatalf("result %s", b)
			}
			for _, c := range r.Cells {
				if c.S3.Ops == 0 || c.S3.Errors != 0 {
					t.Fatalf("cell %+v", c)
				}
				if c.Mode == "none" {
					if c.Lag.Events != 0 {
						t.Fatalf("none cell got %d events", c.Lag.Events)
					}
					continue
				}
				// Every acknowledged PUT's event came back from the broker;
				// requests cut off by the deadline are not counted but may
				// have succeeded: up to concurrency more.
				if !c.Drained || c.Lag.Events < c.S3.Ops || c.Lag.Events > c.S3.Ops+concurrency || c.Lag.P50Ms <= 0 {
					t.Fatalf("cell %s (topic %s): %d events for %d acknowledged PUTs, drained %v, lag p50 %v ms",
						c.Mode, c.Topic, c.Lag.Events, c.S3.Ops, c.Drained, c.Lag.P50Ms)
				}
			}
			// Kafka: the consumer saw the shards=1 topic's records in
			// batches (the one cell's events, one topic per mode).
			if kind == "kafka" {
				var ok bool
				for _, c := range r.Cells {
					for _, kb := range r.KafkaBatches {
						ok = ok || c.Mode == "shards=1" && kb.Topic == c.Topic && kb.Batches > 0 && kb.Records >= c.Lag.Events
					}
				}
				if !ok {
					t.Fatalf("kafka batches %+v for cells %+v", r.KafkaBatches, r.Cells)
				}
			}
			t.Logf("%s: %s; kafka batches %+v", kind, r.Endpoint, r.KafkaBatches)
		})
	}
}
