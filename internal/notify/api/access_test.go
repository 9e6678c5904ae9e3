package api

import (
	"fmt"
	"github.com/cairn-s3/cairn/internal/authz"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func snsBody(kv ...string) string {
	f := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Set(kv[i], kv[i+1])
	}
	return f.Encode()
}

// Topics are private to their owner unless their Policy grants; non-owners
// see endpoints redacted; attaching another user's topic needs
// sns:Publish.
func TestTopicAccess(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.RequirePublishPolicy = true })
	arn := "arn:aws:sns:default::t1"
	s, b := e.do(t, "alice", http.MethodPost, "/", snsBody("Action", "CreateTopic", "Name", "t1",
		"Attributes.entry.1.key", "push-endpoint", "Attributes.entry.1.value", "http://127.0.0.1:9/h?token=s3cr3t"))
	expect(t, s, b, 200, arn)
	notif := `<NotificationConfiguration><TopicConfiguration><Id>n</Id><Topic>` + arn + `</Topic></TopicConfiguration></NotificationConfiguration>`

	s, b = e.do(t, "bob", http.MethodPost, "/", snsBody("Action", "ListTopics"))
	expect(t, s, b, 200, "<ListTopicsResponse")
	if strings.Contains(b, "t1") {
		t.Fatalf("bob lists alice's topic: %s", b)
	}
	for _, action := range []string{"GetTopicAttributes", "GetTopic", "SetTopicAttributes", "DeleteTopic"} {
		s, b = e.do(t, "bob", http.MethodPost, "/", snsBody("Action", action, "TopicArn", arn, "AttributeName", "OpaqueData", "AttributeValue", "x"))
		expect(t, s, b, 403, "AuthorizationError")
	}
	s, b = e.do(t, "bob", http.MethodPut, "/bk1?notification", notif)
	expect(t, s, b, 403, "AccessDenied")
	// The query string is not read: the body alone names the action.
	s, b = e.do(t, "alice", http.MethodPost, "/?Action=DeleteTopic&TopicArn="+url.QueryEscape(arn), "")
	expect(t, s, b, 400, "MissingAction")
	s, b = e.do(t, "alice", http.MethodGet, "/?Action=ListTopics", "")
	expect(t, s, b, 400, "InvalidArgument")

	// Admins see every topic, redacted.
	s, b = e.do(t, "admin", http.MethodPost, "/", snsBody("Action", "ListTopics"))
	expect(t, s, b, 200, arn, "token=xxxxx")
	if strings.Contains(b, "s3cr3t") {
		t.Fatalf("admin sees the token: %s", b)
	}
	s, b = e.do(t, "alice", http.MethodPost, "/", snsBody("Action", "GetTopic", "TopicArn", arn))
	expect(t, s, b, 200, "token=s3cr3t")

	policy := `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":["sns:Publish","sns:GetTopicAttributes"]}]}`
	s, b = e.do(t, "alice", http.MethodPost, "/", snsBody("Action", "SetTopicAttributes", "TopicArn", arn, "AttributeName", "Policy", "AttributeValue", policy))
	expect(t, s, b, 200, "SetTopicAttributesResponse")
	s, b = e.do(t, "bob", http.MethodPost, "/", snsBody("Action", "ListTopics"))
	expect(t, s, b, 200, arn, "token=xxxxx")
	s, b = e.do(t, "bob", http.MethodPost, "/", snsBody("Action", "GetTopicAttributes", "TopicArn", arn))
	expect(t, s, b, 200, "token=xxxxx")
	if strings.Contains(b, "s3cr3t") {
		t.Fatalf("bob sees the token: %s", b)
	}
	s, b = e.do(t, "bob", http.MethodPost, "/", snsBody("Action", "DeleteTopic", "TopicArn", arn))
	expect(t, s, b, 403, "AuthorizationError")
	s, b = e.do(t, "bob", http.MethodPut, "/bk1?notification", notif)
	expect(t, s, b, 200)
}

// With topic-require-publish-policy off, only a topic without a Policy is
// open to everyone; a Policy decides for its topic, its Deny included.
func TestPublishCheckWithoutRequirement(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.RequirePublishPolicy = false })
	for _, name := range []string{"open", "denied", "silent"} {
		s, b := e.do(t, "alice", http.MethodPost, "/", snsBody("Action", "CreateTopic", "Name", name))
		expect(t, s, b, 200)
	}
	setPolicy := func(name, pol string) {
		s, b := e.do(t, "alice", http.MethodPost, "/", snsBody("Action", "SetTopicAttributes", "TopicArn", "arn:aws:sns:default::"+name,
			"AttributeName", "Policy", "AttributeValue", pol))
		expect(t, s, b, 200)
	}
	setPolicy("denied", `{"Statement":[{"Effect":"Deny","Principal":{"AWS":"bob"},"Action":"sns:Publish"}]}`)
	setPolicy("silent", `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"carol"},"Action":"sns:Publish"}]}`)
	notif := func(name string) string {
		return `<NotificationConfiguration><TopicConfiguration><Id>n</Id><Topic>arn:aws:sns:default::` + name + `</Topic></TopicConfiguration></NotificationConfiguration>`
	}
	s, b := e.do(t, "bob", http.MethodPut, "/bk1?notification", notif("open"))
	expect(t, s, b, 200)
	for _, name := range []string{"denied", "silent"} {
		s, b = e.do(t, "bob", http.MethodPut, "/bk1?notification", notif(name))
		expect(t, s, b, 403, "AccessDenied")
	}
}

// ListTopics fills its pages past topics the caller may not see, and its
// NextToken never names one of them.
func TestListTopicsPagesSkipHidden(t *testing.T) {
	e := newEnv(t)
	create := func(user, name string) {
		s, b := e.do(t, user, http.MethodPost, "/", snsBody("Action", "CreateTopic", "Name", name))
		expect(t, s, b, 200)
	}
	create("alice", "a-first")
	for i := 0; i < 150; i++ {
		create("bob", fmt.Sprintf("b-%03d", i))
	}
	create("alice", "c-last")

	s, b := e.do(t, "alice", http.MethodPost, "/", snsBody("Action", "ListTopics"))
	expect(t, s, b, 200, "a-first", "c-last")
	if strings.Contains(b, "b-") || strings.Contains(b, "NextToken") {
		t.Fatalf("alice's page: %s", b)
	}
	var seen int
	token := ""
	for page := 0; page < 5; page++ {
		s, b = e.do(t, "bob", http.MethodPost, "/", snsBody("Action", "ListTopics", "NextToken", token))
		expect(t, s, b, 200)
		if strings.Contains(b, "a-first") || strings.Contains(b, "c-last") {
			t.Fatalf("bob's page shows alice's topic: %s", b)
		}
		seen += strings.Count(b, "<TopicArn>")
		_, after, ok := strings.Cut(b, "<NextToken>")
		if !ok {
			break
		}
		token, _, _ = strings.Cut(after, "</NextToken>")
		if !strings.Contains(token, "b-") {
			t.Fatalf("token %q", token)
		}
	}
	if seen != 150 {
		t.Fatalf("bob saw %d topics, want 150", seen)
	}
}

// Every Action serveSNS dispatches has an authz action, and nothing
// outside the table is served: the case labels of its switch are read
// from the source, each must be in snsActions, and every table entry is
// answered by its handler (not InvalidAction).
func TestSNSActionsMapped(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "sns.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var cases []string
	ast.Inspect(f, func(n ast.Node) bool {
		fd, ok := n.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "serveSNS" {
			return true
		}
		ast.Inspect(fd, func(n ast.Node) bool {
			if cc, ok := n.(*ast.CaseClause); ok {
				for _, e := range cc.List {
					if bl, ok := e.(*ast.BasicLit); ok && bl.Kind == token.STRING {
						s, _ := strconv.Unquote(bl.Value)
						cases = append(cases, s)
					}
				}
			}
			return true
		})
		return false
	})
	if len(cases) < 5 {
		t.Fatalf("found only %d SNS actions in serveSNS: %v", len(cases), cases)
	}
	for _, c := range cases {
		act, ok := SNSAction(c)
		if !ok || act.Service() != "sns" {
			t.Errorf("SNS action %q is dispatched without an authz action (%v)", c, act)
		}
	}
	e := newEnv(t)
	for name := range snsActions {
		if !slices.Contains(cases, name) {
			t.Errorf("snsActions has %q, which serveSNS does not dispatch", name)
		}
		s, b := e.sns(t, "alice", "Action", name, "Name", "t1", "TopicArn", "arn:aws:sns:default::t1")
		if s >= 500 || strings.Contains(b, "InvalidAction") {
			t.Errorf("%s: %d %s", name, s, b)
		}
	}
	for _, name := range []string{"Publish", "Subscribe", "AddPermission", "TagResource"} {
		s, b := e.sns(t, "alice", "Action", name)
		expect(t, s, b, 400, "InvalidAction")
	}
}

// An IAM account's topics: created in the account's namespace and owned by
// it, so a user of the account with an identity Allow sees the endpoint
// whole (it is the owner), one without is refused, another account's user
// with the topic Policy's grant sees it redacted; a user outside accounts
// keeps the empty namespace.
func TestAccountTopicOwnership(t *testing.T) {
	e := newEnv(t)
	const acme, globex = "RGW00000000000000001", "RGW00000000000000002"
	allSNS, err := authz.ParseIdentityPolicy([]byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sns:*","Resource":"*"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	member := func(id, acct, name string, pols ...*authz.Policy) {
		ip := &authz.IdentityPolicies{}
		for _, p := range pols {
			ip.Policies = append(ip.Policies, authz.NamedPolicy{Name: "p", Policy: p})
		}
		p := authz.Principal{ID: id, Account: acct, Name: name, Identity: ip}
		e.callers[id] = Caller{User: id, Principal: &p}
	}
	member("AIDAA", acme, "a", allSNS)
	member("AIDAB", acme, "b", allSNS)
	member("AIDAC", acme, "c")
	member("AIDAD", globex, "d", allSNS)

	arn := "arn:aws:sns:default:" + acme + ":t1"
	s, b := e.do(t, "AIDAA", http.MethodPost, "/", snsBody("Action", "CreateTopic", "Name", "t1",
		"Attributes.entry.1.key", "push-endpoint", "Attributes.entry.1.value", "http://127.0.0.1:9/h?token=s3cr3t"))
	expect(t, s, b, 200, arn)
	s, b = e.do(t, "AIDAB", http.MethodPost, "/", snsBody("Action", "GetTopicAttributes", "TopicArn", arn))
	expect(t, s, b, 200, "token=s3cr3t", "<value>"+acme+"</value>")
	s, b = e.do(t, "AIDAB", http.MethodPost, "/", snsBody("Action", "ListTopics"))
	expect(t, s, b, 200, arn)
	for _, action := range []string{"GetTopicAttributes", "ListTopics", "DeleteTopic"} {
		s, b = e.do(t, "AIDAC", http.MethodPost, "/", snsBody("Action", action, "TopicArn", arn))
		expect(t, s, b, 403, "AuthorizationError")
	}
	s, b = e.do(t, "AIDAD", http.MethodPost, "/", snsBody("Action", "GetTopicAttributes", "TopicArn", arn))
	expect(t, s, b, 403, "AuthorizationError")
	policy := `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::` + globex + `:user/d"},"Action":"sns:GetTopicAttributes"}]}`
	s, b = e.do(t, "AIDAB", http.MethodPost, "/", snsBody("Action", "SetTopicAttributes", "TopicArn", arn, "AttributeName", "Policy", "AttributeValue", policy))
	expect(t, s, b, 200)
	s, b = e.do(t, "AIDAD", http.MethodPost, "/", snsBody("Action", "GetTopicAttributes", "TopicArn", arn))
	expect(t, s, b, 200, "token=xxxxx")
	if strings.Contains(b, "s3cr3t") {
		t.Fatalf("another account's user sees the token: %s", b)
	}
	// The same name outside accounts is another topic.
	s, b = e.do(t, "alice", http.MethodPost, "/", snsBody("Action", "CreateTopic", "Name", "t1"))
	expect(t, s, b, 200, "arn:aws:sns:default::t1")
	s, b = e.do(t, "AIDAB", http.MethodPost, "/", snsBody("Action", "DeleteTopic", "TopicArn", arn))
	expect(t, s, b, 200)
	s, b = e.do(t, "alice", http.MethodPost, "/", snsBody("Action", "GetTopicAttributes", "TopicArn", "arn:aws:sns:default::t1"))
	expect(t, s, b, 200, "<value>alice</value>")
}
