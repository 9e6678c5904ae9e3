package s3api

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestIAMDispatch: "POST /" goes to the IAM handler when signed for the
// iam service and to SNS otherwise; without an IAM handler, NotImplemented.
func TestIAMDispatch(t *testing.T) {
	h := newHarness(t)
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	res := h.mustDo(req{method: "POST", path: "/", body: "Action=ListUsers", hdr: form, service: "iam"}, 501)
	if !strings.Contains(res.body, "IAM API is not enabled") {
		t.Fatalf("no IAM handler: %s", res.body)
	}
	served := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, _ := IdentityFrom(r.Context())
			b, _ := io.ReadAll(r.Body)
			io.WriteString(w, name+" "+id.User.ID+" "+string(b))
		})
	}
	h.srv.SetIAMHandler(served("iam"))
	h.srv.SetSNSHandler(served("sns"))
	if res := h.mustDo(req{method: "POST", path: "/", body: "Action=ListUsers", hdr: form, service: "iam"}, 200); res.body != "iam alice Action=ListUsers" {
		t.Fatalf("iam: %q", res.body)
	}
	if res := h.mustDo(req{method: "POST", path: "/", body: "Action=ListTopics", hdr: form, service: "sns"}, 200); res.body != "sns alice Action=ListTopics" {
		t.Fatalf("sns: %q", res.body)
	}
	// The action in the form never decides the API: the signature does.
	if res := h.mustDo(req{method: "POST", path: "/", body: "Action=CreateUser", hdr: form, service: "sns"}, 200); !strings.HasPrefix(res.body, "sns ") {
		t.Fatalf("sns-signed CreateUser: %q", res.body)
	}
	// Anonymous: refused before either handler.
	if res := h.mustDo(req{method: "POST", path: "/", body: "Action=ListUsers", hdr: form, key: "-"}, 403); !strings.Contains(res.body, "<ErrorResponse") {
		t.Fatal(res.body)
	}
}
