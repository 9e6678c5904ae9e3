package topic

import (
	"strings"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/authz"
)

const testARN = "arn:aws:sns:default::t1"

func TestTopicPolicyThroughAuthz(t *testing.T) {
	// bob is not the owner: only the Policy can grant him anything. The
	// request comes from 127.0.0.1 over plain HTTP (condition keys).
	cases := []struct {
		name, policy, action string
		want                 bool
	}{
		{"empty", "", ActionPublish, false},
		{"no statements", `{"Version":"2012-10-17"}`, ActionPublish, false},
		{"star principal", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Resource":"*"}]}`, ActionPublish, true},
		{"single statement object", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"sns:Publish"}}`, ActionPublish, true},
		{"user arn", `{"Statement":[{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam:::user/bob"]},"Action":["sns:Publish"],"Resource":["arn:aws:sns:default::t1"]}]}`, ActionPublish, true},
		{"bare user id", `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"sns:Publish"}]}`, ActionPublish, true},
		{"other user", `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/carol"},"Action":"sns:Publish"}]}`, ActionPublish, false},
		{"user arn prefix is not a match", `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bo"},"Action":"sns:Publish"}]}`, ActionPublish, false},
		{"other action", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Publish"}]}`, ActionDeleteTopic, false},
		{"action wildcard", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:*"}]}`, ActionSetTopicAttributes, true},
		{"action glob", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Get*"}]}`, ActionGetTopicAttributes, true},
		{"action glob miss", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Get*"}]}`, ActionSetTopicAttributes, false},
		{"action case", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"SNS:publish"}]}`, ActionPublish, true},
		{"other resource", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Resource":"arn:aws:sns:default::t2"}]}`, ActionPublish, false},
		{"resource glob", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Resource":"arn:aws:sns:default::t*"}]}`, ActionPublish, true},
		{"deny wins", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:*"},{"Effect":"Deny","Principal":{"AWS":"bob"},"Action":"sns:Publish"}]}`, ActionPublish, false},
		{"deny other user", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:*"},{"Effect":"Deny","Principal":{"AWS":"carol"},"Action":"sns:Publish"}]}`, ActionPublish, true},
		{"allow with condition never matches", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}]}`, ActionPublish, false},
		{"deny with condition: other action", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:*"},{"Effect":"Deny","Principal":"*","Action":"sns:Publish","Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}`, ActionSetTopicAttributes, true},
		{"deny with condition that holds", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:*"},{"Effect":"Deny","Principal":"*","Action":"sns:Publish","Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}`, ActionPublish, false},
		{"allow with condition that holds", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Condition":{"IpAddress":{"aws:SourceIp":"127.0.0.0/8"}}}]}`, ActionPublish, true},
		{"allow with NotPrincipal other user", `{"Statement":[{"Effect":"Allow","NotPrincipal":{"AWS":"carol"},"Action":"sns:Publish"}]}`, ActionPublish, true},
		{"service principal never matches", `{"Statement":[{"Effect":"Allow","Principal":{"Service":"s3.amazonaws.com"},"Action":"sns:Publish"}]}`, ActionPublish, false},
	}
	g := authz.Global{SourceIP: "127.0.0.1", Now: time.Now(), UserID: "bob"}
	for _, c := range cases {
		if c.policy != "" {
			if _, err := ParseTopicPolicy(c.policy); err != nil {
				t.Errorf("%s: parse: %v", c.name, err)
				continue
			}
		}
		tp := &Topic{ARN: testARN, Owner: "alice", Settings: Settings{Policy: c.policy}}
		if got := tp.MayAccess(authz.Principal{ID: "bob"}, g, c.action); got != c.want {
			t.Errorf("%s: MayAccess = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestTopicPolicyParseErrors(t *testing.T) {
	for _, bad := range []string{
		`{`,
		`{"Statement":[{"Effect":"Maybe","Principal":"*","Action":"sns:Publish"}]}`,
		`{"Statement":[{"Principal":"*","Action":"sns:Publish"}]}`,
		`{"Statement":[{"Effect":"Allow","Action":"sns:Publish"}]}`,
		`{"Statement":[{"Effect":"Allow","Principal":"*"}]}`,
		`{"Statement":[{"Effect":"Allow","Principal":"bob","Action":"sns:Publish"}]}`,
		`{"Statement":[{"Effect":"Allow","Principal":"*","Action":7}]}`,
		`{"Statement":"x"}`,
	} {
		if _, err := ParseTopicPolicy(bad); err == nil {
			t.Errorf("ParseTopicPolicy(%s) accepted", bad)
		}
	}
	// Set refuses a policy that does not parse.
	if _, err := Set(Settings{}, AttrPolicy, `{"Statement":[{"Effect":"Allow"}]}`, Options{}); err == nil {
		t.Error("Set accepted a bad Policy")
	}
}

func TestMayAccess(t *testing.T) {
	tp := &Topic{ARN: testARN, Owner: "alice"}
	if !tp.MayAccess(authz.Principal{ID: "alice"}, authz.Global{}, ActionDeleteTopic) || tp.MayAccess(authz.Principal{ID: "bob"}, authz.Global{}, ActionGetTopicAttributes) {
		t.Fatal("without a policy only the owner may")
	}
	tp.Settings.Policy = `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"sns:GetTopicAttributes"},{"Effect":"Deny","Principal":"*","Action":"sns:DeleteTopic"}]}`
	if !tp.MayAccess(authz.Principal{ID: "bob"}, authz.Global{}, ActionGetTopicAttributes) || tp.MayAccess(authz.Principal{ID: "bob"}, authz.Global{}, ActionSetTopicAttributes) {
		t.Fatal("bob: read granted, write not")
	}
	if tp.MayAccess(authz.Principal{ID: "alice"}, authz.Global{}, ActionDeleteTopic) || !tp.MayAccess(authz.Principal{ID: "alice"}, authz.Global{}, ActionSetTopicAttributes) {
		t.Fatal("an explicit Deny binds the owner; otherwise the owner may")
	}
	tp.Settings.Policy = `not json`
	if tp.MayAccess(authz.Principal{ID: "bob"}, authz.Global{}, ActionPublish) || !tp.MayAccess(authz.Principal{ID: "alice"}, authz.Global{}, ActionPublish) {
		t.Fatal("an unparsable stored policy grants nothing beyond the owner")
	}
}

func TestViewForRedacts(t *testing.T) {
	tp := &Topic{ARN: testARN, Owner: "alice", Settings: Settings{
		PushEndpoint: "http://127.0.0.1:9/hook?token=s3cr3t&x=1", OpaqueData: "o"}}
	if tp.ViewFor("alice") != tp {
		t.Fatal("the owner sees the topic whole")
	}
	v := tp.ViewFor("bob")
	if strings.Contains(v.Settings.PushEndpoint, "s3cr3t") || v.Settings.PushEndpoint != "http://127.0.0.1:9/hook?token=xxxxx&x=xxxxx" {
		t.Fatalf("redacted endpoint %q", v.Settings.PushEndpoint)
	}
	if !strings.Contains(tp.Settings.PushEndpoint, "s3cr3t") {
		t.Fatal("ViewFor changed the original")
	}
	am := &Topic{Owner: "alice", Settings: Settings{PushEndpoint: "amqp://u:pw@127.0.0.1/vh", UserName: "x", Password: "p2"}}
	v = am.ViewFor("admin")
	if v.Settings.PushEndpoint != "amqp://u:xxxxx@127.0.0.1/vh" || v.Settings.Password != "xxxxx" {
		t.Fatalf("redacted %+v", v.Settings)
	}
	for _, b := range [][]byte{GetTopicAttributesResponse(v, "r"), GetTopicResponse(v, "r"), ListTopicsResponse([]*Topic{v}, "", "r")} {
		if strings.Contains(string(b), "pw@") || strings.Contains(string(b), "p2") {
			t.Fatalf("secret in %s", b)
		}
	}
}

func TestEndpointUnencodedUserinfo(t *testing.T) {
	for _, raw := range []string{
		"amqp://user:Q7/zX@127.0.0.1",
		"amqp://user:5672/zX@127.0.0.1",
		"kafka://user:Q7?zX@127.0.0.1:9092",
		"http://user:80/zX@127.0.0.1/",
		"amqps://user:Q7#a/zX@host",
	} {
		_, err := ParseEndpoint(raw)
		if err == nil {
			t.Errorf("ParseEndpoint(%q) accepted", raw)
			continue
		}
		e, ok := err.(*Error)
		if !ok || e.Code != CodeInvalidArgument || !strings.Contains(e.Message, "malformed") {
			t.Errorf("ParseEndpoint(%q): %v", raw, err)
		}
		if strings.Contains(err.Error(), "Q7") || strings.Contains(err.Error(), "zX") {
			t.Errorf("ParseEndpoint(%q) echoes the password: %v", raw, err)
		}
	}
	u, err := ParseEndpoint("amqp://user:pa%2Fss@127.0.0.1")
	if err != nil || u.Password != "pa/ss" || u.Addrs[0] != "127.0.0.1:5672" {
		t.Fatalf("encoded password: %+v %v", u, err)
	}
	// Errors never echo a query (a webhook token).
	if _, err := ParseEndpoint("http://127.0.0.1:99999/?token=s3cr3t"); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("error %v", err)
	}
}

// FuzzParseTopicPolicy: any Policy text parses or fails cleanly, and a
// parsed policy decides without panicking, the same way every time.
func FuzzParseTopicPolicy(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `{"Statement":[]}`,
		`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:*","Resource":"*"}]}`,
		`{"Statement":{"Effect":"Deny","Principal":{"AWS":["bob","arn:aws:iam:::user/x"]},"Action":["sns:Publish"]}}`,
		`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Condition":{}}]}`,
		`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"[","Resource":"a/b"}]}`,
	} {
		f.Add(s, "bob", ActionPublish)
	}
	f.Fuzz(func(t *testing.T, doc, user, action string) {
		if _, err := ParseTopicPolicy(doc); err != nil {
			return
		}
		tp := &Topic{ARN: testARN, Owner: "alice", Settings: Settings{Policy: doc}}
		p, g := authz.Principal{ID: user}, authz.Global{SourceIP: "127.0.0.1"}
		if a, b := tp.MayAccess(p, g, action), tp.MayAccess(p, g, action); a != b {
			t.Fatalf("MayAccess not deterministic for %s", doc)
		}
	})
}
