package server_test

import (
	"net/http/httptest"
	"testing"

	"github.com/cairn-s3/cairn/internal/authz"
)

// Every route a fully wired gateway serves (built-ins, the ?notification
// handlers notify registers, every admin path) names its authz action;
// the SNS actions are checked in notify/api (TestSNSActionsMapped).
func TestEveryServedRouteHasAction(t *testing.T) {
	g := compatGateway(t)
	served := map[string]authz.Action{}
	for _, spec := range probeRequests(t) {
		r := compatRequest(t, spec)
		ra := g.API.Authorization(r)
		if !ra.Served || ra.Unauthenticated || ra.Kind == "sns" {
			continue
		}
		if ra.Action == authz.ActionInvalid {
			t.Errorf("%s: served route %s has no authz action", spec, ra.Op)
		}
		served[ra.Op] = ra.Action
	}
	for _, op := range []string{"GetBucketNotificationConfiguration", "PutBucketNotificationConfiguration", "DeleteBucketNotificationConfiguration"} {
		if served[op] == authz.ActionInvalid {
			t.Errorf("%s is not served with an action: %v", op, served[op])
		}
	}
	paths := g.API.AdminRoutes()
	if len(paths) < 6 {
		t.Fatalf("only %d admin routes registered: %v", len(paths), paths)
	}
	for _, p := range paths {
		for _, m := range []string{"GET", "HEAD", "PUT", "POST", "DELETE"} {
			ra := g.API.Authorization(httptest.NewRequest(m, "http://127.0.0.1:7480"+p, nil))
			if !ra.Served || ra.Kind != "admin" {
				t.Errorf("%s %s: not routed as a served admin route: %+v", m, p, ra)
			} else if ra.Action.Scope() != authz.ScopeAdmin {
				t.Errorf("%s %s: admin route decided as %v", m, p, ra.Action)
			}
		}
	}
}
