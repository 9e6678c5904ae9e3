package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/bucketindex"
	"github.com/cairn-s3/cairn/internal/cls"
	"github.com/cairn-s3/cairn/internal/driver"
	"github.com/cairn-s3/cairn/internal/notify/service"
	"github.com/cairn-s3/cairn/internal/objstore"
	"github.com/cairn-s3/cairn/internal/objstore/embedded"
	"github.com/cairn-s3/cairn/internal/s3err"
	"github.com/cockroachdb/pebble/v2/vfs"
)

type callerKey struct{}

type env struct {
	srv *httptest.Server
	svc *service.Service
	drv *driver.Driver
	// callers overrides the Caller of a test user name (an account's
	// user with its principal); set before the first request.
	callers map[string]Caller
}

// newEnv wires the handlers the way the S3 server does: SNS at "/",
// ?notification on bucket bk1, /admin/topic and /admin/notification;
// the caller comes from the X-Test-User header ("admin" is an admin).
func newEnv(t *testing.T, mods ...func(*Options)) *env {
	t.Helper()
	ctx := context.Background()
	reg := objstore.NewRegistry()
	cls.RegisterAll(reg)
	bucketindex.Register(reg)
	st, err := embedded.Open(embedded.Options{Dir: "/db", FS: vfs.NewMem(), Classes: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc, err := service.New(ctx, service.Options{Store: st, NumShards: 3})
	if err != nil {
		t.Fatal(err)
	}
	drv, err := driver.New(ctx, driver.Options{Store: st, Notifier: svc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drv.Close() })
	if err := drv.CreateBucket(ctx, "alice", "bk1", "", 0); err != nil {
		t.Fatal(err)
	}
	opts := Options{
		Service: svc, Bucket: drv.GetBucket,
		Caller: func(ctx context.Context) (Caller, bool) {
			c, ok := ctx.Value(callerKey{}).(Caller)
			return c, ok
		},
	}
	for _, m := range mods {
		m(&opts)
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	callers := map[string]Caller{}
	writeErr := func(w http.ResponseWriter, r *http.Request, err error) {
		e := s3err.From(err)
		if errors.Is(err, driver.ErrNoSuchBucket) {
			e = s3err.New(s3err.ErrNoSuchBucket, "")
		}
		s3err.WriteXML(w, e, r.URL.Path, "rid")
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := r.Header.Get("X-Test-User")
		ctx := driver.WithRequest(r.Context(), driver.RequestMeta{RequestID: "rid", Principal: u})
		if u != "" {
			c, ok := callers[u]
			if !ok {
				c = Caller{User: u, Admin: u == "admin"}
			}
			ctx = context.WithValue(ctx, callerKey{}, c)
		}
		r = r.WithContext(ctx)
		q := r.URL.Query()
		switch {
		case r.URL.Path == "/":
			a.SNS().ServeHTTP(w, r)
		case r.URL.Path == "/bk1" && q.Has("notification"):
			b, _ := drv.GetBucket(ctx, "bk1")
			var err error
			switch r.Method {
			case http.MethodPut:
				err = a.PutBucketNotification(w, r, b)
			case http.MethodGet:
				err = a.GetBucketNotification(w, r, b)
			case http.MethodDelete:
				err = a.DeleteBucketNotification(w, r, b)
			}
			if err != nil {
				writeErr(w, r, err)
			}
		case r.URL.Path == "/admin/topic":
			if err := a.AdminTopic(w, r); err != nil {
				writeErr(w, r, err)
			}
		case r.URL.Path == "/admin/notification":
			if err := a.AdminNotification(w, r); err != nil {
				writeErr(w, r, err)
			}
		default:
			http.NotFound(w, r)
		}
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{srv: srv, svc: svc, drv: drv, callers: callers}
}

func (e *env) do(t *testing.T, user, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	}
	req.Header.Set("X-Test-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// sns posts a form the way botocore's query serializer does.
func (e *env) sns(t *testing.T, user string, kv ...string) (int, string) {
	t.Helper()
	f := url.Values{"Version": {"2010-03-31"}}
	for i := 0; i < len(kv); i += 2 {
		f.Set(kv[i], kv[i+1])
	}
	return e.do(t, user, http.MethodPost, "/", f.Encode())
}

func expect(t *testing.T, status int, body string, wantStatus int, wantIn ...string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d, want %d: %s", status, wantStatus, body)
	}
	for _, w := range wantIn {
		if !strings.Contains(body, w) {
			t.Fatalf("%q not in %s", w, body)
		}
	}
}

func TestSNS(t *testing.T) {
	e := newEnv(t)
	// aws sns create-topic --name=fishtopic --attributes='{"push-endpoint": "kafka://127.0.0.1:9092", "persistent": "true"}'
	s, b := e.sns(t, "alice", "Action", "CreateTopic", "Name", "fishtopic",
		"Attributes.entry.1.key", "push-endpoint", "Attributes.entry.1.value", "kafka://127.0.0.1:9092",
		"Attributes.entry.2.key", "persistent", "Attributes.entry.2.value", "true")
	expect(t, s, b, 200, "<CreateTopicResponse", "<TopicArn>arn:aws:sns:default::fishtopic</TopicArn>", "<RequestId>rid</RequestId>")
	const arn = "arn:aws:sns:default::fishtopic"
	s, b = e.sns(t, "alice", "Action", "GetTopicAttributes", "TopicArn", arn)
	expect(t, s, b, 200, "<key>persistent</key><value>true</value>", "<key>push-endpoint</key><value>kafka://127.0.0.1:9092</value>")
	s, b = e.sns(t, "alice", "Action", "GetTopic", "TopicArn", arn)
	expect(t, s, b, 200, "<GetTopicResponse", "<Persistent>true</Persistent>")
	// CreateTopic again updates the attributes.
	s, b = e.sns(t, "alice", "Action", "CreateTopic", "Name", "fishtopic",
		"Attributes.entry.1.key", "persistent", "Attributes.entry.1.value", "true",
		"Attributes.entry.2.key", "OpaqueData", "Attributes.entry.2.value", "od1")
	expect(t, s, b, 200, arn)
	s, b = e.sns(t, "alice", "Action", "SetTopicAttributes", "TopicArn", arn, "AttributeName", "OpaqueData", "AttributeValue", "od2")
	expect(t, s, b, 200, "<SetTopicAttributesResponse")
	s, b = e.sns(t, "alice", "Action", "GetTopicAttributes", "TopicArn", arn)
	expect(t, s, b, 200, "<key>OpaqueData</key><value>od2</value>")
	if strings.Contains(b, "kafka://") {
		t.Fatal("CreateTopic did not replace the attributes")
	}
	s, b = e.sns(t, "alice", "Action", "SetTopicAttributes", "TopicArn", arn, "AttributeName", "bogus", "AttributeValue", "1")
	expect(t, s, b, 400, "<ErrorResponse", "<Code>InvalidArgument</Code>", "bogus")
	s, b = e.sns(t, "bob", "Action", "GetTopicAttributes", "TopicArn", arn)
	expect(t, s, b, 403, "AuthorizationError")
	s, b = e.sns(t, "admin", "Action", "GetTopicAttributes", "TopicArn", arn)
	expect(t, s, b, 200)
	s, b = e.sns(t, "alice", "Action", "CreateTopic", "Name", "bad.name")
	expect(t, s, b, 400, "InvalidArgument")
	s, b = e.sns(t, "alice", "Action", "CreateTopic", "Name", "amqp", "Attributes.entry.1.key", "push-endpoint", "Attributes.entry.1.value", "amqp://h")
	expect(t, s, b, 400, "amqp-exchange")
	e.sns(t, "alice", "Action", "CreateTopic", "Name", "second")
	s, b = e.sns(t, "alice", "Action", "ListTopics")
	expect(t, s, b, 200, "<ListTopicsResponse", "<TopicArn>arn:aws:sns:default::fishtopic</TopicArn>", "<TopicArn>arn:aws:sns:default::second</TopicArn>")
	s, b = e.sns(t, "alice", "Action", "Publish")
	expect(t, s, b, 400, "InvalidAction")
	s, b = e.do(t, "", http.MethodPost, "/", "Action=ListTopics")
	expect(t, s, b, 403, "AuthorizationError")
	s, b = e.sns(t, "alice", "Action", "DeleteTopic", "TopicArn", arn)
	expect(t, s, b, 200, "<DeleteTopicResponse")
	s, b = e.sns(t, "alice", "Action", "GetTopicAttributes", "TopicArn", arn)
	expect(t, s, b, 404, "<Code>NotFound</Code>")
	s, b = e.sns(t, "alice", "Action", "DeleteTopic", "TopicArn", arn)
	expect(t, s, b, 200)
}

const notifXML = `<NotificationConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
<TopicConfiguration><Id>notif1</Id><Topic>arn:aws:sns:default::fishtopic</Topic><Event>s3:ObjectCreated:*</Event>
<Filter><S3Key><FilterRule><Name>prefix</Name><Value>img/</Value></FilterRule></S3Key></Filter></TopicConfiguration>
<TopicConfiguration><Id>notif2</Id><Topic>arn:aws:sns:default::fishtopic</Topic></TopicConfiguration>
</NotificationConfiguration>`

func TestBucketNotificationAndAdmin(t *testing.T) {
	e := newEnv(t)
	s, b := e.do(t, "alice", http.MethodPut, "/bk1?notification", notifXML)
	expect(t, s, b, 400, "<Code>InvalidArgument</Code>", "does not exist")
	s, b = e.do(t, "alice", http.MethodPut, "/bk1?notification", "<NotificationConfiguration><TopicConfiguration>")
	expect(t, s, b, 400, "MalformedXML")
	e.sns(t, "alice", "Action", "CreateTopic", "Name", "fishtopic", "Attributes.entry.1.key", "persistent", "Attributes.entry.1.value", "true")
	s, b = e.do(t, "alice", http.MethodPut, "/bk1?notification", notifXML)
	expect(t, s, b, 200)
	s, b = e.do(t, "alice", http.MethodGet, "/bk1?notification", "")
	expect(t, s, b, 200, "<Id>notif1</Id>", "<Id>notif2</Id>", "<Name>prefix</Name>")
	s, b = e.do(t, "alice", http.MethodGet, "/bk1?notification=notif2", "")
	expect(t, s, b, 200, "<Id>notif2</Id>")
	if strings.Contains(b, "notif1") {
		t.Fatal("GET of one id returned others")
	}
	s, b = e.do(t, "alice", http.MethodGet, "/bk1?notification=nope", "")
	expect(t, s, b, 404, "NoSuchConfiguration")

	// Two events for img/x (both configurations match), one for other.
	for _, k := range []string{"img/x", "other"} {
		if _, err := e.drv.PutObject(context.Background(), driver.PutObjectInput{Bucket: "bk1", Key: k, Body: bytes.NewReader([]byte("d")), Size: 1}); err != nil {
			t.Fatal(err)
		}
	}
	s, b = e.do(t, "admin", http.MethodGet, "/admin/topic?list", "")
	expect(t, s, b, 200, `"name": "fishtopic"`, `"num_shards": 3`)
	s, b = e.do(t, "admin", http.MethodGet, "/admin/topic?get&topic=fishtopic", "")
	expect(t, s, b, 200, `"persistent": true`)
	s, b = e.do(t, "admin", http.MethodGet, "/admin/topic?stats&topic=fishtopic", "")
	var st struct {
		Entries, Shards int
	}
	if err := json.Unmarshal([]byte(b), &st); err != nil || s != 200 || st.Entries != 3 || st.Shards != 3 {
		t.Fatalf("%d %s", s, b)
	}
	checkAdminJSON(t, b)
	// No request is in flight: the pool's idle reservations are not pending writes.
	if !strings.Contains(b, `"reservations": 0,`) || !strings.Contains(b, `"pooled_reservations"`) {
		t.Fatalf("idle pool reported as pending writes: %s", b)
	}
	// Dump page by page with --max-entries 1.
	marker, seen := "", 0
	for {
		s, b = e.do(t, "admin", http.MethodGet, "/admin/topic?dump&topic=fishtopic&max-entries=1&marker="+url.QueryEscape(marker), "")
		var p struct {
			Entries []struct {
				Marker string          `json:"marker"`
				Event  json.RawMessage `json:"event"`
			} `json:"entries"`
			Next      string `json:"next_marker"`
			Truncated bool   `json:"truncated"`
		}
		if err := json.Unmarshal([]byte(b), &p); err != nil || s != 200 || len(p.Entries) > 1 {
			t.Fatalf("%d %s", s, b)
		}
		checkAdminJSON(t, b)
		for _, en := range p.Entries {
			if !strings.Contains(string(en.Event), `"ObjectCreated:Put"`) || !strings.Contains(string(en.Event), `"metadata": []`) {
				t.Fatalf("%s", en.Event)
			}
			seen++
		}
		if !p.Truncated {
			break
		}
		marker = p.Next
	}
	if seen != 3 {
		t.Fatalf("dump saw %d entries", seen)
	}
	s, b = e.do(t, "admin", http.MethodGet, "/admin/topic?dump&topic=fishtopic&marker=zz", "")
	expect(t, s, b, 400, "InvalidArgument")
	s, b = e.do(t, "admin", http.MethodGet, "/admin/notification?list&bucket=bk1", "")
	expect(t, s, b, 200, `"id": "notif1"`, `"id": "notif2"`)
	s, b = e.do(t, "admin", http.MethodGet, "/admin/notification?get&bucket=bk1&notification-id=notif1", "")
	expect(t, s, b, 200, `"prefix": "img/"`)
	s, b = e.do(t, "admin", http.MethodGet, "/admin/notification?list&bucket=nobucket", "")
	expect(t, s, b, 404, "NoSuchBucket")
	s, b = e.do(t, "admin", http.MethodDelete, "/admin/notification?bucket=bk1&notification-id=notif1", "")
	expect(t, s, b, 204)
	s, b = e.do(t, "alice", http.MethodDelete, "/bk1?notification=notif1", "") // already gone: fine
	// 200: RGW's status for its DELETE extension.
	expect(t, s, b, 200)
	s, b = e.do(t, "alice", http.MethodGet, "/bk1?notification", "")
	if s != 200 || strings.Contains(b, "notif1") || !strings.Contains(b, "notif2") {
		t.Fatalf("%d %s", s, b)
	}
	s, b = e.do(t, "alice", http.MethodDelete, "/bk1?notification", "")
	expect(t, s, b, 200)
	s, b = e.do(t, "alice", http.MethodGet, "/bk1?notification", "")
	if s != 200 || strings.Contains(b, "TopicConfiguration") {
		t.Fatalf("%d %s", s, b)
	}
	s, b = e.do(t, "admin", http.MethodDelete, "/admin/topic?topic=fishtopic", "")
	expect(t, s, b, 204)
	s, b = e.do(t, "admin", http.MethodGet, "/admin/topic?get&topic=fishtopic", "")
	expect(t, s, b, 404, "NotFound")
	s, b = e.do(t, "admin", http.MethodDelete, "/admin/topic?topic=fishtopic", "")
	expect(t, s, b, 404)
	if _, err := e.svc.Queues().Lookup(context.Background(), ":fishtopic"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatal("queue survived topic rm")
	}
}

// checkAdminJSON: every key snake_case (radosgw-admin's style) outside the
// embedded event records, and no zero time ("Oldest" of an empty shard).
func checkAdminJSON(t *testing.T, body string) {
	t.Helper()
	if strings.Contains(body, "0001-01-01") {
		t.Fatalf("zero time in %s", body)
	}
	var walk func(v any, inEvent bool)
	walk = func(v any, inEvent bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if !inEvent && strings.ToLower(k) != k {
					t.Fatalf("key %q is not snake_case in %s", k, body)
				}
				walk(c, inEvent || k == "event")
			}
		case []any:
			for _, c := range x {
				walk(c, inEvent)
			}
		}
	}
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	walk(v, false)
}
