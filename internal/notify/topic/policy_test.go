package topic

import (
	"strings"
	"testing"
)

const testARN = "arn:aws:sns:default::t1"

func TestTopicPolicyEval(t *testing.T) {
	cases := []struct {
		name, policy, user, action string
		want                       PolicyEffect
	}{
		{"empty", "", "bob", ActionPublish, PolicyPass},
		{"no statements", `{"Version":"2012-10-17"}`, "bob", ActionPublish, PolicyPass},
		{"star principal", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Resource":"*"}]}`, "bob", ActionPublish, PolicyAllow},
		{"single statement object", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"sns:Publish"}}`, "bob", ActionPublish, PolicyAllow},
		{"user arn", `{"Statement":[{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam:::user/bob"]},"Action":["sns:Publish"],"Resource":["arn:aws:sns:default::t1"]}]}`, "bob", ActionPublish, PolicyAllow},
		{"bare user id", `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"sns:Publish"}]}`, "bob", ActionPublish, PolicyAllow},
		{"other user", `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/carol"},"Action":"sns:Publish"}]}`, "bob", ActionPublish, PolicyPass},
		{"user arn prefix is not a match", `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bo"},"Action":"sns:Publish"}]}`, "bob", ActionPublish, PolicyPass},
		{"other action", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Publish"}]}`, "bob", ActionDeleteTopic, PolicyPass},
		{"action wildcard", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:*"}]}`, "bob", ActionSetTopicAttributes, PolicyAllow},
		{"action glob", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Get*"}]}`, "bob", ActionGetTopicAttributes, PolicyAllow},
		{"action glob miss", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Get*"}]}`, "bob", ActionSetTopicAttributes, PolicyPass},
		{"action case", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"SNS:publish"}]}`, "bob", ActionPublish, PolicyAllow},
		{"other resource", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Resource":"arn:aws:sns:default::t2"}]}`, "bob", ActionPublish, PolicyPass},
		{"resource glob", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Resource":"arn:aws:sns:default::t*"}]}`, "bob", ActionPublish, PolicyAllow},
		{"deny wins", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:*"},{"Effect":"Deny","Principal":{"AWS":"bob"},"Action":"sns:Publish"}]}`, "bob", ActionPublish, PolicyDeny},
		{"deny other user", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:*"},{"Effect":"Deny","Principal":{"AWS":"carol"},"Action":"sns:Publish"}]}`, "bob", ActionPublish, PolicyAllow},
		{"allow with condition never matches", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}]}`, "bob", ActionPublish, PolicyPass},
		{"deny with condition always matches", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:*"},{"Effect":"Deny","Principal":"*","Action":"sns:Publish","Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}`, "bob", ActionSetTopicAttributes, PolicyDeny},
		{"allow with NotPrincipal never matches", `{"Statement":[{"Effect":"Allow","NotPrincipal":{"AWS":"carol"},"Action":"sns:Publish"}]}`, "bob", ActionPublish, PolicyPass},
		{"service principal never matches", `{"Statement":[{"Effect":"Allow","Principal":{"Service":"s3.amazonaws.com"},"Action":"sns:Publish"}]}`, "bob", ActionPublish, PolicyPass},
	}
	for _, c := range cases {
		p, err := ParseTopicPolicy(c.policy)
		if err != nil {
			t.Errorf("%s: parse: %v", c.name, err)
			continue
		}
		if got := p.Eval(c.user, c.action, testARN); got != c.want {
			t.Errorf("%s: Eval = %d, want %d", c.name, got, c.want)
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
	if !tp.MayAccess("alice", ActionDeleteTopic) || tp.MayAccess("bob", ActionGetTopicAttributes) {
		t.Fatal("without a policy only the owner may")
	}
	tp.Settings.Policy = `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"sns:GetTopicAttributes"},{"Effect":"Deny","Principal":"*","Action":"sns:DeleteTopic"}]}`
	if !tp.MayAccess("bob", ActionGetTopicAttributes) || tp.MayAccess("bob", ActionSetTopicAttributes) {
		t.Fatal("bob: read granted, write not")
	}
	if tp.MayAccess("alice", ActionDeleteTopic) || !tp.MayAccess("alice", ActionSetTopicAttributes) {
		t.Fatal("an explicit Deny binds the owner; otherwise the owner may")
	}
	tp.Settings.Policy = `not json`
	if tp.MayAccess("bob", ActionPublish) || !tp.MayAccess("alice", ActionPublish) {
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
// parsed policy evaluates without panicking, to one of its three effects,
// the same way every time.
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
		p, err := ParseTopicPolicy(doc)
		if err != nil {
			return
		}
		e := p.Eval(user, action, testARN)
		if e != PolicyPass && e != PolicyAllow && e != PolicyDeny || e != p.Eval(user, action, testARN) {
			t.Fatalf("Eval = %d for %s", e, doc)
		}
	})
}
