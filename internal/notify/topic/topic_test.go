package topic

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestARN(t *testing.T) {
	a, err := ParseARN("arn:aws:sns:default::fishtopic")
	if err != nil || a != (ARN{"default", "", "fishtopic"}) {
		t.Fatal(a, err)
	}
	if a.String() != "arn:aws:sns:default::fishtopic" {
		t.Fatal(a.String())
	}
	a, err = ParseARN("arn:aws:sns:zg1:tenant1:t-1_x")
	if err != nil || a.Tenant != "tenant1" || a.Zonegroup != "zg1" {
		t.Fatal(a, err)
	}
	for _, bad := range []string{
		"", "arn:aws:sns:default:fishtopic", "arn:aws:s3:default::b", "arn:aws:sns:default::",
		"arn:aws:sns:default::a.b", "arn:aws:sns:default::a/b", "arn:aws:sns:default::" + strings.Repeat("x", 257),
		"arn:aws:sns:a:b:c:d",
	} {
		if _, err := ParseARN(bad); err == nil {
			t.Errorf("ParseARN(%q) accepted", bad)
		}
	}
}

func TestParseEndpoint(t *testing.T) {
	cases := []struct {
		raw        string
		scheme     string
		user, pw   string
		addrs      []string
		path       string
		tls, redac bool
	}{
		{"http://localhost", "http", "", "", []string{"localhost:80"}, "/", false, false},
		{"https://h.example:8443/hook?x=1", "https", "", "", []string{"h.example:8443"}, "/hook?x=1", true, false},
		{"amqp://127.0.0.1", "amqp", "", "", []string{"127.0.0.1:5672"}, "/", false, false},
		{"amqps://u:p%40ss@mq:5999/v%2Fh", "amqps", "u", "p@ss", []string{"mq:5999"}, "v/h", true, true},
		{"amqp://guest:guest@localhost:5672/vh", "amqp", "guest", "guest", []string{"localhost:5672"}, "vh", false, true},
		{"kafka://127.0.0.1", "kafka", "", "", []string{"127.0.0.1:9092"}, "", false, false},
		{"kafka://alice:secret@k1:9093,k2", "kafka", "alice", "secret", []string{"k1:9093", "k2:9092"}, "", false, true},
		{"KAFKA://[::1]:19092", "kafka", "", "", []string{"[::1]:19092"}, "", false, false},
		{"http://[::1]/x", "http", "", "", []string{"[::1]:80"}, "/x", false, false},
	}
	for _, c := range cases {
		u, err := ParseEndpoint(c.raw)
		if err != nil {
			t.Errorf("%s: %v", c.raw, err)
			continue
		}
		if u.Scheme != c.scheme || u.User != c.user || u.Password != c.pw || !reflect.DeepEqual(u.Addrs, c.addrs) || u.Path != c.path || u.TLS() != c.tls {
			t.Errorf("%s: got %+v", c.raw, u)
		}
		if c.redac && strings.Contains(u.Redacted(), ":"+url.PathEscape(c.pw)+"@") {
			t.Errorf("%s: Redacted() = %s leaks the password", c.raw, u.Redacted())
		}
	}
	for _, bad := range []string{
		"", "localhost:9092", "ftp://h", "http://", "http://u:p@h", "amqp://h1,h2", "kafka://h:99999",
		"kafka://h:abc", "kafka://h/path", "amqp://h/vh?x=1", "amqp://:pw@h",
	} {
		if _, err := ParseEndpoint(bad); err == nil {
			t.Errorf("ParseEndpoint(%q) accepted", bad)
		}
	}
}

func mustParse(t *testing.T, attrs map[string]string, o Options) Settings {
	t.Helper()
	s, _, err := Parse(attrs, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseDefaults(t *testing.T) {
	s := mustParse(t, map[string]string{"push-endpoint": "kafka://127.0.0.1:9092", "persistent": "true"}, Options{})
	want := Settings{
		PushEndpoint: "kafka://127.0.0.1:9092", Persistent: true, VerifySSL: true,
		AMQPAckLevel: AckBroker, KafkaAckLevel: AckBroker,
		TimeToLive: UseGlobal, MaxRetries: UseGlobal, RetrySleepDuration: UseGlobal,
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
	// Empty attribute set: a topic without endpoint.
	s = mustParse(t, nil, Options{})
	if s.PushEndpoint != "" || s.Persistent {
		t.Fatal(s)
	}
}

func TestParseAll(t *testing.T) {
	s, ignored, err := Parse(map[string]string{
		"push-endpoint": "amqp://127.0.0.1:5672/", "amqp-exchange": "ex1", "amqp-ack-level": "routable",
		"OpaqueData": "me@example.com", "verify-ssl": "false", "time_to_live": "600", "max_retries": "3",
		"retry_sleep_duration": "None", "Policy": `{"Version":"2012-10-17"}`, "DisplayName": "ignored",
		"persistent": "False",
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ignored, []string{"DisplayName"}) {
		t.Fatal(ignored)
	}
	if s.AMQPAckLevel != AckRoutable || s.AMQPExchange != "ex1" || s.VerifySSL || s.TimeToLive != 600 ||
		s.MaxRetries != 3 || s.RetrySleepDuration != UseGlobal || s.OpaqueData != "me@example.com" || s.Persistent {
		t.Fatalf("%+v", s)
	}
	// Attributes() reads back to the same settings.
	s2 := mustParse(t, s.Attributes(true), Options{})
	if !reflect.DeepEqual(s, s2) {
		t.Fatalf("round trip:\n%+v\n%+v", s, s2)
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]map[string]string{
		"amqp-exchange":     {"push-endpoint": "amqp://h"},
		"amqp-ack-level":    {"push-endpoint": "amqp://h", "amqp-exchange": "x", "amqp-ack-level": "all"},
		"kafka-ack-level":   {"push-endpoint": "kafka://h", "kafka-ack-level": "routable"},
		"persistent":        {"persistent": "yes please"},
		"max_retries":       {"max_retries": "-2"},
		"time_to_live":      {"time_to_live": "soon"},
		"Policy":            {"Policy": "{not json"},
		"mechanism":         {"push-endpoint": "kafka://h", "mechanism": "GSSAPI"},
		"cloudevents":       {"push-endpoint": "kafka://h", "cloudevents": "true"},
		"unsupported":       {"push-endpoint": "sqs://h"},
		"use-ssl":           {"push-endpoint": "kafka://u:p@h"}, // credentials without TLS to the broker
		"both":              {"push-endpoint": "kafka://u:p@h", "use-ssl": "true", "user-name": "v", "password": "q"},
		"without user-name": {"password": "x"},
	}
	for want, attrs := range cases {
		_, _, err := Parse(attrs, Options{RequestTLS: true})
		var te *Error
		if !errors.As(err, &te) || te.Code != CodeInvalidArgument || te.HTTPStatus != 400 {
			t.Errorf("%v: got %v", attrs, err)
			continue
		}
		if !strings.Contains(te.Message, want) {
			t.Errorf("%v: message %q does not mention %q", attrs, te.Message, want)
		}
	}
	// Several problems are reported together.
	_, _, err := Parse(map[string]string{"persistent": "x", "max_retries": "y"}, Options{})
	if err == nil || !strings.Contains(err.Error(), "persistent") || !strings.Contains(err.Error(), "max_retries") {
		t.Fatal(err)
	}
}

func TestSecrets(t *testing.T) {
	kafka := map[string]string{"push-endpoint": "kafka://alice:pw@h", "use-ssl": "true", "mechanism": "SCRAM-SHA-256"}
	if _, _, err := Parse(kafka, Options{}); err == nil || !strings.Contains(err.Error(), "HTTPS") {
		t.Fatalf("secret over plain HTTP accepted: %v", err)
	}
	s := mustParse(t, kafka, Options{RequestTLS: true})
	if !s.HasSecret() {
		t.Fatal("HasSecret false")
	}
	if u, pw := s.Credentials(); u != "alice" || pw != "pw" {
		t.Fatal(u, pw)
	}
	if a := s.Attributes(false); strings.Contains(a["push-endpoint"], "pw") {
		t.Fatalf("Attributes(false) leaks: %v", a)
	}
	// Explicitly allowed cleartext: accepted without TLS, even without use-ssl.
	mustParse(t, map[string]string{"push-endpoint": "kafka://alice:pw@h"}, Options{AllowCleartextSecrets: true})
	// Attribute credentials.
	s = mustParse(t, map[string]string{"push-endpoint": "kafka://h", "use-ssl": "true", "user-name": "bob", "password": "x"}, Options{RequestTLS: true})
	if u, pw := s.Credentials(); u != "bob" || pw != "x" {
		t.Fatal(u, pw)
	}
	// AMQP credentials in the URL need only a TLS request.
	mustParse(t, map[string]string{"push-endpoint": "amqp://u:p@h", "amqp-exchange": "x"}, Options{RequestTLS: true})
}

func TestSet(t *testing.T) {
	cur := mustParse(t, map[string]string{"push-endpoint": "http://127.0.0.1:8080", "OpaqueData": "a"}, Options{})
	s, err := Set(cur, "OpaqueData", "b", Options{})
	if err != nil || s.OpaqueData != "b" || s.PushEndpoint != cur.PushEndpoint {
		t.Fatal(s, err)
	}
	s, err = Set(s, "persistent", "true", Options{})
	if err != nil || !s.Persistent {
		t.Fatal(s, err)
	}
	// Clearing an attribute restores its default.
	s, err = Set(s, "persistent", "", Options{})
	if err != nil || s.Persistent {
		t.Fatal(s, err)
	}
	if _, err := Set(s, "DisplayName", "x", Options{}); err == nil || !strings.Contains(err.Error(), "unknown topic attribute") {
		t.Fatal(err)
	}
	// The result is validated as a whole.
	if _, err := Set(s, "push-endpoint", "amqp://h", Options{}); err == nil || !strings.Contains(err.Error(), "amqp-exchange") {
		t.Fatal(err)
	}
	// A new secret needs TLS; an existing one does not block other changes.
	if _, err := Set(s, "push-endpoint", "amqp://u:p@h", Options{}); err == nil {
		t.Fatal("secret accepted without TLS")
	}
	sec := mustParse(t, map[string]string{"push-endpoint": "amqp://u:p@h", "amqp-exchange": "x"}, Options{RequestTLS: true})
	if s, err := Set(sec, "OpaqueData", "z", Options{}); err != nil || s.OpaqueData != "z" || !s.HasSecret() {
		t.Fatal(s, err)
	}
}

func TestTopicEncoding(t *testing.T) {
	s := mustParse(t, map[string]string{"push-endpoint": "kafka://127.0.0.1:9092", "persistent": "true"}, Options{})
	tp := New(ARN{"default", "", "fishtopic"}, "alice", s, 11, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	b, err := Encode(tp)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"name":"fishtopic","tenant":"","arn":"arn:aws:sns:default::fishtopic","owner":"alice","num_shards":11,` +
		`"settings":{"push_endpoint":"kafka://127.0.0.1:9092","persistent":true,"opaque_data":"","verify_ssl":true,` +
		`"cloudevents":false,"time_to_live":-1,"max_retries":-1,"retry_sleep_duration":-1,"policy":"","amqp_exchange":"",` +
		`"amqp_ack_level":"broker","kafka_ack_level":"broker","use_ssl":false,"ca_location":"","mechanism":"",` +
		`"user_name":"","password":""},"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}`
	if string(b) != want {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
	back, err := Decode(b)
	if err != nil || !reflect.DeepEqual(back, tp) || !back.Persistent() {
		t.Fatal(back, err)
	}
	for _, bad := range []string{`{"v":2}`, `{"v":1,"x":1}`, `{`, `{"name":"a"}`} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%s) accepted", bad)
		}
	}
}
