package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNotifySmoke runs a tiny matrix with the gateway in-process: every
// acknowledged write's event reaches the receiver, queues drain, and the
// JSON and markdown come out.
func TestNotifySmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts gateways")
	}
	dir := t.TempDir()
	var out strings.Builder
	res, err := RunNotify(context.Background(), NotifyConfig{
		InProcess: true, DataDir: dir, Concurrency: 4, Sizes: []int64{4 << 10}, Ops: []string{S3Put, S3Delete},
		Duration: 700 * time.Millisecond, SoakDuration: 1500 * time.Millisecond, Out: &out,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(res.Cells) != 6 || res.Soak == nil || len(res.Summary) != 6 || len(res.Goals) != 3 {
		t.Fatalf("cells %d soak %v summary %d goals %d\n%s", len(res.Cells), res.Soak != nil, len(res.Summary), len(res.Goals), out.String())
	}
	for _, c := range append(res.Cells, res.Soak) {
		if c.S3 == nil || c.S3.Ops == 0 || c.S3.Errors != 0 {
			t.Fatalf("cell %+v", c)
		}
		if c.Mode == NotifyNone {
			if c.Lag.Events != 0 || c.Ratio != 1 {
				t.Fatalf("none cell %+v", c)
			}
			continue
		}
		// Requests cut off by the deadline are not counted but may have
		// succeeded: up to Concurrency more events than counted ops.
		if !c.Drained || c.Lag.Events < c.S3.Ops || c.Lag.Events > c.S3.Ops+4 || c.Lag.P50Ms <= 0 {
			t.Fatalf("cell %s %s: %d events for %d ops, drained %v, lag %+v", c.Op, c.Mode, c.Lag.Events, c.S3.Ops, c.Drained, c.Lag)
		}
		// The gateway's /metrics counters are read per cell.
		if c.PushesOK < float64(c.S3.Ops) || c.CommitEvents < float64(c.S3.Ops) || c.Store == nil || c.Store.WALBytes <= 0 {
			t.Fatalf("cell %s %s: counters pushes %v commits %v store %+v for %d ops", c.Op, c.Mode, c.PushesOK, c.CommitEvents, c.Store, c.S3.Ops)
		}
	}
	b, err := json.Marshal(res)
	if err != nil || !strings.Contains(string(b), `"ratio_to_none"`) {
		t.Fatalf("json %v %s", err, b)
	}
	md := filepath.Join(dir, "notify.md")
	if err := os.WriteFile(md, []byte("# head\n\n"+notifyMDBegin+"\nold\n"+notifyMDEnd+"\n\ntail\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeNotifyMD(md, res); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(md)
	for _, want := range []string{"# head", "tail", "| shards=11 | 6,057 |", "### Goals", "Queue depth over"} {
		if !strings.Contains(string(got), want) {
			t.Fatalf("markdown lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(string(got), "\nold\n") {
		t.Fatal("generated part not replaced")
	}
}

func TestDepthSlope(t *testing.T) {
	var ds []NotifyDepth
	for i := 0; i < 20; i++ {
		ds = append(ds, NotifyDepth{T: float64(i), Entries: uint64(100 + 10*i), Loading: true})
	}
	if s := depthSlope(ds); s != 10 {
		t.Fatalf("slope %v", s)
	}
	if thousands(1234567) != "1,234,567" || thousands(999) != "999" {
		t.Fatal(thousands(1234567))
	}
}
