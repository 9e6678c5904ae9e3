package bench

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairn-s3/cairn/internal/objstore"
)

func TestAppendSmoke(t *testing.T) {
	r, err := RunAppend(context.Background(), AppendConfig{Clients: 4, Duration: 200 * time.Millisecond, Size: 512, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Plain.Ops == 0 || r.Guarded.Ops == 0 || r.Ratio <= 0 || r.Plain.P50Ms > r.Plain.MaxMs {
		t.Fatalf("result %+v", r)
	}
	b, _ := json.Marshal(r)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m["guarded_ops_per_sec"] == nil || m["clients"] == nil {
		t.Fatalf("json %s", b)
	}
}

// TestAppendSweepSmoke: every client count every round, through the Open
// and Counters hooks the Ceph backend binds (here over embedded stores,
// two handles per mode as two connections would be).
func TestAppendSweepSmoke(t *testing.T) {
	opened, counted := 0, 0
	cfg := AppendConfig{Duration: 100 * time.Millisecond, Size: 256, Dir: t.TempDir(),
		Open: func(ctx context.Context, name string) ([]objstore.IOContext, func(), error) {
			opened++
			io, closeStore, err := benchPool(ctx, t.TempDir(), name)
			if err != nil {
				return nil, nil, err
			}
			return []objstore.IOContext{io, io}, closeStore, nil
		},
		Counters: func() map[string]int64 { counted++; return map[string]int64{"calls": int64(counted)} }}
	r, err := RunAppendSweep(context.Background(), AppendSweepConfig{Base: cfg, Clients: []int{1, 32}, Rounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Points) != 2 || len(r.Runs) != 4 || opened != 8 {
		t.Fatalf("points %d runs %d opened %d", len(r.Points), len(r.Runs), opened)
	}
	for _, p := range r.Points {
		if len(p.Ratios) != 2 || p.RatioMin > p.RatioMedian || p.RatioMedian > p.RatioMax || p.RatioMin <= 0 {
			t.Errorf("point %+v", p)
		}
	}
	if r.GuardedOverPlain32 != r.Points[1].RatioMedian || r.GuardedOverPlain32 <= 0 {
		t.Errorf("guarded_over_plain_32 %v, point %+v", r.GuardedOverPlain32, r.Points[1])
	}
	if c := r.Runs[0].GuardedCounters["calls"]; c != 1 { // one slice, sampled before and after
		t.Errorf("guarded counters %v", r.Runs[0].GuardedCounters)
	}
}

func TestObjstoreSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 4 MiB objects")
	}
	r, err := RunObjstore(context.Background(), ObjstoreConfig{Clients: []int{1, 3}, LargeClients: []int{2}, Duration: 150 * time.Millisecond, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.OmapSet) != 2 || len(r.OmapGet) != 2 || len(r.SmallWrite) != 2 || len(r.WriteFull) != 1 ||
		r.OmapGet[1].Ops == 0 || r.RawMBPerSec <= 0 || r.WriteFullRatio <= 0 {
		t.Fatalf("result %+v", r)
	}
}

func TestValidate(t *testing.T) {
	c := AppendConfig{Clients: -1, Duration: -1, Size: -5}
	if err := c.Validate(); err == nil {
		t.Fatal("bad config accepted")
	}
	o := ObjstoreConfig{Clients: []int{0}}
	o.EnsureDefaults()
	if err := o.Validate(); err == nil {
		t.Fatal("bad config accepted")
	}
}
