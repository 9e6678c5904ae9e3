package tests

import (
	"context"
	"encoding/json"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-s3/cairn/internal/testenv"
)

// kafkaPythonConsumer reads n messages of topic from the start with
// kafka-python, the consumer most RGW users run, and prints them as JSON
// lines. kafka-python has no snappy codec unless an extra package is
// installed, so a snappy batch fails here (UnsupportedCodecError). Its idle
// timeout is a net: the gateway's first delivery waits for topic
// auto-creation, which at load average 40 takes far more than seconds.
const kafkaPythonConsumer = `
import json, sys
from kafka import KafkaConsumer
addr, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = KafkaConsumer(topic, bootstrap_servers=addr, auto_offset_reset="earliest",
                  consumer_timeout_ms=240000, enable_auto_commit=False)
got = 0
for m in c:
    print(json.dumps({"key": m.key.decode(), "value": json.loads(m.value)}), flush=True)
    got += 1
    if got >= n:
        break
c.close()
if got < n:
    sys.exit("only %d of %d messages" % (got, n))
`

// TestKafkaRecordsReadableByKafkaPython: a persistent Kafka topic's events
// are produced uncompressed (as RGW's are) and carry RGW's record fields,
// eventSource ceph:s3 included, so a consumer written for RGW reads them.
func TestKafkaRecordsReadableByKafkaPython(t *testing.T) {
	requireTool(t, "python3", "-c", "import kafka")
	b := testenv.NewKafka(t)
	g := StartGateway(t, "--notif-shards", "1", "--notif-scan-interval", "1s")
	out := awsCLI(t, g, "sns", "create-topic", "--name=ktopic",
		`--attributes={"push-endpoint": "kafka://`+b.Addr+`", "persistent": "true", "kafka-ack-level": "broker"}`)
	arn := jsonField(t, out, "TopicArn")
	awsCLI(t, g, "s3api", "create-bucket", "--bucket", "kbk")
	awsCLI(t, g, "s3api", "put-bucket-notification-configuration", "--bucket", "kbk",
		`--notification-configuration={"TopicConfigurations": [{"Id": "kn1", "TopicArn": "`+arn+`", "Events": ["s3:ObjectCreated:*"]}]}`)
	c := sdkClient(g, g.AccessKey, g.SecretKey)
	ctx := context.Background()
	for _, k := range []string{"a.txt", "dir/b c.txt"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("kbk"), Key: aws.String(k),
			Body: strings.NewReader("hello"), Metadata: map[string]string{"color": "red"}}); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	py, err := exec.CommandContext(cctx, "python3", "-c", kafkaPythonConsumer, b.Addr, "ktopic", "2").CombinedOutput()
	if err != nil {
		t.Fatalf("kafka-python consumer: %v\n%s\ngateway log tail:\n%s", err, py, tail(g.Log.String(), 3000))
	}
	var keys []string
	for _, line := range strings.Split(strings.TrimSpace(string(py)), "\n") {
		var m struct {
			Key   string `json:"key"`
			Value struct {
				Records []map[string]any `json:"Records"`
			} `json:"value"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil || len(m.Value.Records) != 1 {
			t.Fatalf("consumer line %q: %v", line, err)
		}
		r := m.Value.Records[0]
		keys = append(keys, m.Key)
		// Every top-level field of RGW's record, with RGW's values where fixed.
		for _, f := range []string{"eventVersion", "eventSource", "awsRegion", "eventTime", "eventName", "userIdentity",
			"requestParameters", "responseElements", "s3", "eventId", "opaqueData"} {
			if _, ok := r[f]; !ok {
				t.Errorf("record lacks %s: %v", f, r)
			}
		}
		if r["eventSource"] != "ceph:s3" || r["eventVersion"] != "2.2" || r["eventName"] != "ObjectCreated:Put" ||
			field(r, "s3", "configurationId") != "kn1" || field(r, "s3", "bucket", "name") != "kbk" {
			t.Errorf("record: %v", r)
		}
		if md, _ := field(r, "s3", "object", "metadata").([]any); len(md) != 1 {
			t.Errorf("metadata %v", field(r, "s3", "object", "metadata"))
		}
	}
	// Order holds per key only (each key's events are pushed one at a
	// time; two keys' pushes run concurrently), so compare as a set.
	sort.Strings(keys)
	if strings.Join(keys, ",") != "kbk/a.txt,kbk/dir/b c.txt" {
		t.Fatalf("message keys %v", keys)
	}
}
