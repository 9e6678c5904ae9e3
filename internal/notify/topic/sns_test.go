package topic

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sampleTopic(t *testing.T, name string) *Topic {
	t.Helper()
	s := mustParse(t, map[string]string{"push-endpoint": "kafka://127.0.0.1:9092", "persistent": "true",
		"OpaqueData": "me@example.com", "max_retries": "5"}, Options{})
	return New(ARN{"default", "", name}, "alice", s, 11, time.Unix(0, 0))
}

func TestSNSXMLShapes(t *testing.T) {
	tp := sampleTopic(t, "fishtopic")
	got := string(CreateTopicResponse(tp.ARN, "req1"))
	want := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<CreateTopicResponse xmlns="https://sns.amazonaws.com/doc/2010-03-31/"><CreateTopicResult>` +
		`<TopicArn>arn:aws:sns:default::fishtopic</TopicArn></CreateTopicResult>` +
		`<ResponseMetadata><RequestId>req1</RequestId></ResponseMetadata></CreateTopicResponse>`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	got = string(DeleteTopicResponse("r"))
	if !strings.Contains(got, `<DeleteTopicResponse xmlns="https://sns.amazonaws.com/doc/2010-03-31/"><ResponseMetadata><RequestId>r</RequestId>`) {
		t.Fatal(got)
	}
	got = string(ErrorResponse(NotFound(tp.ARN), "r"))
	if !strings.Contains(got, `<ErrorResponse xmlns="https://sns.amazonaws.com/doc/2010-03-31/"><Error><Type>Sender</Type><Code>NotFound</Code>`) {
		t.Fatal(got)
	}
	got = string(ListTopicsResponse(nil, "", "r"))
	if !strings.Contains(got, `<ListTopicsResult><Topics></Topics></ListTopicsResult>`) {
		t.Fatal(got)
	}
	got = string(GetTopicResponse(tp, "r"))
	for _, s := range []string{"<GetTopicResult><Topic><User>alice</User><Name>fishtopic</Name><EndPoint>",
		"<EndpointAddress>kafka://127.0.0.1:9092</EndpointAddress>", "<Persistent>true</Persistent>",
		"<MaxRetries>5</MaxRetries>", "<TimeToLive>None</TimeToLive>"} {
		if !strings.Contains(got, s) {
			t.Errorf("GetTopic lacks %s:\n%s", s, got)
		}
	}
}

// botocoreScript parses each file with botocore's query parser against the
// real sns service model and prints the parsed dicts as JSON.
const botocoreScript = `
import json, sys
import botocore.session, botocore.parsers
model = botocore.session.get_session().get_service_model('sns')
out = {}
for arg in sys.argv[1:]:
    op, path = arg.split('=', 1)
    body = open(path, 'rb').read()
    status = 400 if op == 'Error' else 200
    shape = None if op == 'Error' else model.operation_model(op).output_shape
    parsed = botocore.parsers.QueryParser().parse({'body': body, 'headers': {}, 'status_code': status}, shape)
    parsed.pop('ResponseMetadata', None)
    out[op] = parsed
print(json.dumps(out))
`

// The responses parse with botocore, which boto3 and `aws sns` use.
func TestSNSXMLBotocore(t *testing.T) {
	if err := exec.Command("python3", "-c", "import botocore").Run(); err != nil {
		t.Skip("python3 with botocore not available")
	}
	dir := t.TempDir()
	t1, t2 := sampleTopic(t, "t1"), sampleTopic(t, "t2")
	files := map[string][]byte{
		"CreateTopic":        CreateTopicResponse(t1.ARN, "r"),
		"GetTopicAttributes": GetTopicAttributesResponse(t1, "r"),
		"ListTopics":         ListTopicsResponse([]*Topic{t1, t2}, "tok2", "r"),
		"DeleteTopic":        DeleteTopicResponse("r"),
		"SetTopicAttributes": SetTopicAttributesResponse("r"),
		"Error":              ErrorResponse(invalid("bad thing"), "r"),
	}
	args := []string{"-c", botocoreScript}
	for op, b := range files {
		p := filepath.Join(dir, op+".xml")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, op+"="+p)
	}
	out, err := exec.Command("python3", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("botocore: %v\n%s", err, out)
	}
	var got map[string]map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got["CreateTopic"]["TopicArn"] != "arn:aws:sns:default::t1" {
		t.Errorf("CreateTopic: %v", got["CreateTopic"])
	}
	attrs, _ := got["GetTopicAttributes"]["Attributes"].(map[string]any)
	if attrs["TopicArn"] != t1.ARN || attrs["OpaqueData"] != "me@example.com" || attrs["push-endpoint"] != "kafka://127.0.0.1:9092" ||
		attrs["persistent"] != "true" || attrs["User"] != "alice" {
		t.Errorf("GetTopicAttributes: %v", got["GetTopicAttributes"])
	}
	var ep map[string]any
	if s, _ := attrs["EndPoint"].(string); json.Unmarshal([]byte(s), &ep) != nil || ep["Persistent"] != true {
		t.Errorf("EndPoint attribute is not RGW's JSON: %v", attrs["EndPoint"])
	}
	lt := got["ListTopics"]
	topics, _ := lt["Topics"].([]any)
	if len(topics) != 2 || lt["NextToken"] != "tok2" || topics[1].(map[string]any)["TopicArn"] != t2.ARN {
		t.Errorf("ListTopics: %v", lt)
	}
	e, _ := got["Error"]["Error"].(map[string]any)
	if e["Code"] != "InvalidArgument" || e["Message"] != "bad thing" || e["Type"] != "Sender" {
		t.Errorf("Error: %v", got["Error"])
	}
	if len(got["DeleteTopic"]) != 0 || len(got["SetTopicAttributes"]) != 0 {
		t.Errorf("empty responses: %v %v", got["DeleteTopic"], got["SetTopicAttributes"])
	}
}
