package config

import (
	"encoding/json"
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/notify/event"
)

// What `aws s3api put-bucket-notification-configuration` sends for
// '{"TopicConfigurations": [{"Id": "notif1", "TopicArn": "arn:aws:sns:default::fishtopic", "Events": []}]}'
// (botocore's rest-xml serializer output).
const cliBody = `<NotificationConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TopicConfiguration><Id>notif1</Id><Topic>arn:aws:sns:default::fishtopic</Topic></TopicConfiguration></NotificationConfiguration>`

func parse(t *testing.T, body string) *Configuration {
	t.Helper()
	c, err := Parse([]byte(body))
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, body)
	}
	return c
}

func TestParseFull(t *testing.T) {
	body := `<?xml version="1.0" encoding="UTF-8"?>
<NotificationConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <TopicConfiguration>
    <Id>n1</Id>
    <Topic>arn:aws:sns:default::t1</Topic>
    <Event>s3:ObjectCreated:*</Event>
    <Event>s3:ObjectRemoved:Delete</Event>
    <Event>s3:ObjectCreated:*</Event>
    <Filter>
      <S3Key>
        <FilterRule><Name>Prefix</Name><Value>images/</Value></FilterRule>
        <FilterRule><Name>suffix</Name><Value>.jpg</Value></FilterRule>
      </S3Key>
      <S3Metadata>
        <FilterRule><Name>X-Amz-Meta-Color</Name><Value>red</Value></FilterRule>
      </S3Metadata>
      <S3Tags>
        <FilterRule><Name>team</Name><Value>a</Value></FilterRule>
      </S3Tags>
    </Filter>
  </TopicConfiguration>
  <TopicConfiguration>
    <Id>n2</Id>
    <Topic>arn:aws:sns:default::t2</Topic>
    <Filter><S3Key><FilterRule><Name>regex</Name><Value>logs/[0-9]+\.txt</Value></FilterRule></S3Key></Filter>
  </TopicConfiguration>
</NotificationConfiguration>`
	c := parse(t, body)
	if len(c.Topics) != 2 {
		t.Fatal(len(c.Topics))
	}
	n1 := c.Topics[0]
	if n1.ID != "n1" || n1.TopicARN != "arn:aws:sns:default::t1" ||
		!reflect.DeepEqual(n1.Events, []event.Type{event.ObjectCreatedAll, event.ObjectRemovedDelete}) {
		t.Fatalf("%+v", n1)
	}
	want := Filter{
		Key:      KeyFilter{Prefix: "images/", Suffix: ".jpg"},
		Metadata: []Rule{{"x-amz-meta-color", "red"}},
		Tags:     []Rule{{"team", "a"}},
	}
	if !reflect.DeepEqual(n1.Filter, want) {
		t.Fatalf("%+v", n1.Filter)
	}
	if !reflect.DeepEqual(c.Topics[1].Events, []event.Type{event.ObjectCreatedAll, event.ObjectRemovedAll}) {
		t.Fatal("empty event list is not ObjectCreated:* + ObjectRemoved:*")
	}

	// XML() parses back to the same configuration; JSON storage too.
	c2 := parse(t, string(c.XML()))
	if !reflect.DeepEqual(c, c2) {
		t.Fatalf("XML round trip:\n%s", c.XML())
	}
	if !strings.Contains(string(c.XML()), `<NotificationConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`) {
		t.Fatal(string(c.XML()))
	}
	b, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	c3, err := Decode(b)
	if err != nil || !reflect.DeepEqual(c, c3) {
		t.Fatalf("JSON round trip: %v\n%s", err, b)
	}
	if !c3.Topics[1].Matches(event.ObjectCreatedPut, Object{Key: "logs/12.txt"}) {
		t.Fatal("regex not recompiled after Decode")
	}
}

func TestParseNamespaceOptional(t *testing.T) {
	with := parse(t, cliBody)
	without := parse(t, strings.Replace(cliBody, ` xmlns="http://s3.amazonaws.com/doc/2006-03-01/"`, "", 1))
	if !reflect.DeepEqual(with, without) || with.Topics[0].ID != "notif1" {
		t.Fatalf("%+v vs %+v", with, without)
	}
}

func TestParseEmpty(t *testing.T) {
	for _, body := range []string{
		`<NotificationConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"/>`,
		`<NotificationConfiguration></NotificationConfiguration>`,
	} {
		if c := parse(t, body); len(c.Topics) != 0 {
			t.Fatal(c)
		}
	}
}

func TestDefaultID(t *testing.T) {
	body := `<NotificationConfiguration><TopicConfiguration><Topic>arn:aws:sns:default::t</Topic></TopicConfiguration></NotificationConfiguration>`
	a, b := parse(t, body), parse(t, body)
	if a.Topics[0].ID == "" || a.Topics[0].ID != b.Topics[0].ID {
		t.Fatal(a.Topics[0].ID, b.Topics[0].ID)
	}
}

func TestParseErrors(t *testing.T) {
	tc := func(inner string) string {
		return `<NotificationConfiguration><TopicConfiguration><Id>x</Id>` + inner + `</TopicConfiguration></NotificationConfiguration>`
	}
	topicEl := `<Topic>arn:aws:sns:default::t</Topic>`
	cases := []struct {
		body, code, msg string
	}{
		{`<NotificationConfiguration>`, CodeMalformedXML, ""},
		{`not xml`, CodeMalformedXML, ""},
		{`<BucketLoggingStatus/>`, CodeMalformedXML, ""},
		{tc(``), CodeInvalidArgument, "missing Topic"},
		{`<NotificationConfiguration><TopicConfiguration><Id></Id>` + topicEl + `</TopicConfiguration></NotificationConfiguration>`, CodeInvalidArgument, "empty Id"},
		{tc(`<Topic>arn:aws:sqs:default::t</Topic>`), CodeInvalidArgument, "topic ARN"},
		{tc(topicEl + `<Event>s3:ObjectCreated:Get</Event>`), CodeInvalidArgument, "unknown event type"},
		{tc(topicEl + `<Event>ObjectCreated:*</Event>`), CodeInvalidArgument, "unknown event type"},
		{tc(topicEl + `<Filter><S3Key><FilterRule><Name>regex</Name><Value>a(</Value></FilterRule></S3Key></Filter>`), CodeInvalidArgument, "bad S3Key regex"},
		{tc(topicEl + `<Filter><S3Key><FilterRule><Name>middle</Name><Value>a</Value></FilterRule></S3Key></Filter>`), CodeInvalidArgument, "prefix, suffix or regex"},
		{tc(topicEl + `<Filter><S3Key><FilterRule><Name>prefix</Name><Value>a</Value></FilterRule><FilterRule><Name>Prefix</Name><Value>b</Value></FilterRule></S3Key></Filter>`), CodeInvalidArgument, "duplicate S3Key rule"},
		{tc(topicEl + `<Filter><S3Tags><FilterRule><Name>k</Name><Value>a</Value></FilterRule><FilterRule><Name>k</Name><Value>b</Value></FilterRule></S3Tags></Filter>`), CodeInvalidArgument, "duplicate S3Tags rule"},
		{tc(topicEl + `<Filter><S3Metadata><FilterRule><Value>a</Value></FilterRule></S3Metadata></Filter>`), CodeInvalidArgument, "without Name"},
		{tc(`<Id>` + strings.Repeat("i", 300) + `</Id>` + topicEl), CodeInvalidArgument, "longer than"},
		{`<NotificationConfiguration><TopicConfiguration><Id>a</Id>` + topicEl + `</TopicConfiguration><TopicConfiguration><Id>a</Id>` + topicEl + `</TopicConfiguration></NotificationConfiguration>`, CodeInvalidArgument, "duplicate notification id"},
		{`<NotificationConfiguration><QueueConfiguration><Id>q</Id><Queue>arn:aws:sqs:us-east-1:1:q</Queue><Event>s3:ObjectCreated:*</Event></QueueConfiguration></NotificationConfiguration>`, CodeInvalidArgument, "only TopicConfiguration"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.body))
		var e *Error
		if !errors.As(err, &e) || e.Code != c.code || !strings.Contains(e.Message, c.msg) || e.HTTPStatus() != 400 {
			t.Errorf("Parse(%.80s): got %v, want %s containing %q", c.body, err, c.code, c.msg)
		}
	}
}

func TestMatch(t *testing.T) {
	c := parse(t, `<NotificationConfiguration>
<TopicConfiguration><Id>all</Id><Topic>arn:aws:sns:default::t</Topic></TopicConfiguration>
<TopicConfiguration><Id>puts-jpg</Id><Topic>arn:aws:sns:default::t</Topic><Event>s3:ObjectCreated:Put</Event>
  <Filter><S3Key><FilterRule><Name>prefix</Name><Value>img/</Value></FilterRule><FilterRule><Name>suffix</Name><Value>.jpg</Value></FilterRule></S3Key></Filter></TopicConfiguration>
<TopicConfiguration><Id>regex</Id><Topic>arn:aws:sns:default::t</Topic><Event>s3:ObjectCreated:*</Event>
  <Filter><S3Key><FilterRule><Name>regex</Name><Value>[a-z]+/[0-9]+</Value></FilterRule></S3Key></Filter></TopicConfiguration>
<TopicConfiguration><Id>meta</Id><Topic>arn:aws:sns:default::t</Topic><Event>s3:ObjectCreated:*</Event>
  <Filter><S3Metadata><FilterRule><Name>x-amz-meta-color</Name><Value>red</Value></FilterRule><FilterRule><Name>size</Name><Value>L</Value></FilterRule></S3Metadata></Filter></TopicConfiguration>
<TopicConfiguration><Id>tags</Id><Topic>arn:aws:sns:default::t</Topic><Event>s3:ObjectRemoved:*</Event>
  <Filter><S3Tags><FilterRule><Name>team</Name><Value>a</Value></FilterRule></S3Tags></Filter></TopicConfiguration>
<TopicConfiguration><Id>lifecycle</Id><Topic>arn:aws:sns:default::t</Topic><Event>s3:ObjectLifecycle:*</Event></TopicConfiguration>
</NotificationConfiguration>`)
	meta := map[string]string{"X-Amz-Meta-Color": "red", "x-amz-meta-size": "L", "x-amz-meta-other": "1"}
	cases := []struct {
		ev   event.Type
		obj  Object
		want string
	}{
		{event.ObjectCreatedPut, Object{Key: "img/a.jpg"}, "all puts-jpg"},
		{event.ObjectCreatedPost, Object{Key: "img/a.jpg"}, "all"},
		{event.ObjectCreatedPut, Object{Key: "img/a.png"}, "all"},
		{event.ObjectCreatedPut, Object{Key: "img.jpg"}, "all"},
		{event.ObjectCreatedCopy, Object{Key: "abc/123"}, "all regex"},
		{event.ObjectCreatedCopy, Object{Key: "abc/123x"}, "all"}, // regex must match the whole key
		{event.ObjectCreatedCopy, Object{Key: "xabc/123", Metadata: meta}, "all regex meta"},
		{event.ObjectCreatedPut, Object{Key: "k", Metadata: map[string]string{"x-amz-meta-color": "red"}}, "all"},
		{event.ObjectCreatedPut, Object{Key: "k", Metadata: map[string]string{"x-amz-meta-color": "blue", "x-amz-meta-size": "L"}}, "all"},
		{event.ObjectRemovedDelete, Object{Key: "k", Tags: map[string]string{"team": "a", "x": "y"}}, "all tags"},
		{event.ObjectRemovedDeleteMarkerCreated, Object{Key: "k", Tags: map[string]string{"team": "b"}}, "all"},
		{event.ObjectCreatedPut, Object{Key: "k", Tags: map[string]string{"team": "a"}}, "all"},
		{event.ObjectLifecycleExpirationCurrent, Object{Key: "k"}, "lifecycle"},
	}
	for _, tc := range cases {
		var ids []string
		for _, m := range c.Match(tc.ev, tc.obj) {
			ids = append(ids, m.ID)
		}
		if got := strings.Join(ids, " "); got != tc.want {
			t.Errorf("Match(%s, %+v) = %q, want %q", tc.ev, tc.obj, got, tc.want)
		}
	}
}

func TestGetRemove(t *testing.T) {
	c := parse(t, `<NotificationConfiguration>
<TopicConfiguration><Id>a</Id><Topic>arn:aws:sns:default::t</Topic></TopicConfiguration>
<TopicConfiguration><Id>b</Id><Topic>arn:aws:sns:default::t</Topic></TopicConfiguration></NotificationConfiguration>`)
	if c.Get("b") == nil || c.Get("z") != nil {
		t.Fatal("Get")
	}
	if !c.Remove("a") || c.Remove("a") || len(c.Topics) != 1 || c.Topics[0].ID != "b" {
		t.Fatal("Remove")
	}
}

// botocoreSerialize prints the body botocore (the aws CLI and boto3) sends
// for PutBucketNotificationConfiguration with the given JSON parameters.
const botocoreSerialize = `
import json, sys
import botocore.session, botocore.serialize
model = botocore.session.get_session().get_service_model('s3')
op = model.operation_model('PutBucketNotificationConfiguration')
params = {'Bucket': 'bk1', 'NotificationConfiguration': json.loads(sys.argv[1])}
req = botocore.serialize.create_serializer('rest-xml').serialize_to_request(params, op)
sys.stdout.write(req['body'].decode())
`

// The exact bodies the aws CLI and boto3 send parse as intended.
func TestParseBotocoreBodies(t *testing.T) {
	if err := exec.Command("python3", "-c", "import botocore").Run(); err != nil {
		t.Skip("python3 with botocore not available")
	}
	cases := []struct {
		json string
		want TopicConfiguration
	}{
		{`{"TopicConfigurations": [{"Id": "notif1", "TopicArn": "arn:aws:sns:default::fishtopic", "Events": []}]}`,
			TopicConfiguration{ID: "notif1", TopicARN: "arn:aws:sns:default::fishtopic", Events: []event.Type{event.ObjectCreatedAll, event.ObjectRemovedAll}}},
		{`{"TopicConfigurations": [{"Id": "n2", "TopicArn": "arn:aws:sns:default::t", "Events": ["s3:ObjectCreated:Put", "s3:ObjectRemoved:*"],
		   "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": "a/"}, {"Name": "suffix", "Value": ".txt"}]}}}]}`,
			TopicConfiguration{ID: "n2", TopicARN: "arn:aws:sns:default::t", Events: []event.Type{event.ObjectCreatedPut, event.ObjectRemovedAll},
				Filter: Filter{Key: KeyFilter{Prefix: "a/", Suffix: ".txt"}}}},
	}
	for _, c := range cases {
		out, err := exec.Command("python3", "-c", botocoreSerialize, c.json).CombinedOutput()
		if err != nil {
			t.Fatalf("botocore: %v\n%s", err, out)
		}
		got := parse(t, string(out))
		if len(got.Topics) != 1 {
			t.Fatalf("%s -> %+v", out, got)
		}
		g, _ := json.Marshal(got.Topics[0])
		w, _ := json.Marshal(&c.want)
		if string(g) != string(w) {
			t.Errorf("body %s\ngot  %s\nwant %s", out, g, w)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(cliBody))
	f.Add([]byte(`<NotificationConfiguration><TopicConfiguration><Id>a</Id><Topic>arn:aws:sns:default::t</Topic><Filter><S3Key><FilterRule><Name>regex</Name><Value>a.*</Value></FilterRule></S3Key></Filter></TopicConfiguration></NotificationConfiguration>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := Parse(body)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		// Whatever parses renders to XML that parses to the same thing.
		c2, err := Parse(c.XML())
		if err != nil {
			t.Fatalf("re-parse: %v\n%s", err, c.XML())
		}
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("re-parse differs:\n%s", c.XML())
		}
		for _, tc := range c.Topics {
			tc.Matches(event.ObjectCreatedPut, Object{Key: "k"})
		}
	})
}

// Merge is RGW's PUT: same Id replaced in place, new Ids appended, the
// rest kept; more than MaxTopics fails and changes nothing.
func TestMerge(t *testing.T) {
	mk := func(ids ...string) *Configuration {
		c := &Configuration{}
		for _, id := range ids {
			c.Topics = append(c.Topics, &TopicConfiguration{ID: id, TopicARN: "arn:aws:sns:default::t-" + id})
		}
		return c
	}
	c := mk("a", "b")
	add := mk("b", "c")
	add.Topics[0].TopicARN = "arn:aws:sns:default::new"
	if err := c.Merge(add); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tc := range c.Topics {
		got = append(got, tc.ID+"="+tc.TopicARN)
	}
	want := "a=arn:aws:sns:default::t-a b=arn:aws:sns:default::new c=arn:aws:sns:default::t-c"
	if strings.Join(got, " ") != want {
		t.Fatalf("merged %v, want %s", got, want)
	}
	big := &Configuration{}
	for i := 0; i < MaxTopics; i++ {
		big.Topics = append(big.Topics, &TopicConfiguration{ID: strings.Repeat("x", i+1)})
	}
	if err := c.Merge(big); err == nil || len(c.Topics) != 3 {
		t.Fatalf("merge past MaxTopics: %v, %d configurations", err, len(c.Topics))
	}
}
