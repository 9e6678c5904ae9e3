package s3api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/cairn-s3/cairn/internal/driver"
)

func TestAdminUsers(t *testing.T) {
	h := newHarness(t)
	res := h.mustDo(req{method: "PUT", path: "/admin/user?uid=carol&display-name=Carol%20C&access-key=AKC&secret-key=SKC", key: adminKey}, 200)
	var u struct {
		UserID      string `json:"user_id"`
		DisplayName string `json:"display_name"`
		Keys        []struct {
			User      string `json:"user"`
			AccessKey string `json:"access_key"`
			SecretKey string `json:"secret_key"`
		} `json:"keys"`
	}
	if err := json.Unmarshal([]byte(res.body), &u); err != nil || u.UserID != "carol" || u.DisplayName != "Carol C" ||
		len(u.Keys) != 1 || u.Keys[0].User != "carol" || u.Keys[0].AccessKey != "AKC" || u.Keys[0].SecretKey != "SKC" {
		t.Fatalf("create: %s", res.body)
	}
	// Generated keys.
	res = h.mustDo(req{method: "PUT", path: "/admin/user?uid=dave", key: adminKey}, 200)
	json.Unmarshal([]byte(res.body), &u)
	if u.UserID != "dave" || len(u.Keys) != 1 || u.Keys[0].AccessKey == "" || u.Keys[0].SecretKey == "" {
		t.Fatalf("generated keys: %s", res.body)
	}
	res = h.mustDo(req{method: "GET", path: "/admin/user?uid=carol", key: adminKey}, 200)
	if json.Unmarshal([]byte(res.body), &u); u.UserID != "carol" {
		t.Fatal(res.body)
	}
	for _, p := range []string{"/admin/user?list", "/admin/metadata/user"} {
		res = h.mustDo(req{method: "GET", path: p, key: adminKey}, 200)
		var ids []string
		if err := json.Unmarshal([]byte(res.body), &ids); err != nil || len(ids) != 5 || ids[0] != "admin" {
			t.Fatalf("%s: %s", p, res.body)
		}
	}
	for _, tc := range []struct {
		rq     req
		status int
		code   string
	}{
		{req{method: "PUT", path: "/admin/user?uid=carol"}, 409, "UserAlreadyExists"},
		{req{method: "PUT", path: "/admin/user?uid=erin&access-key=AKC&secret-key=x"}, 409, "KeyExists"},
		{req{method: "PUT", path: "/admin/user?uid=erin&access-key=AKE"}, 400, "InvalidArgument"},
		{req{method: "PUT", path: "/admin/user"}, 400, "InvalidArgument"},
		{req{method: "GET", path: "/admin/user?uid=nobody"}, 404, "NoSuchUser"},
		{req{method: "DELETE", path: "/admin/user?uid=nobody"}, 404, "NoSuchUser"},
		{req{method: "DELETE", path: "/admin/user?uid=alice"}, 409, "BucketNotEmpty"},
		{req{method: "GET", path: "/admin/nothing"}, 501, "NotImplemented"},
		{req{method: "GET", path: "/admin/user?uid=alice", key: aliceKey}, 403, "AccessDenied"},
		{req{method: "GET", path: "/admin/user?uid=alice", key: "-"}, 403, "AccessDenied"},
	} {
		if tc.rq.key == "" {
			tc.rq.key = adminKey
		}
		if tc.rq.path == "/admin/user?uid=alice" && tc.rq.method == "DELETE" {
			h.bucket("alices")
		}
		res := h.mustDo(tc.rq, tc.status)
		// Every admin error is JSON in one shape, authentication
		// failures included.
		if !jsonCode(res, tc.code) {
			t.Errorf("%s %s: %s", tc.rq.method, tc.rq.path, res.body)
		}
	}
	h.mustDo(req{method: "DELETE", path: "/admin/user?uid=carol", key: adminKey}, 200)
	if _, ok := h.be.users["carol"]; ok {
		t.Fatal("user not removed")
	}
	// Carol's key no longer works.
	if res := h.mustDo(req{method: "GET", path: "/", key: "AKC"}, 403); res.code() != "InvalidAccessKeyId" {
		t.Fatal(res.body)
	}
}

func TestAdminBuckets(t *testing.T) {
	h := newHarness(t)
	h.mustDo(req{method: "PUT", path: "/bk1", hdr: map[string]string{BucketShardsHeader: "3"}}, 200)
	h.put("bk1", "a", "12345")
	h.put("bk1", "b", "67")
	h.mustDo(req{method: "PUT", path: "/bk2", key: bobKey}, 200)

	var names []string
	res := h.mustDo(req{method: "GET", path: "/admin/bucket", key: adminKey}, 200)
	if json.Unmarshal([]byte(res.body), &names); len(names) != 2 || names[0] != "bk1" || names[1] != "bk2" {
		t.Fatal(res.body)
	}
	res = h.mustDo(req{method: "GET", path: "/admin/bucket?uid=bob", key: adminKey}, 200)
	if json.Unmarshal([]byte(res.body), &names); len(names) != 1 || names[0] != "bk2" {
		t.Fatal(res.body)
	}
	res = h.mustDo(req{method: "GET", path: "/admin/bucket?stats&bucket=bk1", key: adminKey}, 200)
	var st map[string]any
	if err := json.Unmarshal([]byte(res.body), &st); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"bucket": "bk1", "owner": "alice", "num_shards": 3.0, "num_objects": 2.0, "size": 7.0} {
		if st[k] != v {
			t.Errorf("stats %s = %v, want %v (%s)", k, st[k], v, res.body)
		}
	}
	if st["id"] == "" || st["id"] == nil {
		t.Errorf("stats without id: %s", res.body)
	}
	res = h.mustDo(req{method: "GET", path: "/admin/bucket?stats", key: adminKey}, 200)
	var all []map[string]any
	if json.Unmarshal([]byte(res.body), &all); len(all) != 2 {
		t.Fatal(res.body)
	}
	if res := h.mustDo(req{method: "GET", path: "/admin/bucket?stats&bucket=none", key: adminKey}, 404); !jsonCode(res, "NoSuchBucket") {
		t.Fatal(res.body)
	}
}

func jsonCode(r resp, code string) bool {
	var e adminError
	return json.Unmarshal([]byte(r.body), &e) == nil && e.Code == code
}

// Other packages plug admin routes in without touching this package.
func TestHandleAdminExtension(t *testing.T) {
	h := newHarness(t)
	h.srv.HandleAdmin("/admin/reshard", func(w http.ResponseWriter, r *http.Request) error {
		id, _ := IdentityFrom(r.Context())
		if r.URL.Query().Get("bucket") == "" {
			return driver.ErrNoSuchReshard
		}
		return WriteJSON(w, http.StatusOK, map[string]string{"caller": id.User.ID, "bucket": r.URL.Query().Get("bucket")})
	})
	res := h.mustDo(req{method: "GET", path: "/admin/reshard?bucket=x", key: adminKey}, 200)
	if res.body != `{"bucket":"x","caller":"admin"}`+"\n" {
		t.Fatal(res.body)
	}
	if res := h.mustDo(req{method: "GET", path: "/admin/reshard", key: adminKey}, 404); !jsonCode(res, "NoSuchReshard") {
		t.Fatal(res.body)
	}
	h.mustDo(req{method: "GET", path: "/admin/reshard?bucket=x", key: aliceKey}, 403)
}

// A reshard already running reaches clients as a retryable 503 whose code
// names the reason.
func TestReshardInProgressMapping(t *testing.T) {
	e := MapError(fmt.Errorf("%w: bucket b is resharding to 7 shards", driver.ErrReshardInProgress))
	if e.Code != "ReshardInProgress" || e.HTTPStatus != http.StatusServiceUnavailable {
		t.Fatalf("got %s %d", e.Code, e.HTTPStatus)
	}
}
