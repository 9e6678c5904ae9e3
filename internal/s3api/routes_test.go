package s3api

import (
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/cairn-s3/cairn/internal/authz"
	"github.com/cairn-s3/cairn/internal/driver"
)

// routeProbes crosses every method, the service/bucket/object levels,
// every subresource S3 defines (operations.go) and the other query
// parameters and headers the router branches on.
func routeProbes() []*http.Request {
	params := map[string]bool{"": true, "uploads": true, "uploadId=u": true, "partNumber=1&uploadId=u": true,
		"list-type=2": true, "delete": true, "location": true, "versionId=v": true}
	for _, level := range subresourceOps {
		for sub := range level {
			params[sub] = true
		}
	}
	for sub := range unsupported {
		params[sub] = true
	}
	qs := make([]string, 0, len(params))
	for q := range params {
		qs = append(qs, q)
	}
	sort.Strings(qs)
	headers := []map[string]string{nil,
		{"x-amz-copy-source": "/src/k"},
		{"Content-Type": "multipart/form-data; boundary=x"},
		{"Origin": "http://a.example", "Access-Control-Request-Method": "PUT"}}
	var out []*http.Request
	for _, m := range []string{"GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS", "PATCH"} {
		for _, path := range []string{"/", "/bk", "/bk/key", "/admin/user"} {
			for _, q := range qs {
				for _, h := range headers {
					r := httptest.NewRequest(m, path+"?"+q, nil)
					for k, v := range h {
						r.Header.Set(k, v)
					}
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// checkRouteActions fails on any served route without an action, and
// returns the served ops with their actions.
func checkRouteActions(t *testing.T, s *Server) map[string]authz.Action {
	t.Helper()
	served := map[string]authz.Action{}
	for _, r := range routeProbes() {
		ra := s.Authorization(r)
		if !ra.Served || ra.Unauthenticated || ra.Kind == "sns" {
			continue
		}
		if ra.Action == authz.ActionInvalid {
			t.Errorf("%s %s: served route %s has no authz action", r.Method, r.URL, ra.Op)
			continue
		}
		served[ra.Op] = ra.Action
	}
	return served
}

// Every route the router serves names its action: the walk covers every
// method × subresource × level, extension subresources and admin paths.
func TestRouterWalkEveryRouteHasAction(t *testing.T) {
	h := newHarness(t)
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		h.srv.HandleBucketSubresource(m, "notification", func(w http.ResponseWriter, r *http.Request, _ driver.BucketInfo) error { return nil })
	}
	served := checkRouteActions(t, h.srv)
	// The notification routes carry their own actions, not a fallback.
	for op, want := range map[string]authz.Action{
		"GetBucketNotificationConfiguration":    authz.S3GetBucketNotification,
		"PutBucketNotificationConfiguration":    authz.S3PutBucketNotification,
		"DeleteBucketNotificationConfiguration": authz.S3PutBucketNotification,
		"GetObject":                             authz.S3GetObject,
		"AdminGetUser":                          authz.AdminUsersRead,
		"AdminPutUser":                          authz.AdminUsersWrite,
	} {
		if got, ok := served[op]; !ok || got != want {
			t.Errorf("%s: action %v (served %v), want %v", op, got, ok, want)
		}
	}
	if len(served) < 45 {
		t.Fatalf("only %d ops served: %v", len(served), served)
	}
	// Object-level routes are decided on the object ARN, bucket-level
	// ones on the bucket ARN (Action.Scope picks the ARN), except the two
	// bucket routes that name their keys in the body.
	perKey := map[string]bool{"DeleteObjects": true, "PostObject": true}
	for _, r := range routeProbes() {
		ra := h.srv.Authorization(r)
		if !ra.Served || ra.Kind != "s3" || ra.Unauthenticated {
			continue
		}
		sc, level := ra.Action.Scope(), strings.Count(r.URL.Path, "/")
		switch {
		case level == 2 && sc != authz.ScopeObject:
			t.Errorf("%s %s: object route %s decided as %v (not on the object ARN)", r.Method, r.URL, ra.Op, ra.Action)
		case level == 1 && r.URL.Path != "/" && sc != authz.ScopeBucket && !perKey[ra.Op]:
			t.Errorf("%s %s: bucket route %s decided as %v (not on the bucket ARN)", r.Method, r.URL, ra.Op, ra.Action)
		case r.URL.Path == "/" && sc != authz.ScopeService:
			t.Errorf("%s %s: service route %s decided as %v", r.Method, r.URL, ra.Op, ra.Action)
		}
	}
}

// A served route without an action fails closed: refused before its
// handler runs, for the owner and for an admin alike.
func TestRouteWithoutActionFailsClosed(t *testing.T) {
	h := newHarness(t)
	h.bucket("ext")
	called := 0
	ext := func(w http.ResponseWriter, r *http.Request, _ driver.BucketInfo) error { called++; return nil }
	h.srv.HandleBucketSubresource("GET", "cairnext", ext)
	h.srv.HandleBucketSubresource("PUT", "website", ext) // an S3 op Cairn has no action for
	if ra := h.srv.Authorization(httptest.NewRequest("GET", "/ext?cairnext", nil)); !ra.Served || ra.Action != authz.ActionInvalid {
		t.Fatalf("GET ?cairnext: %+v, want served without action", ra)
	}
	for _, key := range []string{aliceKey, adminKey} {
		h.mustDo(req{method: "GET", path: "/ext?cairnext", key: key}, 500)
		h.mustDo(req{method: "PUT", path: "/ext?website", key: key}, 500)
	}
	h.mustDo(req{method: "GET", path: "/ext?cairnext", key: "-"}, 500)
	if called != 0 {
		t.Fatalf("handler ran %d times for a route without an action", called)
	}
	// The walk reports it.
	missing := 0
	for _, r := range routeProbes() {
		if ra := h.srv.Authorization(r); ra.Served && ra.Kind == "s3" && !ra.Unauthenticated && ra.Action == authz.ActionInvalid {
			missing++
		}
	}
	if missing == 0 {
		t.Fatal("the router walk does not see the unmapped routes")
	}
	// An admin route registered without an action is refused too.
	h.srv.HandleAdmin("frob", func(w http.ResponseWriter, r *http.Request) error { called++; return nil })
	h.mustDo(req{method: "GET", path: "/admin/frob", key: adminKey}, 500)
	h.mustDo(req{method: "GET", path: "/admin/frob", key: bobKey}, 403)
	if called != 0 {
		t.Fatal("admin handler without an action ran")
	}
	// Not-implemented routes stay the owner's alone to learn about.
	h.mustDo(req{method: "GET", path: "/ext?website", key: bobKey}, 403)
	h.mustDo(req{method: "GET", path: "/ext?website"}, 501)
	if _, err := authz.ParseBucketPolicy([]byte(`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"cairn:BucketOwnerOnly","Resource":"arn:aws:s3:::ext"}]}`), "ext"); err == nil {
		t.Fatal("a policy may not grant the owner-only action")
	}
}

// The notification configuration routes are decided on their own
// actions: the owner's explicit Deny binds her, a policy Allow lets
// another user read and write the configuration.
func TestNotificationRoutesAuthorized(t *testing.T) {
	h := newHarness(t)
	var ran []string
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		h.srv.HandleBucketSubresource(m, "notification", func(w http.ResponseWriter, r *http.Request, b driver.BucketInfo) error {
			ran = append(ran, r.Method+" "+b.Name)
			return nil
		})
	}
	h.bucket("nb")
	h.mustDo(req{method: "PUT", path: "/nb?policy", body: `{"Statement":[
	 {"Effect":"Deny","Principal":{"AWS":"alice"},"Action":"s3:PutBucketNotification","Resource":"arn:aws:s3:::nb"},
	 {"Effect":"Allow","Principal":{"AWS":"bob"},"Action":["s3:GetBucketNotification","s3:PutBucketNotification"],"Resource":"arn:aws:s3:::nb"}]}`}, 204)
	h.mustDo(req{method: "PUT", path: "/nb?notification", body: "<NotificationConfiguration/>"}, 403)
	h.mustDo(req{method: "DELETE", path: "/nb?notification"}, 403)
	h.mustDo(req{method: "GET", path: "/nb?notification"}, 200)
	h.mustDo(req{method: "PUT", path: "/nb?notification", body: "<NotificationConfiguration/>", key: bobKey}, 200)
	h.mustDo(req{method: "GET", path: "/nb?notification", key: bobKey}, 200)
	h.mustDo(req{method: "GET", path: "/nb?notification", key: "-"}, 403)
	if got := strings.Join(ran, ","); got != "GET nb,PUT nb,GET nb" {
		t.Fatalf("handlers ran: %s", got)
	}
}
