package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A small run of the versioning workload against a real embedded gateway:
// every phase completes and checks its own listings (listLoop and
// listVersionsLoop fail when a traversal misses or repeats entries).
func TestVersioningWorkload(t *testing.T) {
	url := gateway(t, "embedded")
	var out strings.Builder
	r, err := RunVersioning(context.Background(), VersioningConfig{
		Endpoint: url, AccessKey: "benchadmin", SecretKey: "benchsecret123", Concurrency: 4,
		PutDuration: 400 * time.Millisecond, PutKeys: 20, LiveKeys: 30, Noncurrent: 3, ListPage: 7,
		ListTime: 200 * time.Millisecond, Out: &out,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if r.PutPlainOps <= 0 || r.PutVersOps <= 0 || r.PutErrors != 0 || r.ListPlainKeys <= 0 || r.ListVersKeys <= 0 ||
		r.LOVEntries <= 0 || r.StoredEntries != 2*30*4+30 {
		t.Fatalf("%+v\n%s", r, out.String())
	}
}
